//! `strata render`: compile and write the tree, or with `--check` compare it
//! with the tree on disk.

use std::path::PathBuf;

use clap::Args;

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

pub fn run(ctx: &Context, args: &RenderArgs) -> i32 {
    let opts = Options {
        env: args.env.clone(),
        target: args.target.map(Into::into),
        schemas: args.schema.settings(),
    };
    let compiled = match pipeline::compile(&ctx.world, &ctx.sources, &opts) {
        Ok(c) => c,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    };
    let mut findings = compiled.findings.clone();
    ctx.report(&mut findings);
    if compiled.has_errors() {
        ctx.info("error: the invariants failed; nothing was written");
        return exit::FINDINGS;
    }
    let out = match &args.out {
        Some(o) => super::cli_path(o),
        None => ctx.root.join(&compiled.platform.project.output),
    };
    let display = out
        .strip_prefix(&ctx.root)
        .map_or_else(|_| out.display().to_string(), |p| p.display().to_string());

    if args.check {
        return match emit::check(&out, &compiled.files, &compiled.scope) {
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
                let mut cmd = String::from("strata render");
                if let Some(e) = &args.env {
                    cmd.push_str(&format!(" --env {e}"));
                }
                eprintln!("  = help: run `{cmd}` and commit the result");
                exit::FINDINGS
            }
            Err(e) => {
                eprintln!("error: {e}");
                exit::INPUT
            }
        };
    }

    match emit::write(&out, &compiled.files, &compiled.scope, args.force) {
        Ok(o) if o.unchanged => {
            ctx.info(&format!("{display} is up to date ({} files)", compiled.files.len()));
            exit::OK
        }
        Ok(o) => {
            ctx.info(&format!(
                "wrote {display}: {} file(s) written, {} removed, {} in all",
                o.written,
                o.removed,
                compiled.files.len()
            ));
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
        Err(e @ WriteError::NotOwned { .. }) => {
            eprintln!("error: {e}");
            eprintln!("  = help: choose an empty folder with --out, or pass --force to let strata take it over");
            exit::INPUT
        }
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("nothing was written; the previous tree is unchanged");
            exit::INPUT
        }
    }
}
