//! `strata render`: compile and write the tree, or with `--check` compare it
//! with the tree on disk.

use std::path::PathBuf;

use clap::Args;

use super::{Context, TargetArg, exit};
use crate::emit::{self, StaleKind, WriteError};
use crate::pipeline::{self, Failure, Options};

#[derive(Args, Debug)]
pub struct RenderArgs {
    /// Only this environment (default: all)
    #[arg(long, value_name = "ENV")]
    pub env: Option<String>,
    #[command(flatten)]
    pub schema: super::SchemaArgs,
    /// Only this target (default: the environment's targets)
    #[arg(long, value_enum)]
    pub target: Option<TargetArg>,
    /// Write the tree here instead of the `output:` folder of strata.yaml
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Overwrite generated files that were edited by hand, and take over a
    /// non-empty folder strata did not write
    #[arg(long)]
    pub force: bool,
    /// Compare with the tree on disk and write nothing; exit 1 if it is stale
    #[arg(long, conflicts_with = "force")]
    pub check: bool,
}

/// The `output:` of strata.yaml, read ahead of the compile so that an
/// output strata may not write is refused before anything else happens (a
/// broken strata.yaml is left for the compile to report).
fn configured_output(ctx: &Context) -> String {
    let sources = crate::diag::Sources::default();
    crate::load::files::read_yaml(&ctx.world, &sources, crate::load::project::FILE)
        .map(|node| crate::load::project::Project::decode(&node, &mut Vec::new()).output)
        .unwrap_or_else(|_| "rendered".to_owned())
}

pub fn run(ctx: &Context, args: &RenderArgs) -> i32 {
    let early_out = match &args.out {
        Some(o) => super::cli_path(o),
        None => ctx.root.join(configured_output(ctx)),
    };
    if let Err(e) = emit::place(&ctx.root, &early_out) {
        print_error(&e);
        eprintln!("nothing was written");
        return exit::INPUT;
    }
    let mut opts = Options {
        env: args.env.clone(),
        shard: ctx.shard,
        target: args.target.map(Into::into),
        schemas: args.schema.settings(),
        inflate: ctx.inflate.clone(),
        ..Options::default()
    };
    let prepared = match pipeline::prepare(&ctx.world, &ctx.sources, &opts) {
        Ok(p) => p,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    };
    ctx.shard_note(prepared.platform.environments.keys());
    // Asked of git while the platform loaded.
    opts.layout = ctx.layout(args.out.as_deref());
    if args.out.is_some() && opts.layout.output.is_none() {
        ctx.info(&format!(
            "note: the folder of --out is outside the repository, where no engine reads it; the tree names its paths as if it were at {}/",
            prepared.platform.project.output
        ));
    }
    let out = match &args.out {
        Some(o) => super::cli_path(o),
        None => ctx.root.join(&prepared.platform.project.output),
    };
    // Paths as the user can type them: relative to the working directory
    // (a pre-commit hook runs at the top of the git repository, which may be
    // above the strata root), else relative to the root.
    let cwd = std::env::current_dir().ok().and_then(|d| d.canonicalize().ok());
    let display = cwd
        .as_deref()
        .and_then(|d| out.strip_prefix(d).ok())
        .or_else(|| out.strip_prefix(&ctx.root).ok())
        .map_or_else(|| out.display().to_string(), |p| p.display().to_string());
    let display = if display.is_empty() { ".".to_owned() } else { display };
    let placement = match emit::place(&ctx.root, &out) {
        Ok(p) => p,
        Err(e) => {
            print_error(&e);
            eprintln!("nothing was written");
            return exit::INPUT;
        }
    };
    let mut prepared = prepared;
    if let Some(shard) = ctx.shard {
        prepared
            .scope
            .extend(departed(ctx, &placement.out, &prepared.platform, shard));
    }
    if args.check {
        check(ctx, args, &opts, prepared, &placement, &display)
    } else {
        write(ctx, args, &opts, prepared, &placement, &display)
    }
}

/// The folders of environments that are gone from the platform but still
/// in the tree, whose names fall in `shard`: that shard, and only that one,
/// removes (or, with `--check`, reports) the files strata wrote there.
fn departed(
    ctx: &Context,
    out: &std::path::Path,
    platform: &crate::load::Platform,
    shard: crate::load::Shard,
) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(out) else {
        return Vec::new();
    };
    let mut gone: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.') && shard.holds(name))
        .filter(|name| {
            let file = crate::world::join(&platform.project.environments, &format!("{name}.yaml"));
            !crate::world::World::is_file(&ctx.world, &file)
        })
        .collect();
    gone.sort();
    gone
}

/// Reports the compile's findings; `Some(exit code)` when it must stop
/// there: input errors, or findings at error level.
fn stop(ctx: &Context, result: Result<pipeline::Compiled, Failure>) -> Result<pipeline::Compiled, i32> {
    match result {
        Ok(compiled) => {
            ctx.timings(&compiled.timings);
            let mut findings = compiled.findings.clone();
            ctx.report(&mut findings);
            if compiled.has_errors() {
                let errors = compiled
                    .findings
                    .iter()
                    .filter(|d| d.severity == crate::diag::Severity::Error)
                    .count();
                eprintln!("error: {errors} finding(s) at error level; nothing was written");
                return Err(exit::FINDINGS);
            }
            Ok(compiled)
        }
        Err(Failure::Input(mut diags)) => {
            ctx.report(&mut diags);
            Err(exit::INPUT)
        }
        Err(Failure::Emit(e)) => {
            print_error(&e);
            eprintln!("nothing was written; the previous tree is unchanged");
            Err(exit::INPUT)
        }
    }
}

/// `render --check`: each environment's files go to the checker as soon as
/// they are laid out.
fn check(
    ctx: &Context,
    args: &RenderArgs,
    opts: &Options,
    prepared: pipeline::Prepared,
    placement: &emit::Placement,
    display: &str,
) -> i32 {
    let checker = match emit::Checker::begin(&placement.out, prepared.scope.clone()) {
        Ok(c) => c,
        Err(e) => {
            print_error(&e);
            return exit::INPUT;
        }
    };
    for w in checker.warnings() {
        ctx.info(&format!("warning: {w}"));
    }
    let compiled = match stop(ctx, prepared.run(&ctx.world, &ctx.sources, opts, Some(&checker))) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let stale = checker.finish();
    let file_count = compiled.file_count;
    compiled.leave();
    if stale.is_empty() {
        ctx.info(&format!("{display} is up to date ({file_count} files)"));
        return exit::OK;
    }
    eprintln!(
        "error: {display} is stale: {} file(s) differ from what strata renders",
        stale.len()
    );
    for s in &stale {
        let what = match s.kind {
            StaleKind::Missing => "missing",
            StaleKind::Changed => "changed",
            StaleKind::Extra => "no longer rendered",
        };
        eprintln!("  {what:>18}: {display}/{}", s.path);
    }
    eprintln!(
        "  = help: run `{}` and commit the result: `git add {display}`",
        fix_command(args)
    );
    exit::FINDINGS
}

/// `render`: each environment's files go into the writer's staging tree as
/// soon as they are laid out; the tree is swapped in only when the whole
/// compile succeeded, and abandoned otherwise.
fn write(
    ctx: &Context,
    args: &RenderArgs,
    opts: &Options,
    prepared: pipeline::Prepared,
    placement: &emit::Placement,
    display: &str,
) -> i32 {
    let begun = placement.prepare().and_then(|()| {
        emit::Writer::begin(
            &placement.out,
            &placement.state_dir,
            emit::WriteOptions {
                scope: prepared.scope.clone(),
                force: args.force,
            },
        )
    });
    let writer = match begun {
        Ok(w) => w,
        Err(e) => return write_failed(e, display),
    };
    for w in writer.warnings() {
        ctx.info(&format!("warning: {w}"));
    }
    // On any error the writer is dropped unfinished: its staging tree goes,
    // and the tree on disk stays as it was.
    let compiled = match stop(ctx, prepared.run(&ctx.world, &ctx.sources, opts, Some(&writer))) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let file_count = compiled.file_count;
    compiled.leave();
    match writer.finish() {
        Ok(o) => {
            for note in &o.notes {
                ctx.info(&format!("warning: {note}"));
            }
            if o.unchanged {
                ctx.info(&format!("{display} is up to date ({file_count} files)"));
            } else {
                ctx.info(&format!(
                    "wrote {display}: {} file(s) written, {} removed, {file_count} in all",
                    o.written, o.removed
                ));
            }
            exit::OK
        }
        Err(e) => write_failed(e, display),
    }
}

fn write_failed(e: WriteError, display: &str) -> i32 {
    match e {
        WriteError::Edited(files) => {
            eprintln!(
                "error: these files in {display} were edited by hand (or not written by strata) and would be overwritten:"
            );
            for f in &files {
                eprintln!("  {display}/{f}");
            }
            eprintln!(
                "  = help: move the change into the values or manifests it belongs to, or run with --force to overwrite"
            );
            eprintln!("nothing was written");
        }
        // Not "unchanged": the folder was not strata's, or the previous
        // tree is whole but not in place.
        e @ (WriteError::NotOwned { .. } | WriteError::Stranded { .. }) => print_error(&e),
        e => {
            print_error(&e);
            eprintln!("nothing was written; the previous tree is unchanged");
        }
    }
    exit::INPUT
}

fn print_error(e: &WriteError) {
    eprintln!("error: {e}");
    eprintln!("  = help: {}", e.help());
}

/// The `strata render` that brings the tree up to date, with the same selection.
fn fix_command(args: &RenderArgs) -> String {
    let mut cmd = String::from("strata render");
    if let Some(e) = &args.env {
        cmd.push_str(&format!(" --env {e}"));
    }
    if let Some(t) = args.target {
        cmd.push_str(match t {
            TargetArg::Flux => " --target flux",
            TargetArg::Argo => " --target argo",
        });
    }
    if let Some(o) = &args.out {
        cmd.push_str(&format!(" --out {}", o.display()));
    }
    cmd
}
