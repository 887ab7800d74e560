//! What the rules look at, read once per environment: the contract's nodes,
//! the merged values through the chart profiles (with the place that set each
//! value, or the chart default), the workloads and Services the charts render,
//! and the rendered objects.

use std::collections::BTreeMap;

use serde_json::Value as J;

use super::Settings;
use super::profile::{Profile, Profiles, ValueRef, Workload};
use super::selector::{Labels, Selector};
use crate::load::{Component, Environment, Platform};
use crate::render::{EnvRender, Object};
use crate::yaml::{Node, Origin, Value};

/// A node of the contract's `nodes` output.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub name: String,
    pub address: String,
    pub host: String,
    pub roles: Vec<String>,
    pub labels: Labels,
    pub cpu_milli: u64,
    pub memory_mib: u64,
    pub origin: Origin,
    pub host_origin: Origin,
    pub address_origin: Origin,
    pub labels_origin: Origin,
    /// Where each label's value is written.
    pub label_origins: BTreeMap<String, Origin>,
}

impl NodeInfo {
    pub fn is_control_plane(&self) -> bool {
        self.roles.iter().any(|r| r == "control-plane")
    }
}

/// A chart value as the chart sees it: the merged value if a layer sets it,
/// else the profile's default.
#[derive(Clone, Debug)]
pub struct Val {
    pub path: String,
    pub value: J,
    /// A layer set it (`origin` is that layer's line); else it is the chart
    /// default and `origin` is the component's chart pin.
    pub set: bool,
    pub origin: Origin,
    /// The spanned node, when a layer set it.
    pub node: Option<Node>,
}

impl Val {
    pub fn as_i64(&self) -> Option<i64> {
        match &self.value {
            J::Number(n) => n.as_i64(),
            J::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// Helm's truthiness, as `{{ if }}` sees the value.
    pub fn truthy(&self) -> bool {
        match &self.value {
            J::Null => false,
            J::Bool(b) => *b,
            J::Number(n) => n.as_f64() != Some(0.0),
            J::String(s) => !s.is_empty(),
            J::Array(a) => !a.is_empty(),
            J::Object(m) => !m.is_empty(),
        }
    }

    /// Empty, as a chart's `with`/`default` sees it.
    pub fn is_empty(&self) -> bool {
        !self.truthy() && !matches!(self.value, J::Bool(false) | J::Number(_))
    }

    /// `` `path: value` `` in YAML flow style, for messages.
    pub fn show(&self) -> String {
        format!("`{}: {}`", self.path, show_json(&self.value))
    }
}

/// `1 replica`, `2 replicas`.
pub fn plural(n: i64, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

pub fn show_json(v: &J) -> String {
    match v {
        J::Null => "null".into(),
        J::String(s) if s.is_empty() => "\"\"".into(),
        J::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One workload a chart renders in this environment.
#[derive(Clone, Debug)]
pub struct Inst<'a> {
    pub component: &'a Component,
    pub profile: &'a Profile,
    pub workload: &'a Workload,
    /// The replica count (Kubernetes' default 1 when the chart has no value).
    pub replicas: Option<Val>,
    pub pod_labels: Labels,
}

impl Inst<'_> {
    pub fn replica_count(&self) -> i64 {
        self.replicas.as_ref().and_then(Val::as_i64).unwrap_or(1)
    }

    /// `Deployment/namespace/id`, the id waivers name.
    pub fn object_id(&self) -> String {
        format!(
            "{}/{}/{}",
            self.workload.kind.name(),
            self.component.namespace,
            self.workload.id
        )
    }

    /// `Traefik (component traefik)`.
    pub fn what(&self) -> String {
        format!("{} (component {})", self.workload.title, self.component.name)
    }
}

/// Everything the rules of one environment read.
pub struct Ctx<'a> {
    pub platform: &'a Platform,
    pub profiles: &'a Profiles,
    pub env: &'a Environment,
    pub render: &'a EnvRender,
    pub settings: &'a Settings,
    pub host_label: String,
    pub nodes: Vec<NodeInfo>,
    /// The contract's `nodes` output, for findings about the node list.
    pub nodes_origin: Origin,
}

fn str_field(n: &Node, key: &str) -> (String, Origin) {
    match n.get(key) {
        Some(v) => (
            match &v.value {
                Value::Str(s) => s.clone(),
                Value::Int(i) => i.to_string(),
                _ => String::new(),
            },
            v.origin.clone(),
        ),
        None => (String::new(), n.origin.clone()),
    }
}

fn num_field(n: &Node, key: &str) -> f64 {
    match n.get(key).map(|v| &v.value) {
        Some(Value::Int(i)) => *i as f64,
        Some(Value::UInt(u)) => *u as f64,
        Some(Value::Float(f)) => *f,
        _ => 0.0,
    }
}

fn read_nodes(env: &Environment) -> (Vec<NodeInfo>, Origin) {
    let Some(list) = env.contract.get("nodes") else {
        return (Vec::new(), Origin::file_start(&env.contract.file));
    };
    let mut out = Vec::new();
    if let Value::Seq(items) = &list.value {
        for n in items {
            let (name, _) = str_field(n, "name");
            let (address, address_origin) = str_field(n, "address");
            let (host, host_origin) = str_field(n, "host");
            let roles = match n.get("roles").map(|r| &r.value) {
                Some(Value::Seq(rs)) => rs.iter().filter_map(|r| r.as_str().map(str::to_owned)).collect(),
                _ => Vec::new(),
            };
            let mut labels = Labels::new();
            let mut label_origins = BTreeMap::new();
            let labels_origin = n.get("labels").map_or_else(|| n.origin.clone(), |l| l.origin.clone());
            if let Some(m) = n.get("labels").and_then(Node::as_map) {
                for (k, e) in m {
                    let v = match &e.node.value {
                        Value::Str(s) => s.clone(),
                        Value::Null => String::new(),
                        other => crate::yaml::Node {
                            value: other.clone(),
                            origin: e.node.origin.clone(),
                        }
                        .to_json()
                        .to_string(),
                    };
                    labels.insert(k.clone(), v);
                    label_origins.insert(k.clone(), e.node.origin.clone());
                }
            }
            out.push(NodeInfo {
                name,
                address,
                host,
                roles,
                labels,
                cpu_milli: (num_field(n, "cpu") * 1000.0).round() as u64,
                memory_mib: num_field(n, "memory_mib").round() as u64,
                origin: n.origin.clone(),
                host_origin,
                address_origin,
                labels_origin,
                label_origins,
            });
        }
    }
    (out, list.origin.clone())
}

impl<'a> Ctx<'a> {
    pub fn new(
        platform: &'a Platform,
        profiles: &'a Profiles,
        env: &'a Environment,
        render: &'a EnvRender,
        settings: &'a Settings,
    ) -> Self {
        let (nodes, nodes_origin) = read_nodes(env);
        Ctx {
            platform,
            profiles,
            env,
            render,
            settings,
            host_label: platform.host_label(env),
            nodes,
            nodes_origin,
        }
    }

    pub fn merged(&self, component: &Component) -> Option<&Node> {
        self.render.merged.get(&component.name).map(|m| &m.values)
    }

    /// A chart value: the merged one, or the profile's default. A `null` in a
    /// layer deletes the chart default too (Helm drops the key), so it is a
    /// set value `null`.
    pub fn value(&self, component: &Component, r: &ValueRef) -> Val {
        if let Some(n) = self.merged(component).and_then(|m| m.get_path(&r.path)) {
            return Val {
                path: r.path.clone(),
                value: n.to_json(),
                set: true,
                origin: n.origin.clone(),
                node: Some(n.clone()),
            };
        }
        Val {
            path: r.path.clone(),
            value: r.default.to_json(),
            set: false,
            origin: super::profile::version_origin(component),
            node: None,
        }
    }

    /// The note for a value that is the chart default.
    pub fn default_note(&self, component: &Component, v: &Val) -> Option<String> {
        if v.set {
            return None;
        }
        let profile = self.profiles.for_component(component)?;
        Some(format!(
            "no layer of {} sets `{}`, so the chart's default {} applies ({})",
            component.name,
            v.path,
            crate::invariants::facts::show_json(&v.value),
            profile.describe()
        ))
    }

    /// The label a finding's caret gets for a value.
    pub fn value_label(v: &Val) -> String {
        if v.set {
            "set here".to_owned()
        } else {
            format!("chart default {}", v.show())
        }
    }

    /// Every workload the charts render here, in component order.
    pub fn workloads(&self) -> Vec<Inst<'a>> {
        let mut out = Vec::new();
        for c in self.platform.components.values() {
            let Some(profile) = self.profiles.for_component(c) else {
                continue;
            };
            for w in &profile.workloads {
                if let Some(e) = &w.enabled
                    && !self.value(c, e).truthy()
                {
                    continue;
                }
                let pod_labels = w
                    .pod_labels
                    .iter()
                    .map(|(k, v)| {
                        let v = v
                            .replace("{release}", &c.name)
                            .replace("{namespace}", &c.namespace)
                            .replace("{chart}", c.chart.name());
                        (k.clone(), v)
                    })
                    .collect();
                out.push(Inst {
                    component: c,
                    profile,
                    workload: w,
                    replicas: w.replicas.as_ref().map(|r| self.value(c, r)),
                    pod_labels,
                });
            }
        }
        out
    }

    /// The component manifests and generated cluster objects.
    pub fn objects(&self) -> impl Iterator<Item = &'a Object> {
        self.render.workload_objects()
    }

    pub fn objects_of_kind(&self, kind: &'a str) -> impl Iterator<Item = &'a Object> {
        self.objects().filter(move |o| o.kind() == kind)
    }

    /// The origin of a field of an object: exact for a plain manifest, the
    /// object's start otherwise.
    pub fn field_origin(obj: &Object, path: &str) -> Origin {
        obj.node
            .as_ref()
            .and_then(|n| n.get_path(path))
            .map_or_else(|| obj.origin.clone(), |n| n.origin.clone())
    }

    /// Spanned node of a field of a plain manifest.
    pub fn field_node<'o>(obj: &'o Object, path: &str) -> Option<&'o Node> {
        obj.node.as_ref().and_then(|n| n.get_path(path))
    }

    /// Distinct values of a node label among the nodes (nodes without it are not counted).
    pub fn domains(&self, key: &str) -> usize {
        let mut seen: Vec<&str> = self
            .nodes
            .iter()
            .filter_map(|n| n.labels.get(key).map(String::as_str))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        if key == "kubernetes.io/hostname" && seen.is_empty() {
            return self.nodes.len();
        }
        seen.len()
    }

    /// Distinct physical hosts of the nodes.
    pub fn host_count(&self) -> usize {
        let mut hosts: Vec<&str> = self.nodes.iter().map(|n| n.host.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts.len()
    }
}

/// The node of item `index` of a list node.
pub fn seq_item(n: &Node, index: usize) -> Option<&Node> {
    match &n.value {
        Value::Seq(items) => items.get(index),
        _ => None,
    }
}

/// Where a selector requirement was written, inside the selector's node.
pub fn req_origin(selector: Option<&Node>, req: &super::selector::Req, fallback: &Origin) -> Origin {
    let Some(sel) = selector else {
        return fallback.clone();
    };
    let (path, index) = req.path();
    let found = match index {
        None => {
            let (head, key) = path.split_once('.').unwrap_or((&path, ""));
            sel.get(head).and_then(|m| m.get(key))
        }
        Some(i) => sel.get(&path).and_then(|s| seq_item(s, i)),
    };
    found.map_or_else(|| sel.origin.clone(), |n| n.origin.clone())
}

/// A PodDisruptionBudget: from a chart's values or a manifest.
#[derive(Clone, Debug)]
pub struct Pdb {
    pub name: String,
    pub min_available: Option<(J, Origin)>,
    pub max_unavailable: Option<(J, Origin)>,
    pub origin: Origin,
    pub from_chart: bool,
    pub notes: Vec<String>,
}

/// Manifest PDBs in `namespace` whose selector matches `labels`.
pub fn manifest_pdbs<'o>(ctx: &Ctx<'o>, namespace: &str, labels: &Labels) -> Vec<(Pdb, &'o Object)> {
    let mut out = Vec::new();
    for o in ctx.objects_of_kind("PodDisruptionBudget") {
        if o.namespace() != Some(namespace) {
            continue;
        }
        let sel = &o.value["spec"]["selector"];
        // policy/v1: a null selector selects no pods; an empty one all of the namespace.
        if sel.is_null() {
            continue;
        }
        let Ok(s) = Selector::from_label_selector(sel) else {
            continue;
        };
        if !s.matches(labels) {
            continue;
        }
        let bound = |key: &str| {
            let v = &o.value["spec"][key];
            (!v.is_null()).then(|| (v.clone(), Ctx::field_origin(o, &format!("spec.{key}"))))
        };
        out.push((
            Pdb {
                name: o.name().to_owned(),
                min_available: bound("minAvailable"),
                max_unavailable: bound("maxUnavailable"),
                origin: o.origin.clone(),
                from_chart: false,
                notes: Vec::new(),
            },
            o,
        ));
    }
    out
}

/// The requests of a `resources` value: (millicores, MiB).
pub fn requests(v: &J) -> (u64, u64) {
    let r = &v["requests"];
    (
        super::quantity::cpu_milli(&r["cpu"]).unwrap_or(0),
        super::quantity::memory_mib(&r["memory"]).unwrap_or(0),
    )
}

/// Sorted, de-duplicated strings.
pub fn sorted(v: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut s: Vec<String> = v.into_iter().collect();
    s.sort();
    s.dedup();
    s
}

/// Map of label set per node name, for selector evaluation.
pub fn node_labels(ctx: &Ctx<'_>) -> BTreeMap<String, Labels> {
    ctx.nodes.iter().map(|n| (n.name.clone(), n.labels.clone())).collect()
}
