//! `strata schemas pull [--update]`: fetch the schemas of every kind the
//! platform renders into `.strata/schemas/`, for offline validation.

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
}

#[derive(Args, Debug)]
pub struct PullArgs {
    /// Fetch every schema again, even those already in .strata/schemas/
    #[arg(long)]
    pub update: bool,
}

pub fn run(ctx: &Context, args: &SchemasArgs) -> i32 {
    let SchemasCommand::Pull(p) = &args.command;
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
