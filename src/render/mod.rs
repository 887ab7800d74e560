//! Stage 3, render: for each environment and target, the Kubernetes objects
//! strata writes. Flux gets a GitRepository, a Kustomization per component
//! and, per component folder, the Namespace, the chart source and the
//! HelmRelease; Argo CD gets an Application per component. Both get the
//! component manifests and the cluster objects the substrate type generates.

mod argo;
mod cluster;
mod engines;
mod flux;
mod generate;
mod manifests;
mod namespaces;
mod object;
mod output;
mod patches;
mod paths;
mod shared;
pub mod templates;
mod values;

use cluster::*;
pub use engines::Engines;
use generate::*;
use manifests::*;
use namespaces::*;
pub use object::{Deferred, Object, Source, cluster_scoped};
use patches::*;
use paths::*;
pub use paths::{BOOTSTRAP, NAMESPACES, NAMESPACES_APP, ROOT_APP, RepoLayout};
pub use shared::Shared;
pub use values::is_values_marker;
use values::*;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use minijinja::Environment as Engine;
use rayon::prelude::*;
use serde_json::json;

use crate::diag::{Diagnostic, codes};
use crate::load::{Component, Environment, Platform, Target};
use crate::merge::{self, Merged};
use crate::yaml::{self, Origin};

/// The namespace Flux's own objects live in.
pub const FLUX_NAMESPACE: &str = "flux-system";
/// The namespace Argo CD's Applications live in.
pub const ARGO_NAMESPACE: &str = "argocd";
/// The folder and Flux Kustomization / Argo Application of generated cluster objects.
pub const CLUSTER: &str = "cluster";
pub const CLUSTER_APP: &str = "strata-cluster";

/// Everything rendered for one environment.
#[derive(Clone, Debug)]
pub struct EnvRender {
    pub env: String,
    /// Merged values per component.
    pub merged: BTreeMap<String, Merged>,
    /// Objects per target.
    pub targets: BTreeMap<Target, Vec<Object>>,
    /// The objects each inflated component's chart renders (see
    /// [`crate::inflate`]); components judged through profiles have none.
    pub charts: BTreeMap<String, Vec<Object>>,
    /// What strata read of each component's chart archive, when the store
    /// has it (inflated or not): its own defaults, subcharts and aliases.
    pub chart_info: BTreeMap<String, std::sync::Arc<crate::charts::ChartInfo>>,
    /// Warnings about the environment's render that are not errors.
    pub notes: Vec<Diagnostic>,
}

impl EnvRender {
    /// What a change that reaches the components `only` can change here:
    /// theirs, and what every chart that asks for the cluster's API
    /// versions (`.Capabilities.APIVersions`) renders, since such a chart
    /// is given every CRD the environment ships.
    pub fn reachable(&self, only: &BTreeSet<String>) -> BTreeSet<String> {
        let asks = self
            .charts
            .keys()
            .filter(|c| self.chart_info.get(*c).is_some_and(|i| i.any_uses_api_versions()));
        only.iter().chain(asks).cloned().collect()
    }

    /// Whether a component's chart was rendered by helm here.
    pub fn inflated(&self, component: &str) -> bool {
        self.charts.contains_key(component)
    }
}

impl EnvRender {
    /// The component manifests and generated cluster objects (the same for
    /// every target), for rules that read rendered objects.
    pub fn workload_objects(&self) -> impl Iterator<Item = &Object> {
        self.targets
            .values()
            .next()
            .into_iter()
            .flatten()
            .filter(|o| o.source != Source::Generated)
    }
}

/// Renders the selected environments (all when `only` is empty).
pub fn render(
    platform: &Platform,
    target_filter: Option<Target>,
    layout: &RepoLayout,
) -> Result<Vec<EnvRender>, Vec<Diagnostic>> {
    let depths = depths(platform)?;
    let results: Vec<Result<EnvRender, Vec<Diagnostic>>> = platform
        .environments
        .values()
        .collect::<Vec<_>>()
        .par_iter()
        .map(|env| {
            render_env(
                platform,
                env,
                &depths,
                target_filter,
                layout,
                None,
                false,
                &mut Engines::default(),
            )
        })
        .collect();
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for r in results {
        match r {
            Ok(e) => out.push(e),
            Err(d) => diags.extend(d),
        }
    }
    if diags.is_empty() { Ok(out) } else { Err(diags) }
}

/// The depth of each component in the `requires` graph (its sync wave),
/// once the graph and the component names are known to be sound.
pub fn depths(platform: &Platform) -> Result<BTreeMap<String, u32>, Vec<Diagnostic>> {
    let depths = crate::load::graph::depths(&platform.components)?;
    if platform.components.contains_key(CLUSTER_APP) {
        let c = &platform.components[CLUSTER_APP];
        return Err(vec![
            Diagnostic::error(
                codes::NAME,
                c.origin(),
                format!("the component name `{CLUSTER_APP}` is reserved"),
            )
            .with_help("strata names the generated cluster objects' application so; rename the component"),
        ]);
    }
    Ok(depths)
}

/// `work` done for each component, one at a time on each thread, from the
/// last back when `backwards` (see [`Shared`]); the results in the
/// components' order either way.
fn each_component<'c, T: Send>(
    components: &[&'c Component],
    backwards: bool,
    work: impl Fn(&&'c Component) -> T + Sync + Send,
) -> Vec<T> {
    if backwards {
        let mut done: Vec<T> = components.par_iter().rev().with_max_len(1).map(work).collect();
        done.reverse();
        done
    } else {
        components.par_iter().with_max_len(1).map(work).collect()
    }
}

/// Renders one environment. `only` names the components whose generated
/// objects are wanted (all when `None`); every component is still merged
/// and its manifests rendered, since the rules judge the whole environment.
#[allow(clippy::too_many_arguments)]
pub fn render_env<'p>(
    platform: &'p Platform,
    env: &'p Environment,
    depths: &BTreeMap<String, u32>,
    target_filter: Option<Target>,
    layout: &RepoLayout,
    only: Option<&BTreeSet<String>>,
    defer_values: bool,
    engines: &mut Engines<'p>,
) -> Result<EnvRender, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let chosen: Vec<&Component> = platform.components_in(env).collect();

    // Sensitive outputs referred to by any template are errors.
    for c in &chosen {
        for m in c.manifests.iter().filter(|m| m.template) {
            diags.extend(templates::sensitive_references(
                &m.path,
                &m.text,
                &env.contract.sensitive,
            ));
        }
    }
    let mut extra: Vec<(&str, &str)> = Vec::new();
    for c in &chosen {
        for m in c.manifests.iter().filter(|m| m.template) {
            extra.push((&m.path, &m.text));
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let sharing = engines.shared.clone();
    let sharing = sharing.as_deref().and_then(|s| s.of(&env.name));
    // Sharing with the other side of a diff, this side may go from the last
    // component back (see `Shared`).
    let backwards = sharing.is_some_and(Shared::backwards);
    // The engine and rendered manifests are shared only where the two
    // sides' templates are the same.
    let same_templates = sharing.filter(|s| s.same_templates(&extra));
    // The template engine (compiled for the first environment and kept for
    // the next) is compiled beside the merge, which runs per component: on
    // its own it kept the other thread waiting.
    let (merged, engine) = rayon::join(
        || -> BTreeMap<String, Merged> {
            let merge_one = |c: &&Component| {
                let merge = || merge::merge_component(platform, c, env);
                let merged = match sharing {
                    Some(s) => s.merged(&c.name, merge),
                    None => merge(),
                };
                (c.name.clone(), merged)
            };
            each_component(&chosen, backwards, merge_one).into_iter().collect()
        },
        || engines.get(platform, &extra, same_templates),
    );
    let (engine, shared_texts) = engine.map_err(|d| vec![d])?;

    let contract = env.contract.to_json();
    let substrate = env.substrate.0.as_str();
    let namespaces = namespaces(platform, env)?;

    // Component manifests and cluster objects: the same for every target.
    let mut shared: Vec<Object> = Vec::new();
    let per_component = |c: &&Component| {
        let mut objects = Vec::new();
        let mut diags = Vec::new();
        // Built once per component, and only for one with templates: the
        // values are looked up where a template reads them, not copied.
        let mut ctx: Option<minijinja::Value> = None;
        for m in &c.manifests {
            let text = if m.template {
                let ctx = ctx.get_or_insert_with(|| {
                    minijinja::context! {
                        env => &env.name,
                        substrate => substrate,
                        contract => minijinja::Value::from(minijinja::value::Serde(&contract)),
                        values => templates::values(&merged[&c.name].values),
                        component => minijinja::Value::from(minijinja::value::Serde(component_json(c))),
                    }
                });
                match templates::render(engine, &m.path, ctx.clone()) {
                    Ok(t) => t,
                    Err(e) => {
                        diags.push(templates::template_error(&m.path, &e).in_env(&env.name));
                        continue;
                    }
                }
            } else {
                m.text.clone()
            };
            match manifest_objects(&m.path, &text, m.template, c) {
                Ok(objs) => objects.extend(objs.into_iter().map(|(value, origin, node)| Object {
                    folder: format!("components/{}", c.name),
                    value,
                    origin,
                    component: Some(c.name.clone()),
                    source: Source::Manifest,
                    node,
                    values: None,
                })),
                Err(d) => diags.extend(d.into_iter().map(|d| d.in_env(&env.name))),
            }
        }
        (objects, diags)
    };
    let render_one = |c: &&Component| match same_templates {
        Some(s) => s.rendered(&c.name, || per_component(c)),
        None => per_component(c),
    };
    let each = each_component(&chosen, backwards, render_one);
    shared.reserve(each.iter().map(|(objects, _)| objects.len()).sum());
    for (objects, ds) in each {
        shared.extend(objects);
        diags.extend(ds);
    }
    let cilium = cilium_mode(platform, env, &merged);
    let mut cluster_requires: Vec<String> = Vec::new();
    let mut notes = Vec::new();
    if let Some(st) = platform.substrate(env).filter(|st| !st.generate.is_empty()) {
        cluster_requires = st.generate_requires.iter().filter(|r| env.takes(r)).cloned().collect();
        // L2 announcements need kube-proxy replacement (Cilium's L2
        // announcement guide, "Prerequisites").
        if cilium.l2
            && !cilium.kube_proxy_replacement
            && let Some(o) = &cilium.l2_origin
        {
            notes.push(
                Diagnostic::warning(
                    codes::CLUSTER_OBJECTS,
                    o.clone(),
                    "Cilium's L2 announcements need kube-proxy replacement, which is off: the L2 policy and load-balancer pool are not generated",
                )
                .with_label("L2 announcements on")
                .with_help("set `kubeProxyReplacement: true` (and the k8sServiceHost/k8sServicePort it needs) in the same layer")
                .in_env(&env.name),
            );
        }
        let generate = cilium.l2 && cilium.kube_proxy_replacement && !cilium.bgp;
        let has_pool = env
            .contract
            .get("network")
            .and_then(|n| n.get("lb_pool"))
            .is_some_and(|p| matches!(&p.value, yaml::Value::Seq(s) if !s.is_empty()));
        let ctx = json!({
            "env": env.name,
            "substrate": substrate,
            "contract": contract,
            "host_label": platform.host_label(env),
            "labels": labels(),
            "cilium": {"v2_pool": cilium.v2_pool},
        });
        for name in st.generate.iter().filter(|_| generate) {
            if name.contains("ciliumloadbalancerippool") && !has_pool {
                continue;
            }
            let origin = Origin::file_start(env.contract.file.as_ref());
            let text = match templates::render(engine, name, minijinja::Value::from(minijinja::value::Serde(&ctx))) {
                Ok(t) => t,
                Err(e) => {
                    let mut d = templates::template_error(name, &e).in_env(&env.name);
                    d.origin.file = template_path(platform, &d.origin.file).into();
                    d = d.with_note(format!(
                        "substrate type `{}` generates this object from the contract {}",
                        st.name, env.contract.file
                    ));
                    diags.push(d);
                    continue;
                }
            };
            match parse_objects(name, &text) {
                Ok(docs) => shared.extend(docs.into_iter().map(|value| Object {
                    folder: CLUSTER.into(),
                    value,
                    origin: origin.clone(),
                    component: None,
                    source: Source::Cluster,
                    node: None,
                    values: None,
                })),
                Err(d) => diags.push(d.in_env(&env.name)),
            }
        }
    }
    diags.extend(pool_overlaps(env, &shared));
    if let Some(d) = system_namespace_manifest(&shared) {
        diags.push(d.in_env(&env.name));
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let cluster_wave = cluster_requires
        .iter()
        .filter_map(|r| depths.get(r))
        .map(|d| d + 1)
        .max()
        .unwrap_or(0);

    let generator = Gen {
        platform,
        env,
        engine,
        merged: &merged,
        depths,
        layout,
        namespaces: &namespaces,
        only,
        defer_values,
        texts: merged.keys().map(|c| (c.as_str(), OnceLock::new())).collect(),
        shared: shared_texts,
    };
    let mut targets = BTreeMap::new();
    let chosen_targets: Vec<Target> = platform
        .targets(env)
        .into_iter()
        .filter(|t| target_filter.is_none_or(|only| only == *t))
        .collect();
    for (i, &target) in chosen_targets.iter().enumerate() {
        let mut objects = match target {
            Target::Flux => generator.flux(&cluster_requires, &shared),
            Target::Argo => generator.argo(cluster_wave, &shared),
        };
        match objects.as_mut() {
            // Each target has its own copy of the shared objects; the last
            // takes the originals.
            Ok(objs) if i + 1 == chosen_targets.len() => objs.append(&mut shared),
            Ok(objs) => objs.par_extend(shared.par_iter().cloned()),
            Err(d) => diags.append(d),
        }
        if let Ok(objs) = objects {
            targets.insert(target, objs);
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    Ok(EnvRender {
        env: env.name.clone(),
        merged,
        targets,
        charts: BTreeMap::new(),
        chart_info: BTreeMap::new(),
        notes,
    })
}
