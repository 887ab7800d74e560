//! `strata check`: load, validate and check the invariants; write nothing.

use clap::{Args, ValueEnum};

use super::{Context, exit};
use crate::diag::{self, ci::Checkout};
use crate::pipeline::{self, Options};
use crate::world::World;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    /// SARIF 2.1.0, for code scanning
    Sarif,
    /// GitHub Actions workflow annotations
    Github,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Only this environment (default: all)
    #[arg(long, value_name = "ENV")]
    pub env: Option<String>,
    #[command(flatten)]
    pub schema: super::SchemaArgs,
    /// Output format of the findings
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn run(ctx: &Context, args: &CheckArgs) -> i32 {
    let opts = Options {
        env: args.env.clone(),
        shard: ctx.shard,
        target: None,
        schemas: args.schema.settings(),
        inflate: ctx.inflate.clone(),
        layout: ctx.layout(None),
        admission: Some(admission_settings(ctx)),
        ..Options::default()
    };
    let (mut diags, input_error) = match pipeline::judge(&ctx.world, &ctx.sources, &opts) {
        Ok(mut c) => {
            ctx.shard_note(c.platform.environments.keys());
            ctx.timings(&c.timings);
            let findings = std::mem::take(&mut c.findings);
            c.leave();
            (findings, false)
        }
        Err(d) => (d, true),
    };
    // Every format gets the same scrubbed findings.
    diag::scrub(&mut diags, &ctx.sources);
    diag::normalize(&mut diags);
    match args.format {
        Format::Text => {
            // Which workloads the HA rules judge, up front.
            let (mut judged, mut rest): (Vec<_>, Vec<_>) =
                diags.iter().cloned().partition(|d| d.code == diag::codes::HA_JUDGED);
            ctx.report(&mut judged);
            ctx.report(&mut rest);
            if diags.is_empty() {
                ctx.info("no findings");
            }
        }
        Format::Json => print!("{}", diag::render_json(&diags)),
        Format::Sarif => {
            let sarif = diag::render_sarif(
                &diags,
                &super::rule::metadata(),
                env!("CARGO_PKG_VERSION"),
                &checkout(ctx, &diags),
            );
            print!(
                "{}",
                ctx.shard.map_or_else(|| sarif.clone(), |s| categorised(&sarif, s))
            );
        }
        Format::Github => print!("{}", diag::render_github(&diags, &checkout(ctx, &diags))),
    }
    if input_error {
        exit::INPUT
    } else if diags.iter().any(|d| d.severity == diag::Severity::Error) {
        exit::FINDINGS
    } else {
        exit::OK
    }
}

/// The admission preview's programs: `STRATA_ADMISSION` and
/// `STRATA_KYVERNO` if set (`off` turns one off), else on the `PATH`, else
/// beside the chart renderer; each run bounded like a helm run.
#[allow(clippy::disallowed_methods)]
fn admission_settings(ctx: &Context) -> crate::admission::Settings {
    use crate::admission::{ADMISSION, KYVERNO};
    use crate::helm::program::{self, Program};
    let home = ctx
        .inflate
        .state_root
        .as_ref()
        .and_then(|r| {
            crate::world::ensure_state_dir(&r.join(crate::charts::STATE_DIR), std::path::Path::new("admission")).ok()
        })
        .unwrap_or_else(|| std::env::temp_dir().join("strata-admission"));
    let path = std::env::var_os("PATH");
    let found = |name: &str, var: &str| {
        program::find(
            name,
            std::env::var_os(var).as_deref(),
            path.as_deref(),
            ctx.inflate.renderer.as_deref(),
        )
        .map(|p| Program {
            path: p,
            home: home.clone(),
        })
        .map_err(|why| format!("{why} ({var})"))
    };
    crate::admission::Settings {
        admission: found(ADMISSION, "STRATA_ADMISSION"),
        kyverno: found(KYVERNO, "STRATA_KYVERNO"),
        timeout: ctx.inflate.helm_limits.timeout,
    }
}

/// A shard's SARIF log, its run categorised by the shard
/// (`automationDetails.id` `strata/shard-K-of-N/`): code scanning keeps one
/// analysis per category, so the N uploads of a matrix stand side by side
/// instead of each replacing the last.
fn categorised(sarif: &str, shard: crate::load::Shard) -> String {
    let Ok(mut log) = serde_json::from_str::<serde_json::Value>(sarif) else {
        return sarif.to_owned();
    };
    let id = format!("strata/shard-{}-of-{}/", shard.k, shard.n);
    if let Some(run) = log["runs"].get_mut(0) {
        run["automationDetails"] = serde_json::json!({ "id": id });
    }
    let mut out = serde_json::to_string_pretty(&log).unwrap_or_else(|_| sarif.to_owned());
    out.push('\n');
    out
}

/// Where the strata root sits in its git checkout, so that SARIF and GitHub
/// name files as the repository does. The top comes from the user's own
/// `git`; outside a repository, or without git, paths stay relative to the
/// strata root, silently.
fn checkout(ctx: &Context, diags: &[diag::Diagnostic]) -> Checkout {
    let top = crate::world::git::toplevel(&ctx.root);
    Checkout::new(&ctx.root, top.as_deref(), diags, |f| ctx.world.is_file(f))
}
