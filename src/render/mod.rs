//! Stage 3, render: for each environment and target, the Kubernetes objects
//! strata writes. Flux gets a GitRepository, a Kustomization per component
//! and, per component folder, the Namespace, the chart source and the
//! HelmRelease; Argo CD gets an Application per component. Both get the
//! component manifests and the cluster objects the substrate type generates.

pub mod graph;
mod output;
mod shared;
pub mod templates;

pub use shared::Shared;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use minijinja::Environment as Engine;
use rayon::prelude::*;
use serde_json::{Value as J, json};

use crate::diag::{Diagnostic, codes};
use crate::invariants::facts::Ctx;
use crate::load::{Chart, Component, Environment, Platform, SyncMode, Target, Tier};
use crate::merge::{self, Merged};
use crate::yaml::{self, Origin};

/// The namespace Flux's own objects live in.
pub const FLUX_NAMESPACE: &str = "flux-system";
/// The namespace Argo CD's Applications live in.
pub const ARGO_NAMESPACE: &str = "argocd";
/// The folder and Flux Kustomization / Argo Application of generated cluster objects.
pub const CLUSTER: &str = "cluster";
pub const CLUSTER_APP: &str = "strata-cluster";

/// Namespaces Kubernetes creates itself; strata never writes them, so that
/// pruning a component can never delete them.
const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// What produced an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A built-in (or overridden) template of strata's.
    Generated,
    /// A component's `manifests/` file.
    Manifest,
    /// The substrate type's generated cluster objects.
    Cluster,
    /// A component's chart, rendered by helm (never written to the tree:
    /// the engines render charts themselves). `template` is helm's
    /// `# Source:` path, e.g. `traefik/templates/deployment.yaml`.
    Chart { template: String },
}

/// One rendered object and where it goes.
#[derive(Clone, Debug)]
pub struct Object {
    /// The folder under `rendered/<env>/<target>/`, `/`-separated; empty for the top.
    pub folder: String,
    pub value: J,
    /// The input that produced it: a manifest file, or the component's config.yaml.
    pub origin: Origin,
    pub component: Option<String>,
    pub source: Source,
    /// The spanned document of a plain (not templated) manifest, so that
    /// rules can point at a field inside it.
    pub node: Option<yaml::Node>,
    /// The merged values the object carries, when they are not copied into
    /// `value` (see [`Deferred`]).
    pub values: Option<Arc<Deferred>>,
}

/// A component's merged values held by an object without a copy: `value`
/// holds a marker string at `at` (a HelmRelease's `spec.values`), and the
/// file is written with `text` there. Copying each component's values into
/// JSON, writing that copy out and freeing it was a quarter of a render.
/// Only a compile that keeps no objects (`render`, `check`) defers: what
/// reads an object's values (validation, the secrets rule) reads
/// [`Object::full`] or the values themselves.
#[derive(Clone, Debug)]
pub struct Deferred {
    /// The keys from the object's root to the values.
    pub at: Vec<String>,
    pub node: yaml::Node,
    /// `node` as [`yaml::node_to_sorted_yaml_quick`] writes it.
    pub text: Arc<str>,
}

impl Object {
    /// The object with its values in place.
    pub fn full(&self) -> Cow<'_, J> {
        match &self.values {
            None => Cow::Borrowed(&self.value),
            Some(d) => {
                let mut value = self.value.clone();
                put_at(&mut value, &d.at, d.node.to_json());
                Cow::Owned(value)
            }
        }
    }

    /// Copies deferred values into `value`, for what changes or keeps it.
    pub fn materialize(&mut self) {
        if let Some(d) = self.values.take() {
            put_at(&mut self.value, &d.at, d.node.to_json());
        }
    }

    /// The object as written to its file: [`yaml::to_canonical_yaml`] of
    /// [`Object::full`], byte for byte.
    pub fn canonical_yaml(&self) -> String {
        let Some(d) = &self.values else {
            return yaml::to_canonical_yaml(&self.value);
        };
        match yaml::to_canonical_yaml_spliced(&self.value, &d.at, &d.text) {
            Some(text) => {
                debug_assert_eq!(text, yaml::to_canonical_yaml(&self.full()), "spliced values");
                text
            }
            None => yaml::to_canonical_yaml(&self.full()),
        }
    }

    pub fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or("")
    }
    pub fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or("")
    }
    pub fn namespace(&self) -> Option<&str> {
        self.value["metadata"]["namespace"].as_str()
    }
    pub fn api_version(&self) -> &str {
        self.value["apiVersion"].as_str().unwrap_or("")
    }
    /// `Kind/namespace/name` or `Kind/name`.
    pub fn id(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{}/{ns}/{}", self.kind(), self.name()),
            None => format!("{}/{}", self.kind(), self.name()),
        }
    }
}

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

/// Sets the value at a key path that exists (deferral found its marker
/// there).
fn put_at(value: &mut J, at: &[String], new: J) {
    let mut here = Some(value);
    for key in at {
        here = here.and_then(|v| v.as_object_mut()).and_then(|m| m.get_mut(key));
    }
    if let Some(here) = here {
        *here = new;
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
    let depths = graph::depths(&platform.components)?;
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

fn labels() -> J {
    json!({"app.kubernetes.io/managed-by": "strata"})
}

/// Where the engines find the rendered tree in the git repository they
/// check out.
#[derive(Clone, Debug, Default)]
pub struct RepoLayout {
    /// strata's root relative to the top of its git repository (found with
    /// git); `None` outside a git repository. An environment's `git.path`
    /// overrides it.
    pub root_in_repo: Option<String>,
    /// The output folder relative to strata's root, when it is not the
    /// `output:` of strata.yaml (`render --out`).
    pub output: Option<String>,
}

/// The config.yaml as templates see it.
fn component_json(c: &Component) -> J {
    let chart = match &c.chart {
        Chart::Remote {
            repo_url,
            name,
            version,
            oci,
        } => {
            json!({"repoURL": repo_url, "name": name, "version": version, "oci": oci})
        }
        Chart::Local { path } => json!({"path": path, "name": c.chart.name(), "oci": false}),
    };
    json!({
        "component": c.name,
        "namespace": c.namespace,
        "namespace_labels": c.namespace_labels,
        "namespace_annotations": c.namespace_annotations,
        "chart": chart,
        "sync": if c.sync == SyncMode::Manual { "manual" } else { "automated" },
        "tier": if c.tier == Tier::Core { "core" } else { "addon" },
        "requires": c.requires.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>(),
        "profile": c.profile_name(),
    })
}

/// A path in the git repository the engines check out: strata's root
/// there (the environment's `git.path`, else where git says it is), then
/// `rel` under it.
fn in_repo(env: &Environment, layout: &RepoLayout, rel: &str) -> String {
    let root = env.git.path.as_deref().or(layout.root_in_repo.as_deref()).unwrap_or("");
    let mut parts: Vec<&str> = Vec::new();
    if !root.is_empty() {
        parts.push(root);
    }
    if !rel.is_empty() {
        parts.push(rel);
    }
    let joined = parts.join("/");
    crate::world::normalize(&joined).unwrap_or(joined)
}

/// Repository path of a folder of the rendered tree.
fn repo_path(platform: &Platform, env: &Environment, layout: &RepoLayout, target: Target, folder: &str) -> String {
    let output = layout.output.as_deref().unwrap_or(&platform.project.output);
    let mut rel = format!("{output}/{}/{}", env.name, target.name());
    if !folder.is_empty() {
        rel.push('/');
        rel.push_str(folder);
    }
    in_repo(env, layout, &rel)
}

/// The folder of the namespaces an environment's Flux tree creates, and
/// the Kustomization that applies it.
pub const NAMESPACES: &str = "namespaces";
pub const NAMESPACES_APP: &str = "strata-namespaces";
/// The folder of an environment's bootstrap objects, per target.
pub const BOOTSTRAP: &str = "bootstrap";
/// The root object a user applies once per environment and target.
pub const ROOT_APP: &str = "platform";

/// One namespace of an environment, with the labels and annotations the
/// components that use it give it.
#[derive(Clone, Debug, Default, serde::Serialize)]
struct NamespaceSpec {
    name: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

/// The namespaces an environment's components use (system ones left out),
/// with their metadata. Two components that give one namespace different
/// values for a label or annotation are an error naming both.
fn namespaces(platform: &Platform, env: &Environment) -> Result<BTreeMap<String, NamespaceSpec>, Vec<Diagnostic>> {
    // Per namespace: its spec, and which component set each key, where.
    type Seen = BTreeMap<String, (String, Origin)>;
    let mut out: BTreeMap<String, (NamespaceSpec, Seen)> = BTreeMap::new();
    let mut diags = Vec::new();
    for c in platform.components_in(env) {
        if SYSTEM_NAMESPACES.contains(&c.namespace.as_str()) {
            continue;
        }
        let (spec, seen) = out.entry(c.namespace.clone()).or_insert_with(|| {
            (
                NamespaceSpec {
                    name: c.namespace.clone(),
                    ..NamespaceSpec::default()
                },
                BTreeMap::new(),
            )
        });
        for (kind, map, target) in [
            ("label", &c.namespace_labels, &mut spec.labels),
            ("annotation", &c.namespace_annotations, &mut spec.annotations),
        ] {
            for (k, v) in map {
                let key = format!("{kind} {k}");
                match seen.get(&key) {
                    Some((other, o)) if other != &c.name && target.get(k) != Some(v) => diags.push(
                        Diagnostic::error(
                            codes::OBJECT,
                            c.namespace_origin.clone(),
                            format!(
                                "components `{other}` and `{}` share namespace {} but give its {kind} `{k}` different values",
                                c.name, c.namespace
                            ),
                        )
                        .with_label(format!("`{k}: {v}`"))
                        .with_related(o.clone(), format!("`{other}` says `{k}: {}`", target.get(k).map_or("", String::as_str)))
                        .with_help("give the shared namespace the same labels and annotations in both config.yaml files")
                        .in_env(&env.name),
                    ),
                    Some(_) => {}
                    None => {
                        seen.insert(key, (c.name.clone(), c.namespace_origin.clone()));
                        target.insert(k.clone(), v.clone());
                    }
                }
            }
        }
    }
    if diags.is_empty() {
        Ok(out.into_iter().map(|(k, (spec, _))| (k, spec)).collect())
    } else {
        Err(diags)
    }
}

/// What the platform's Cilium turns on, read from its merged values: the
/// cluster objects strata generates (the L2 announcement policy and the
/// load-balancer pool) work only with L2 announcements and kube-proxy
/// replacement on, and not under BGP.
struct CiliumMode {
    l2: bool,
    kube_proxy_replacement: bool,
    bgp: bool,
    /// `cilium.io/v2` serves the pool from Cilium 1.18.
    v2_pool: bool,
    /// Where L2 announcements are switched on, for findings.
    l2_origin: Option<Origin>,
}

fn cilium_mode(platform: &Platform, env: &Environment, merged: &BTreeMap<String, Merged>) -> CiliumMode {
    let cilium = platform
        .components_in(env)
        .find(|c| c.chart.name() == "cilium" || c.profile_name() == "cilium");
    let Some(c) = cilium else {
        return CiliumMode {
            l2: false,
            kube_proxy_replacement: false,
            bgp: false,
            v2_pool: false,
            l2_origin: None,
        };
    };
    let values = merged.get(&c.name).map(|m| &m.values);
    let truthy = |path: &str| {
        values.and_then(|v| v.get_path(path)).is_some_and(|n| match &n.value {
            yaml::Value::Bool(b) => *b,
            yaml::Value::Str(s) => s == "true" || s == "strict",
            _ => false,
        })
    };
    let version = c
        .chart
        .version()
        .map(|v| v.trim_start_matches('v'))
        .and_then(|v| semver::Version::parse(v).ok());
    CiliumMode {
        l2: truthy("l2announcements.enabled"),
        kube_proxy_replacement: truthy("kubeProxyReplacement"),
        bgp: truthy("bgpControlPlane.enabled"),
        v2_pool: version.is_none_or(|v| v >= semver::Version::new(1, 18, 0)),
        l2_origin: values
            .and_then(|v| v.get_path("l2announcements.enabled"))
            .map(|n| n.origin.clone()),
    }
}

/// Applies the RFC 6902 patches of a component (its config.yaml and the
/// environment's) to one object strata generated for it. A patch may
/// change the values: an object with deferred values gets them first.
fn apply_patches(c: Option<&Component>, env: &Environment, object: &mut Object) -> Result<(), Diagnostic> {
    let kind = object.kind().to_owned();
    let name = object.name().to_owned();
    let own = c.map(|c| c.patches.as_slice()).unwrap_or_default();
    let from_env = env
        .patches
        .iter()
        .filter(|p| p.component.as_deref().is_none_or(|x| c.is_some_and(|c| c.name == x)));
    let mut patches = own
        .iter()
        .chain(from_env)
        .filter(|p| p.kind == kind && p.name.as_ref().is_none_or(|n| *n == name))
        .peekable();
    if patches.peek().is_some() {
        object.materialize();
    }
    let value = &mut object.value;
    for p in patches {
        let patch: json_patch::Patch = match serde_json::from_value(p.ops.clone()) {
            Ok(x) => x,
            Err(e) => {
                return Err(
                    Diagnostic::error(codes::PATCH, p.origin.clone(), format!("not an RFC 6902 patch: {e}")).with_help(
                        "each operation is {op: add|remove|replace|move|copy|test, path: /json/pointer, value|from: …}",
                    ),
                );
            }
        };
        if let Err(e) = json_patch::patch(value, &patch) {
            let at = match &p.node.value {
                yaml::Value::Seq(items) => items
                    .get(e.operation)
                    .map_or_else(|| p.origin.clone(), |n| n.origin.clone()),
                _ => p.origin.clone(),
            };
            return Err(Diagnostic::error(
                codes::PATCH,
                at,
                format!("the patch cannot be applied to {kind}/{name}: {}", e.kind),
            )
            .with_label("this operation")
            .with_help("check the JSON pointer against the generated object: `strata render` writes it under rendered/")
            .in_env(&env.name));
        }
    }
    Ok(())
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

/// A CiliumLoadBalancerIPPool in a manifest whose blocks overlap the pool
/// strata generates from the contract: LB-IPAM would hand out the same
/// address twice.
fn pool_overlaps(env: &Environment, shared: &[Object]) -> Vec<Diagnostic> {
    let pools: Vec<&Object> = shared
        .iter()
        .filter(|o| o.kind() == "CiliumLoadBalancerIPPool")
        .collect();
    let generated: Vec<&&Object> = pools.iter().filter(|o| o.source == Source::Cluster).collect();
    let mut out = Vec::new();
    for user in pools.iter().filter(|o| o.source == Source::Manifest) {
        for g in &generated {
            for a in blocks(user) {
                for b in blocks(g) {
                    if crate::invariants::cidr::overlap(&a, &b) {
                        out.push(
                            Diagnostic::error(
                                codes::CLUSTER_OBJECTS,
                                Ctx::field_origin(user, "spec.blocks"),
                                format!(
                                    "CiliumLoadBalancerIPPool {} ({a}) overlaps the pool strata generates from the contract's network.lb_pool ({b})",
                                    user.name()
                                ),
                            )
                            .with_label("overlapping block")
                            .with_related(g.origin.clone(), format!("generated pool {} from the contract", g.name()))
                            .with_help("remove the hand-written pool, or take its range out of network.lb_pool")
                            .in_env(&env.name),
                        );
                    }
                }
            }
        }
    }
    out
}

fn blocks(o: &Object) -> Vec<String> {
    o.value["spec"]["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| {
            b["cidr"].as_str().map(str::to_owned).or_else(|| {
                let start = b["start"].as_str()?;
                Some(format!("{start}-{}", b["stop"].as_str().unwrap_or(start)))
            })
        })
        .collect()
}

/// A manifest that writes a Namespace Kubernetes creates itself: pruning
/// its folder would delete it, and everything in it.
fn system_namespace_manifest(shared: &[Object]) -> Option<Diagnostic> {
    let o = shared
        .iter()
        .find(|o| o.source == Source::Manifest && o.kind() == "Namespace" && SYSTEM_NAMESPACES.contains(&o.name()))?;
    Some(
        Diagnostic::error(
            codes::OBJECT,
            o.origin.clone(),
            format!(
                "a manifest writes the Namespace {}, which Kubernetes creates itself",
                o.name()
            ),
        )
        .with_label("system namespace")
        .with_help("remove it: a GitOps engine that pruned it would delete everything in it"),
    )
}

/// The template engine of the last environment rendered, kept for the
/// next: compiling every template is a tenth of an environment's serial
/// work, and the templates differ only where the environments take
/// different components with templates. Beside it, the text of every
/// values mapping the environments share.
#[derive(Default)]
pub struct Engines<'p> {
    last: Option<(Vec<&'p str>, Kept<'p>)>,
    texts: yaml::Texts,
    /// What this compile shares with the other side of a diff.
    shared: Option<Arc<Shared>>,
}

/// An engine compiled for this compile, or handed over by the other side
/// of a diff.
enum Kept<'p> {
    Own(Box<Engine<'p>>),
    Shared(Arc<Engine<'static>>),
}

impl<'p> Kept<'p> {
    fn engine(&self) -> &Engine<'p> {
        match self {
            Kept::Own(e) => e,
            Kept::Shared(e) => e,
        }
    }
}

impl<'p> Engines<'p> {
    /// Drops the engines, and the merged mappings their texts hold on every
    /// thread (see [`yaml::Texts::drop_in_parallel`]).
    pub fn drop_in_parallel(self) {
        let Engines { last, texts, shared } = self;
        rayon::join(|| drop((last, shared)), || texts.drop_in_parallel());
    }

    /// After an environment's trees are dropped: lets go of the texts only
    /// they held (see [`yaml::Texts::forget_unheld`]).
    pub fn forget_unheld(&self) {
        self.texts.forget_unheld();
    }

    /// Engines for a compile that shares with another what the components
    /// a diff's change does not reach merge and render (see [`Shared`]).
    pub fn sharing(shared: Option<Arc<Shared>>) -> Self {
        Engines {
            shared,
            ..Engines::default()
        }
    }

    /// The engine for these templates, and the shared values texts; the
    /// engine of `shared` (whose templates are these) when there is one.
    fn get(
        &mut self,
        platform: &'p Platform,
        extra: &[(&'p str, &'p str)],
        shared: Option<&Shared>,
    ) -> Result<(&Engine<'p>, &yaml::Texts), Diagnostic> {
        let key: Vec<&str> = extra.iter().map(|(path, _)| *path).collect();
        if self.last.as_ref().is_some_and(|(last, _)| *last != key) {
            self.last = None;
        }
        let (_, engine) = match &mut self.last {
            Some(kept) => kept,
            empty => {
                let (overrides, dir) = (&platform.templates, &platform.project.templates);
                let kept = match shared {
                    Some(s) => Kept::Shared(s.engine(|| templates::engine_owned(overrides, dir, extra))?),
                    None => Kept::Own(Box::new(templates::engine(overrides, dir, extra)?)),
                };
                empty.insert((key, kept))
            }
        };
        Ok((engine.engine(), &self.texts))
    }
}

/// Everything the object templates of one environment need.
struct Gen<'a> {
    platform: &'a Platform,
    env: &'a Environment,
    engine: &'a Engine<'a>,
    merged: &'a BTreeMap<String, Merged>,
    depths: &'a BTreeMap<String, u32>,
    layout: &'a RepoLayout,
    namespaces: &'a BTreeMap<String, NamespaceSpec>,
    /// The components whose objects are generated (all when `None`): a
    /// diff generates only those a change can reach.
    only: Option<&'a BTreeSet<String>>,
    /// Whether the HelmRelease's values may be [`Deferred`].
    defer_values: bool,
    /// Each component's values as the quick writer writes them, made for
    /// whichever object takes them first (see [`Values`]).
    texts: BTreeMap<&'a str, OnceLock<Option<Arc<str>>>>,
    /// The texts of the values mappings shared between environments.
    shared: &'a yaml::Texts,
}

/// A component's merged values, as the object templates take them.
#[derive(Clone, Copy)]
struct Values<'a> {
    node: &'a yaml::Node,
    text: &'a OnceLock<Option<Arc<str>>>,
    shared: &'a yaml::Texts,
}

impl Values<'_> {
    /// The quick writer's text of the values, made once for both targets'
    /// objects; `None` for an empty mapping, or where only the full writer
    /// writes them.
    fn text(&self) -> Option<&Arc<str>> {
        self.text
            .get_or_init(|| yaml::node_to_sorted_yaml_quick(self.node, self.shared).map(Arc::from))
            .as_ref()
    }

    /// The values as one YAML string (Argo CD's `helm.values`).
    fn yaml(&self) -> String {
        if self.node.as_map().is_some_and(|m| m.is_empty()) {
            return String::new();
        }
        match self.text() {
            Some(text) => text.to_string(),
            None => yaml::node_to_sorted_yaml(self.node),
        }
    }
}

impl Gen<'_> {
    fn values(&self, c: &Component) -> Option<Values<'_>> {
        let node = &self.merged.get(&c.name)?.values;
        let text = self.texts.get(c.name.as_str())?;
        Some(Values {
            node,
            text,
            shared: self.shared,
        })
    }

    fn chosen(&self) -> Vec<&Component> {
        self.platform
            .components_in(self.env)
            .filter(|c| self.only.is_none_or(|o| o.contains(&c.name)))
            .collect()
    }

    fn git(&self) -> J {
        let g = &self.env.git;
        json!({
            "url": g.url,
            "ref": g.git_ref.target_revision(),
            "ref_field": g.git_ref.flux_field(),
            "secret": g.secret,
        })
    }

    /// Renders a built-in template into one object for `folder`, with the
    /// component's patches applied.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &self,
        out: &mut Vec<Object>,
        diags: &mut Vec<Diagnostic>,
        template: &str,
        folder: &str,
        ctx: &J,
        origin: &Origin,
        component: Option<&Component>,
        values: Option<Values<'_>>,
    ) {
        let defer = self.defer_values;
        match render_builtin(self.platform, self.engine, template, ctx, values, defer, origin) {
            Ok((value, deferred)) => {
                let mut object = Object {
                    folder: folder.to_owned(),
                    value,
                    origin: origin.clone(),
                    component: component.map(|c| c.name.clone()),
                    source: Source::Generated,
                    node: None,
                    values: deferred.map(Arc::new),
                };
                if let Err(d) = apply_patches(component, self.env, &mut object) {
                    diags.push(d);
                    return;
                }
                out.push(object);
            }
            Err(d) => diags.push(d.in_env(&self.env.name)),
        }
    }

    fn flux(&self, cluster_requires: &[String], shared: &[Object]) -> Result<Vec<Object>, Vec<Diagnostic>> {
        let (platform, env) = (self.platform, self.env);
        // Room for the shared objects that join them.
        let mut out = Vec::with_capacity(shared.len() + 4 * self.platform.components.len() + 16);
        let mut diags = Vec::new();
        let env_origin = Origin::file_start(env.file.as_str());
        let base = json!({"flux_namespace": FLUX_NAMESPACE, "git": self.git(), "labels": labels()});
        self.push(
            &mut out,
            &mut diags,
            "flux/gitrepository.yaml.j2",
            "",
            &base,
            &env_origin,
            None,
            None,
        );
        // The namespaces, from one Kustomization that never prunes them.
        let has_namespaces = !self.namespaces.is_empty();
        // One per namespace, in parallel, collected in name order.
        let namespaces: Vec<&NamespaceSpec> = self.namespaces.values().collect();
        for (objs, ds) in namespaces
            .par_iter()
            .with_max_len(1)
            .map(|ns| {
                let (mut objs, mut ds) = (Vec::new(), Vec::new());
                let mut ctx = base.clone();
                let mut spec = serde_json::to_value(ns).unwrap_or(J::Null);
                spec["labels"]
                    .as_object_mut()
                    .map(|m| m.insert("app.kubernetes.io/managed-by".into(), json!("strata")));
                spec["annotations"]
                    .as_object_mut()
                    .map(|m| m.insert("kustomize.toolkit.fluxcd.io/prune".into(), json!("disabled")));
                ctx["namespace"] = spec;
                self.push(
                    &mut objs,
                    &mut ds,
                    "flux/namespace.yaml.j2",
                    NAMESPACES,
                    &ctx,
                    &env_origin,
                    None,
                    None,
                );
                (objs, ds)
            })
            .collect::<Vec<_>>()
        {
            out.extend(objs);
            diags.extend(ds);
        }
        if has_namespaces {
            let mut ctx = base.clone();
            ctx["name"] = json!(NAMESPACES_APP);
            ctx["path"] = json!(format!(
                "./{}",
                repo_path(platform, env, self.layout, Target::Flux, NAMESPACES)
            ));
            ctx["depends_on"] = json!([]);
            ctx["prune"] = json!(false);
            ctx["orphan"] = json!(true);
            self.push(
                &mut out,
                &mut diags,
                "flux/kustomization.yaml.j2",
                "",
                &ctx,
                &env_origin,
                None,
                None,
            );
        }
        // Each component's objects depend on nothing else rendered: in parallel,
        // collected in component order.
        for (objs, ds) in self
            .chosen()
            .par_iter()
            .with_max_len(1)
            .map(|c| self.flux_component(c, &base, has_namespaces))
            .collect::<Vec<_>>()
        {
            out.extend(objs);
            diags.extend(ds);
        }
        if shared.iter().any(|o| o.source == Source::Cluster) {
            let mut ctx = base.clone();
            ctx["name"] = json!(CLUSTER_APP);
            ctx["path"] = json!(format!(
                "./{}",
                repo_path(platform, env, self.layout, Target::Flux, CLUSTER)
            ));
            ctx["depends_on"] = json!(cluster_requires);
            ctx["prune"] = json!(true);
            ctx["orphan"] = json!(false);
            self.push(
                &mut out,
                &mut diags,
                "flux/kustomization.yaml.j2",
                "",
                &ctx,
                &env_origin,
                None,
                None,
            );
        }
        // Bootstrap: the GitRepository and the root Kustomization, applied once.
        self.push(
            &mut out,
            &mut diags,
            "flux/gitrepository.yaml.j2",
            BOOTSTRAP,
            &base,
            &env_origin,
            None,
            None,
        );
        let mut ctx = base.clone();
        ctx["name"] = json!(ROOT_APP);
        ctx["path"] = json!(format!("./{}", repo_path(platform, env, self.layout, Target::Flux, "")));
        self.push(
            &mut out,
            &mut diags,
            "flux/root.yaml.j2",
            BOOTSTRAP,
            &ctx,
            &env_origin,
            None,
            None,
        );
        if diags.is_empty() { Ok(out) } else { Err(diags) }
    }

    /// The Flux objects of one component: its Kustomization, its chart
    /// source and its HelmRelease.
    fn flux_component(&self, c: &Component, base: &J, has_namespaces: bool) -> (Vec<Object>, Vec<Diagnostic>) {
        let (platform, env) = (self.platform, self.env);
        let mut out = Vec::new();
        let mut diags = Vec::new();
        let folder = format!("components/{}", c.name);
        let origin = c.origin();
        let mut ctx = base.clone();
        ctx["component"] = component_json(c);
        ctx["values"] = json!(VALUES_MARKER);
        ctx["name"] = json!(c.name);
        ctx["path"] = json!(format!(
            "./{}",
            repo_path(platform, env, self.layout, Target::Flux, &folder)
        ));
        let mut deps: Vec<String> = c.requires.iter().map(|(r, _)| r.clone()).collect();
        if has_namespaces && !SYSTEM_NAMESPACES.contains(&c.namespace.as_str()) {
            deps.insert(0, NAMESPACES_APP.to_owned());
        }
        ctx["depends_on"] = json!(deps);
        ctx["prune"] = json!(true);
        ctx["orphan"] = json!(c.tier == Tier::Core);
        ctx["manual"] = json!(c.sync == SyncMode::Manual);
        ctx["remediation"] = json!({
            "install": c.remediation.install.name(),
            "upgrade": c.remediation.upgrade.name(),
            "retries": c.remediation.retries,
        });
        if let Chart::Remote {
            repo_url, oci: true, ..
        } = &c.chart
        {
            ctx["oci_url"] = json!(crate::charts::lock::normalize_repo(repo_url, true));
        }
        if let Chart::Local { path } = &c.chart {
            ctx["chart_path"] = json!(format!("./{}", in_repo(env, self.layout, path)));
        }
        let values = self.values(c);
        self.push(
            &mut out,
            &mut diags,
            "flux/kustomization.yaml.j2",
            "",
            &ctx,
            &origin,
            Some(c),
            values,
        );
        match &c.chart {
            Chart::Remote { oci: true, .. } => {
                self.push(
                    &mut out,
                    &mut diags,
                    "flux/ocirepository.yaml.j2",
                    &folder,
                    &ctx,
                    &origin,
                    Some(c),
                    values,
                );
            }
            Chart::Remote { .. } => {
                self.push(
                    &mut out,
                    &mut diags,
                    "flux/helmrepository.yaml.j2",
                    &folder,
                    &ctx,
                    &origin,
                    Some(c),
                    values,
                );
            }
            Chart::Local { .. } => {}
        }
        self.push(
            &mut out,
            &mut diags,
            "flux/helmrelease.yaml.j2",
            &folder,
            &ctx,
            &origin,
            Some(c),
            values,
        );
        (out, diags)
    }

    fn argo(&self, cluster_wave: u32, shared: &[Object]) -> Result<Vec<Object>, Vec<Diagnostic>> {
        let (platform, env) = (self.platform, self.env);
        // Room for the shared objects that join them.
        let mut out = Vec::with_capacity(shared.len() + 4 * self.platform.components.len() + 16);
        let mut diags = Vec::new();
        let argo = &platform.project.argo;
        let retry_json = |r: &crate::load::component::Retry| json!({"limit": r.limit, "duration": r.duration, "factor": r.factor, "max_duration": r.max_duration});
        let base = json!({
            "argo": {"namespace": argo.namespace, "project": argo.project},
            "git": self.git(),
            "labels": labels(),
            "retry": retry_json(&argo.retry),
        });
        let with_manifests: BTreeSet<&str> = shared.iter().filter_map(|o| o.component.as_deref()).collect();
        for (objs, ds) in self
            .chosen()
            .par_iter()
            .with_max_len(1)
            .map(|c| self.argo_component(c, &base, &with_manifests))
            .collect::<Vec<_>>()
        {
            out.extend(objs);
            diags.extend(ds);
        }
        if shared.iter().any(|o| o.source == Source::Cluster) {
            let origin = Origin::file_start(env.file.as_str());
            let mut ctx = base.clone();
            ctx["name"] = json!(CLUSTER_APP);
            ctx["namespace"] = json!("default");
            ctx["wave"] = json!(cluster_wave);
            ctx["automated"] = json!(true);
            ctx["cascade"] = json!(false);
            ctx["server_side_diff"] = json!(false);
            ctx["namespace_metadata"] = J::Null;
            ctx["source"] = json!("manifests");
            ctx["path"] = json!(repo_path(platform, env, self.layout, Target::Argo, CLUSTER));
            self.push(
                &mut out,
                &mut diags,
                "argo/application.yaml.j2",
                "",
                &ctx,
                &origin,
                None,
                None,
            );
        }
        let origin = Origin::file_start(env.file.as_str());
        let mut ctx = base.clone();
        ctx["name"] = json!(ROOT_APP);
        ctx["path"] = json!(repo_path(platform, env, self.layout, Target::Argo, ""));
        self.push(
            &mut out,
            &mut diags,
            "argo/root.yaml.j2",
            BOOTSTRAP,
            &ctx,
            &origin,
            None,
            None,
        );
        if diags.is_empty() { Ok(out) } else { Err(diags) }
    }

    /// The Argo CD Applications of one component: its chart, and its
    /// manifests when it has any.
    fn argo_component(
        &self,
        c: &Component,
        base: &J,
        with_manifests: &BTreeSet<&str>,
    ) -> (Vec<Object>, Vec<Diagnostic>) {
        let (platform, env) = (self.platform, self.env);
        let mut out = Vec::new();
        let mut diags = Vec::new();
        let retry_json = |r: &crate::load::component::Retry| json!({"limit": r.limit, "duration": r.duration, "factor": r.factor, "max_duration": r.max_duration});
        let origin = c.origin();
        let mut ctx = base.clone();
        ctx["component"] = component_json(c);
        ctx["values_yaml"] = json!(VALUES_YAML_MARKER);
        ctx["name"] = json!(c.name);
        ctx["namespace"] = json!(c.namespace);
        ctx["wave"] = json!(self.depths.get(&c.name).copied().unwrap_or(0));
        ctx["automated"] = json!(c.sync == SyncMode::Automated);
        ctx["cascade"] = json!(c.tier == Tier::Addon);
        ctx["server_side_diff"] = json!(c.server_side_diff);
        if let Some(r) = &c.retry {
            ctx["retry"] = retry_json(r);
        }
        ctx["namespace_metadata"] = match self.namespaces.get(&c.namespace) {
            Some(ns) if !(ns.labels.is_empty() && ns.annotations.is_empty()) => {
                let mut m = serde_json::Map::new();
                if !ns.labels.is_empty() {
                    m.insert("labels".into(), json!(ns.labels));
                }
                if !ns.annotations.is_empty() {
                    m.insert("annotations".into(), json!(ns.annotations));
                }
                J::Object(m)
            }
            _ => J::Null,
        };
        match &c.chart {
            Chart::Remote { repo_url, oci, .. } => {
                ctx["source"] = json!("chart");
                // Argo CD's Helm OCI form has no scheme.
                ctx["repo_url"] = json!(if *oci {
                    repo_url.trim_start_matches("oci://").trim_end_matches('/').to_owned()
                } else {
                    repo_url.clone()
                });
            }
            Chart::Local { path } => {
                ctx["source"] = json!("git");
                ctx["path"] = json!(in_repo(env, self.layout, path));
            }
        }
        let values = self.values(c);
        self.push(
            &mut out,
            &mut diags,
            "argo/application.yaml.j2",
            "",
            &ctx,
            &origin,
            Some(c),
            values,
        );
        if with_manifests.contains(c.name.as_str()) {
            let folder = format!("components/{}", c.name);
            ctx["name"] = json!(format!("{}-manifests", c.name));
            ctx["source"] = json!("manifests");
            ctx["path"] = json!(repo_path(platform, env, self.layout, Target::Argo, &folder));
            self.push(
                &mut out,
                &mut diags,
                "argo/application.yaml.j2",
                "",
                &ctx,
                &origin,
                Some(c),
                values,
            );
        }
        (out, diags)
    }
}

/// Stands for the merged values in the object templates. The template
/// writes `{{ values | tojson }}`, which gives this string; it is replaced by
/// the values after parsing, so the (large) values are never printed into
/// YAML text and parsed back.
const VALUES_MARKER: &str = "\u{1}strata:values\u{1}";
/// Likewise, for the merged values as one YAML string (Argo CD's
/// `helm.values`), nulls kept.
const VALUES_YAML_MARKER: &str = "\u{1}strata:values-yaml\u{1}";

/// Whether a string is the marker deferred values stand behind.
pub fn is_values_marker(s: &str) -> bool {
    s == VALUES_MARKER
}

/// Puts the merged values where an object's template asked for them. With
/// `defer`, values asked for once, under keys only (no list on the way),
/// are left as the marker and given back [`Deferred`] when the quick writer
/// writes them.
fn substitute_values(doc: &mut J, values: Values<'_>, defer: bool) -> Option<Deferred> {
    let mut found = Vec::new();
    if defer {
        markers(doc, &mut Vec::new(), &mut found);
    }
    let deferred = match found.as_slice() {
        [Some(at)] => values.text().map(|text| Deferred {
            at: at.clone(),
            node: values.node.clone(),
            text: Arc::clone(text),
        }),
        _ => None,
    };
    let mut yaml_text = None;
    replace_markers(doc, values, deferred.is_none(), &mut yaml_text);
    deferred
}

/// The key path of each [`VALUES_MARKER`] in a document; `None` for one
/// inside a list.
fn markers(value: &J, path: &mut Vec<String>, found: &mut Vec<Option<Vec<String>>>) {
    match value {
        J::String(s) if s == VALUES_MARKER => found.push(Some(path.clone())),
        J::Array(items) => {
            let mut inner = Vec::new();
            items.iter().for_each(|i| markers(i, &mut Vec::new(), &mut inner));
            found.extend(inner.into_iter().map(|_| None));
        }
        J::Object(m) => {
            for (k, v) in m {
                path.push(k.clone());
                markers(v, path, found);
                path.pop();
            }
        }
        _ => {}
    }
}

fn replace_markers(value: &mut J, values: Values<'_>, objects: bool, yaml_text: &mut Option<String>) {
    match value {
        J::String(s) if objects && s == VALUES_MARKER => *value = values.node.to_json(),
        J::String(s) if s == VALUES_YAML_MARKER => {
            let text = yaml_text.get_or_insert_with(|| values.yaml());
            *value = J::String(text.clone());
        }
        J::Array(items) => items
            .iter_mut()
            .for_each(|i| replace_markers(i, values, objects, yaml_text)),
        J::Object(m) => m
            .values_mut()
            .for_each(|v| replace_markers(v, values, objects, yaml_text)),
        _ => {}
    }
}

/// Where a strata template (built-in or the repository's override) lives,
/// as diagnostics name it.
fn template_path(platform: &Platform, name: &str) -> String {
    if platform.templates.contains_key(name) {
        crate::world::join(&platform.project.templates, name)
    } else if templates::BUILTIN.iter().any(|(n, _)| *n == name) {
        format!("<builtin>/templates/{name}")
    } else {
        name.to_owned()
    }
}

fn render_builtin(
    platform: &Platform,
    engine: &Engine<'_>,
    name: &str,
    ctx: &J,
    values: Option<Values<'_>>,
    defer: bool,
    origin: &Origin,
) -> Result<(J, Option<Deferred>), Diagnostic> {
    let text = templates::render(engine, name, minijinja::Value::from(minijinja::value::Serde(ctx))).map_err(|e| {
        let mut d = templates::template_error(name, &e);
        d.origin.file = template_path(platform, &d.origin.file).into();
        d.with_related(origin.clone(), "rendering the objects of this input")
    })?;
    let mut docs = parse_objects(name, &text)?;
    // One object per template (checked below): values deferred in one
    // document only.
    let defer = defer && docs.len() == 1;
    let deferred = match values {
        Some(values) => docs
            .iter_mut()
            .map(|d| substitute_values(d, values, defer))
            .fold(None, Option::or),
        None => None,
    };
    if docs.len() != 1 {
        return Err(Diagnostic::error(
            codes::TEMPLATE,
            origin.clone(),
            format!("template {name} must give exactly one object, it gave {}", docs.len()),
        )
        .with_help(format!("fix {}", template_path(platform, name))));
    }
    let doc = docs.remove(0);
    let named = |p: &str| doc.pointer(p).and_then(J::as_str).is_some_and(|s| !s.is_empty());
    if !(named("/apiVersion") && named("/kind") && named("/metadata/name")) {
        return Err(Diagnostic::error(
            codes::TEMPLATE,
            origin.clone(),
            format!("template {name} gave an object without apiVersion, kind or metadata.name"),
        )
        .with_help(format!("fix {}", template_path(platform, name))));
    }
    Ok((doc, deferred))
}

fn parse_objects(name: &str, text: &str) -> Result<Vec<J>, Diagnostic> {
    if let Some(doc) = output::read(text) {
        #[cfg(debug_assertions)]
        {
            let full = yaml::parse_plain_multi(&Arc::from(name), text);
            debug_assert_eq!(
                full.ok(),
                Some(vec![doc.clone()]),
                "the quick reader, on {name}:\n{text}"
            );
        }
        return Ok(vec![doc]);
    }
    let file: Arc<str> = Arc::from(name);
    yaml::parse_plain_multi(&file, text).map_err(|e| {
        Diagnostic::error(
            codes::TEMPLATE,
            e.origin,
            format!("the output of template {name} is not YAML: {}", e.message),
        )
        .with_help("the line and column are in the template's output; check the template's indentation and quoting")
    })
}

/// Cluster-scoped kinds, which take no namespace.
pub fn cluster_scoped(kind: &str) -> bool {
    matches!(
        kind,
        "Namespace"
            | "Node"
            | "PersistentVolume"
            | "StorageClass"
            | "CSIDriver"
            | "CSINode"
            | "VolumeAttachment"
            | "ClusterRole"
            | "ClusterRoleBinding"
            | "CustomResourceDefinition"
            | "PriorityClass"
            | "RuntimeClass"
            | "IngressClass"
            | "ValidatingWebhookConfiguration"
            | "MutatingWebhookConfiguration"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding"
            | "APIService"
            | "VolumeSnapshotClass"
            | "ClusterIssuer"
            | "ClusterSecretStore"
            | "ClusterExternalSecret"
            | "CiliumClusterwideNetworkPolicy"
            | "CiliumL2AnnouncementPolicy"
            | "CiliumLoadBalancerIPPool"
            | "CiliumNode"
            | "CiliumBGPClusterConfig"
            | "CiliumBGPPeerConfig"
            | "CiliumBGPAdvertisement"
    )
}

/// A manifest object, its origin, and its spanned document when it is not a template.
type ManifestDoc = (J, Origin, Option<yaml::Node>);

/// The objects of one manifest file, each checked to be a Kubernetes object.
fn manifest_objects(
    path: &Arc<str>,
    text: &str,
    template: bool,
    c: &Component,
) -> Result<Vec<ManifestDoc>, Vec<Diagnostic>> {
    let docs = yaml::parse_multi(path, text).map_err(|e| {
        let mut d = crate::load::files::syntax_error(e);
        if template {
            d = d.with_note("the line and column are in the template's rendered output");
        }
        vec![d]
    })?;
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for doc in docs {
        let origin = doc.origin.clone();
        let mut missing = Vec::new();
        for key in ["apiVersion", "kind"] {
            if doc.get(key).and_then(|n| n.as_str()).is_none() {
                missing.push(key);
            }
        }
        if doc.get_path("metadata.name").and_then(|n| n.as_str()).is_none() {
            missing.push("metadata.name");
        }
        if doc.as_map().is_none() {
            diags.push(
                Diagnostic::error(
                    codes::OBJECT,
                    origin,
                    format!(
                        "a manifest document must be a Kubernetes object, found {}",
                        doc.value.type_name()
                    ),
                )
                .with_help("each YAML document in manifests/ is one object with apiVersion, kind and metadata.name"),
            );
            continue;
        }
        if !missing.is_empty() {
            diags.push(
                Diagnostic::error(
                    codes::OBJECT,
                    origin,
                    format!("manifest object has no {}", missing.join(", ")),
                )
                .with_help("every Kubernetes object needs apiVersion, kind and metadata.name"),
            );
            continue;
        }
        let (api_version, kind) = (doc.get("apiVersion"), doc.get("kind"));
        let names = (
            api_version.and_then(yaml::Node::as_str),
            kind.and_then(yaml::Node::as_str),
        );
        if let (Some(av), Some(k)) = names
            && let Err(why) = crate::validate::catalog::check_names(av, k)
        {
            let at = if crate::validate::catalog::check_names("v1", k).is_err() {
                kind
            } else {
                api_version
            };
            let mut d = Diagnostic::error(
                codes::SHAPE,
                at.map_or_else(|| origin.clone(), |n| n.origin.clone()),
                why,
            )
            .with_label("not a Kubernetes name")
            .with_help("each document in manifests/ is a Kubernetes object: write its resource's apiVersion and kind");
            if template {
                d = d.with_note("the line and column are in the template's rendered output");
            }
            diags.push(d);
            continue;
        }
        let mut value = doc.to_json();
        let kind = value["kind"].as_str().unwrap_or("").to_owned();
        if !cluster_scoped(&kind)
            && value["metadata"].get("namespace").is_none()
            && let Some(meta) = value["metadata"].as_object_mut()
        {
            meta.insert("namespace".into(), J::String(c.namespace.clone()));
        }
        out.push((value, origin, (!template).then_some(doc)));
    }
    if diags.is_empty() { Ok(out) } else { Err(diags) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> yaml::Node {
        yaml::parse(&Arc::from("values.yaml"), text).unwrap()
    }

    /// Values asked for once, under keys, are deferred; anywhere else (in a
    /// list, twice) they are copied in, as is every YAML string.
    #[test]
    fn values_are_deferred_only_where_they_can_be_spliced() {
        let node = values("b: 1\na: [x, {c: null}]\n");
        let cell = OnceLock::new();
        let shared = yaml::Texts::default();
        let v = Values {
            node: &node,
            text: &cell,
            shared: &shared,
        };
        let full = json!({"a": ["x", {"c": null}], "b": 1});

        let mut doc = json!({"kind": "HelmRelease", "spec": {"values": VALUES_MARKER, "s": VALUES_YAML_MARKER}});
        let d = substitute_values(&mut doc, v, true).expect("deferred");
        assert_eq!(d.at, ["spec", "values"]);
        assert_eq!(&*d.text, "a:\n- x\n- c: null\nb: 1\n");
        assert_eq!(doc["spec"]["values"], VALUES_MARKER);
        assert_eq!(doc["spec"]["s"], "a:\n- x\n- c: null\nb: 1\n");
        let object = Object {
            folder: String::new(),
            value: doc,
            origin: node.origin.clone(),
            component: None,
            source: Source::Generated,
            node: None,
            values: Some(Arc::new(d)),
        };
        assert_eq!(object.full()["spec"]["values"], full);
        let mut whole = object.clone();
        whole.materialize();
        assert!(whole.values.is_none());
        assert_eq!(whole.value, *object.full());
        assert_eq!(object.canonical_yaml(), yaml::to_canonical_yaml(&whole.value));

        for mut doc in [
            json!({"spec": {"values": VALUES_MARKER}}),
            json!({"spec": {"list": [VALUES_MARKER]}}),
            json!({"spec": {"values": VALUES_MARKER, "again": VALUES_MARKER}}),
        ] {
            let defer = doc["spec"].get("list").is_none() && doc["spec"].get("again").is_none();
            // Without leave to defer, or where it cannot be spliced.
            assert!(substitute_values(&mut doc.clone(), v, false).is_none());
            assert_eq!(substitute_values(&mut doc, v, true).is_some(), defer, "{doc}");
            if !defer {
                assert!(!doc.to_string().contains("strata:values"), "{doc}");
            }
        }
        // Empty values are written as they are.
        let empty = values("{}\n");
        let cell = OnceLock::new();
        let mut doc = json!({"spec": {"values": VALUES_MARKER}});
        assert!(
            substitute_values(
                &mut doc,
                Values {
                    node: &empty,
                    text: &cell,
                    shared: &shared,
                },
                true
            )
            .is_none()
        );
        assert_eq!(doc["spec"]["values"], json!({}));
    }
}
