//! The load strata can see, and where it fits: every workload's requests,
//! per replica or per node for DaemonSets, placed on a set of nodes the way
//! the scheduler would place it at worst. CAP001 and the host-failure check
//! of rollout gates share it.

use std::collections::BTreeMap;

use serde_json::Value as J;

use super::Ctx;
use super::facts::{NodeInfo, eligible};
use crate::profiles::Kind;

/// One pod to place, and the nodes it may run on.
#[derive(Clone, Debug)]
pub struct Pod {
    pub name: String,
    pub cpu: u64,
    pub mem: u64,
    pub nodes: Vec<String>,
}

/// Pods that run on every node they may, and pods placed once each.
#[derive(Default)]
pub struct Load {
    pub per_node: Vec<Pod>,
    pub placed: Vec<Pod>,
    /// Percent of node CPU reserved on each node listed.
    pub reserved: Vec<(String, u64, Vec<String>)>,
    /// What strata could not count, in words.
    pub uncounted: Vec<String>,
}

fn percent(v: &J) -> Option<u64> {
    match v {
        J::Number(n) => n.as_u64(),
        // Longhorn 1.8+: {"v1":"12","v2":"12"} as a JSON string; the v1 engine's share.
        J::String(s) => s.trim().parse().ok().or_else(|| {
            serde_json::from_str::<J>(s).ok().and_then(|j| match &j["v1"] {
                J::String(x) => x.parse().ok(),
                J::Number(n) => n.as_u64(),
                _ => None,
            })
        }),
        _ => None,
    }
}

impl Load {
    pub fn gather(ctx: &Ctx<'_>) -> Load {
        let mut load = Load::default();
        let mut no_requests = Vec::new();
        for w in &ctx.workloads {
            let nodes: Vec<String> = ctx
                .nodes
                .iter()
                .filter(|n| {
                    eligible(
                        n,
                        w.node_selector.as_ref().map(|v| &v.value),
                        w.affinity.as_ref().map(|v| &v.value),
                        w.tolerations.as_ref().map(|v| &v.value),
                    )
                })
                .map(|n| n.name.clone())
                .collect();
            if let Some(p) = w.reserved_cpu_percent.as_ref().and_then(|v| percent(&v.value)) {
                load.reserved.push((format!("{} reserve", w.title), p, nodes.clone()));
            }
            let (cpu, mem) = w.requests;
            if cpu == 0 && mem == 0 {
                no_requests.push(w.object_id());
                continue;
            }
            let name = w
                .component
                .map_or_else(|| w.object_id(), |c| format!("{}/{}", c.name, w.name));
            let pod = Pod { name, cpu, mem, nodes };
            if w.kind == Kind::DaemonSet {
                load.per_node.push(pod);
            } else {
                for _ in 0..w.replica_count().max(0) {
                    load.placed.push(pod.clone());
                }
            }
        }
        if !no_requests.is_empty() {
            let shown: Vec<&str> = no_requests.iter().take(6).map(String::as_str).collect();
            load.uncounted.push(format!(
                "not counted, no requests: {}{}",
                shown.join(", "),
                if no_requests.len() > shown.len() { ", …" } else { "" }
            ));
        }
        let unseen: Vec<&str> = ctx
            .platform
            .components_in(ctx.env)
            .filter(|c| {
                c.chart != crate::load::Chart::None && !ctx.render.inflated(&c.name) && ctx.bindings(c).is_empty()
            })
            .map(|c| c.name.as_str())
            .collect();
        if !unseen.is_empty() {
            load.uncounted.push(format!(
                "not counted, neither rendered nor described by a chart profile: {}",
                unseen.join(", ")
            ));
        }
        load
    }
}

/// Per node: (cpu used, mem used, cpu budget, mem budget).
pub type Usage = BTreeMap<String, (u64, u64, u64, u64)>;

/// Places the load on `nodes`, keeping `keep` (num/den) of each free; the
/// usage per node, and the pods that did not fit.
pub fn place(load: &Load, nodes: &[&NodeInfo], keep: (u64, u64)) -> (Usage, Vec<String>) {
    let mut usage: Usage = BTreeMap::new();
    let (num, den) = keep;
    let on = |list: &[String], n: &NodeInfo| list.contains(&n.name);
    for n in nodes {
        let budget = |cap: u64| cap.saturating_mul(den.saturating_sub(num)) / den.max(1);
        let mut cpu = 0;
        let mut mem = 0;
        for p in load.per_node.iter().filter(|p| on(&p.nodes, n)) {
            cpu += p.cpu;
            mem += p.mem;
        }
        for (_, pct, list) in &load.reserved {
            if on(list, n) {
                cpu += n.cpu_milli * pct / 100;
            }
        }
        usage.insert(n.name.clone(), (cpu, mem, budget(n.cpu_milli), budget(n.memory_mib)));
    }
    let mut pods = load.placed.clone();
    pods.sort_by(|a, b| (b.cpu, b.mem, &a.name).cmp(&(a.cpu, a.mem, &b.name)));
    let mut unplaced = Vec::new();
    for p in pods {
        let best = nodes
            .iter()
            .filter(|n| on(&p.nodes, n))
            .filter_map(|n| {
                let (c, m, bc, bm) = usage[&n.name];
                (c + p.cpu <= bc && m + p.mem <= bm).then_some((bc - c, bm - m, n.name.clone()))
            })
            .max_by(|a, b| (a.0, a.1, &b.2).cmp(&(b.0, b.1, &a.2)));
        match best {
            Some((_, _, name)) => {
                if let Some(u) = usage.get_mut(&name) {
                    u.0 += p.cpu;
                    u.1 += p.mem;
                }
            }
            None => unplaced.push(p.name),
        }
    }
    (usage, unplaced)
}
