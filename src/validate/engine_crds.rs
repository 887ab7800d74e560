//! strata's own Flux and Argo CD objects against the CRDs of the engine the
//! environment runs: where the environment's engine component (a flux2 or
//! argo-cd chart) is rendered, its CRDs are what the cluster's API server
//! will hold, so they say exactly which fields and API versions that
//! release accepts. An object they refuse, or a kind they do not serve at
//! the written version, is an error (E057) that names the release; the
//! schema check of every other object is [`super::Objects`]'.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rayon::prelude::*;

use super::catalog::{Gvk, KindSchema};
use super::{Item, check_object};
use crate::diag::{Diagnostic, codes};
use crate::load::{Chart, Platform};
use crate::render::{EnvRender, Object, Source};
use crate::world::World;

/// The API groups of the objects strata generates for each engine.
const FLUX_GROUPS: &[&str] = &[
    "source.toolkit.fluxcd.io",
    "kustomize.toolkit.fluxcd.io",
    "helm.toolkit.fluxcd.io",
];
const ARGO_GROUPS: &[&str] = &["argoproj.io"];

/// The CRDs of an environment's rendered engine charts.
#[derive(Default)]
pub(super) struct EngineCrds {
    /// Each served kind's schema, with the chart that ships it.
    schemas: BTreeMap<Gvk, (Arc<KindSchema>, String)>,
    /// Each `(group, kind)` the charts ship, with the versions served.
    served: BTreeMap<(String, String), (BTreeSet<String>, String)>,
}

fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

impl EngineCrds {
    /// The CRDs that the environment's inflated engine components render.
    pub(super) fn of(platform: &Platform, r: &EnvRender) -> EngineCrds {
        let mut out = EngineCrds::default();
        for (component, objects) in &r.charts {
            let Some(c) = platform.components.get(component) else {
                continue;
            };
            let groups = match c.chart.name() {
                "flux2" | "flux" => FLUX_GROUPS,
                "argo-cd" => ARGO_GROUPS,
                _ => continue,
            };
            let label = match &c.chart {
                Chart::None => continue,
                Chart::Remote { name, version, .. } => {
                    format!("the CRDs of chart {name} {version} (component {component})")
                }
                Chart::Local { path } => format!("the CRDs of chart {path} (component {component})"),
            };
            let crds: Vec<&Object> = objects
                .iter()
                .filter(|o| o.kind() == "CustomResourceDefinition")
                .filter(|o| groups.contains(&o.value["spec"]["group"].as_str().unwrap_or("")))
                .collect();
            for crd in &crds {
                let spec = &crd.value["spec"];
                let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str()) else {
                    continue;
                };
                let versions = spec["versions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|v| v["served"].as_bool() != Some(false))
                    .filter_map(|v| v["name"].as_str().map(str::to_owned));
                out.served
                    .entry((group.to_owned(), kind.to_owned()))
                    .or_insert_with(|| (BTreeSet::new(), label.clone()))
                    .0
                    .extend(versions);
            }
            for (gvk, schema) in super::crd::registry(crds.iter().copied()) {
                out.schemas.entry(gvk).or_insert((schema, label.clone()));
            }
        }
        out
    }

    /// Whether the engine charts ship the kind of a generated object (at
    /// any version): then these CRDs, not a catalog, judge it.
    pub(super) fn covers(&self, o: &Object) -> bool {
        !self.served.is_empty()
            && o.source == Source::Generated
            && self
                .served
                .contains_key(&(group_of(o.api_version()).to_owned(), o.kind().to_owned()))
    }

    /// Checks the generated objects the engine CRDs cover.
    /// On every thread, a few objects at a time: thousands of them per
    /// environment, each validated against its CRD's schema.
    pub(super) fn check(&self, world: &dyn World, platform: &Platform, items: &[Item<'_>]) -> Vec<Diagnostic> {
        items
            .par_iter()
            .with_max_len(8)
            .flat_map_iter(|item| self.check_one(world, platform, item))
            .collect()
    }

    fn check_one(&self, world: &dyn World, platform: &Platform, item: &Item<'_>) -> Vec<Diagnostic> {
        let o = item.obj;
        let gvk = (o.api_version().to_owned(), o.kind().to_owned());
        let Some((schema, label)) = self.schemas.get(&gvk) else {
            return vec![not_served(self, item, o)];
        };
        let mut out = check_object(world, None, platform, item, Some(Arc::clone(schema)));
        for d in &mut out {
            d.code = codes::ENGINE_CRD;
            d.message = format!("{} refuse it: {}", label, d.message);
            d.help = Some(remedy(d.help.take()));
        }
        out
    }
}

fn remedy(first: Option<String>) -> String {
    let then = "if the cluster runs a newer release than the chart says, set `engines:` in strata.yaml; \
                if a `patches:` entry writes the field, remove it";
    match first {
        Some(h) => format!("{h}; {then}"),
        None => then.to_owned(),
    }
}

fn not_served(crds: &EngineCrds, item: &Item<'_>, o: &Object) -> Diagnostic {
    let key = (group_of(o.api_version()).to_owned(), o.kind().to_owned());
    let (versions, label) = crds.served.get(&key).cloned().unwrap_or_default();
    let served: Vec<String> = versions.iter().map(|v| format!("{}/{v}", key.0)).collect();
    Diagnostic::error(
        codes::ENGINE_CRD,
        o.origin.clone(),
        format!(
            "{} in {}: {label} serve {} as {}, not {}",
            o.id(),
            item.paths[0],
            o.kind(),
            served.join(", "),
            o.api_version()
        ),
    )
    .with_help(
        "set `engines:` in strata.yaml to the release the cluster runs, so that strata writes the API version it serves, \
         or upgrade the engine chart",
    )
    .in_env(item.env)
}
