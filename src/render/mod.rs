//! Stage 3, render: for each environment and target, the Kubernetes objects
//! strata writes. Flux gets a GitRepository, a Kustomization per component
//! and, per component folder, the Namespace, the chart source and the
//! HelmRelease; Argo CD gets an Application per component. Both get the
//! component manifests and the cluster objects the substrate type generates.

pub mod graph;
pub mod templates;

use std::collections::BTreeMap;
use std::sync::Arc;

use minijinja::Environment as Engine;
use rayon::prelude::*;
use serde_json::{Value as J, json};

use crate::diag::{Diagnostic, codes};
use crate::load::{Chart, Component, Environment, Platform, SyncMode, Target};
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
}

impl Object {
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
}

impl EnvRender {
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
pub fn render(platform: &Platform, target_filter: Option<Target>) -> Result<Vec<EnvRender>, Vec<Diagnostic>> {
    let depths = graph::depths(&platform.components)?;
    if platform.components.contains_key(CLUSTER_APP) {
        let c = &platform.components[CLUSTER_APP];
        return Err(vec![
            Diagnostic::error(
                codes::SHAPE,
                c.origin(),
                format!("the component name `{CLUSTER_APP}` is reserved"),
            )
            .with_help("strata names the generated cluster objects' application so; rename the component"),
        ]);
    }
    let results: Vec<Result<EnvRender, Vec<Diagnostic>>> = platform
        .environments
        .values()
        .collect::<Vec<_>>()
        .par_iter()
        .map(|env| render_env(platform, env, &depths, target_filter))
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

fn labels() -> J {
    json!({"app.kubernetes.io/managed-by": "strata"})
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
        "chart": chart,
        "sync": if c.sync == SyncMode::Manual { "manual" } else { "automated" },
        "tier": if c.tier == crate::load::Tier::Core { "core" } else { "addon" },
        "requires": c.requires.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>(),
        "profile": c.profile_name(),
    })
}

/// Repository path of a folder of the rendered tree.
fn repo_path(platform: &Platform, env: &Environment, target: Target, folder: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    if !env.git.path.is_empty() {
        parts.push(&env.git.path);
    }
    parts.push(&platform.project.output);
    parts.push(&env.name);
    parts.push(target.name());
    if !folder.is_empty() {
        parts.push(folder);
    }
    parts.join("/")
}

fn render_env(
    platform: &Platform,
    env: &Environment,
    depths: &BTreeMap<String, u32>,
    target_filter: Option<Target>,
) -> Result<EnvRender, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let merged: BTreeMap<String, Merged> = platform
        .components
        .values()
        .collect::<Vec<_>>()
        .par_iter()
        .map(|c| (c.name.clone(), merge::merge_component(platform, c, env)))
        .collect();

    let values: BTreeMap<String, J> = merged.iter().map(|(k, m)| (k.clone(), m.values.to_json())).collect();

    // Sensitive outputs referred to by any template are errors.
    for c in platform.components.values() {
        for m in c.manifests.iter().filter(|m| m.template) {
            diags.extend(templates::sensitive_references(
                &m.path,
                &m.text,
                &env.contract.sensitive,
            ));
        }
    }
    let mut extra: Vec<(&str, &str)> = Vec::new();
    for c in platform.components.values() {
        for m in c.manifests.iter().filter(|m| m.template) {
            extra.push((&m.path, &m.text));
        }
    }
    let engine = match templates::engine(&platform.templates, &platform.project.templates, &extra) {
        Ok(e) => e,
        Err(d) => {
            diags.push(d);
            return Err(diags);
        }
    };
    if !diags.is_empty() {
        return Err(diags);
    }

    let contract = env.contract.to_json();
    let substrate = env.substrate.0.as_str();

    // Component manifests and cluster objects: the same for every target.
    let mut shared: Vec<Object> = Vec::new();
    for c in platform.components.values() {
        let ctx = json!({
            "env": env.name,
            "substrate": substrate,
            "contract": contract,
            "values": values[&c.name],
            "component": component_json(c),
        });
        for m in &c.manifests {
            let text = if m.template {
                match engine
                    .get_template(&m.path)
                    .and_then(|t| t.render(minijinja::Value::from(minijinja::value::Serde(&ctx))))
                {
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
                Ok(objs) => shared.extend(objs.into_iter().map(|(value, origin, node)| Object {
                    folder: format!("components/{}", c.name),
                    value,
                    origin,
                    component: Some(c.name.clone()),
                    source: Source::Manifest,
                    node,
                })),
                Err(d) => diags.extend(d.into_iter().map(|d| d.in_env(&env.name))),
            }
        }
    }
    let cluster_wave = platform
        .substrate(env)
        .map(|s| {
            s.generate_requires
                .iter()
                .filter_map(|r| depths.get(r))
                .map(|d| d + 1)
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0);
    let mut cluster_requires: Vec<String> = Vec::new();
    if let Some(st) = platform.substrate(env) {
        cluster_requires = st
            .generate_requires
            .iter()
            .filter(|r| platform.components.contains_key(*r))
            .cloned()
            .collect();
        let ctx = json!({
            "env": env.name,
            "substrate": substrate,
            "contract": contract,
            "host_label": platform.host_label(env),
            "labels": labels(),
        });
        for name in &st.generate {
            let origin = Origin::file_start(&Arc::from(env.contract.file.as_ref()));
            let text = match engine
                .get_template(name)
                .and_then(|t| t.render(minijinja::Value::from(minijinja::value::Serde(&ctx))))
            {
                Ok(t) => t,
                Err(e) => {
                    let mut d = templates::template_error(name, &e).in_env(&env.name);
                    d.origin.file = Arc::from(template_path(platform, &d.origin.file));
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
                })),
                Err(d) => diags.push(d.in_env(&env.name)),
            }
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }

    let mut targets = BTreeMap::new();
    for target in platform.targets(env) {
        if target_filter.is_some_and(|t| t != target) {
            continue;
        }
        let mut objects = match target {
            Target::Flux => flux_objects(platform, env, &engine, &values, &cluster_requires, &shared),
            Target::Argo => argo_objects(platform, env, &engine, &values, depths, cluster_wave, &shared),
        };
        match objects.as_mut() {
            Ok(objs) => objs.extend(shared.iter().cloned()),
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
    })
}

/// Stands for the merged values in the object templates. The template
/// writes `{{ values | tojson }}`, which gives this string; it is replaced by
/// the values after parsing, so the (large) values are never printed into
/// YAML text and parsed back.
const VALUES_MARKER: &str = "\u{1}strata:values\u{1}";

fn substitute_values(value: &mut J, values: &J) {
    match value {
        J::String(s) if s == VALUES_MARKER => *value = values.clone(),
        J::Array(items) => items.iter_mut().for_each(|i| substitute_values(i, values)),
        J::Object(m) => m.values_mut().for_each(|v| substitute_values(v, values)),
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
    values: Option<&J>,
    origin: &Origin,
) -> Result<J, Diagnostic> {
    let text = engine
        .get_template(name)
        .and_then(|t| t.render(minijinja::Value::from(minijinja::value::Serde(ctx))))
        .map_err(|e| {
            let mut d = templates::template_error(name, &e);
            d.origin.file = Arc::from(template_path(platform, &d.origin.file));
            d.with_related(origin.clone(), "rendering the objects of this input")
        })?;
    let mut docs = parse_objects(name, &text)?;
    if let Some(values) = values {
        docs.iter_mut().for_each(|d| substitute_values(d, values));
    }
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
    Ok(doc)
}

fn parse_objects(name: &str, text: &str) -> Result<Vec<J>, Diagnostic> {
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
                    codes::SHAPE,
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
                    codes::SHAPE,
                    origin,
                    format!("manifest object has no {}", missing.join(", ")),
                )
                .with_help("every Kubernetes object needs apiVersion, kind and metadata.name"),
            );
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

fn flux_objects(
    platform: &Platform,
    env: &Environment,
    engine: &Engine<'_>,
    values: &BTreeMap<String, J>,
    cluster_requires: &[String],
    shared: &[Object],
) -> Result<Vec<Object>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    let env_origin = Origin::file_start(&Arc::from(env.file.as_str()));
    let base = json!({"flux_namespace": FLUX_NAMESPACE, "git": {"url": env.git.url, "revision": env.git.revision}, "labels": labels()});
    let push = |folder: &str,
                name: &str,
                ctx: J,
                origin: &Origin,
                component: Option<&str>,
                out: &mut Vec<Object>,
                diags: &mut Vec<Diagnostic>| {
        let values = component.and_then(|c| values.get(c));
        match render_builtin(platform, engine, name, &ctx, values, origin) {
            Ok(value) => out.push(Object {
                folder: folder.to_owned(),
                value,
                origin: origin.clone(),
                component: component.map(str::to_owned),
                source: Source::Generated,
                node: None,
            }),
            Err(d) => diags.push(d.in_env(&env.name)),
        }
    };
    push(
        "",
        "flux/gitrepository.yaml.j2",
        base.clone(),
        &env_origin,
        None,
        &mut out,
        &mut diags,
    );
    for c in platform.components.values() {
        let folder = format!("components/{}", c.name);
        let origin = c.origin();
        let mut ctx = base.clone();
        ctx["component"] = component_json(c);
        ctx["values"] = json!(VALUES_MARKER);
        ctx["name"] = json!(c.name);
        ctx["path"] = json!(format!("./{}", repo_path(platform, env, Target::Flux, &folder)));
        ctx["depends_on"] = json!(c.requires.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>());
        ctx["suspend"] = json!(c.sync == SyncMode::Manual);
        push(
            "",
            "flux/kustomization.yaml.j2",
            ctx.clone(),
            &origin,
            Some(&c.name),
            &mut out,
            &mut diags,
        );
        if !SYSTEM_NAMESPACES.contains(&c.namespace.as_str()) {
            push(
                &folder,
                "flux/namespace.yaml.j2",
                ctx.clone(),
                &origin,
                Some(&c.name),
                &mut out,
                &mut diags,
            );
        }
        match &c.chart {
            Chart::Remote { oci: true, .. } => {
                push(
                    &folder,
                    "flux/ocirepository.yaml.j2",
                    ctx.clone(),
                    &origin,
                    Some(&c.name),
                    &mut out,
                    &mut diags,
                );
            }
            Chart::Remote { .. } => {
                push(
                    &folder,
                    "flux/helmrepository.yaml.j2",
                    ctx.clone(),
                    &origin,
                    Some(&c.name),
                    &mut out,
                    &mut diags,
                );
            }
            Chart::Local { .. } => {}
        }
        push(
            &folder,
            "flux/helmrelease.yaml.j2",
            ctx,
            &origin,
            Some(&c.name),
            &mut out,
            &mut diags,
        );
    }
    if shared.iter().any(|o| o.source == Source::Cluster) {
        let mut ctx = base.clone();
        ctx["name"] = json!(CLUSTER_APP);
        ctx["path"] = json!(format!("./{}", repo_path(platform, env, Target::Flux, CLUSTER)));
        ctx["depends_on"] = json!(cluster_requires);
        ctx["suspend"] = json!(false);
        push(
            "",
            "flux/kustomization.yaml.j2",
            ctx,
            &env_origin,
            None,
            &mut out,
            &mut diags,
        );
    }
    if diags.is_empty() { Ok(out) } else { Err(diags) }
}

fn argo_objects(
    platform: &Platform,
    env: &Environment,
    engine: &Engine<'_>,
    values: &BTreeMap<String, J>,
    depths: &BTreeMap<String, u32>,
    cluster_wave: u32,
    shared: &[Object],
) -> Result<Vec<Object>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    let base = json!({"argo_namespace": ARGO_NAMESPACE, "git": {"url": env.git.url, "revision": env.git.revision}, "labels": labels()});
    let push =
        |ctx: J, origin: &Origin, component: Option<&str>, out: &mut Vec<Object>, diags: &mut Vec<Diagnostic>| {
            let values = component.and_then(|c| values.get(c));
            match render_builtin(platform, engine, "argo/application.yaml.j2", &ctx, values, origin) {
                Ok(value) => out.push(Object {
                    folder: String::new(),
                    value,
                    origin: origin.clone(),
                    component: component.map(str::to_owned),
                    source: Source::Generated,
                    node: None,
                }),
                Err(d) => diags.push(d.in_env(&env.name)),
            }
        };
    let with_manifests: std::collections::BTreeSet<&str> =
        shared.iter().filter_map(|o| o.component.as_deref()).collect();
    for c in platform.components.values() {
        let origin = c.origin();
        let mut ctx = base.clone();
        ctx["component"] = component_json(c);
        ctx["values"] = json!(VALUES_MARKER);
        ctx["name"] = json!(c.name);
        ctx["namespace"] = json!(c.namespace);
        ctx["wave"] = json!(depths.get(&c.name).copied().unwrap_or(0));
        ctx["automated"] = json!(c.sync == SyncMode::Automated);
        match &c.chart {
            Chart::Remote { .. } => ctx["source"] = json!("chart"),
            Chart::Local { path } => {
                ctx["source"] = json!("git");
                ctx["path"] = json!(path);
            }
        }
        push(ctx.clone(), &origin, Some(&c.name), &mut out, &mut diags);
        if with_manifests.contains(c.name.as_str()) {
            let folder = format!("components/{}", c.name);
            ctx["name"] = json!(format!("{}-manifests", c.name));
            ctx["source"] = json!("manifests");
            ctx["path"] = json!(repo_path(platform, env, Target::Argo, &folder));
            push(ctx, &origin, Some(&c.name), &mut out, &mut diags);
        }
    }
    if shared.iter().any(|o| o.source == Source::Cluster) {
        let origin = Origin::file_start(&Arc::from(env.file.as_str()));
        let mut ctx = base.clone();
        ctx["name"] = json!(CLUSTER_APP);
        ctx["namespace"] = json!("default");
        ctx["wave"] = json!(cluster_wave);
        ctx["automated"] = json!(true);
        ctx["source"] = json!("manifests");
        ctx["path"] = json!(repo_path(platform, env, Target::Argo, CLUSTER));
        push(ctx, &origin, None, &mut out, &mut diags);
    }
    if diags.is_empty() { Ok(out) } else { Err(diags) }
}
