//! What the substrate stack applies before any engine runs
//! (`rendered/<env>/substrate/`). A cluster whose substrate starts it
//! without a CNI (ADR 0032: `cni: none` on Talos, `disableDefaultCNI` on
//! kind) has no pod network until the platform's CNI runs, so no GitOps
//! engine can start: the substrate must apply the CNI itself, exactly as
//! the platform will deploy it, and leave out what the platform replaces
//! (kube-proxy, when Cilium replaces it; Talos's own CoreDNS, when the
//! platform runs CoreDNS).
//!
//! - talos: `talos-patch.yaml`, a machine-configuration patch for the
//!   control-plane nodes, whose `cluster.inlineManifests` hold the CNI's
//!   objects as its chart renders them here, from the lock, with the
//!   environment's values (the render the rules judge). Talos creates
//!   inline manifests once and never updates them (machinery's
//!   `InlineManifest`, applied at bootstrap); the engine then adopts them:
//!   a Helm release takes them over through Helm's ownership labels, which
//!   strata writes into them, a hydrated tree applies them as they are.
//! - kind: `kind-config.yaml`, a `kind.x-k8s.io/v1alpha4` Cluster without
//!   kind's default CNI and, with kube-proxy replacement, without
//!   kube-proxy (`networking.kubeProxyMode: none`); and `cni.yaml`, the
//!   CNI's objects as a `v1` List (what `kubectl apply -f` takes), rendered
//!   the same way, applied before the engine's bootstrap.
//!
//! With `cni: {component: NAME, bootstrap: external}` the CNI is installed
//! outside strata: the cluster still starts without a CNI of its own, and
//! neither file carries the CNI's objects.

use std::collections::BTreeMap;

use serde_json::{Value as J, json};

use super::cluster::cilium_mode;
use super::hydrate::Delivery;
use super::images::{image_matches, pod_images};
use super::{EnvRender, Object, Source};
use crate::diag::{Diagnostic, Severity, codes};
use crate::load::{Component, Environment, Platform};
use crate::yaml::Origin;

/// The folder of an environment's substrate files.
pub const SUBSTRATE: &str = "substrate";
/// The Talos machine-configuration patch.
pub const TALOS_PATCH: &str = "talos-patch.yaml";
/// The kind cluster configuration.
pub const KIND_CONFIG: &str = "kind-config.yaml";
/// The CNI's objects, applied to a kind cluster before the engine.
pub const KIND_CNI: &str = "cni.yaml";

/// Images of the CNIs strata recognises in what a chart renders.
const CNI_IMAGES: &[&str] = &["cilium/cilium", "calico/node", "flannel/flannel", "flannel-io/flannel"];
/// Chart (or profile) names of CNIs, for charts that are not rendered here.
const CNI_CHARTS: &[&str] = &["cilium", "calico", "tigera-operator", "flannel"];

/// What the platform asks of the substrate at bootstrap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bootstrap {
    /// The component that is the cluster's CNI.
    pub cni: Option<String>,
    /// The CNI is installed outside strata (`bootstrap: external`): the
    /// substrate files carry none of its objects.
    pub external: bool,
    /// Whether the CNI (Cilium) replaces kube-proxy.
    pub kube_proxy_replacement: bool,
    /// The component that runs CoreDNS.
    pub coredns: Option<String>,
}

/// What the platform asks of the substrate: its CNI (`cni:` in strata.yaml,
/// else recognised from what the charts render or, where they are not
/// rendered, from their names), whether Cilium replaces kube-proxy, and
/// whether a component runs CoreDNS.
pub fn bootstrap(platform: &Platform, env: &Environment, r: &EnvRender) -> Bootstrap {
    let chosen: Vec<&Component> = platform.components_in(env).collect();
    let cni = match &platform.project.cni {
        Some((c, _)) => chosen.iter().find(|x| x.name == *c).map(|x| x.name.clone()),
        None => recognise(&chosen, r, CNI_IMAGES, CNI_CHARTS, "DaemonSet"),
    };
    let coredns = recognise(&chosen, r, &["coredns"], &["coredns"], "Deployment");
    let cilium = cilium_mode(platform, env, &r.merged);
    let is_cilium = cni.as_ref().is_some_and(|c| {
        let comp = &platform.components[c];
        comp.chart.name() == "cilium"
            || comp.profile_name() == "cilium"
            || r.charts
                .get(c)
                .is_some_and(|objects| runs(objects.iter(), &["cilium/cilium"], "DaemonSet"))
    });
    let external = platform.project.cni_external.is_some() && platform.project.cni.is_some() && cni.is_some();
    Bootstrap {
        kube_proxy_replacement: is_cilium && cilium.kube_proxy_replacement,
        cni,
        external,
        coredns,
    }
}

/// The first component whose rendered chart or manifests run a workload of
/// `kind` with one of `images`, or, its chart not rendered here, whose
/// chart is one of `charts`.
fn recognise(chosen: &[&Component], r: &EnvRender, images: &[&str], charts: &[&str], kind: &str) -> Option<String> {
    chosen
        .iter()
        .find(|c| {
            let manifests = r.workload_objects().filter(|o| o.component.as_ref() == Some(&c.name));
            runs(manifests, images, kind)
                || match r.charts.get(&c.name) {
                    Some(objects) => runs(objects.iter(), images, kind),
                    None => charts.contains(&c.chart.name()) || charts.contains(&c.profile_name()),
                }
        })
        .map(|c| c.name.clone())
}

fn runs<'a>(mut objects: impl Iterator<Item = &'a Object>, images: &[&str], kind: &str) -> bool {
    objects.any(|o| {
        o.kind() == kind
            && pod_images(&o.value)
                .iter()
                .any(|i| images.iter().any(|p| image_matches(p, i)))
    })
}

/// The substrate files of an environment, by its substrate type's
/// `bootstrap:`; notes on what they leave out.
pub fn files(
    platform: &Platform,
    env: &Environment,
    r: &EnvRender,
    boot: &Bootstrap,
) -> Result<(Vec<Object>, Vec<Diagnostic>), Vec<Diagnostic>> {
    let Some(st) = platform.substrate(env) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let origin = Origin::file_start(env.file.as_str());
    match st.bootstrap.as_deref() {
        Some("talos-patch") => talos_patch(platform, env, r, boot, origin),
        Some("kind-config") => {
            let mut files = vec![kind_config(env, boot, origin.clone())];
            let mut notes = Vec::new();
            if let Some(cni) = boot.cni.as_ref().filter(|_| !boot.external) {
                let c = &platform.components[cni];
                match r.charts.get(cni) {
                    Some(objects) => match cni_list(c, objects, unstable(r, cni), r.plan.of(cni), env) {
                        Ok(list) => files.push(object(KIND_CNI, list, origin, Some(cni))),
                        Err(d) => notes.extend(d),
                    },
                    None => notes.push(not_inline(c, KIND_CNI)),
                }
            }
            Ok((files, notes))
        }
        _ => Ok((Vec::new(), Vec::new())),
    }
}

fn object(file: &str, value: J, origin: Origin, component: Option<&String>) -> Object {
    Object {
        folder: SUBSTRATE.to_owned(),
        value,
        origin,
        component: component.cloned(),
        source: Source::Substrate { file: file.to_owned() },
        node: None,
        values: None,
    }
}

/// `kind-config.yaml`: no default CNI when the platform brings one, no
/// kube-proxy when Cilium replaces it.
fn kind_config(env: &Environment, boot: &Bootstrap, origin: Origin) -> Object {
    let mut networking = serde_json::Map::new();
    if boot.cni.is_some() {
        networking.insert("disableDefaultCNI".into(), json!(true));
    }
    if boot.kube_proxy_replacement {
        networking.insert("kubeProxyMode".into(), json!("none"));
    }
    let mut value = json!({
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "kind": "Cluster",
        "networking": networking,
    });
    if let Some(name) = env.contract.get("cluster_name").and_then(|n| n.as_str())
        && crate::load::names::is_dns_label(name, 63)
    {
        value["name"] = json!(name);
    }
    object(KIND_CONFIG, value, origin, boot.cni.as_ref())
}

/// `talos-patch.yaml`: CNI none with the CNI's objects inline, kube-proxy
/// off under Cilium's replacement, Talos's CoreDNS off when the platform
/// runs one. No file when the platform asks nothing of Talos.
fn talos_patch(
    platform: &Platform,
    env: &Environment,
    r: &EnvRender,
    boot: &Bootstrap,
    origin: Origin,
) -> Result<(Vec<Object>, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut cluster = serde_json::Map::new();
    let mut notes = Vec::new();
    if let Some(cni) = &boot.cni {
        cluster.insert("network".into(), json!({"cni": {"name": "none"}}));
        let c = &platform.components[cni];
        match r.charts.get(cni) {
            // Installed another way: nothing of it here.
            _ if boot.external => {}
            // A finding, not a stop: every other check still runs.
            Some(objects) => match inline_manifest(c, objects, unstable(r, cni), r.plan.of(cni), env) {
                Ok(contents) => {
                    cluster.insert("inlineManifests".into(), json!([{"name": cni, "contents": contents}]));
                }
                Err(d) => notes.extend(d),
            },
            None => notes.push(not_inline(c, TALOS_PATCH)),
        }
    }
    if boot.kube_proxy_replacement {
        cluster.insert("proxy".into(), json!({"disabled": true}));
    }
    if boot.coredns.is_some() {
        cluster.insert("coreDNS".into(), json!({"disabled": true}));
    }
    if cluster.is_empty() {
        return Ok((Vec::new(), notes));
    }
    let patch = object(TALOS_PATCH, json!({"cluster": cluster}), origin, boot.cni.as_ref());
    Ok((vec![patch], notes))
}

/// The CNI's objects as one YAML stream, with Helm's ownership labels where
/// a Helm release will adopt them. Key material among them is an error (it
/// would be committed to git in the patch), judged by content whatever the
/// kind: a Secret, an object that holds a private key or a token
/// ([`crate::secrets::material`]), or `unstable`, the objects whose values
/// the chart generates at random.
fn inline_manifest(
    c: &Component,
    objects: &[Object],
    unstable: &[String],
    delivery: Delivery,
    env: &Environment,
) -> Result<String, Vec<Diagnostic>> {
    let mut secrets: Vec<Diagnostic> = objects
        .iter()
        .filter_map(|o| {
            let held = crate::secrets::material::held(&o.value);
            (o.kind() == "Secret" || held.is_some()).then(|| secret_inline(c, o, held.as_ref(), env))
        })
        .collect();
    if !unstable.is_empty() {
        secrets.push(random_inline(c, unstable, env));
    }
    if !secrets.is_empty() {
        return Err(secrets);
    }
    let mut text = String::new();
    for value in owned(c, objects, delivery) {
        text.push_str("---\n");
        text.push_str(&crate::yaml::to_canonical_yaml(&value));
    }
    Ok(text)
}

/// The values the chart of `cni` generates at random, by where they are.
fn unstable<'a>(r: &'a EnvRender, cni: &str) -> &'a [String] {
    r.unstable.get(cni).map(Vec::as_slice).unwrap_or_default()
}

/// The CNI's objects, with Helm's ownership where a Helm release will
/// adopt them.
fn owned(c: &Component, objects: &[Object], delivery: Delivery) -> Vec<J> {
    objects
        .iter()
        .map(|o| {
            let mut value = o.value.clone();
            if delivery == Delivery::Release {
                owned_by_release(&mut value, &c.name, &c.namespace);
            }
            value
        })
        .collect()
}

/// kind's `cni.yaml`: the CNI's objects as one `v1` List, which `kubectl
/// apply -f` takes as its items; held to what the Talos patch is held to
/// (no Secret goes into git).
fn cni_list(
    c: &Component,
    objects: &[Object],
    unstable: &[String],
    delivery: Delivery,
    env: &Environment,
) -> Result<J, Vec<Diagnostic>> {
    inline_manifest(c, objects, unstable, delivery, env)?;
    Ok(json!({"apiVersion": "v1", "kind": "List", "items": owned(c, objects, delivery)}))
}

/// Helm's ownership metadata, by which a release adopts an object that
/// exists already (Helm 3.2+: `app.kubernetes.io/managed-by: Helm` and the
/// `meta.helm.sh/release-name` and `-namespace` annotations).
fn owned_by_release(value: &mut J, release: &str, namespace: &str) {
    let Some(meta) = value.get_mut("metadata").and_then(J::as_object_mut) else {
        return;
    };
    let mut put = |field: &str, k: &str, v: &str| {
        let m = meta.entry(field).or_insert_with(|| json!({}));
        if !m.is_object() {
            *m = json!({});
        }
        if let Some(m) = m.as_object_mut() {
            m.insert(k.to_owned(), json!(v));
        }
    };
    put("labels", "app.kubernetes.io/managed-by", "Helm");
    put("annotations", "meta.helm.sh/release-name", release);
    put("annotations", "meta.helm.sh/release-namespace", namespace);
}

fn secret_inline(
    c: &Component,
    o: &Object,
    held: Option<&crate::secrets::material::Held>,
    env: &Environment,
) -> Diagnostic {
    let template = match &o.source {
        Source::Chart { template } => format!(" (rendered by {template})"),
        _ => String::new(),
    };
    let holding = held.map_or_else(String::new, |h| format!(", which holds {} at {}", h.what, h.at));
    Diagnostic::error(
        codes::SUBSTRATE_SECRET,
        crate::profiles::version_origin(c),
        format!(
            "the CNI {} renders {}{template}{holding}; {TALOS_PATCH} would carry it into git as an inline manifest",
            c.name,
            o.id()
        ),
    )
    .with_label("this chart")
    .with_help("have the chart create it in the cluster instead (Cilium: `hubble.tls.auto.method: cronJob`, or `hubble.tls.auto.enabled: false`), so that no Secret is rendered; or, when the CNI is installed another way, say so in strata.yaml: `cni: {component: NAME, bootstrap: external}`")
    .in_env(&env.name)
}

/// The CNI's chart generates values at random: the patch would commit
/// them, and they would change on every render.
fn random_inline(c: &Component, unstable: &[String], env: &Environment) -> Diagnostic {
    Diagnostic::error(
        codes::SUBSTRATE_SECRET,
        crate::profiles::version_origin(c),
        format!(
            "the CNI {} generates values at random ({}); {TALOS_PATCH} would carry them into git as inline manifests, and they would change on every render",
            c.name,
            unstable.join(", ")
        ),
    )
    .with_label("this chart")
    .with_help("give the chart fixed values for what it generates, or have it create them in the cluster (Cilium: `hubble.tls.auto.method: cronJob`)")
    .in_env(&env.name)
}

/// Once per run, whatever the environment (the same for each).
fn not_inline(c: &Component, file: &str) -> Diagnostic {
    let what = if file == TALOS_PATCH {
        format!("{TALOS_PATCH} has no inline manifests")
    } else {
        format!("no {file} is written")
    };
    let mut d = Diagnostic::warning(
        codes::SUBSTRATE_CNI,
        crate::profiles::version_origin(c),
        format!("{what}: the chart of the CNI {} was not rendered here", c.name),
    )
    .with_label("this chart")
    .with_help("install helm v4 and run `strata charts pull`, so that the substrate files carry the CNI's objects; without them a cluster without a CNI of its own has no pod network for the engine to start on (or, installed another way, `cni: {component: NAME, bootstrap: external}` in strata.yaml)");
    d.severity = Severity::Note;
    d
}

/// The substrate outputs a contract may give: what the substrate stack was
/// configured with, by name and meaning, for SUB001.
pub fn contract_bootstrap(env: &Environment) -> BTreeMap<&'static str, (J, Origin)> {
    let mut out = BTreeMap::new();
    for key in ["cni", "kube_proxy", "coredns"] {
        if let Some(n) = env.contract.get(key) {
            out.insert(key, (n.to_json(), n.origin.clone()));
        }
    }
    out
}
