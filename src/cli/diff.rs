//! `strata diff --base REV`: compile REV (read from git, in memory) and the
//! working tree, and print what changes in the rendered tree.

use clap::{Args, ValueEnum};

use super::{Context, TargetArg, exit};
use crate::diag::{Diagnostic, Sources};
use crate::diff::{self, format, reach};
use crate::load::{self, project};
use crate::pipeline::{self, Compiled, Options, Reach};
use crate::world::{MemWorld, World, git};

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

/// Whether the base revision has the platform, and the environment asked for.
fn base_has(world: &MemWorld, env: Option<&str>) -> bool {
    if !world.is_file(project::FILE) {
        return false;
    }
    let Some(env) = env else { return true };
    let sources = Sources::default();
    let Ok(node) = load::files::read_yaml(world, &sources, project::FILE) else {
        // Let the compile report it.
        return true;
    };
    let p = project::Project::decode(&node, &mut Vec::new());
    world.is_file(&crate::world::join(&p.environments, &format!("{env}.yaml")))
}

pub fn run(ctx: &Context, args: &DiffArgs) -> i32 {
    let mut opts = Options {
        env: args.env.clone(),
        target: args.target.map(Into::into),
        schemas: args.schema.settings(),
        inflate: ctx.inflate.clone(),
        layout: ctx.layout(None),
        ..Options::default()
    };
    // The base reads mostly the same files: each is parsed once.
    let sources = ctx.sources.clone().keeping_parses();
    let prepared = match pipeline::prepare(&ctx.world, &sources, &opts) {
        Ok(p) => p,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    };
    // No compile reads the rendered tree: the base's is left in git.
    let output = crate::world::normalize(&prepared.platform.project.output).unwrap_or_default();
    let leave_out = [output.as_str()];
    let started = std::time::Instant::now();
    let rev = match git::read_revision(&ctx.root, &args.base, &ctx.world.today(), &leave_out) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: --base {}: {e}", args.base);
            if let Some(h) = e.help() {
                eprintln!("  = help: {h}");
            }
            return exit::INPUT;
        }
    };
    if ctx.verbose {
        ctx.timings(&[("read base", started.elapsed())]);
        for s in &rev.skipped {
            eprintln!(
                "note: {s} in {} is over the input size limit and was not read",
                args.base
            );
        }
    }
    // Both sides compile only what the change can reach: the rest is the
    // same on both by construction.
    let has_base = base_has(&rev.world, args.env.as_deref());
    if has_base && !args.everything {
        opts.reach = reach::reach(&ctx.world, &rev.world, &prepared.platform);
    }
    if ctx.verbose {
        eprintln!("{}", reach_note(opts.reach.as_ref()));
    }
    let head = match prepared.collect(&ctx.world, &sources, &opts) {
        Ok(c) => c,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    };

    // The base's diagnostics hide the secrets of both sides.
    let base_sources = sources.sharing_secrets();
    let base: Option<Compiled> = if has_base {
        match pipeline::compile(&rev.world, &base_sources, &opts) {
            Ok(c) => Some(c),
            Err(mut diags) => {
                report_base(ctx, &base_sources, &mut diags);
                eprintln!(
                    "error: the base revision {} ({}) does not compile, so there is nothing to compare with",
                    args.base,
                    &rev.commit[..rev.commit.len().min(12)]
                );
                eprintln!(
                    "  = help: the errors above are in {}, not in the working tree",
                    args.base
                );
                return exit::INPUT;
            }
        }
    } else {
        if ctx.verbose {
            eprintln!(
                "note: {} has no such platform or environment; every object is new",
                args.base
            );
        }
        None
    };

    if ctx.verbose {
        eprintln!("the working tree:");
        ctx.timings(&head.timings);
        if let Some(b) = &base {
            eprintln!("{}:", args.base);
            ctx.timings(&b.timings);
        }
    }
    let started = std::time::Instant::now();
    let d = diff::diff(base.as_ref(), &head);
    if ctx.verbose {
        ctx.timings(&[("compare", started.elapsed())]);
    }
    let against = format::Against {
        revision: args.base.clone(),
        commit: rev.commit.clone(),
    };
    match args.format {
        Format::Text => {
            if d.is_empty() {
                ctx.info(&format!("no changes against {}", args.base));
            } else {
                print!("{}", format::text(&d, &against, args.why, ctx.stdout_color));
            }
        }
        Format::Markdown => print!("{}", format::markdown(&d, &against, args.why, args.max_bytes)),
        Format::Json => print!("{}", format::json(&d, &against)),
    }
    if args.exit_code && !d.is_empty() {
        exit::FINDINGS
    } else {
        exit::OK
    }
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
