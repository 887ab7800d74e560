//! CAP001: with one host down, the other nodes cannot hold every request
//! while keeping a third of their CPU and memory free.

use crate::invariants::capacity::{Load, place};
use crate::invariants::{Ctx, Finding, Sink};

pub const NAME: &str = "insufficient-failover-capacity";

doc!(
    r#"## What it does
Adds up the resource requests of everything strata knows will run: every
Deployment, StatefulSet and DaemonSet the charts render (requests per pod
times the rendered replicas; a DaemonSet's on every node it may run on), the
ones in `manifests/`, and — for a component whose chart was not rendered —
the workloads of its chart profile (requests and replicas through the
profile, chart defaults when unset), plus CPU a chart's software reserves on
every node it runs on (Longhorn's guaranteed instance-manager CPU). Then,
for each physical host in turn (largest first), it takes that host's nodes
away, puts every DaemonSet pod on each remaining node its node selector,
node affinity and tolerations allow, places the other pods largest first on
the remaining node with the most room that admits them, and checks that
every node keeps at least a third of its CPU and memory free (the
`free_fraction` setting). The finding says what strata could not count:
workloads without requests, and components with neither a rendered chart
nor a profile.

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

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    if ctx.missing_output(
        sink,
        "nodes",
        "that the remaining nodes hold every request with a host down",
    ) {
        return;
    }
    let mut hosts: std::collections::BTreeMap<&str, (u64, u64)> = std::collections::BTreeMap::new();
    for n in &ctx.nodes {
        let e = hosts.entry(n.host.as_str()).or_default();
        e.0 += n.cpu_milli;
        e.1 += n.memory_mib;
    }
    if hosts.len() < 2 || ctx.nodes.iter().any(|n| n.cpu_milli == 0 || n.memory_mib == 0) {
        return;
    }
    let load = Load::gather(ctx);
    let mut order: Vec<(&str, (u64, u64))> = hosts.into_iter().collect();
    order.sort_by(|a, b| (b.1, a.0).cmp(&(a.1, b.0)));
    let (num, den) = ctx.settings.free_fraction;
    for (host, _) in order {
        let left: Vec<&crate::invariants::facts::NodeInfo> = ctx.nodes.iter().filter(|n| n.host != host).collect();
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
        f = f.notes(load.uncounted.clone());
        sink.push(
            f.help("give the nodes more CPU or memory in the substrate stack, add a node per host, or lower requests"),
        );
        return;
    }
}
