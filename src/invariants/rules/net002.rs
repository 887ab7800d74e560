//! NET002: the CiliumL2AnnouncementPolicy's node selector leaves nodes out.

use crate::invariants::facts::req_origin;
use crate::invariants::selector::Selector;
use crate::invariants::{Ctx, Finding, Sink};

pub const NAME: &str = "partial-l2-announcement";

doc!(
    r#"## What it does
Evaluates the `spec.nodeSelector` of every CiliumL2AnnouncementPolicy in the
rendered tree (component manifests and the generated cluster objects) against
the labels of the contract's nodes, with label-selector semantics
(`matchLabels` and `matchExpressions`; no selector selects every node), and
flags a policy that leaves a node out. The finding points at the first
requirement that excludes a node.

## Why is this bad?
Only the selected nodes can take the lease that answers ARP for a
LoadBalancer address. A policy that selects one node makes the ingress
address disappear whenever that node does (ADR 007: "The Cilium L2
announcement policy selects all three nodes, not one").

## Example
```yaml
apiVersion: cilium.io/v2alpha1
kind: CiliumL2AnnouncementPolicy
spec:
  loadBalancerIPs: true
  nodeSelector:
    matchLabels:
      kubernetes.io/hostname: worker-01
```

Use instead:
```yaml
apiVersion: cilium.io/v2alpha1
kind: CiliumL2AnnouncementPolicy
spec:
  loadBalancerIPs: true
```
On talos strata already generates the policy `all-nodes`, which selects
every node; a hand-written one is only needed for a different interface or
service selector.
"#
);

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    if ctx.objects_of_kind("CiliumL2AnnouncementPolicy").next().is_none()
        || ctx.missing_output(sink, "nodes", "that the L2 announcement policy selects every node")
    {
        return;
    }
    for o in ctx.objects_of_kind("CiliumL2AnnouncementPolicy") {
        let sel = &o.value["spec"]["nodeSelector"];
        if sel.is_null() {
            continue;
        }
        let sel_node = o.field_node("spec.nodeSelector");
        let at = o.field_origin("spec.nodeSelector");
        let s = match Selector::from_label_selector(sel) {
            Ok(s) => s,
            Err(e) => {
                let mut f = Finding::new(
                    at,
                    format!(
                        "CiliumL2AnnouncementPolicy {}: the node selector is invalid: {e}",
                        o.name()
                    ),
                )
                .label("invalid selector")
                .help("write matchLabels and/or matchExpressions with In, NotIn, Exists or DoesNotExist")
                .object(o.id());
                if let Some(c) = &o.component {
                    f = f.component(c);
                }
                sink.push(f);
                continue;
            }
        };
        let left_out: Vec<_> = ctx.nodes.iter().filter(|n| !s.matches(&n.labels)).collect();
        if left_out.is_empty() {
            continue;
        }
        let first_req = s.first_failing(&left_out[0].labels);
        let origin = first_req.map_or_else(|| at.clone(), |r| req_origin(sel_node, r, &at));
        let names: Vec<&str> = left_out.iter().map(|n| n.name.as_str()).collect();
        let selected = ctx.nodes.len() - left_out.len();
        let mut f = Finding::new(
            origin,
            format!(
                "CiliumL2AnnouncementPolicy {} selects {selected} of {} nodes; {} never announce{} the LoadBalancer addresses",
                o.name(),
                ctx.nodes.len(),
                names.join(", "),
                if names.len() == 1 { "s" } else { "" }
            ),
        )
        .label(match first_req {
            Some(r) => format!("`{}` excludes {}", r.describe(), left_out[0].name),
            None => "excludes nodes".to_owned(),
        })
        .help("remove the node selector so that every node can announce, or make it match every node")
        .object(o.id());
        if let Some(c) = &o.component {
            f = f.component(c);
        }
        if o.node.is_none() && o.source == crate::render::Source::Manifest {
            f = f.note("the policy comes from a template; the line is the start of its document");
        }
        sink.push(f);
    }
}
