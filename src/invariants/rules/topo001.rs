//! TOPO001: too few control-plane nodes, or an even number.

use crate::invariants::{Ctx, Finding, Sink};

pub const NAME: &str = "too-few-control-plane-nodes";

doc!(
    r#"## What it does
Counts the nodes of the substrate contract's `nodes` output whose `roles`
include `control-plane`, and flags a cluster with fewer than three of them or
with an even number.

## Why is this bad?
etcd needs a majority of its members to accept writes. One member has no
failure tolerance at all; two members need both; four members still need
three votes, so they tolerate one failure, no better than three (ADR 007:
"Four members still need three votes, while three members need two").
Below three, losing one node stops the Kubernetes API.

## Example
```json
"nodes": {"value": [
  {"name": "cp-01", "host": "pve-01", "roles": ["control-plane"]},
  {"name": "worker-01", "host": "pve-02", "roles": ["worker"]}
]}
```

Use instead:
```json
"nodes": {"value": [
  {"name": "cp-01", "host": "pve-01", "roles": ["control-plane"]},
  {"name": "cp-02", "host": "pve-02", "roles": ["control-plane"]},
  {"name": "cp-03", "host": "pve-03", "roles": ["control-plane"]}
]}
```
Change the substrate stack (Terraform/OpenTofu) so that it creates three
control-plane nodes, then write its outputs again with `tofu output -json`.
"#
);

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    if ctx.missing_output(sink, "nodes", "how many control-plane nodes there are") {
        return;
    }
    let cps: Vec<&str> = ctx
        .nodes
        .iter()
        .filter(|n| n.is_control_plane())
        .map(|n| n.name.as_str())
        .collect();
    let n = cps.len();
    if n >= 3 && n % 2 == 1 {
        return;
    }
    let workers = ctx.nodes.len() - n;
    let what = match n {
        0 => "no control-plane node".to_owned(),
        1 => format!("one control-plane node ({})", cps[0]),
        _ => format!("{n} control-plane nodes ({})", cps.join(", ")),
    };
    let why = if n >= 3 {
        format!("an even number tolerates no more failures than {}", n - 1)
    } else {
        "ADR 007 needs at least three, an odd number".to_owned()
    };
    let mut f = Finding::new(
        ctx.nodes_origin.clone(),
        format!("the cluster has {what}; {why}"),
    )
    .label(format!("{what}, {}", crate::invariants::facts::plural(workers as i64, "other node")))
    .help("have the substrate stack create three control-plane nodes on three hosts, then rewrite the contract with `tofu output -json`");
    if n == 2 || n == 4 {
        f = f.note(format!(
            "with {n} members etcd needs {} votes and survives {} failure(s), no more than {} would",
            n / 2 + 1,
            (n - 1) / 2,
            crate::invariants::facts::plural(n as i64 - 1, "member")
        ));
    }
    sink.push(f);
}
