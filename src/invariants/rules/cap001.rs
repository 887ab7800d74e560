//! CAP001: with one host down, the other nodes cannot hold every request
//! while keeping a third of their CPU and memory free.

use std::collections::BTreeMap;

use serde_json::Value as J;

use crate::invariants::facts::{NodeInfo, requests};
use crate::invariants::profile::Kind;
use crate::invariants::selector::Selector;
use crate::invariants::{Ctx, Finding, Sink};

pub const NAME: &str = "insufficient-failover-capacity";

doc!(
    r#"## What it does
Adds up the resource requests of everything strata knows will run: each
chart workload (requests and replicas read through the chart profile, chart
defaults when unset), CPU a chart's software reserves on every node it runs
on (Longhorn's guaranteed instance-manager CPU), and the Deployments,
StatefulSets and DaemonSets in `manifests/`. Then, for each physical host in
turn (largest first), it takes that host's nodes away, puts every
DaemonSet pod on each remaining node its node selector allows, places the
other pods largest first on the remaining node with the most room, and
checks that every node keeps at least a third of its CPU and memory free
(the `free_fraction` setting).

## Why is this bad?
ADR 007 sizes the cluster so that two nodes carry the load while one host is
down: "Keep at least a third of each node's CPU and memory free". Without
that margin a host failure leaves pods pending, or packs the surviving
nodes so tightly that workloads starve etcd and the API server that share
them.

## Example
```json
"nodes": {"value": [
  {"name": "cp-01", "host": "pve-01", "cpu": 1, "memory_mib": 2048, "roles": ["control-plane"]},
  {"name": "cp-02", "host": "pve-02", "cpu": 1, "memory_mib": 2048, "roles": ["control-plane"]},
  {"name": "cp-03", "host": "pve-03", "cpu": 1, "memory_mib": 2048, "roles": ["control-plane"]}
]}
```

Use instead:
```json
{"name": "cp-01", "host": "pve-01", "cpu": 2, "memory_mib": 6144, "roles": ["control-plane"]}
```
or lower the requests in the values. Requests strata cannot see (Talos's
own control-plane pods, pods created at run time) need the margin too.
"#
);

/// One pod to place.
#[derive(Clone, Debug)]
struct Pod {
    name: String,
    cpu: u64,
    mem: u64,
    selector: Option<Selector>,
}

/// Pods that run on every matching node, and pods placed once each.
#[derive(Default)]
struct Load {
    per_node: Vec<Pod>,
    placed: Vec<Pod>,
    /// Percent of node CPU reserved on each node the selector matches.
    reserved: Vec<(String, u64, Option<Selector>)>,
}

fn node_selector(v: &J) -> Option<Selector> {
    if v.as_object().is_none_or(|m| m.is_empty()) {
        return None;
    }
    Selector::from_map(v).ok()
}

fn gather(ctx: &Ctx<'_>) -> Load {
    let mut load = Load::default();
    for inst in ctx.workloads() {
        let c = inst.component;
        let w = inst.workload;
        let selector = w
            .node_selector
            .as_ref()
            .and_then(|r| node_selector(&ctx.value(c, r).value));
        if let Some(r) = &w.reserved_cpu_percent {
            let v = ctx.value(c, r);
            let pct = match &v.value {
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
            };
            if let Some(p) = pct {
                load.reserved
                    .push((format!("{} reserve", w.title), p, selector.clone()));
            }
        }
        let Some(res) = &w.resources else { continue };
        let (cpu, mem) = requests(&ctx.value(c, res).value);
        if cpu == 0 && mem == 0 {
            continue;
        }
        let pod = Pod {
            name: format!("{}/{}", c.name, w.id),
            cpu,
            mem,
            selector,
        };
        if w.kind == Kind::DaemonSet {
            load.per_node.push(pod);
        } else {
            for _ in 0..inst.replica_count().max(0) {
                load.placed.push(pod.clone());
            }
        }
    }
    for o in ctx.objects() {
        let kind = o.kind();
        if !matches!(kind, "Deployment" | "StatefulSet" | "DaemonSet") {
            continue;
        }
        let spec = &o.value["spec"]["template"]["spec"];
        let (mut cpu, mut mem) = (0, 0);
        for ct in spec["containers"].as_array().into_iter().flatten() {
            let (c, m) = requests(&ct["resources"]);
            cpu += c;
            mem += m;
        }
        if cpu == 0 && mem == 0 {
            continue;
        }
        let pod = Pod {
            name: o.id(),
            cpu,
            mem,
            selector: node_selector(&spec["nodeSelector"]),
        };
        if kind == "DaemonSet" {
            load.per_node.push(pod);
        } else {
            let replicas = o.value["spec"]["replicas"].as_u64().unwrap_or(1);
            for _ in 0..replicas {
                load.placed.push(pod.clone());
            }
        }
    }
    load
}

fn fits(sel: &Option<Selector>, n: &NodeInfo) -> bool {
    sel.as_ref().is_none_or(|s| s.matches(&n.labels))
}

/// Per node: (cpu used, mem used, cpu budget, mem budget).
type Usage = BTreeMap<String, (u64, u64, u64, u64)>;

/// Places the load on `nodes`; the pods that did not fit.
fn place(load: &Load, nodes: &[&NodeInfo], keep: (u64, u64)) -> (Usage, Vec<String>) {
    let mut usage: Usage = BTreeMap::new();
    let (num, den) = keep;
    for n in nodes {
        let budget = |cap: u64| cap.saturating_mul(den.saturating_sub(num)) / den.max(1);
        let mut cpu = 0;
        let mut mem = 0;
        for p in load.per_node.iter().filter(|p| fits(&p.selector, n)) {
            cpu += p.cpu;
            mem += p.mem;
        }
        for (_, pct, sel) in &load.reserved {
            if fits(sel, n) {
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
            .filter(|n| fits(&p.selector, n))
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

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let mut hosts: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for n in &ctx.nodes {
        let e = hosts.entry(n.host.as_str()).or_default();
        e.0 += n.cpu_milli;
        e.1 += n.memory_mib;
    }
    if hosts.len() < 2 || ctx.nodes.iter().any(|n| n.cpu_milli == 0 || n.memory_mib == 0) {
        return;
    }
    let load = gather(ctx);
    let mut order: Vec<(&str, (u64, u64))> = hosts.into_iter().collect();
    order.sort_by(|a, b| (b.1, a.0).cmp(&(a.1, b.0)));
    let (num, den) = ctx.settings.free_fraction;
    for (host, _) in order {
        let left: Vec<&NodeInfo> = ctx.nodes.iter().filter(|n| n.host != host).collect();
        let (usage, unplaced) = place(&load, &left, (num, den));
        let over: Vec<String> = usage
            .iter()
            .filter(|(_, (c, m, bc, bm))| c > bc || m > bm)
            .map(|(n, (c, m, bc, bm))| format!("{n} needs {c}m CPU / {m} MiB, may carry {bc}m / {bm} MiB"))
            .collect();
        if unplaced.is_empty() && over.is_empty() {
            continue;
        }
        let mut f = Finding::new(
            ctx.nodes_origin.clone(),
            format!(
                "with host {host} down, the other nodes cannot hold every pod's requests and keep {num}/{den} of their CPU and memory free"
            ),
        )
        .label("these nodes")
        .notes(over);
        if !unplaced.is_empty() {
            let shown: Vec<&str> = unplaced.iter().take(6).map(String::as_str).collect();
            f = f.note(format!(
                "{} pod(s) do not fit: {}{}",
                unplaced.len(),
                shown.join(", "),
                if unplaced.len() > shown.len() { ", …" } else { "" }
            ));
        }
        for (n, (c, m, bc, bm)) in &usage {
            f = f.note(format!(
                "{n}: {c}m of {bc}m CPU, {m} of {bm} MiB used by what strata can see"
            ));
        }
        sink.push(
            f.help("give the nodes more CPU or memory in the substrate stack, add a node per host, or lower requests"),
        );
        return;
    }
}
