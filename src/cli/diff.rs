//! `strata diff --base REV`: compile REV (read from git, in memory) and the
//! working tree, and print what changes in the rendered tree.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use clap::{Args, ValueEnum};

use super::{Context, TargetArg, exit};
use crate::diag::{Diagnostic, Sources};
use crate::diff::{self, format, reach};
use crate::load::project;
use crate::pipeline::{self, Options, Reach};
use crate::render;
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

/// The rendered tree's folder as `strata.yaml` names it (the default when
/// the file cannot be read: the load reports that).
fn output_folder(world: &dyn World, sources: &Sources) -> String {
    let output = project::Project::read(world, sources, &mut Vec::new())
        .map_or_else(|_| project::DEFAULT_OUTPUT.to_owned(), |p| p.output);
    crate::world::normalize(&output).unwrap_or_default()
}

/// Whether the base revision has the platform, and the environment asked for.
fn base_has(world: &MemWorld, env: Option<&str>) -> bool {
    if !world.is_file(project::FILE) {
        return false;
    }
    let Some(env) = env else { return true };
    let Ok(p) = project::Project::read(world, &Sources::default(), &mut Vec::new()) else {
        // Let the compile report it.
        return true;
    };
    world.is_file(&crate::world::join(&p.environments, &format!("{env}.yaml")))
}

pub fn run(ctx: &Context, args: &DiffArgs) -> i32 {
    let mut opts = Options {
        env: args.env.clone(),
        target: args.target.map(Into::into),
        schemas: args.schema.settings(),
        inflate: ctx.inflate.clone(),
        ..Options::default()
    };
    // Nothing is written while the two sides are compared: each folder of
    // the working tree is listed once, for the load and for the reach.
    ctx.world.remember_lists();
    // The base reads mostly the same files: each is parsed once.
    let sources = ctx.sources.clone().keeping_parses();
    // No compile reads the rendered tree: the base's is left in git.
    let output = output_folder(&ctx.world, &sources);
    let leave_out = [output.as_str()];
    // git lists and reads the base while the working tree loads. A base
    // file the load has read already, unchanged, is taken from its text;
    // the others are read from the working tree and hashed, on the workers
    // the load leaves idle (waiting on git, or on one large component).
    // The values layers wait for the reach: only the environments a change
    // reaches are compiled, so only theirs are read (on both sides).
    let first = Options {
        layers_of: Some(BTreeSet::new()),
        ..opts.clone()
    };
    let (prepared, (rev, read_base)) = std::thread::scope(|s| {
        let reading = s.spawn(|| {
            let started = std::time::Instant::now();
            let rev = git::list_revision(&ctx.root, &args.base, &leave_out)
                .and_then(|l| l.read(&ctx.root, &ctx.world.today(), &|path| sources.get(path)));
            (rev, started.elapsed())
        });
        let prepared = pipeline::prepare(&ctx.world, &sources, &first);
        let reading = reading.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (prepared, reading)
    });
    let mut prepared = match prepared {
        Ok(p) => p,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    };
    let rev = match rev {
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
        ctx.timings(&[("read base", read_base)]);
        for s in &rev.skipped {
            eprintln!(
                "note: {s} in {} is over the input size limit and was not read",
                args.base
            );
        }
    }
    // Asked of git while the platform loaded.
    opts.layout = ctx.layout(None);
    // Both sides compile only what the change can reach: the rest is the
    // same on both by construction.
    let has_base = base_has(&rev.world, args.env.as_deref());
    if has_base && !args.everything {
        let sides = reach::Sides {
            head: &ctx.world,
            base: &rev.world,
            known_same: &rev.as_in_work_tree,
        };
        opts.reach = reach::reach(&sides, &prepared.platform);
    }
    if ctx.verbose {
        eprintln!("{}", reach_note(opts.reach.as_ref()));
    }
    let mut compiled_envs: BTreeSet<String> = match &opts.reach {
        Some(reach) => reach.envs.keys().cloned().collect(),
        None => prepared.platform.environments.keys().cloned().collect(),
    };
    let started = std::time::Instant::now();
    // A layer git holds as it is in the working tree was read (and hashed)
    // with the base: its bytes are taken from there, not read again.
    let work_tree = ctx.world.knowing(&rev.world, &rev.as_in_work_tree);
    // The base's diagnostics hide the secrets of both sides.
    let base_sources = sources.sharing_secrets();
    // The base loads while the working tree reads its layers, and reads its
    // own layers after: most are the same texts, parsed once, by the first.
    let base_first = Options {
        layers_of: Some(BTreeSet::new()),
        ..opts.clone()
    };
    let (layers_read, base_prepared) = rayon::join(
        || prepared.platform.read_layers(&work_tree, &sources, &compiled_envs),
        || has_base.then(|| pipeline::prepare(&rev.world, &base_sources, &base_first)),
    );
    if let Err(mut diags) = layers_read {
        ctx.report(&mut diags);
        return exit::INPUT;
    }
    let mut base_prepared = match base_prepared.transpose() {
        Ok(p) => p,
        Err(mut diags) => return base_failed(ctx, args, &rev.commit, &base_sources, &mut diags),
    };
    // Every environment's output is searched for every contract's secrets:
    // with an environment added or removed, or one that takes another
    // contract, the two sides search for other secrets everywhere, and the
    // change reaches everything.
    if opts.reach.is_some()
        && let Some(base) = &base_prepared
        && base.platform.secrets != prepared.platform.secrets
    {
        opts.reach = None;
        if ctx.verbose {
            eprintln!("note: the two sides' contracts hold other secrets; both sides are compiled whole");
        }
        compiled_envs = prepared.platform.environments.keys().cloned().collect();
        if let Err(mut diags) = prepared.platform.read_layers(&work_tree, &sources, &compiled_envs) {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    }
    if let Some(base) = &mut base_prepared {
        // Compiled whole, the base reads every environment's layers: it may
        // have environments the working tree does not.
        let envs = match &opts.reach {
            Some(_) => compiled_envs.clone(),
            None => base.platform.environments.keys().cloned().collect(),
        };
        if let Err(mut diags) = base.platform.read_layers(&rev.world, &base_sources, &envs) {
            return base_failed(ctx, args, &rev.commit, &base_sources, &mut diags);
        }
    } else if ctx.verbose {
        eprintln!(
            "note: {} has no such platform or environment; every object is new",
            args.base
        );
    }
    if ctx.verbose {
        ctx.timings(&[("layers+base", started.elapsed())]);
    }
    opts.layers_of = opts.reach.is_some().then(|| compiled_envs.clone());
    // One environment at a time, both sides side by side (a change to one
    // large component is otherwise compiled on one thread at a time): memory
    // holds one environment's objects of each side.
    // Compiled whole, both sides' environments are.
    let mut envs = compiled_envs;
    if opts.reach.is_none() {
        envs.extend(
            base_prepared
                .iter()
                .flat_map(|p| p.platform.environments.keys().cloned()),
        );
    }
    let mut d = diff::Diff::default();
    let mut spent: [Vec<(&'static str, std::time::Duration)>; 2] = Default::default();
    let mut compared = std::time::Duration::ZERO;
    // The last environment's compile takes each side's platform; the others
    // compile a copy.
    let (mut prepared, mut base_prepared) = (Some(prepared), base_prepared);
    let last = envs.len().saturating_sub(1);
    let mut finished = Vec::new();
    for (i, env) in envs.into_iter().enumerate() {
        let only = opts.reach.as_ref().and_then(|r| r.envs.get(&env).cloned()).flatten();
        // What the change does not reach merges and renders the same on
        // both sides: each such component is done once, for both. (A reach,
        // and so `only`, is there only when the base has the platform.)
        let shared = only
            .as_ref()
            .zip(prepared.as_ref())
            .map(|(reached, p)| Arc::new(render::Shared::new(&p.platform, &env, reached)));
        let one = Options {
            reach: Some(Reach {
                envs: BTreeMap::from([(env, only)]),
            }),
            shared,
            ..opts.clone()
        };
        let (head_side, base_side) = if i == last {
            (prepared.take(), base_prepared.take())
        } else {
            (None, None)
        };
        let (head, base) = rayon::join(
            || match (head_side, prepared.as_ref()) {
                (Some(p), _) => p.collect(&ctx.world, &sources, &one),
                (None, Some(p)) => p.collect_copy(&ctx.world, &sources, &one),
                // Not reached: only the last compile takes the platform.
                (None, None) => Err(Vec::new()),
            },
            || match base_side {
                Some(p) => Some(p.collect(&rev.world, &base_sources, &one)),
                None => base_prepared
                    .as_ref()
                    .map(|p| p.collect_copy(&rev.world, &base_sources, &one)),
            },
        );
        let head = match head {
            Ok(c) => c,
            Err(mut diags) => {
                ctx.report(&mut diags);
                return exit::INPUT;
            }
        };
        let base = match base.transpose() {
            Ok(b) => b,
            Err(mut diags) => return base_failed(ctx, args, &rev.commit, &base_sources, &mut diags),
        };
        add_timings(&mut spent[0], &head.timings);
        if let Some(b) = &base {
            add_timings(&mut spent[1], &b.timings);
        }
        let started = std::time::Instant::now();
        d.absorb(diff::diff(base.as_ref(), &head));
        compared += started.elapsed();
        // Only the last environment's compile, and what its two sides
        // shared, are left to the exit.
        if i == last {
            finished.push((head, base, one));
        }
    }
    if ctx.verbose {
        eprintln!("the working tree:");
        ctx.timings(&spent[0]);
        if has_base {
            eprintln!("{}:", args.base);
            ctx.timings(&spent[1]);
        }
        ctx.timings(&[("compare", compared)]);
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
    let code = if args.exit_code && !d.is_empty() {
        exit::FINDINGS
    } else {
        exit::OK
    };
    // The process is about to exit: its memory goes back with it, rather
    // than value by value (see `Compiled::leave`).
    std::mem::forget((finished, d, rev, prepared, base_prepared, sources, base_sources));
    code
}

/// Sums the stage times of one more compile.
fn add_timings(into: &mut Vec<(&'static str, std::time::Duration)>, more: &[(&'static str, std::time::Duration)]) {
    for (stage, t) in more {
        pipeline::add_time(into, stage, *t);
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
