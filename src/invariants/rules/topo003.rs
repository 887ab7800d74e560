//! TOPO003: a node lacks the host label, or it disagrees with its host.

use crate::invariants::{Ctx, Finding, Sink};

pub const NAME: &str = "host-label-mismatch";

doc!(
    r#"## What it does
Checks that every node of the contract carries the substrate's host label
(on talos `topology.kubernetes.io/zone`, or `host_label:` in strata.yaml)
and that its value equals the node's `host`.

## Why is this bad?
Kubernetes and Longhorn only know where a node physically runs through that
label: topology spread, anti-affinity on the host label and Longhorn's zone
anti-affinity use it to keep replicas on different hosts. A missing or wrong
label lets two replicas of a controller or a volume land on one host, which
then takes both down (ADR 007: "Label every node with its physical Proxmox
host").

## Example
```json
{"name": "cp-02", "host": "pve-02",
 "labels": {"topology.kubernetes.io/zone": "pve-01"}}
```

Use instead:
```json
{"name": "cp-02", "host": "pve-02",
 "labels": {"topology.kubernetes.io/zone": "pve-02"}}
```
Set the label from the host in the substrate stack's machine configuration.
"#
);

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    if ctx.missing_output(sink, "nodes", "that every node carries its host label") {
        return;
    }
    let key = &ctx.host_label;
    for n in &ctx.nodes {
        match n.labels.get(key) {
            Some(v) if *v == n.host => {}
            Some(v) => sink.push(
                Finding::new(
                    n.label_origins
                        .get(key)
                        .cloned()
                        .unwrap_or_else(|| n.labels_origin.clone()),
                    format!("node {} has {key}={v}, but it runs on host {}", n.name, n.host),
                )
                .label(format!("should be {}", n.host))
                .related(n.host_origin.clone(), "the node's host")
                .help(format!("label the node {key}={} in the substrate stack", n.host)),
            ),
            None => sink.push(
                Finding::new(
                    n.labels_origin.clone(),
                    format!("node {} lacks the host label {key}", n.name),
                )
                .label(format!("no {key} here"))
                .related(n.host_origin.clone(), "the node's host")
                .help(format!("label the node {key}={} in the substrate stack", n.host)),
            ),
        }
    }
}
