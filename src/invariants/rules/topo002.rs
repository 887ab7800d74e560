//! TOPO002: control-plane nodes share a physical host, so losing it loses quorum.

use std::collections::BTreeMap;

use crate::invariants::{Ctx, Finding, Sink};

pub const NAME: &str = "shared-control-plane-host";

doc!(
    r#"## What it does
Groups the control-plane nodes of the contract by their `host` (the physical
Proxmox host) and checks that losing any single host leaves a majority of
the etcd members running.

## Why is this bad?
Three etcd members on three VMs survive one failure only if the VMs are on
three different hosts. Two members on one host means that host's failure
takes two votes of three and the API stops. A cluster with one control-plane
node loses quorum with its only host.

## Example
```json
{"name": "cp-01", "host": "pve-01", "roles": ["control-plane"]},
{"name": "cp-02", "host": "pve-01", "roles": ["control-plane"]},
{"name": "cp-03", "host": "pve-02", "roles": ["control-plane"]}
```

Use instead:
```json
{"name": "cp-01", "host": "pve-01", "roles": ["control-plane"]},
{"name": "cp-02", "host": "pve-02", "roles": ["control-plane"]},
{"name": "cp-03", "host": "pve-03", "roles": ["control-plane"]}
```
Place each control-plane VM on its own Proxmox host in the substrate stack.
"#
);

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    if ctx.missing_output(sink, "nodes", "that losing one host keeps etcd quorum") {
        return;
    }
    let cps: Vec<_> = ctx.nodes.iter().filter(|n| n.is_control_plane()).collect();
    let n = cps.len();
    if n == 0 {
        return;
    }
    let quorum = n / 2 + 1;
    let mut by_host: BTreeMap<&str, Vec<_>> = BTreeMap::new();
    for c in &cps {
        by_host.entry(c.host.as_str()).or_default().push(*c);
    }
    // The host whose loss hurts most; ties go to the first by name.
    let Some((host, members)) = by_host
        .iter()
        .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(a.0)))
    else {
        return;
    };
    let left = n - members.len();
    if left >= quorum {
        return;
    }
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    let mut f = Finding::new(
        members[0].host_origin.clone(),
        format!(
            "losing host {host} takes {} of {n} etcd member(s) ({}) and leaves {left}, below the quorum of {quorum}",
            members.len(),
            names.join(", ")
        ),
    )
    .label(format!("{} on {host}", members[0].name))
    .help("put every control-plane node on a different physical host, with at least three hosts");
    for m in members.iter().skip(1) {
        f = f.related(m.host_origin.clone(), format!("{} on {host} too", m.name));
    }
    sink.push(f);
}
