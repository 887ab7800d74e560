//! TOPO004: talosctl endpoints must be the control-plane nodes, not the VIP.

use crate::invariants::{Ctx, Finding, Sink};
use crate::yaml::Value;

pub const NAME: &str = "talosctl-endpoints-not-control-plane";

doc!(
    r#"## What it does
Compares the contract's `talosctl_endpoints` with the addresses of the
control-plane nodes: every endpoint must be a control-plane node's address,
every control-plane node must be an endpoint, and the API virtual IP
(`api_vip`) must not be one.

## Why is this bad?
The Talos virtual IP is held by one control-plane node through etcd; when
etcd has lost quorum the VIP is gone, which is exactly when talosctl is
needed to repair the cluster. With every control-plane node as a direct
endpoint, talosctl reaches any node that is still up (ADR 007
"Control-plane access").

## Example
```json
"api_vip": {"value": "192.168.10.10"},
"talosctl_endpoints": {"value": ["192.168.10.10"]}
```

Use instead:
```json
"talosctl_endpoints": {"value": ["192.168.10.11", "192.168.10.12", "192.168.10.13"]}
```
"#
);

/// The host part of an endpoint (`10.0.0.1:50000` -> `10.0.0.1`).
fn host_of(e: &str) -> &str {
    if let Some(rest) = e.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match e.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => e,
    }
}

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    if ctx.missing_output(
        sink,
        "talosctl_endpoints",
        "that talosctl reaches every control-plane node, not the VIP",
    ) | ctx.missing_output(sink, "nodes", "which addresses are the control-plane nodes")
    {
        return;
    }
    let contract = &ctx.env.contract;
    let vip = contract.get("api_vip").and_then(|n| n.as_str()).unwrap_or("");
    let Some(list) = contract.get("talosctl_endpoints") else {
        return;
    };
    let items: &[crate::yaml::Node] = match &list.value {
        Value::Seq(items) => items,
        _ => &[],
    };
    let cps: Vec<_> = ctx.nodes.iter().filter(|n| n.is_control_plane()).collect();
    let mut seen = Vec::new();
    for item in items {
        let Some(e) = item.as_str() else { continue };
        let h = host_of(e);
        if !vip.is_empty() && h == vip {
            sink.push(
                Finding::new(
                    item.origin.clone(),
                    format!("talosctl endpoint {e} is the API virtual IP"),
                )
                .label("the VIP")
                .note("the Talos VIP moves with etcd; after a quorum loss it is gone, and talosctl with it")
                .help("list every control-plane node's own address instead"),
            );
            continue;
        }
        match cps.iter().find(|n| n.address == h || n.name == h) {
            Some(n) => seen.push(n.name.clone()),
            None => {
                let known: Vec<String> = cps.iter().map(|n| format!("{} ({})", n.address, n.name)).collect();
                sink.push(
                    Finding::new(
                        item.origin.clone(),
                        format!("talosctl endpoint {e} is no control-plane node's address"),
                    )
                    .label("not a control-plane node")
                    .note(format!("control-plane nodes: {}", known.join(", ")))
                    .help("list exactly the control-plane node addresses"),
                );
            }
        }
    }
    let missing: Vec<_> = cps.iter().filter(|n| !seen.contains(&n.name)).collect();
    if let Some(first) = missing.first() {
        let names: Vec<String> = missing.iter().map(|n| format!("{} ({})", n.name, n.address)).collect();
        let mut f = Finding::new(
            list.origin.clone(),
            format!("talosctl_endpoints lacks control-plane node(s) {}", names.join(", ")),
        )
        .label("not every control-plane node")
        .help("list every control-plane node address, so talosctl reaches whichever node is up");
        f = f.related(first.address_origin.clone(), format!("{}'s address", first.name));
        sink.push(f);
    }
}
