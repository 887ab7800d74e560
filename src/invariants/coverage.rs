//! What the chart profiles cover in one environment, said where it matters:
//! a chart whose version lies outside the range of the profile the rules
//! judge it through (only when they do: not for a chart helm renders), and,
//! on `topology: ha`, the components no rule checks at all — their chart is
//! not rendered and no profile describes it. A component without a chart
//! is its manifests, judged as the objects they are: it is neither.

use super::{Ctx, RULES, runs};
use crate::diag::{Diagnostic, codes};
use crate::load::{Chart, Topology};

/// The rules that read what runs through chart profiles when a chart is
/// not rendered.
const READ_PROFILES: &[&str] = &["HA001", "HA002", "HA003", "NET001", "CAP001", "STO001"];

/// The coverage warnings of one environment.
pub fn check(ctx: &Ctx<'_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if !RULES.iter().any(|r| READ_PROFILES.contains(&r.code) && runs(ctx, r)) {
        return out;
    }
    let mut unchecked = Vec::new();
    for c in ctx.platform.components_in(ctx.env) {
        if c.chart == Chart::None {
            continue;
        }
        let rendered = ctx.render.inflated(&c.name);
        let bindings = ctx.bindings(c);
        if !rendered && bindings.is_empty() {
            unchecked.push(c.name.as_str());
            continue;
        }
        let info = ctx.render.chart_info.get(&c.name).map(AsRef::as_ref);
        for b in &bindings {
            // The profile is used for what the chart's software creates at
            // run time, and for everything of a chart not rendered.
            let used = !rendered || b.profile.workloads.iter().any(|w| w.runtime);
            let enabled = b.nested.as_ref().is_none_or(|n| ctx.dependency_enabled(c, n));
            if used && enabled {
                out.extend(crate::profiles::out_of_range(ctx.platform, c, b, info));
            }
        }
    }
    if ctx.env.topology == Topology::Ha && !unchecked.is_empty() {
        out.push(unchecked_warning(ctx, &unchecked));
    }
    out
}

/// One warning naming every component of the environment no rule checks.
fn unchecked_warning(ctx: &Ctx<'_>, names: &[&str]) -> Diagnostic {
    let listed = crate::load::decode::list_names(names.iter().copied(), ", ");
    let (they, run) = if names.len() == 1 {
        ("its", "runs")
    } else {
        ("their", "run")
    };
    Diagnostic::warning(
        codes::PROFILE_JUDGED,
        ctx.env.topology_origin.clone(),
        format!(
            "not checked: no rule sees what {listed} {run}: {they} chart{} not rendered, and no chart profile describes {}",
            if names.len() == 1 { " is" } else { "s are" },
            if names.len() == 1 { "it" } else { "them" },
        ),
    )
    .with_label("the ADR 007 rules apply here")
    .with_note(format!(
        "HA001-HA003, NET001, CAP001 and STO001 judge what a component runs from its rendered chart, or through a chart profile; {} neither",
        if names.len() == 1 { "it has" } else { "these have" }
    ))
    .with_help(format!(
        "render the charts with helm (install helm v4 and run `strata charts pull`), or describe each chart in {}/<chart>.yaml (see substrates/profiles/README.md in strata's source) or name a profile with `profile:` in its config.yaml",
        ctx.platform.project.profiles
    ))
    .in_env(&ctx.env.name)
}
