//! What the rules look at, read once per environment: the contract's nodes,
//! and a table of facts about what will run — workloads, PodDisruptionBudgets
//! and Services — taken from the objects the charts render (inflated
//! components), the component manifests, and, for components whose chart was
//! not rendered, the chart profiles. Every value keeps where it came from: a
//! layer line, a chart default, or the manifest line.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as J;

use super::Settings;
use super::controllers::{self, Controller};
use super::selector::{Labels, Selector};
use super::trace;
use crate::load::{Component, Environment, Platform};
use crate::profiles::{BuiltinSpread, Condition, Kind, Profile, Profiles, ValueRef, version_origin};
use crate::render::{EnvRender, Object, Source};
use crate::yaml::{Node, Origin, Value};

/// A node of the contract's `nodes` output.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub name: String,
    pub address: String,
    pub host: String,
    pub roles: Vec<String>,
    /// The contract's labels, with those the kubelet sets itself added.
    pub labels: Labels,
    pub taints: Vec<Taint>,
    pub cpu_milli: u64,
    pub memory_mib: u64,
    pub origin: Origin,
    pub host_origin: Origin,
    pub address_origin: Origin,
    pub labels_origin: Origin,
    /// Where each label's value is written (labels the kubelet adds have none).
    pub label_origins: BTreeMap<String, Origin>,
}

/// A node taint, as the contract may list it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

impl NodeInfo {
    pub fn is_control_plane(&self) -> bool {
        self.roles.iter().any(|r| r == "control-plane")
    }
}

/// A value as the chart or manifest gives it, and where it was decided.
#[derive(Clone, Debug)]
pub struct Val {
    /// The values path that decides it, when known; else the field's path
    /// in the rendered object.
    pub path: String,
    pub value: J,
    /// A layer set it (`origin` is that layer's line); else it is the
    /// chart's default or the chart renders it by itself, and `origin` is
    /// the component's chart pin.
    pub set: bool,
    pub origin: Origin,
    /// The spanned node, when a layer set it.
    pub node: Option<Node>,
    /// What to say about a value no layer set (overrides the profile note).
    pub note: Option<String>,
    /// `path` is a values path (`false`: only the rendered field is known).
    pub traced: bool,
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

    /// A value written in a manifest, at its exact place.
    fn written(path: &str, value: J, origin: Origin, node: Option<Node>) -> Val {
        Val {
            path: path.to_owned(),
            value,
            set: true,
            origin,
            node,
            note: None,
            traced: true,
        }
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

/// How strata knows about a workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judged {
    /// helm rendered it from the component's chart.
    Chart { template: String },
    /// A component manifest.
    Manifest,
    /// Through the chart profile: the chart was not rendered.
    Profile,
    /// Through the chart profile: the software creates it at run time, so
    /// no chart renders it.
    Runtime,
}

/// A PodDisruptionBudget a profile says the chart (or the software) makes.
#[derive(Clone, Debug)]
pub enum ProfilePdb {
    /// The profile describes no budget for it.
    None,
    /// The chart's budget is switched off by this value.
    Off(Val),
    On(Pdb),
}

/// One workload that will run (or, judged through a profile, would).
#[derive(Clone, Debug)]
pub struct Workload<'a> {
    pub component: Option<&'a Component>,
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    /// ADR 007's name for it when it is one of ADR 007's controllers.
    pub controller: Option<String>,
    /// The built-in controller it was recognised as.
    pub recognised: Option<&'static Controller>,
    pub title: String,
    /// The replica count (`None` for a DaemonSet).
    pub replicas: Option<Val>,
    pub pod_labels: Labels,
    pub affinity: Option<Val>,
    pub topology_spread: Option<Val>,
    pub node_selector: Option<Val>,
    pub tolerations: Option<Val>,
    /// Requests of one pod: millicores, MiB.
    pub requests: (u64, u64),
    pub builtin_spread: Option<BuiltinSpread>,
    pub reserved_cpu_percent: Option<Val>,
    pub conditions: Vec<Condition>,
    pub profile_pdb: ProfilePdb,
    pub judged: Judged,
    /// Where to point when nothing more precise is known.
    pub origin: Origin,
    pub profile: Option<&'a Profile>,
}

impl Workload<'_> {
    pub fn replica_count(&self) -> i64 {
        self.replicas.as_ref().and_then(Val::as_i64).unwrap_or(1)
    }

    /// `Deployment/namespace/name`, the id waivers name.
    pub fn object_id(&self) -> String {
        format!("{}/{}/{}", self.kind.name(), self.namespace, self.name)
    }

    /// `Traefik (component traefik)`.
    pub fn what(&self) -> String {
        match self.component {
            Some(c) => format!("{} (component {})", self.title, c.name),
            None => self.title.clone(),
        }
    }

    pub fn component_name(&self) -> Option<&str> {
        self.component.map(|c| c.name.as_str())
    }

    /// A note saying how the workload was judged, for findings.
    pub fn judged_note(&self) -> Option<String> {
        match (&self.judged, self.profile) {
            (Judged::Chart { template }, _) => Some(format!("{} rendered by {template}", self.object_id())),
            (Judged::Profile, Some(p)) => Some(format!(
                "judged through the chart profile ({}): the chart was not rendered",
                p.describe()
            )),
            (Judged::Runtime, Some(p)) => Some(format!(
                "created at run time, not by the chart; judged through the chart profile ({})",
                p.describe()
            )),
            _ => None,
        }
    }
}

/// A PodDisruptionBudget: rendered, from a manifest, or a profile's.
#[derive(Clone, Debug)]
pub struct Pdb {
    pub name: String,
    pub namespace: String,
    pub selector: Option<Selector>,
    pub min_available: Option<(J, Origin)>,
    pub max_unavailable: Option<(J, Origin)>,
    pub origin: Origin,
    pub from_chart: bool,
    pub notes: Vec<String>,
}

/// A Service of type LoadBalancer.
#[derive(Clone, Debug)]
pub struct Service<'a> {
    pub component: Option<&'a Component>,
    pub namespace: String,
    pub name: String,
    /// The Service's own labels (what an L2 policy's serviceSelector matches).
    pub labels: Labels,
    /// `externalTrafficPolicy`; an unset one is Kubernetes' `Cluster`.
    pub etp: Option<Val>,
    /// The profile's values path for the policy, to look at each layer.
    pub etp_path: Option<String>,
    pub judged: Judged,
}

impl Service<'_> {
    pub fn object_id(&self) -> String {
        format!("Service/{}/{}", self.namespace, self.name)
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
    pub workloads: Vec<Workload<'a>>,
    pub pdbs: Vec<Pdb>,
    pub services: Vec<Service<'a>>,
    /// The components that rules judging one component at a time judge
    /// (all when `None`): see [`Ctx::judges`].
    pub judged: Option<&'a BTreeSet<String>>,
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

/// The labels the kubelet puts on every node, whatever the contract lists:
/// hostname, OS, architecture, and the control-plane role.
fn kubelet_labels(name: &str, arch: &str, control_plane: bool) -> Vec<(String, String)> {
    let mut out = vec![
        ("kubernetes.io/hostname".to_owned(), name.to_owned()),
        ("kubernetes.io/os".to_owned(), "linux".to_owned()),
        ("kubernetes.io/arch".to_owned(), arch.to_owned()),
        ("beta.kubernetes.io/os".to_owned(), "linux".to_owned()),
        ("beta.kubernetes.io/arch".to_owned(), arch.to_owned()),
    ];
    if control_plane {
        out.push(("node-role.kubernetes.io/control-plane".to_owned(), String::new()));
    }
    out
}

pub fn read_nodes(env: &Environment) -> (Vec<NodeInfo>, Origin) {
    let Some(list) = env.contract.get("nodes") else {
        return (Vec::new(), crate::yaml::Origin::file_start(&env.contract.file));
    };
    let mut out = Vec::new();
    if let Value::Seq(items) = &list.value {
        for n in items {
            let (name, _) = str_field(n, "name");
            let (address, address_origin) = str_field(n, "address");
            let (host, host_origin) = str_field(n, "host");
            let roles: Vec<String> = match n.get("roles").map(|r| &r.value) {
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
            let arch = n.get("arch").and_then(Node::as_str).unwrap_or("amd64").to_owned();
            let control_plane = roles.iter().any(|r| r == "control-plane");
            for (k, v) in kubelet_labels(&name, &arch, control_plane) {
                labels.entry(k).or_insert(v);
            }
            let mut taints = Vec::new();
            if let Some(Value::Seq(ts)) = n.get("taints").map(|t| &t.value) {
                for t in ts {
                    taints.push(Taint {
                        key: str_field(t, "key").0,
                        value: str_field(t, "value").0,
                        effect: str_field(t, "effect").0,
                    });
                }
            }
            out.push(NodeInfo {
                name,
                address,
                host,
                roles,
                labels,
                taints,
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

/// The requests of a `resources` value: (millicores, MiB).
pub fn requests(v: &J) -> (u64, u64) {
    let r = &v["requests"];
    (
        super::quantity::cpu_milli(&r["cpu"]).unwrap_or(0),
        super::quantity::memory_mib(&r["memory"]).unwrap_or(0),
    )
}

/// The requests of one pod of a pod spec: its containers' sum, or its
/// largest init container's when that is more (as the scheduler counts).
pub fn pod_requests(spec: &J) -> (u64, u64) {
    let sum = spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| requests(&c["resources"]))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let init = spec["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| requests(&c["resources"]))
        .fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
    (sum.0.max(init.0), sum.1.max(init.1))
}

fn labels_of(v: &J) -> Labels {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn kind_of(kind: &str) -> Option<Kind> {
    match kind {
        "Deployment" => Some(Kind::Deployment),
        "StatefulSet" => Some(Kind::StatefulSet),
        "DaemonSet" => Some(Kind::DaemonSet),
        _ => None,
    }
}

/// A Helm hook runs once around an install or upgrade; it is not part of
/// what keeps running.
fn is_hook(o: &Object) -> bool {
    o.value["metadata"]["annotations"]["helm.sh/hook"].is_string()
}

/// Profile pod labels with `{release}`, `{namespace}` and `{chart}` filled in.
fn profile_labels(w: &crate::profiles::Workload, c: &Component) -> Labels {
    w.pod_labels
        .iter()
        .map(|(k, v)| {
            let v = v
                .replace("{release}", &c.name)
                .replace("{namespace}", &c.namespace)
                .replace("{chart}", c.chart.name());
            (k.clone(), v)
        })
        .collect()
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
        let mut ctx = Ctx {
            platform,
            profiles,
            env,
            render,
            settings,
            host_label: platform.host_label(env),
            nodes,
            nodes_origin,
            workloads: Vec::new(),
            pdbs: Vec::new(),
            services: Vec::new(),
            judged: None,
        };
        ctx.workloads = ctx.collect_workloads();
        ctx.pdbs = ctx.collect_pdbs();
        ctx.services = ctx.collect_services();
        ctx
    }

    /// Whether a rule that judges each component on its own (its findings
    /// depend on that component's values and objects alone) judges
    /// `component`. A diff's compile judges only what its change can
    /// reach: on both sides the others read the same inputs and the same
    /// secrets, so their findings are the same and cancel out.
    pub fn judges(&self, component: &str) -> bool {
        self.judged.is_none_or(|j| j.contains(component))
    }

    pub fn merged(&self, component: &Component) -> Option<&'a Node> {
        self.render.merged.get(&component.name).map(|m| &m.values)
    }

    /// A chart value through a profile: the merged one, or the chart's
    /// default — from the chart's own values.yaml when the store has the
    /// archive, else the profile's. A `null` in a layer deletes the chart
    /// default too (Helm drops the key), so it is a set value `null`. A
    /// values.yaml that leaves the value `null` lets the template or the
    /// software fall back to something of its own, which the profile's
    /// default states (Longhorn's CSI replica counts: 3).
    pub fn value(&self, component: &Component, r: &ValueRef) -> Val {
        if let Some(n) = self.merged(component).and_then(|m| m.get_path(&r.path)) {
            return Val {
                path: r.path.clone(),
                value: n.to_json(),
                set: true,
                origin: n.origin.clone(),
                node: Some(n.clone()),
                note: None,
                traced: true,
            };
        }
        let info = self.render.chart_info.get(&component.name);
        let profile_default = r.default.to_json();
        let chart_default = info
            .and_then(|i| i.default_at(&r.path))
            .filter(|v| !v.is_null() || profile_default.is_null());
        let (value, note) = match chart_default {
            Some(v) => (
                v.clone(),
                Some(format!(
                    "no layer of {} sets `{}`, so the chart's default {} applies (values.yaml of chart {} {})",
                    component.name,
                    r.path,
                    show_json(v),
                    info.map_or("", |i| i.name.as_str()),
                    info.map_or("", |i| i.version.as_str()),
                )),
            ),
            None => (profile_default, None),
        };
        Val {
            path: r.path.clone(),
            value,
            set: false,
            origin: version_origin(component),
            node: None,
            note,
            traced: true,
        }
    }

    /// The note for a value that no layer set.
    pub fn default_note(&self, component: Option<&Component>, v: &Val) -> Option<String> {
        if v.set {
            return None;
        }
        if let Some(n) = &v.note {
            return Some(n.clone());
        }
        let component = component?;
        let profile = self.profiles.for_component(component)?;
        Some(format!(
            "no layer of {} sets `{}`, so the chart's default {} applies ({})",
            component.name,
            v.path,
            show_json(&v.value),
            profile.describe()
        ))
    }

    /// The label a finding's caret gets for a value.
    pub fn value_label(v: &Val) -> String {
        if v.set {
            "set here".to_owned()
        } else if !v.traced {
            format!("the chart renders `{}: {}`", v.path, show_json(&v.value))
        } else {
            format!("chart default {}", v.show())
        }
    }

    /// How to change a value to `want`: in the layer that set it (not the
    /// base), or, for a chart default, in the base layer every environment
    /// inherits; with the YAML to write.
    pub fn fix(&self, component: Option<&Component>, v: &Val, want: &str) -> String {
        let Some(c) = component else {
            return format!("set `{}: {want}`", v.path);
        };
        if !v.traced {
            return format!(
                "change the values of {} so that the chart renders `{}: {want}`; strata could not tell which value decides it",
                c.name, v.path
            );
        }
        let file = if v.set {
            v.origin.file.to_string()
        } else {
            super::rules::base_layer(self.platform, &c.dir)
        };
        format!("set `{}: {want}` in {file}:\n{}", v.path, yaml_snippet(&v.path, want))
    }

    /// Like [`Ctx::fix`], for a value that is a block of YAML (`block`, as
    /// the lines under the path's last key).
    pub fn fix_block(&self, component: Option<&Component>, v: &Val, block: &str) -> Option<String> {
        let c = component?;
        if !v.traced {
            return None;
        }
        let file = if v.set {
            v.origin.file.to_string()
        } else {
            super::rules::base_layer(self.platform, &c.dir)
        };
        let depth = v.path.split('.').count();
        let mut out = format!("set `{}` in {file}:\n{}", v.path, yaml_snippet(&v.path, ""));
        for line in block.lines() {
            out.push('\n');
            out.push_str(&"  ".repeat(depth + 1));
            out.push_str(line);
        }
        Some(out.replace(": \n", ":\n"))
    }

    /// Every rendered object of the environment that rules read: component
    /// manifests, generated cluster objects, and what the charts render.
    pub fn objects(&self) -> impl Iterator<Item = &'a Object> {
        let render: &'a EnvRender = self.render;
        render.workload_objects().chain(render.charts.values().flatten())
    }

    pub fn objects_of_kind(&self, kind: &'a str) -> impl Iterator<Item = &'a Object> {
        self.objects().filter(move |o| o.kind() == kind)
    }

    /// Whether the contract lacks `output`; if so, reports it once for the
    /// rule at the contract, naming what the rule needs it for. A contract
    /// without the outputs ADR 007's rules read is accepted, but on
    /// `topology: ha` the claim needs them (or a waiver of
    /// `object: contract/<output>`).
    pub fn missing_output(&self, sink: &mut super::Sink, output: &str, for_what: &str) -> bool {
        let present = match output.split_once('.') {
            Some((top, key)) => self.env.contract.get(top).and_then(|n| n.get(key)).is_some(),
            None => self.env.contract.get(output).is_some(),
        };
        if present {
            return false;
        }
        sink.push(
            super::Finding::new(
                crate::yaml::Origin::file_start(&self.env.contract.file),
                format!("the contract has no `{output}` output, so strata cannot check {for_what}"),
            )
            .label("this contract")
            .help(format!(
                "add `{output}` to the substrate stack's outputs and write the contract again with `tofu output -json`, or waive the rule with `object: contract/{output}` and a reason"
            ))
            .object(format!("contract/{output}")),
        );
        true
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
        seen.len()
    }

    /// Distinct physical hosts of the nodes.
    pub fn host_count(&self) -> usize {
        let mut hosts: Vec<&str> = self.nodes.iter().map(|n| n.host.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts.len()
    }

    /// A field of an object as a [`Val`]: exact in a manifest; traced to the
    /// values for a chart's object.
    fn field(&self, c: Option<&'a Component>, o: &Object, field: &str, value: J, hint: Option<String>) -> Val {
        match (&o.source, c) {
            (Source::Chart { template }, Some(c)) => trace::trace(
                c,
                self.merged(c),
                self.render.chart_info.get(&c.name).map(AsRef::as_ref),
                template,
                field,
                &value,
                hint.as_deref(),
            ),
            _ => {
                let node = o.field_node(field).cloned();
                let origin = node.as_ref().map_or_else(|| o.origin.clone(), |n| n.origin.clone());
                Val::written(field, value, origin, node)
            }
        }
    }

    /// The profile workload that describes a rendered workload, if any:
    /// same kind, and the profile's pod labels among the pods' labels; else
    /// the one workload of the profile that is the same ADR 007 controller.
    fn profile_match(
        &self,
        c: &'a Component,
        o: &Object,
        kind: Kind,
        labels: &Labels,
        recognised: Option<&'static Controller>,
    ) -> Option<(&'a Profile, &'a crate::profiles::Workload)> {
        let template = match &o.source {
            Source::Chart { template } => template.as_str(),
            _ => return None,
        };
        let prefix = trace::subchart_prefix(template);
        let profile = if prefix.is_empty() {
            self.profiles.for_component(c)
        } else {
            let info = self.render.chart_info.get(&c.name).map(AsRef::as_ref);
            let sub = trace::chart_of(info, &prefix)?;
            self.profiles.by_chart.get(&sub.name)
        }?;
        let candidates = profile.workloads.iter().filter(|w| w.kind == kind && !w.runtime);
        if let Some(w) = candidates
            .clone()
            .find(|w| profile_labels(w, c).iter().all(|(k, v)| labels.get(k) == Some(v)))
        {
            return Some((profile, w));
        }
        // A pod label the values override (CoreDNS's k8s-app through
        // `k8sAppLabelOverride`) differs from the profile's default one.
        let id = recognised?.id;
        let mut same = candidates
            .filter(|w| w.adr007 && controllers::recognise(&profile_labels(w, c), &[]).is_some_and(|r| r.id == id));
        let w = same.next()?;
        same.next().is_none().then_some((profile, w))
    }

    fn collect_workloads(&self) -> Vec<Workload<'a>> {
        let mut out = Vec::new();
        let platform: &'a Platform = self.platform;
        let render: &'a EnvRender = self.render;
        for c in platform.components.values() {
            match render.charts.get(&c.name) {
                Some(objects) => {
                    for o in objects.iter().filter(|o| !is_hook(o)) {
                        if let Some(w) = self.workload_of_object(Some(c), o) {
                            out.push(w);
                        }
                    }
                    // What the software creates at run time is judged through
                    // the profile even when the chart is rendered.
                    if let Some(p) = self.profiles.for_component(c) {
                        for w in p.workloads.iter().filter(|w| w.runtime) {
                            if let Some(x) = self.workload_of_profile(c, p, w, Judged::Runtime) {
                                out.push(x);
                            }
                        }
                    }
                }
                None => {
                    if let Some(p) = self.profiles.for_component(c) {
                        for w in &p.workloads {
                            let judged = if w.runtime { Judged::Runtime } else { Judged::Profile };
                            if let Some(x) = self.workload_of_profile(c, p, w, judged) {
                                out.push(x);
                            }
                        }
                    }
                }
            }
        }
        for o in render.workload_objects().filter(|o| o.source == Source::Manifest) {
            let c = o.component.as_ref().and_then(|n| platform.components.get(n));
            if let Some(w) = self.workload_of_object(c, o) {
                out.push(w);
            }
        }
        out
    }

    fn workload_of_object(&self, c: Option<&'a Component>, o: &'a Object) -> Option<Workload<'a>> {
        let kind = kind_of(o.kind())?;
        let spec = &o.value["spec"]["template"]["spec"];
        let pod_labels = labels_of(&o.value["spec"]["template"]["metadata"]["labels"]);
        let images: Vec<&str> = spec["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|ct| ct["image"].as_str())
            .collect();
        let recognised = controllers::recognise(&pod_labels, &images);
        let matched = c.and_then(|c| self.profile_match(c, o, kind, &pod_labels, recognised));
        let hint = |f: fn(&crate::profiles::Workload) -> Option<&ValueRef>| -> Option<String> {
            matched.and_then(|(_, w)| f(w).map(|r| r.path.clone()))
        };
        let pod = "spec.template.spec";
        let replicas = (kind != Kind::DaemonSet).then(|| match o.value["spec"].get("replicas") {
            Some(v) => self.field(c, o, "spec.replicas", v.clone(), hint(|w| w.replicas.as_ref())),
            // Kubernetes' default.
            None => {
                let mut v = self.field(c, o, "spec.replicas", J::from(1), hint(|w| w.replicas.as_ref()));
                if !v.set {
                    v.note = Some(format!(
                        "the chart renders no `spec.replicas`, so Kubernetes runs 1 ({})",
                        match &o.source {
                            Source::Chart { template } => template.as_str(),
                            _ => "",
                        }
                    ));
                }
                v
            }
        });
        let opt = |field: &str, h: Option<String>| -> Option<Val> {
            let v = spec.get(field.rsplit('.').next().unwrap_or(field))?;
            Some(self.field(c, o, &format!("{pod}.{field}"), v.clone(), h))
        };
        let affinity = opt("affinity", hint(|w| w.affinity.as_ref()));
        let topology_spread = opt("topologySpreadConstraints", hint(|w| w.topology_spread.as_ref()));
        let node_selector = opt("nodeSelector", hint(|w| w.node_selector.as_ref()));
        let tolerations = opt("tolerations", None);
        let (title, controller) = match (recognised, matched) {
            // The profile's title tells apart workloads that are one ADR 007
            // controller (External Secrets' controller, webhook and
            // cert-controller run the same image), as judging through the
            // profile does.
            (Some(r), Some((_, w))) => (w.title.clone(), Some(r.title.to_owned())),
            (Some(r), None) => (r.title.to_owned(), Some(r.title.to_owned())),
            (None, Some((_, w))) if w.adr007 => (w.title.clone(), Some(w.title.clone())),
            _ => (format!("{} {}", o.kind(), o.name()), None),
        };
        let judged = match &o.source {
            Source::Chart { template } => Judged::Chart {
                template: template.clone(),
            },
            _ => Judged::Manifest,
        };
        let origin = match &judged {
            Judged::Chart { .. } => c.map_or_else(|| o.origin.clone(), version_origin),
            _ => o.origin.clone(),
        };
        Some(Workload {
            component: c,
            kind,
            namespace: o.namespace().unwrap_or("").to_owned(),
            name: o.name().to_owned(),
            controller,
            recognised,
            title,
            replicas,
            pod_labels,
            affinity,
            topology_spread,
            node_selector,
            tolerations,
            requests: pod_requests(spec),
            builtin_spread: None,
            reserved_cpu_percent: matched
                .and_then(|(_, w)| w.reserved_cpu_percent.as_ref())
                .and_then(|r| c.map(|c| self.value(c, r))),
            conditions: matched.map(|(_, w)| w.conditions.clone()).unwrap_or_default(),
            profile_pdb: self.switched_off_pdb(c, o, matched),
            judged,
            origin,
            profile: matched.map(|(p, _)| p),
        })
    }

    /// The chart's own PodDisruptionBudget of a rendered workload when its
    /// switch is off, so that HA002 points at the switch as it does through
    /// the profile. The budgets the chart does render are objects: an `On`
    /// here would count them twice. (Not for a subchart's workloads, whose
    /// values sit under a prefix the profile's paths lack.)
    fn switched_off_pdb(
        &self,
        c: Option<&'a Component>,
        o: &Object,
        matched: Option<(&'a Profile, &'a crate::profiles::Workload)>,
    ) -> ProfilePdb {
        let (Some(c), Some((p, w)), Source::Chart { template }) = (c, matched, &o.source) else {
            return ProfilePdb::None;
        };
        if !trace::subchart_prefix(template).is_empty() {
            return ProfilePdb::None;
        }
        match self.profile_pdb(c, p, w) {
            off @ ProfilePdb::Off(_) => off,
            _ => ProfilePdb::None,
        }
    }

    fn workload_of_profile(
        &self,
        c: &'a Component,
        p: &'a Profile,
        w: &'a crate::profiles::Workload,
        judged: Judged,
    ) -> Option<Workload<'a>> {
        if let Some(e) = &w.enabled
            && !self.value(c, e).truthy()
        {
            return None;
        }
        let pod_labels = profile_labels(w, c);
        let recognised = controllers::recognise(&pod_labels, &[]);
        let requests = w
            .resources
            .as_ref()
            .map_or((0, 0), |r| self::requests(&self.value(c, r).value));
        Some(Workload {
            component: Some(c),
            kind: w.kind,
            namespace: c.namespace.clone(),
            name: w.id.clone(),
            controller: w
                .adr007
                .then(|| recognised.map_or_else(|| w.title.clone(), |r| r.title.to_owned())),
            recognised: if w.adr007 { recognised } else { None },
            title: w.title.clone(),
            replicas: if w.kind == Kind::DaemonSet {
                None
            } else {
                w.replicas.as_ref().map(|r| self.value(c, r))
            },
            pod_labels,
            affinity: w.affinity.as_ref().map(|r| self.value(c, r)),
            topology_spread: w.topology_spread.as_ref().map(|r| self.value(c, r)),
            node_selector: w.node_selector.as_ref().map(|r| self.value(c, r)),
            tolerations: None,
            requests,
            builtin_spread: w.builtin_spread.clone(),
            reserved_cpu_percent: w.reserved_cpu_percent.as_ref().map(|r| self.value(c, r)),
            conditions: w.conditions.clone(),
            profile_pdb: self.profile_pdb(c, p, w),
            judged,
            origin: version_origin(c),
            profile: Some(p),
        })
    }

    /// The chart's (or software's) PodDisruptionBudget as a profile describes it.
    fn profile_pdb(&self, c: &Component, p: &Profile, w: &crate::profiles::Workload) -> ProfilePdb {
        let Some(spec) = &w.pdb else {
            return ProfilePdb::None;
        };
        if let Some(e) = &spec.enabled {
            let v = self.value(c, e);
            if !v.truthy() {
                return ProfilePdb::Off(v);
            }
        }
        let bound = |r: &Option<ValueRef>| -> Option<(J, Origin)> {
            let v = self.value(c, r.as_ref()?);
            match &v.value {
                J::Null => None,
                J::String(s) if s.is_empty() => None,
                other => Some((other.clone(), v.origin.clone())),
            }
        };
        let mut min = bound(&spec.min_available);
        let mut max = bound(&spec.max_unavailable);
        let mut notes = Vec::new();
        if min.is_none() && max.is_none() {
            let at = version_origin(c);
            min = spec
                .rendered_when_unset
                .min_available
                .as_ref()
                .map(|n| (n.to_json(), at.clone()));
            max = spec
                .rendered_when_unset
                .max_unavailable
                .as_ref()
                .map(|n| (n.to_json(), at));
            if let Some((key, (v, _))) = min
                .as_ref()
                .map(|m| ("minAvailable", m))
                .or(max.as_ref().map(|m| ("maxUnavailable", m)))
            {
                notes.push(format!(
                    "with neither bound set the chart writes `{key}: {}` ({})",
                    show_json(v),
                    p.describe()
                ));
            }
        }
        if let Some(by) = &spec.managed_by {
            notes.push(format!(
                "{by} creates this PodDisruptionBudget at run time ({})",
                p.describe()
            ));
        }
        ProfilePdb::On(Pdb {
            name: format!("{} (chart)", w.id),
            namespace: c.namespace.clone(),
            selector: None,
            min_available: min,
            max_unavailable: max,
            origin: version_origin(c),
            from_chart: true,
            notes,
        })
    }

    /// Every PodDisruptionBudget object of the environment: from any
    /// component's chart or manifests.
    fn collect_pdbs(&self) -> Vec<Pdb> {
        let mut out = Vec::new();
        for o in self.objects_of_kind("PodDisruptionBudget") {
            let sel = &o.value["spec"]["selector"];
            // policy/v1: a null selector selects no pods; an empty one all of the namespace.
            let selector = if sel.is_null() {
                None
            } else {
                Selector::from_label_selector(sel).ok()
            };
            let c = o.component.as_ref().and_then(|n| self.platform.components.get(n));
            let bound = |key: &str| {
                let v = &o.value["spec"][key];
                (!v.is_null()).then(|| {
                    let val = self.field(c, o, &format!("spec.{key}"), v.clone(), None);
                    (v.clone(), val.origin)
                })
            };
            let mut notes = Vec::new();
            if let Source::Chart { template } = &o.source {
                notes.push(format!("PodDisruptionBudget {} is rendered by {template}", o.name()));
            }
            out.push(Pdb {
                name: o.name().to_owned(),
                namespace: o.namespace().unwrap_or("").to_owned(),
                selector,
                min_available: bound("minAvailable"),
                max_unavailable: bound("maxUnavailable"),
                origin: match (&o.source, c) {
                    (Source::Chart { .. }, Some(c)) => version_origin(c),
                    _ => o.origin.clone(),
                },
                from_chart: matches!(o.source, Source::Chart { .. }),
                notes,
            });
        }
        out
    }

    /// The PodDisruptionBudgets that select a workload's pods.
    pub fn pdbs_of(&self, w: &Workload<'_>) -> Vec<Pdb> {
        let mut out = Vec::new();
        if let ProfilePdb::On(p) = &w.profile_pdb {
            out.push(p.clone());
        }
        for p in &self.pdbs {
            if p.namespace == w.namespace && p.selector.as_ref().is_some_and(|s| s.matches(&w.pod_labels)) {
                out.push(p.clone());
            }
        }
        out
    }

    /// Every Service of type LoadBalancer.
    fn collect_services(&self) -> Vec<Service<'a>> {
        let mut out = Vec::new();
        let platform: &'a Platform = self.platform;
        for o in self.objects_of_kind("Service") {
            if o.value["spec"]["type"] != J::String("LoadBalancer".into()) {
                continue;
            }
            let c = o.component.as_ref().and_then(|n| platform.components.get(n));
            // The profile's path for the policy, when a profile Service
            // describes this one (it selects the profile workload's pods).
            let selector = labels_of(&o.value["spec"]["selector"]);
            let hint = c.and_then(|c| {
                let p = self.profiles.for_component(c)?;
                p.services.iter().find_map(|s| {
                    let w = p.workloads.iter().find(|w| w.id == s.id)?;
                    let labels = profile_labels(w, c);
                    (!labels.is_empty() && labels.iter().all(|(k, v)| selector.get(k) == Some(v)))
                        .then(|| s.external_traffic_policy.as_ref().map(|r| r.path.clone()))
                        .flatten()
                })
            });
            let etp = o.value["spec"]
                .get("externalTrafficPolicy")
                .map(|v| self.field(c, o, "spec.externalTrafficPolicy", v.clone(), hint.clone()));
            out.push(Service {
                component: c,
                namespace: o.namespace().unwrap_or("").to_owned(),
                name: o.name().to_owned(),
                labels: labels_of(&o.value["metadata"]["labels"]),
                etp,
                etp_path: hint,
                judged: match &o.source {
                    Source::Chart { template } => Judged::Chart {
                        template: template.clone(),
                    },
                    _ => Judged::Manifest,
                },
            });
        }
        // Components whose chart was not rendered: the profiles' Services.
        for c in platform.components.values().filter(|c| !self.render.inflated(&c.name)) {
            let Some(p) = self.profiles.for_component(c) else {
                continue;
            };
            for s in &p.services {
                if let Some(e) = &s.enabled
                    && !self.value(c, e).truthy()
                {
                    continue;
                }
                let Some(t) = &s.kind else { continue };
                if self.value(c, t).value != J::String("LoadBalancer".into()) {
                    continue;
                }
                let labels = p
                    .workloads
                    .iter()
                    .find(|w| w.id == s.id)
                    .map(|w| profile_labels(w, c))
                    .unwrap_or_default();
                out.push(Service {
                    component: Some(c),
                    namespace: c.namespace.clone(),
                    name: s.id.clone(),
                    labels,
                    etp: s.external_traffic_policy.as_ref().map(|r| self.value(c, r)),
                    etp_path: s.external_traffic_policy.as_ref().map(|r| r.path.clone()),
                    judged: Judged::Profile,
                });
            }
        }
        out
    }

    /// The ADR 007 controllers no component deploys here.
    pub fn missing_controllers(&self) -> Vec<&'static Controller> {
        controllers::ADR007
            .iter()
            .filter(|c| {
                !self
                    .workloads
                    .iter()
                    .any(|w| w.recognised.is_some_and(|r| r.id == c.id))
            })
            .collect()
    }
}

/// `a.b.c: v` as nested YAML lines, for a help that shows what to write.
pub fn yaml_snippet(path: &str, value: &str) -> String {
    let mut out = String::new();
    let parts: Vec<&str> = path.split('.').collect();
    for (i, p) in parts.iter().enumerate() {
        out.push_str(&"  ".repeat(i + 1));
        out.push_str(p);
        out.push(':');
        if i + 1 == parts.len() {
            out.push(' ');
            out.push_str(value);
        }
        out.push('\n');
    }
    out.trim_end().to_owned()
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

/// Whether a pod with this spec may run on a node: its node selector,
/// required node affinity, and tolerations against the node's taints.
pub fn eligible(node: &NodeInfo, node_selector: Option<&J>, affinity: Option<&J>, tolerations: Option<&J>) -> bool {
    if let Some(ns) = node_selector.filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
        && !Selector::from_map(ns).is_ok_and(|s| s.matches(&node.labels))
    {
        return false;
    }
    if let Some(terms) = affinity.and_then(|a| {
        a["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].as_array()
    }) && !terms.is_empty()
        && !terms.iter().any(|t| node_term_matches(t, &node.labels))
    {
        return false;
    }
    let tols: Vec<&J> = tolerations.and_then(J::as_array).into_iter().flatten().collect();
    node.taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .all(|t| tols.iter().any(|tol| tolerates(tol, t)))
}

fn node_term_matches(term: &J, labels: &Labels) -> bool {
    let exprs = term["matchExpressions"].as_array();
    let sel = serde_json::json!({"matchExpressions": exprs.cloned().unwrap_or_default()});
    Selector::from_label_selector(&sel).is_ok_and(|s| s.matches(labels))
}

fn tolerates(tol: &J, t: &Taint) -> bool {
    let effect_ok = tol["effect"].as_str().is_none_or(|e| e.is_empty() || e == t.effect);
    let key = tol["key"].as_str().unwrap_or("");
    match tol["operator"].as_str().unwrap_or("Equal") {
        "Exists" => effect_ok && (key.is_empty() || key == t.key),
        _ => effect_ok && key == t.key && tol["value"].as_str().unwrap_or("") == t.value,
    }
}
