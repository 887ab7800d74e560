//! The contract's nodes, with the labels the kubelet adds, and whether a
//! pod may run on one: its node selector, required node affinity and
//! tolerations against the node's taints.

use std::collections::BTreeMap;

use serde_json::Value as J;

use super::Ctx;
use crate::invariants::selector::{Labels, Selector};
use crate::load::Environment;
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
