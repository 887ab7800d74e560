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
pub mod handover;
pub mod hydrate;
pub mod images;
mod manifests;
mod namespaces;
mod object;
mod output;
mod patches;
pub use patches::of as patches_of;
mod paths;
pub mod plan;
pub mod scopes;
mod shared;
pub mod substrate;
pub mod templates;
mod values;
pub mod versions;

use cluster::*;
pub use engines::Engines;
use generate::*;
use manifests::*;
use namespaces::*;
pub use object::{Deferred, Object, Source, file_names};
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

use crate::diag::{Diagnostic, codes};
use crate::load::{Component, Environment, Platform, Target};
use crate::merge::{self, Merged};

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
    /// The component manifests and generated cluster objects, the same for
    /// every target, until [`finish_env`] hands them to each target.
    pub shared: Vec<Object>,
    /// The components the generated cluster objects need first.
    pub cluster_requires: Vec<String>,
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
    /// Per inflated component whose chart renders differently each time,
    /// the objects that differ (`Kind/namespace/name`).
    pub unstable: BTreeMap<String, Vec<String>>,
    /// The OCI manifest digest each OCI chart is pinned to, by component.
    pub pins: BTreeMap<String, String>,
    /// How the engines get each component (see [`finish_env`]).
    pub plan: plan::Plan,
    /// What the platform asks of the substrate at bootstrap.
    pub bootstrap: substrate::Bootstrap,
    /// The files the substrate stack applies first (`<env>/substrate/`).
    pub substrate: Vec<Object>,
    /// The Flux and Argo CD releases the environment runs.
    pub versions: versions::Versions,
    /// Components switching delivery, and what their trees keep meanwhile.
    pub handovers: Vec<handover::HandOver>,
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
    /// every target), for rules that read rendered objects: the shared
    /// objects before [`finish_env`], the first target's after it. A
    /// hydrated chart's objects, in the targets too, are read from
    /// [`EnvRender::charts`].
    pub fn workload_objects(&self) -> impl Iterator<Item = &Object> {
        let objects = match self.targets.values().next() {
            Some(first) => first.as_slice(),
            None => self.shared.as_slice(),
        };
        objects
            .iter()
            .filter(|o| matches!(o.source, Source::Manifest | Source::Cluster))
    }
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

/// How one environment's objects are rendered.
#[derive(Clone, Copy, Debug)]
pub struct EnvOptions<'a> {
    /// Each component's depth in the `requires` graph (see [`depths`]).
    pub depths: &'a BTreeMap<String, u32>,
    /// The one target to render (all the environment's when `None`).
    pub target: Option<Target>,
    pub layout: &'a RepoLayout,
    /// The components whose generated objects are wanted (all when
    /// `None`): a diff generates only those a change can reach. Every
    /// component is still merged and its manifests rendered, since the
    /// rules judge the whole environment.
    pub only: Option<&'a BTreeSet<String>>,
    /// Whether a HelmRelease's values may be [`Deferred`].
    pub defer_values: bool,
    /// The tree strata wrote before, where a component switching delivery
    /// is handed over (see [`handover`]).
    pub previous: Option<&'a dyn handover::Tree>,
}

/// Renders what an environment's charts need before helm renders them:
/// each component's merged values, its manifests and the cluster objects
/// the substrate type generates (in [`EnvRender::shared`]). The engines'
/// own objects follow in [`finish_env`], once the charts are rendered.
pub fn prepare_env<'p>(
    platform: &'p Platform,
    env: &'p Environment,
    engines: &mut Engines<'p>,
) -> Result<EnvRender, Vec<Diagnostic>> {
    let chosen: Vec<&Component> = platform.components_in(env).collect();
    let extra = templated_manifests(env, &chosen)?;
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
    let (engine, _) = engine.map_err(|d| vec![d])?;
    let contract = env.contract.to_json();
    namespaces(platform, env)?;

    // Component manifests and cluster objects: the same for every target.
    let render_one = |c: &&Component| {
        let render = || render_manifests(engine, env, &contract, c, &merged[&c.name]);
        match same_templates {
            Some(s) => s.rendered(&c.name, render),
            None => render(),
        }
    };
    let each = each_component(&chosen, backwards, render_one);
    let mut shared: Vec<Object> = Vec::with_capacity(each.iter().map(|(objects, _)| objects.len()).sum());
    let mut diags = Vec::new();
    for (objects, ds) in each {
        shared.extend(objects);
        diags.extend(ds);
    }
    let cluster = cluster_objects(platform, env, engine, &contract, &merged);
    shared.extend(cluster.objects);
    diags.extend(cluster.errors);
    diags.extend(pool_overlaps(env, &shared));
    if let Some(d) = system_namespace_manifest(&shared) {
        diags.push(d.in_env(&env.name));
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    Ok(EnvRender {
        env: env.name.clone(),
        merged,
        shared,
        cluster_requires: cluster.requires,
        targets: BTreeMap::new(),
        charts: BTreeMap::new(),
        chart_info: BTreeMap::new(),
        notes: cluster.notes,
        unstable: BTreeMap::new(),
        pins: BTreeMap::new(),
        plan: plan::Plan::default(),
        bootstrap: substrate::Bootstrap::default(),
        substrate: Vec::new(),
        versions: versions::Versions::default(),
        handovers: Vec::new(),
    })
}

/// The path and text of every templated manifest of the chosen components;
/// a template that refers to a sensitive contract output is an error.
fn templated_manifests<'p>(
    env: &Environment,
    chosen: &[&'p Component],
) -> Result<Vec<(&'p str, &'p str)>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut extra: Vec<(&str, &str)> = Vec::new();
    for c in chosen {
        for m in c.manifests.iter().filter(|m| m.template) {
            diags.extend(templates::sensitive_references(
                &m.path,
                &m.text,
                &env.contract.sensitive,
            ));
            extra.push((&m.path, &m.text));
        }
    }
    if diags.is_empty() { Ok(extra) } else { Err(diags) }
}

/// Renders the engines' objects of an environment prepared by
/// [`prepare_env`], whose charts helm has rendered by now: namespaces for
/// the objects that take one, the hydrated components' chart objects in
/// their folders, and for each target the objects strata generates, joined
/// by the shared manifests and cluster objects.
pub fn finish_env<'p>(
    platform: &'p Platform,
    env: &'p Environment,
    r: &mut EnvRender,
    opts: &EnvOptions<'_>,
    engines: &mut Engines<'p>,
) -> Result<(), Vec<Diagnostic>> {
    let extra = templated_manifests(env, &platform.components_in(env).collect::<Vec<_>>())?;
    let (engine, texts) = engines.get(platform, &extra, None).map_err(|d| vec![d])?;
    let namespaces = namespaces(platform, env)?;
    give_namespaces(platform, r)?;
    r.versions = versions::resolve(platform, env, &r.chart_info)?;
    r.notes.extend(versions::adaptations(platform, env, &r.versions));
    r.plan = plan::Plan::new(platform, env, r);
    let patched = Matched::default();
    patch_charts(platform, env, opts.target, r, &patched)?;
    let delivery = r.plan.delivery.clone();
    let placed = hydrate::place(platform, env, r, &delivery)?;
    r.notes.extend(placed);
    r.bootstrap = substrate::bootstrap(platform, env, r);
    // The substrate's files belong to the environment, not to one engine.
    if opts.target.is_none() {
        let (files, notes) = substrate::files(platform, env, r, &r.bootstrap)?;
        r.substrate = files;
        r.notes.extend(notes);
    }
    let cluster_wave = r
        .cluster_requires
        .iter()
        .filter_map(|c| opts.depths.get(c))
        .map(|d| plan::wave(*d) + 2)
        .max()
        .unwrap_or(0);
    let generator = Gen {
        platform,
        env,
        engine,
        merged: &r.merged,
        depths: opts.depths,
        layout: opts.layout,
        namespaces: &namespaces,
        only: opts.only,
        defer_values: opts.defer_values,
        texts: r.merged.keys().map(|c| (c.as_str(), OnceLock::new())).collect(),
        shared: texts,
        plan: &r.plan,
        pins: &r.pins,
        versions: &r.versions,
        patched: &patched,
    };
    let chosen: Vec<Target> = platform
        .targets(env)
        .into_iter()
        .filter(|t| opts.target.is_none_or(|only| only == *t))
        .collect();
    let shared = std::mem::take(&mut r.shared);
    let hydrated: Vec<&Object> = r
        .charts
        .iter()
        .filter(|(c, _)| r.plan.of(c) == hydrate::Delivery::Hydrated)
        .flat_map(|(_, objects)| objects)
        .collect();
    let mut targets = BTreeMap::new();
    let mut diags = Vec::new();
    for &target in &chosen {
        let generated = match target {
            Target::Flux => generator.flux(&r.cluster_requires, &shared),
            Target::Argo => generator.argo(cluster_wave, &shared),
        };
        match generated {
            Ok(mut objects) => {
                objects.reserve(shared.len() + hydrated.len());
                objects.par_extend(
                    shared
                        .par_iter()
                        .chain(hydrated.par_iter().copied())
                        .filter_map(|o| for_target(o, target, &r.plan)),
                );
                targets.insert(target, objects);
            }
            Err(d) => diags.extend(d),
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    // Judged on a whole render only: one target, or some components, see
    // part of what the patches reach.
    if opts.target.is_none() && opts.only.is_none() {
        let notes = unmatched(platform, env, r, &patched);
        r.notes.extend(notes);
    }
    r.targets = targets;
    if let Some(tree) = opts.previous {
        let notes = handover::apply(platform, env, r, tree, opts.only);
        r.notes.extend(notes);
    }
    Ok(())
}

/// One shared or hydrated object as one engine's tree holds it (`None`:
/// none there): a Helm release's manifests in Flux go into a folder of
/// their own, applied after the release; hydrated objects carry what the
/// engine needs of them.
fn for_target(o: &Object, target: Target, plan: &plan::Plan) -> Option<Object> {
    let mut o = o.clone();
    let release_manifest =
        o.source == Source::Manifest && o.component.as_ref().is_some_and(|c| plan.with_manifests.contains(c));
    if target == Target::Flux && release_manifest {
        o.folder = format!("{}/{}", o.folder, flux::MANIFESTS);
    }
    if matches!(o.source, Source::Chart { .. }) {
        return hydrate::for_target(o, target);
    }
    Some(o)
}

/// Writes each component's namespace into its manifests' and its chart's
/// objects of namespaced kinds that have none, by the scopes of the CRDs
/// the environment ships.
fn give_namespaces(platform: &Platform, r: &mut EnvRender) -> Result<(), Vec<Diagnostic>> {
    let scopes = scopes::Scopes::of(r.shared.iter().chain(r.charts.values().flatten()))?;
    let namespace_of = |c: &Option<String>| {
        c.as_ref()
            .and_then(|c| platform.components.get(c))
            .map(|c| c.namespace.as_str())
    };
    for o in r.shared.iter_mut().filter(|o| o.source == Source::Manifest) {
        if let Some(ns) = namespace_of(&o.component) {
            scopes.default_namespace(&mut o.value, ns);
        }
    }
    for (c, objects) in r.charts.iter_mut() {
        let Some(ns) = platform.components.get(c).map(|c| c.namespace.clone()) else {
            continue;
        };
        for o in objects.iter_mut() {
            scopes.default_namespace(&mut o.value, &ns);
        }
    }
    Ok(())
}
