//! What `strata explain` knows of a component's chart without helm: the
//! chart as the store (or the repository) has it, and the defaults it and
//! its chart profile give.

use super::Inputs;
use crate::charts::{self, Ready, State, Unavailable};
use crate::load::{Chart, Component, Platform};
use crate::profiles::known::{self, Knowledge, KnownChart, ProfileDoc};

/// The component's chart as strata has it (the store's archive, or the
/// local chart), read without helm; or why not.
pub fn chart_of(inputs: &Inputs<'_>, component: &Component) -> Result<Ready, String> {
    let Some(root) = &inputs.inflate.state_root else {
        return Err("no chart store".into());
    };
    let lock = charts::lock::read(inputs.world, inputs.sources)
        .ok()
        .flatten()
        .unwrap_or_default();
    let state = State::new(root, lock);
    // Only this component's chart is read.
    let platform = inputs.platform;
    let one = Platform {
        project: platform.project.clone(),
        components: [(component.name.clone(), component.clone())].into_iter().collect(),
        environments: Default::default(),
        substrates: Default::default(),
        templates: Default::default(),
        secrets: Default::default(),
    };
    let mut resolved = charts::resolve(inputs.world, &one, &state);
    match resolved.charts.remove(&component.name) {
        Some(Ok(r)) => Ok(r),
        Some(Err(u)) => Err(u.reason()),
        None => Err(Unavailable::NotLocked.reason()),
    }
}

/// What the chart (when strata has it) and the component's chart profile
/// say of the chart's defaults.
pub fn knowledge<'a>(inputs: &Inputs<'a>, component: &Component, chart: &Result<Ready, String>) -> Knowledge<'a> {
    Knowledge {
        chart: chart.as_ref().ok().map(|r| KnownChart {
            name: r.info.name.clone(),
            version: r.info.version.clone(),
            location: match &component.chart {
                Chart::Local { path } => path.clone(),
                Chart::Remote { .. } | Chart::None => format!("its archive in {}/charts", charts::STATE_DIR),
            },
            defaults: known::chart_defaults(&r.info),
        }),
        profile: inputs.profiles.for_component(component).map(|p| ProfileDoc {
            node: &p.node,
            file: &p.file,
            versions: &p.versions_text,
        }),
    }
}
