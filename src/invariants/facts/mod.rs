//! What the rules look at, read once per environment: the contract's nodes,
//! and a table of facts about what will run — workloads, PodDisruptionBudgets
//! and Services — taken from the objects the charts render (inflated
//! components), the component manifests, and, for components whose chart was
//! not rendered, the chart profiles. Every value keeps where it came from: a
//! layer line, a chart default, or the manifest line.
//!
//! One file per concern: `nodes` reads the contract's nodes and says where
//! a pod may run, `workloads` finds the workloads of rendered objects,
//! `profiled` those judged through chart profiles, `pdbs` the
//! PodDisruptionBudgets and `services` the LoadBalancer Services. This file
//! holds the facts' types and what rules ask of them.

mod cilium;
mod envoy;
mod gateways;
mod nodes;
mod pdbs;
mod profiled;
mod services;
mod workloads;

pub use nodes::{NodeInfo, Taint, eligible, node_labels, read_nodes};
pub use workloads::{pod_requests, requests};

use std::collections::BTreeSet;

use serde_json::Value as J;

use super::Settings;
use super::controllers::{self, Controller};
use super::selector::{Labels, Selector};
use super::trace;
use crate::charts::ChartInfo;
use crate::load::{Component, Environment, Platform};
use crate::profiles::{Binding, BuiltinSpread, Condition, Kind, Nested, Profile, Profiles, ValueRef};
use crate::render::{EnvRender, Object, Source};
use crate::yaml::{Node, Origin, Value};

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
    /// For a rendered field not traced to a values line: where it is, for
    /// [`Ctx::located`] to find the line by rendering the chart again.
    pub at: Option<Box<FieldAt>>,
}

/// A field of an object a component's chart renders.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FieldAt {
    pub component: String,
    pub kind: String,
    pub name: String,
    /// Its dotted path in the object (`spec.replicas`).
    pub field: String,
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
            at: None,
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
    /// Where the profile's values sit when it describes a dependency of a
    /// wrapper chart.
    pub nested: Option<Nested>,
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

    /// `; its values sit under ...`, for a wrapper chart's dependency.
    fn nested_note(&self) -> String {
        self.nested
            .as_ref()
            .map_or_else(String::new, |n| format!("; {}", n.describe()))
    }

    /// A note saying how the workload was judged, for findings.
    pub fn judged_note(&self) -> Option<String> {
        match (&self.judged, self.profile) {
            (Judged::Chart { template }, _) => Some(format!("{} rendered by {template}", self.object_id())),
            (Judged::Profile, Some(p)) => Some(format!(
                "judged through the chart profile ({}){}: the chart was not rendered",
                p.describe(),
                self.nested_note()
            )),
            (Judged::Runtime, Some(p)) => Some(format!(
                "created at run time, not by the chart; judged through the chart profile ({}){}",
                p.describe(),
                self.nested_note()
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
    /// For a Service a Gateway API implementation creates at run time: the
    /// Gateway, and what to say about it.
    pub gateway: Option<Box<FromGateway>>,
}

/// A LoadBalancer Service a Gateway becomes at run time, as its
/// implementation creates it (see `gateways`).
#[derive(Clone, Debug)]
pub struct FromGateway {
    /// `Gateway/namespace/name`, the id waivers name.
    pub gateway: String,
    /// `Gateway namespace/name`, for messages.
    pub title: String,
    /// `Envoy Gateway`, `Cilium`.
    pub implementation: &'static str,
    /// The caret's label.
    pub label: String,
    pub notes: Vec<String>,
    /// How to make the Service use Cluster.
    pub help: String,
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
    /// Gateways served through another component's Service (Traefik's):
    /// by that component, `Gateway namespace/name (GatewayClass c)`.
    pub carried_gateways: std::collections::BTreeMap<String, Vec<String>>,
    /// What strata could not judge of the environment's Gateways, as notes
    /// and warnings of NET001.
    pub gateway_notes: Vec<crate::diag::Diagnostic>,
    /// The components that rules judging one component at a time judge
    /// (all when `None`): see [`Ctx::judges`].
    pub judged: Option<&'a BTreeSet<String>>,
    /// What renders a component's chart again with other values, to find
    /// the values line of a field (see [`Ctx::located`]); none without helm.
    pub probe: Option<&'a dyn crate::inflate::Rerender>,
    /// What [`Ctx::located`] found of each field, once per environment.
    located: std::sync::Mutex<std::collections::BTreeMap<FieldAt, Option<Val>>>,
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
            carried_gateways: Default::default(),
            gateway_notes: Vec::new(),
            judged: None,
            probe: None,
            located: Default::default(),
        };
        ctx.workloads = ctx.collect_workloads();
        ctx.pdbs = ctx.collect_pdbs();
        ctx.services = ctx.collect_services();
        let gateways = ctx.collect_gateways();
        ctx.services.extend(gateways.services);
        ctx.carried_gateways = gateways.carried;
        ctx.gateway_notes = gateways.notes;
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

    /// The profiles that describe what a component's chart runs, each with
    /// where its values sit (see [`Profiles::bindings`]).
    pub fn bindings(&self, c: &Component) -> Vec<Binding<'a>> {
        let profiles: &'a Profiles = self.profiles;
        profiles.bindings(c, self.render.chart_info.get(&c.name).map(AsRef::as_ref))
    }

    /// A chart value through a profile that describes the component's
    /// chart itself: see [`Ctx::value_in`].
    pub fn value(&self, component: &Component, r: &ValueRef) -> Val {
        self.value_in(component, None, r)
    }

    /// A chart value through a profile: the merged one, or the chart's
    /// default — from the chart's own values.yaml when the store has the
    /// archive (a wrapper's values over its dependency's, as Helm merges
    /// them), else the profile's. A `null` in a layer deletes the chart
    /// default too (Helm drops the key), so it is a set value `null`. A
    /// values.yaml that leaves the value `null` lets the template or the
    /// software fall back to something of its own, which the profile's
    /// default states (Longhorn's CSI replica counts: 3). `nested`: the
    /// profile describes a dependency of a wrapper chart, and `r`'s path
    /// sits under its key.
    pub fn value_in(&self, component: &Component, nested: Option<(&Profile, &Nested)>, r: &ValueRef) -> Val {
        let path = nested.map_or_else(|| r.path.clone(), |(_, n)| n.path(&r.path));
        if let Some(n) = self.merged(component).and_then(|m| m.get_path(&path)) {
            return Val {
                path,
                value: n.to_json(),
                set: true,
                origin: n.origin.clone(),
                node: Some(n.clone()),
                note: None,
                traced: true,
                at: None,
            };
        }
        let info = self.render.chart_info.get(&component.name).map(AsRef::as_ref);
        let profile_default = r.default.to_json();
        let chart_default = info
            .and_then(|i| chart_default(i, &path))
            .filter(|(v, _)| !v.is_null() || profile_default.is_null());
        let (value, note) = match chart_default {
            Some((v, from)) => (
                v.clone(),
                Some(format!(
                    "no layer of {} sets `{path}`, so the chart's default {} applies (values.yaml of chart {} {})",
                    component.name,
                    show_json(v),
                    from.name,
                    from.version,
                )),
            ),
            None => {
                let note = nested.map(|(p, n)| {
                    format!(
                        "no layer of {} sets `{path}`, so the chart's default {} applies ({}; {})",
                        component.name,
                        show_json(&profile_default),
                        p.describe(),
                        n.describe()
                    )
                });
                (profile_default, note)
            }
        };
        Val {
            origin: crate::profiles::default_origin(component, info, &path),
            path,
            value,
            set: false,
            node: None,
            note,
            traced: true,
            at: None,
        }
    }

    /// `v` pointed at the values line that decides it: for a rendered field
    /// strata could not trace (`v.at`), the chart is rendered again with
    /// each layer value and chart default equal to it replaced by a marker
    /// of its own, and the marker the field then carries names the value —
    /// as `strata explain` finds the fields a value reaches. `v` itself
    /// when nothing can render the chart, or no value is found.
    pub fn located(&self, v: &Val) -> Val {
        let (Some(at), Some(probe)) = (&v.at, self.probe) else {
            return v.clone();
        };
        if let Ok(seen) = self.located.lock()
            && let Some(found) = seen.get(at)
        {
            return found.clone().unwrap_or_else(|| v.clone());
        }
        let found = self.platform.components.get(&at.component).and_then(|c| {
            let info = self.render.chart_info.get(&c.name).map(AsRef::as_ref);
            trace::probe(probe, self.render, c, self.merged(c), info, at, &v.value)
        });
        if let Ok(mut seen) = self.located.lock() {
            seen.insert((**at).clone(), found.clone());
        }
        found.unwrap_or_else(|| v.clone())
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
    pub(super) fn field(
        &self,
        c: Option<&'a Component>,
        o: &Object,
        field: &str,
        value: J,
        hint: Option<String>,
    ) -> Val {
        match (&o.source, c) {
            (Source::Chart { template }, Some(c)) => {
                let mut v = trace::trace(
                    c,
                    self.merged(c),
                    self.render.chart_info.get(&c.name).map(AsRef::as_ref),
                    template,
                    field,
                    &value,
                    hint.as_deref(),
                );
                if !v.traced {
                    v.at = Some(Box::new(FieldAt {
                        component: c.name.clone(),
                        kind: o.kind().to_owned(),
                        name: o.name().to_owned(),
                        field: field.to_owned(),
                    }));
                }
                v
            }
            _ => {
                let node = o.field_node(field).cloned();
                let origin = node.as_ref().map_or_else(|| o.origin.clone(), |n| n.origin.clone());
                Val::written(field, value, origin, node)
            }
        }
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

/// A chart's default at a dotted values path, and the chart whose
/// values.yaml gives it: the chart's own values, else, under a dependency's
/// key, the dependency's (a parent's values win over its subcharts', as
/// Helm merges them).
pub fn chart_default<'i>(info: &'i ChartInfo, path: &str) -> Option<(&'i J, &'i ChartInfo)> {
    if let Some(v) = info.default_at(path) {
        return Some((v, info));
    }
    let (key, rest) = path.split_once('.')?;
    chart_default(info.subchart(key)?, rest)
}
