//! `strata schemas pull [--update]`: fetch the schemas of every kind the
//! platform renders into `.strata/schemas/`, for offline validation; and
//! `strata schemas export DIR`: write the JSON Schemas of strata's own
//! inputs, for editors (needs no repository).

use std::collections::BTreeSet;

use clap::{Args, Subcommand};

use super::{Context, exit};
use crate::pipeline::{self, Options};
use crate::validate::pull;

#[derive(Args, Debug)]
pub struct SchemasArgs {
    #[command(subcommand)]
    pub command: SchemasCommand,
}

#[derive(Subcommand, Debug)]
pub enum SchemasCommand {
    /// Fetch the Kubernetes schemas of `kubernetes_version` and the custom
    /// resources' schemas of every kind the platform renders, into .strata/schemas/
    Pull(PullArgs),
    /// Write the JSON Schemas of strata's own inputs (strata.yaml,
    /// config.yaml, environments, contracts, measurements) into DIR, for editors
    Export(ExportArgs),
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The folder to write into, created if missing; a file of the same
    /// name that is not one of strata's schemas is never replaced
    #[arg(value_name = "DIR")]
    pub dir: std::path::PathBuf,
}

/// Every schema of strata's inputs, as `schemas/` in its repository holds
/// them: the ones inputs are checked against, and the measurements'.
pub fn exported() -> Vec<(&'static str, &'static str)> {
    let mut all = crate::validate::schemas::BUILTIN.to_vec();
    all.push((
        "measurements.schema.json",
        include_str!("../../schemas/measurements.schema.json"),
    ));
    all.sort();
    all
}

/// Writes the schemas into `dir`: each file whole (a temporary file, then a
/// rename), replacing only a schema of strata's own (the same `$id`).
pub fn export(quiet: bool, args: &ExportArgs) -> i32 {
    let dir = super::cli_path(&args.dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: cannot create {}: {e}", args.dir.display());
        return exit::INPUT;
    }
    let schemas = exported();
    // Check every file before writing any.
    for (file, _) in &schemas {
        let path = dir.join(file);
        match std::fs::symlink_metadata(&path) {
            Err(_) => {}
            Ok(m) if m.is_file() && same_id(&path, file) => {}
            Ok(_) => {
                eprintln!(
                    "error: {} exists and is not strata's {file}; nothing was written\n  = help: move it away, or export into another folder",
                    path.display()
                );
                return exit::INPUT;
            }
        }
    }
    for (file, text) in &schemas {
        let path = dir.join(file);
        if let Err(e) = crate::world::disk::replace_file(&path, text.as_bytes()) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return exit::INPUT;
        }
    }
    if !quiet {
        eprintln!(
            "wrote {} schema(s) to {}; point your editor at them, e.g. `# yaml-language-server: $schema=<path>/environment.schema.json`",
            schemas.len(),
            args.dir.display()
        );
    }
    exit::OK
}

/// Whether the file at `path` is strata's schema `file` (any version).
fn same_id(path: &std::path::Path, file: &str) -> bool {
    crate::world::disk::read_regular(path, crate::yaml::MAX_INPUT_BYTES as u64)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v["$id"].as_str() == Some(file))
}

#[derive(Args, Debug)]
pub struct PullArgs {
    /// Fetch every schema again, even those already in .strata/schemas/
    #[arg(long)]
    pub update: bool,
}

pub fn run(ctx: &Context, args: &SchemasArgs) -> i32 {
    let p = match &args.command {
        SchemasCommand::Pull(p) => p,
        SchemasCommand::Export(e) => return export(ctx.quiet, e),
    };
    let opts = Options {
        inflate: ctx.inflate.clone(),
        layout: ctx.layout(None),
        ..Options::default()
    };
    let compiled = match pipeline::compile(&ctx.world, &ctx.sources, &opts) {
        Ok(c) => c,
        Err(mut d) => {
            ctx.report(&mut d);
            return exit::INPUT;
        }
    };
    let mut gvks = BTreeSet::new();
    for r in &compiled.renders {
        for o in r.targets.values().flatten().chain(r.charts.values().flatten()) {
            gvks.insert((o.api_version().to_owned(), o.kind().to_owned()));
        }
    }
    let project = &compiled.platform.project;
    match pull::pull(
        &ctx.root,
        &gvks,
        &project.kubernetes_version,
        &project.schemas_source,
        p.update,
    ) {
        Ok(o) => {
            if !o.unpublished.is_empty() {
                eprintln!(
                    "warning: no published schema for {}; validation will say so for these kinds",
                    o.unpublished.join(", ")
                );
            }
            ctx.info(&format!(
                "{} schema(s) fetched, {} already in {}",
                o.fetched.len(),
                o.kept.len(),
                pull::DIR
            ));
            exit::OK
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("error: cannot pull a schema: {e}");
            }
            eprintln!("  = help: check the network, or point `schemas_source:` in strata.yaml at a reachable copy");
            exit::INPUT
        }
    }
}
