//! `strata render`: compile and write the tree, or with `--check` compare it
//! with the tree on disk.

use std::path::PathBuf;

use clap::Args;
use rayon::prelude::*;

use super::{Context, TargetArg, exit};
use crate::emit::{self, StaleKind, WriteError};
use crate::pipeline::{self, Options};

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
    let opts = Options {
        env: args.env.clone(),
        target: args.target.map(Into::into),
        schemas: args.schema.settings(),
        inflate: ctx.inflate.clone(),
        layout: ctx.layout(args.out.as_deref()),
    };
    let compiled = match pipeline::compile(&ctx.world, &ctx.sources, &opts) {
        Ok(c) => c,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    };
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
        return exit::FINDINGS;
    }
    let out = match &args.out {
        Some(o) => super::cli_path(o),
        None => ctx.root.join(&compiled.platform.project.output),
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

    if args.check {
        return match check_tree(ctx, &placement, &compiled) {
            Ok(stale) if stale.is_empty() => {
                ctx.info(&format!("{display} is up to date ({} files)", compiled.files.len()));
                exit::OK
            }
            Ok(stale) => {
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
            Err(e) => {
                print_error(&e);
                exit::INPUT
            }
        };
    }

    match write_tree(ctx, &placement, &compiled, args.force) {
        Ok(o) => {
            for note in &o.notes {
                ctx.info(&format!("warning: {note}"));
            }
            if o.unchanged {
                ctx.info(&format!("{display} is up to date ({} files)", compiled.files.len()));
            } else {
                ctx.info(&format!(
                    "wrote {display}: {} file(s) written, {} removed, {} in all",
                    o.written,
                    o.removed,
                    compiled.files.len()
                ));
            }
            exit::OK
        }
        Err(WriteError::Edited(files)) => {
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
            exit::INPUT
        }
        // Not "unchanged": the folder was not strata's, or the previous
        // tree is whole but not in place.
        Err(e @ (WriteError::NotOwned { .. } | WriteError::Stranded { .. })) => {
            print_error(&e);
            exit::INPUT
        }
        Err(e) => {
            print_error(&e);
            eprintln!("nothing was written; the previous tree is unchanged");
            exit::INPUT
        }
    }
}

fn print_error(e: &WriteError) {
    eprintln!("error: {e}");
    eprintln!("  = help: {}", e.help());
}

/// Hands every file to the checker, in parallel.
fn check_tree(
    ctx: &Context,
    placement: &emit::Placement,
    compiled: &pipeline::Compiled,
) -> Result<Vec<emit::Stale>, WriteError> {
    let checker = emit::Checker::begin(&placement.out, compiled.scope.clone())?;
    for w in checker.warnings() {
        ctx.info(&format!("warning: {w}"));
    }
    compiled
        .files
        .par_iter()
        .try_for_each(|(path, content)| checker.put(path, content.as_bytes()))?;
    Ok(checker.finish())
}

/// Hands every file to the writer, in parallel, and lets it swap the tree in.
fn write_tree(
    ctx: &Context,
    placement: &emit::Placement,
    compiled: &pipeline::Compiled,
    force: bool,
) -> Result<emit::WriteOutcome, WriteError> {
    placement.prepare()?;
    let opts = emit::WriteOptions {
        scope: compiled.scope.clone(),
        force,
    };
    let writer = emit::Writer::begin(&placement.out, &placement.state_dir, opts)?;
    for w in writer.warnings() {
        ctx.info(&format!("warning: {w}"));
    }
    compiled
        .files
        .par_iter()
        .try_for_each(|(path, content)| writer.put(path, content.as_bytes()))?;
    writer.finish()
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
