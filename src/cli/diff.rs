//! `strata diff --base REV`: compare the working tree with REV (read from
//! git, in memory) through [`crate::diff::revision`], and print what changes
//! in the rendered tree, the steps taken (`--verbose`), or why there is
//! nothing to compare.

use clap::{Args, ValueEnum};

use super::{Context, TargetArg, exit};
use crate::diag::{Diagnostic, Sources};
use crate::diff::{format, revision};
use crate::pipeline::{Options, Reach};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A unified diff for a terminal
    Text,
    /// A pull-request comment: summary table, a section per component, size-limited
    Markdown,
    /// One JSON document with a stable structure
    Json,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    #[command(flatten)]
    pub schema: super::SchemaArgs,
    /// The git revision to compare with (a branch, tag or commit; e.g. origin/main)
    #[arg(long, value_name = "REV")]
    pub base: String,
    /// Only this environment (default: all)
    #[arg(long, value_name = "ENV")]
    pub env: Option<String>,
    /// Only this target (default: the environments' targets)
    #[arg(long, value_enum)]
    pub target: Option<TargetArg>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Exit with 1 when something changed
    #[arg(long)]
    pub exit_code: bool,
    /// After each changed line under the Helm values, the file and line that set it
    #[arg(long)]
    pub why: bool,
    /// Largest Markdown output in bytes; what does not fit is left out and named
    #[arg(long, value_name = "N", default_value_t = format::DEFAULT_MAX_BYTES)]
    pub max_bytes: usize,
    /// Compile every component on both sides, not only what the change can reach
    #[arg(long)]
    pub everything: bool,
}

pub fn run(ctx: &Context, args: &DiffArgs) -> i32 {
    let request = revision::Request {
        world: &ctx.world,
        sources: &ctx.sources,
        base: &args.base,
        opts: Options {
            env: args.env.clone(),
            shard: ctx.shard,
            target: args.target.map(Into::into),
            schemas: args.schema.settings(),
            inflate: ctx.inflate.clone(),
            ..Options::default()
        },
        everything: args.everything,
    };
    let compared = match revision::compare(request, || ctx.layout(None), &mut |step| progress(ctx, args, step)) {
        Ok(c) => c,
        Err(failure) => return failed(ctx, args, failure),
    };
    if ctx.verbose {
        eprintln!("the working tree:");
        ctx.timings(&compared.timings[0]);
        if compared.has_base && !compared.timings[1].is_empty() {
            eprintln!("{}:", args.base);
            ctx.timings(&compared.timings[1]);
        }
        ctx.timings(&[("compare", compared.comparing)]);
    }
    let d = &compared.diff;
    let against = format::Against {
        revision: args.base.clone(),
        commit: compared.commit().to_owned(),
    };
    // The last line of defence: every secret the compiles read (the
    // contracts', and the credentials of URLs), in every printed form.
    let secrets = ctx.sources.secrets();
    let clean = |t: String| secrets.redact_text(&t).into_owned();
    match args.format {
        Format::Text => {
            if d.is_empty() {
                ctx.info(&format!("no changes against {}", args.base));
            } else {
                print!("{}", clean(format::text(d, &against, args.why, ctx.stdout_color)));
            }
        }
        Format::Markdown => {
            let md = format::markdown(d, &against, args.why, args.max_bytes);
            // A shard's comment says which share it shows, so that the
            // comments of a matrix can be put one after the other.
            let md = match ctx.shard {
                Some(s) => md.replacen(
                    "### strata diff against",
                    &format!("### strata diff (shard {s}) against"),
                    1,
                ),
                None => md,
            };
            print!("{}", clean(md));
        }
        Format::Json => print!("{}", clean(format::json(d, &against))),
    }
    let code = if args.exit_code && !d.is_empty() {
        exit::FINDINGS
    } else {
        exit::OK
    };
    // The process is about to exit: its memory goes back with it, rather
    // than value by value (see `Compiled::leave`).
    compared.leave();
    code
}

/// With `--verbose`, each step of the comparison as it is taken.
fn progress(ctx: &Context, args: &DiffArgs, step: revision::Progress<'_>) {
    // Said whatever the verbosity: the base is not read from git alone.
    if let revision::Progress::ContractsFromWorkTree(paths) = step {
        for p in paths {
            eprintln!(
                "note: {} has no {p}, which git does not track: the base reads the working tree's",
                args.base
            );
        }
        return;
    }
    if !ctx.verbose {
        return;
    }
    match step {
        revision::Progress::ContractsFromWorkTree(_) => {}
        revision::Progress::ReadBase { took, skipped } => {
            ctx.timings(&[("read base", took)]);
            for s in skipped {
                eprintln!(
                    "note: {s} in {} is over the input size limit and was not read",
                    args.base
                );
            }
        }
        revision::Progress::Reach(reach) => eprintln!("{}", reach_note(reach)),
        revision::Progress::OtherSecrets => {
            eprintln!("note: the two sides' contracts hold other secrets; both sides are compiled whole");
        }
        revision::Progress::NoBase => eprintln!(
            "note: {} has no such platform or environment; every object is new",
            args.base
        ),
        revision::Progress::LayersAndBase(took) => ctx.timings(&[("layers+base", took)]),
        revision::Progress::Kept(n, took) => {
            eprintln!(
                "note: {}'s compile of {n} environment(s) is kept from an earlier diff against it (.strata/cache/diff); only the working tree is compiled",
                args.base
            );
            ctx.timings(&[("kept base", took)]);
        }
    }
}

/// Reports why there is nothing to compare; the exit code.
fn failed(ctx: &Context, args: &DiffArgs, failure: revision::Failure) -> i32 {
    match failure {
        revision::Failure::Head(mut diags) => {
            ctx.report(&mut diags);
            exit::INPUT
        }
        revision::Failure::Revision(e) => {
            eprintln!("error: --base {}: {e}", args.base);
            if let Some(h) = e.help() {
                eprintln!("  = help: {h}");
            }
            exit::INPUT
        }
        revision::Failure::Base {
            commit,
            sources,
            mut diags,
        } => base_failed(ctx, args, &commit, &sources, &mut diags),
    }
}

/// Reports that the base revision does not compile: an input error.
fn base_failed(ctx: &Context, args: &DiffArgs, commit: &str, sources: &Sources, diags: &mut Vec<Diagnostic>) -> i32 {
    report_base(ctx, sources, diags);
    eprintln!(
        "error: the base revision {} ({}) does not compile, so there is nothing to compare with",
        args.base,
        &commit[..commit.len().min(12)]
    );
    eprintln!(
        "  = help: the errors above are in {}, not in the working tree",
        args.base
    );
    exit::INPUT
}

/// What `--verbose` says of the reach.
fn reach_note(reach: Option<&Reach>) -> String {
    let Some(reach) = reach else {
        return "note: the change can reach every component; both sides are compiled whole".into();
    };
    if reach.envs.is_empty() {
        return "note: no input of the platform changed; nothing is compiled".into();
    }
    let parts: Vec<String> = reach
        .envs
        .iter()
        .map(|(env, only)| match only {
            None => format!("{env}: every component"),
            Some(c) => format!("{env}: {}", c.iter().cloned().collect::<Vec<_>>().join(", ")),
        })
        .collect();
    format!("note: the change can reach {}", parts.join("; "))
}

/// Prints the base revision's errors with the base's own file texts.
fn report_base(ctx: &Context, sources: &Sources, diags: &mut Vec<Diagnostic>) {
    crate::diag::scrub(diags, sources);
    crate::diag::normalize(diags);
    eprint!("{}", crate::diag::render_text(diags, sources, ctx.color));
}
