//! `strata charts pull [--update]`: fetch every pinned chart into the store
//! and write `strata.lock`. The only command that uses the network.

use clap::{Args, Subcommand};

use super::{Context, exit};
use crate::charts::{self, State, pull};
use crate::helm::Helm;

#[derive(Args, Debug)]
pub struct ChartsArgs {
    #[command(subcommand)]
    pub command: ChartsCommand,
}

#[derive(Subcommand, Debug)]
pub enum ChartsCommand {
    /// Fetch every chart pinned in a config.yaml (and the remote dependencies
    /// of charts in the repository) into .strata/charts/, and write strata.lock
    Pull(PullArgs),
}

#[derive(Args, Debug)]
pub struct PullArgs {
    /// Resolve every chart again, even those strata.lock pins and the store has
    #[arg(long)]
    pub update: bool,
}

pub fn run(ctx: &Context, args: &ChartsArgs) -> i32 {
    match &args.command {
        ChartsCommand::Pull(p) => pull_charts(ctx, p),
    }
}

fn pull_charts(ctx: &Context, args: &PullArgs) -> i32 {
    let platform = match crate::load::load(&ctx.world, &ctx.sources, None) {
        Ok(p) => p,
        Err(mut d) => {
            ctx.report(&mut d);
            return exit::INPUT;
        }
    };
    let lock = match charts::lock::read(&ctx.world, &ctx.sources) {
        Ok(l) => l.unwrap_or_default(),
        Err(mut d) => {
            ctx.report(&mut d);
            return exit::INPUT;
        }
    };
    let Some(helm_path) = &ctx.inflate.helm else {
        eprintln!("error: `strata charts pull` fetches charts with helm, and there is no helm on the PATH");
        eprintln!(
            "  = help: install helm v4 (e.g. `go install helm.sh/helm/v4/cmd/helm@v4.3.2`), or set STRATA_HELM to its path"
        );
        return exit::INPUT;
    };
    let state = State::new(&ctx.root, lock);
    let prepared = ["", "helm", "charts"]
        .iter()
        .try_for_each(|sub| crate::world::ensure_state_dir(&state.dir, std::path::Path::new(sub)).map(|_| ()));
    if let Err(e) = prepared {
        eprintln!("error: cannot create {}: {e}", state.dir.display());
        return exit::INPUT;
    }
    let helm = match Helm::new(helm_path, &state.dir.join("helm"), ctx.inflate.user_helm_config.clone()) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!(
                "  = help: check that {} is a working helm v4 binary",
                helm_path.display()
            );
            return exit::INPUT;
        }
    };
    match pull::pull(&ctx.world, &platform, &state, &helm, args.update) {
        Ok(outcome) => {
            if let Some(text) = &outcome.lock_text
                && let Err(e) = crate::world::disk::write_atomic(&ctx.root.join(charts::lock::FILE), text.as_bytes())
            {
                eprintln!("error: cannot write {}: {e}", charts::lock::FILE);
                return exit::INPUT;
            }
            if ctx.verbose {
                for f in &outcome.fetched {
                    eprintln!("  fetched {f}");
                }
            }
            ctx.info(&format!(
                "{} chart(s) fetched, {} already in the store; {}",
                outcome.fetched.len(),
                outcome.kept.len(),
                if outcome.lock_text.is_some() {
                    format!("wrote {} (commit it)", charts::lock::FILE)
                } else {
                    format!("{} is up to date", charts::lock::FILE)
                }
            ));
            exit::OK
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("error: cannot pull {}: {}", e.chart, e.message);
                eprintln!("  = help: {}", e.help);
            }
            eprintln!("{} was not changed", charts::lock::FILE);
            exit::INPUT
        }
    }
}
