//! `strata charts pull [--update]`: fetch every pinned chart into the store
//! and write `strata.lock`, the only command that uses the network; and
//! `strata charts add FILE.tgz [--repo URL]`: pin an archive you have,
//! offline.

use std::path::PathBuf;
use std::time::Duration;

/// Prints a line to standard error with the credentials of every URL in
/// it hidden: a repository's or proxy's URL may carry them.
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("{}", crate::secrets::url::redact_userinfo(&format!($($arg)*)))
    };
}

use clap::{Args, Subcommand};

use super::{Context, exit};
use crate::charts::{self, State, add, pull};
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
    /// Put a chart archive into .strata/charts/ and pin it in strata.lock,
    /// without the network
    Add(AddArgs),
}

#[derive(Args, Debug)]
pub struct PullArgs {
    /// Resolve every chart again, even those strata.lock pins and the store has
    #[arg(long)]
    pub update: bool,
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// The chart archive (.tgz), as `helm package` or `helm pull` writes it
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The repository the chart is pinned from (default: the one repository
    /// the config.yaml files pin this chart name and version from)
    #[arg(long, value_name = "URL")]
    pub repo: Option<String>,
}

pub fn run(ctx: &Context, args: &ChartsArgs) -> i32 {
    match &args.command {
        ChartsCommand::Pull(p) => pull_charts(ctx, p),
        ChartsCommand::Add(a) => add_chart(ctx, a),
    }
}

/// The per-run and whole-command limits of helm, from `STRATA_HELM_TIMEOUT`
/// and `STRATA_HELM_DEADLINE` (seconds; a deadline of 0 is none), and the
/// memory of one render from `STRATA_HELM_MEMORY` (MiB).
#[allow(clippy::disallowed_methods)]
pub(super) fn helm_limits() -> Result<crate::helm::Limits, String> {
    let seconds = |name: &str| -> Result<Option<u64>, String> {
        match std::env::var(name) {
            Err(_) => Ok(None),
            Ok(v) if v.trim().is_empty() => Ok(None),
            Ok(v) => v
                .trim()
                .parse::<u64>()
                .map(Some)
                .map_err(|_| format!("{name}={v} is not a whole number of seconds")),
        }
    };
    let mut limits = crate::helm::Limits::default();
    match seconds("STRATA_HELM_TIMEOUT")? {
        Some(0) => return Err("STRATA_HELM_TIMEOUT=0: a helm run needs some time; give a number of seconds".into()),
        Some(t) => limits.timeout = Duration::from_secs(t),
        None => {}
    }
    if let Some(d) = seconds("STRATA_HELM_DEADLINE")? {
        limits.run = (d > 0).then(|| Duration::from_secs(d));
    }
    match std::env::var("STRATA_HELM_MEMORY")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        None => {}
        Some(v) => match v.trim().parse::<u64>() {
            // Go's runtime alone needs some tens of MiB.
            Ok(mib) if (64..=1 << 20).contains(&mib) => limits.memory = mib << 20,
            _ => {
                return Err(format!(
                    "STRATA_HELM_MEMORY={v} is not a number of MiB from 64 to 1048576"
                ));
            }
        },
    }
    Ok(limits)
}

/// The proxy and CA variables of strata's environment, for pulls only.
#[allow(clippy::disallowed_methods)]
pub(super) fn network_env() -> Vec<(String, String)> {
    crate::helm::NETWORK_VARS
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_owned(), v)))
        .collect()
}

fn load(ctx: &Context) -> Result<(crate::load::Platform, charts::Lock), i32> {
    let platform = match crate::load::load(&ctx.world, &ctx.sources, None) {
        Ok(p) => p,
        Err(mut d) => {
            ctx.report(&mut d);
            return Err(exit::INPUT);
        }
    };
    match charts::lock::read(&ctx.world, &ctx.sources) {
        Ok(l) => Ok((platform, l.unwrap_or_default())),
        Err(mut d) => {
            ctx.report(&mut d);
            Err(exit::INPUT)
        }
    }
}

fn pull_charts(ctx: &Context, args: &PullArgs) -> i32 {
    let (platform, lock) = match load(ctx) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let state = State::new(&ctx.root, lock);
    let prepared = ["", "helm", "charts"]
        .iter()
        .try_for_each(|sub| crate::world::ensure_state_dir(&state.dir, std::path::Path::new(sub)).map(|_| ()));
    if let Err(e) = prepared {
        say!("error: cannot create {}: {e}", state.dir.display());
        return exit::INPUT;
    }
    let vars = network_env();
    let http = match charts::http::Http::new(&vars) {
        Ok(h) => h,
        Err(e) => {
            say!("error: {e}");
            say!("  = help: fix or unset the variable; strata reads proxies and CAs as helm does");
            return exit::INPUT;
        }
    };
    // helm pulls from OCI registries; Helm repositories need none.
    let helm = ctx.inflate.helm.as_ref().and_then(|path| {
        Helm::new(path, &state.dir.join("helm"), ctx.inflate.user_helm_config.clone())
            .map_err(|e| say!("warning: helm cannot be used, so no chart can be pulled from an OCI registry: {e}"))
            .ok()
            .map(|h| h.with_limits(ctx.inflate.helm_limits).with_network_env(vars.clone()))
    });
    let net = pull::Net {
        http: &http,
        helm: helm.as_ref(),
        mirrors: &platform.project.charts,
    };
    let outcome = pull::pull(&ctx.world, &platform, &state, &net, args.update);
    // strata.yaml's mirrors that nothing was fetched through (an
    // environment's serve its objects, not the pull).
    let mut unused: Vec<_> = charts::mirrors::unused(&ctx.world, &platform, &outcome.lock)
        .into_iter()
        .filter(|d| d.env.is_none())
        .collect();
    if !unused.is_empty() {
        ctx.report(&mut unused);
    }
    report_pull(ctx, &outcome)
}

fn report_pull(ctx: &Context, outcome: &pull::Outcome) -> i32 {
    let wrote = match &outcome.lock_text {
        Some(text) => match crate::world::disk::write_atomic(&ctx.root.join(charts::lock::FILE), text.as_bytes()) {
            Ok(()) => true,
            Err(e) => {
                say!("error: cannot write {}: {e}", charts::lock::FILE);
                return exit::INPUT;
            }
        },
        None => false,
    };
    if ctx.verbose {
        for f in &outcome.fetched {
            say!("  fetched {f}");
        }
    }
    for e in &outcome.errors {
        say!("error: cannot pull {}: {}", e.chart, e.message);
        say!("  = help: {}", e.help);
    }
    let lock = charts::lock::FILE;
    let state = match (wrote, outcome.errors.is_empty()) {
        (true, true) => format!("wrote {lock} (commit it)"),
        (false, true) => format!("{lock} is up to date"),
        (true, false) => format!(
            "wrote {lock} with every chart that resolved; the {} that did not keep what {lock} had for them",
            outcome.errors.len()
        ),
        (false, false) => format!("{lock} was not changed"),
    };
    let summary = format!(
        "{} chart(s) fetched, {} already in the store{}; {state}",
        outcome.fetched.len(),
        outcome.kept.len(),
        if outcome.errors.is_empty() {
            String::new()
        } else {
            format!(", {} could not be pulled", outcome.errors.len())
        }
    );
    if outcome.errors.is_empty() {
        ctx.info(&crate::secrets::url::redact_userinfo(&summary));
        exit::OK
    } else {
        say!("{summary}");
        exit::INPUT
    }
}

fn add_chart(ctx: &Context, args: &AddArgs) -> i32 {
    let (platform, lock) = match load(ctx) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let state = State::new(&ctx.root, lock);
    let file = super::cli_path(&args.file);
    if let Err(e) = crate::world::ensure_state_dir(&state.dir, std::path::Path::new("charts")) {
        say!("error: cannot create {}: {e}", state.dir.display());
        return exit::INPUT;
    }
    match add::add(&platform, &state, &file, args.repo.as_deref()) {
        Ok(added) => {
            if let Some(text) = &added.lock_text
                && let Err(e) = crate::world::disk::write_atomic(&ctx.root.join(charts::lock::FILE), text.as_bytes())
            {
                say!("error: cannot write {}: {e}", charts::lock::FILE);
                return exit::INPUT;
            }
            for n in &added.notes {
                say!("note: {n}");
            }
            let e = &added.entry;
            ctx.info(&crate::secrets::url::redact_userinfo(&format!(
                "{} {} from {} is {}; {}",
                e.name,
                e.version,
                e.repo_url,
                e.digest,
                if added.lock_text.is_some() {
                    format!("pinned in {} (commit it)", charts::lock::FILE)
                } else {
                    format!("{} pinned it already", charts::lock::FILE)
                }
            )));
            exit::OK
        }
        Err(e) => {
            say!("error: cannot add {}: {}", args.file.display(), e.message);
            say!("  = help: {}", e.help);
            exit::INPUT
        }
    }
}
