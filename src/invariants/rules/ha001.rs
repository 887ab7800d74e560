//! HA001: an ADR 007 controller runs a single replica.

use crate::invariants::facts::{Workload, eligible, plural, show_json};
use crate::invariants::{Ctx, Finding, Sink};
use crate::profiles::Kind;

pub const NAME: &str = "single-replica-controller";

doc!(
    r#"## What it does
For each controller ADR 007 names (the Cilium operator, the Longhorn CSI
controllers, CoreDNS, Traefik, the cert-manager webhook, the External
Secrets controller, webhook and cert-controller), flags fewer than two
replicas (the `min_replicas` setting). Controllers are recognised by what is
rendered — their pod labels (`app.kubernetes.io/name`, `k8s-app`,
`io.cilium/app`, …) and their images — so forks, renamed releases and
wrapper charts count. With the chart rendered by helm, the count is the
Deployment's or StatefulSet's `spec.replicas`; a DaemonSet runs one pod on
every node its node selector, node affinity and tolerations allow, and
passes with two or more such nodes. A component whose chart was not
rendered is judged through its chart profile: the merged value, or the
chart's own default when no layer sets it. It also flags a controller whose
chart needs another value for more than one replica to work (External
Secrets needs `leaderElect: true`). The finding points at the values line
that decided the count, in the layer that set it.

## Why is this bad?
A single replica is down whenever its node is drained, rebooted for an
upgrade or lost with its host. For these controllers that means no DNS, no
ingress, no new volumes, or every admission request for cert-manager and
External Secrets resources rejected.

## Example
```yaml
# gitops/platform/traefik/values.yaml: deployment.replicas unset, chart default 1
deployment:
  kind: Deployment
```

Use instead:
```yaml
deployment:
  kind: Deployment
  replicas: 2
```
"#
);

/// The nodes a DaemonSet's pods may run on.
pub fn daemonset_nodes(ctx: &Ctx<'_>, w: &Workload<'_>) -> Vec<String> {
    ctx.nodes
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
        .collect()
}

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let min = ctx.settings.min_replicas;
    for w in ctx.workloads.iter().filter(|w| w.controller.is_some()) {
        let c = w.component;
        let base = |origin| {
            let mut f = Finding::new(origin, String::new()).object(w.object_id());
            if let Some(c) = c {
                f = f.component(&c.name);
            }
            f
        };
        if w.kind == Kind::DaemonSet {
            if ctx.nodes.is_empty() {
                continue;
            }
            let nodes = daemonset_nodes(ctx, w);
            if (nodes.len() as i64) < min {
                let at = w.node_selector.as_ref().or(w.tolerations.as_ref());
                let mut f = base(at.map_or_else(|| w.origin.clone(), |v| v.origin.clone()));
                f.message = format!(
                    "{} is a DaemonSet that runs on {} of the {} node(s); ADR 007 wants at least {min} replicas",
                    w.what(),
                    plural(nodes.len() as i64, "node"),
                    ctx.nodes.len()
                );
                f = f
                    .label(if at.is_some() { "its placement" } else { "this chart" })
                    .note(format!("it may run on: {}", if nodes.is_empty() { "no node".to_owned() } else { nodes.join(", ") }))
                    .notes(w.judged_note())
                    .help("let its node selector and tolerations admit more nodes, or waive HA001 for this environment with a reason");
                sink.push(f);
            }
            continue;
        }
        let r = w.replica_count();
        if r < min {
            // The values line that decides the count, found by rendering
            // the chart again where the trace could not tell.
            let replicas = w.replicas.as_ref().map(|v| ctx.located(v));
            let mut f = base(replicas.as_ref().map_or_else(|| w.origin.clone(), |v| v.origin.clone()));
            f.message = format!(
                "{} runs {}; ADR 007 wants at least {min}",
                w.what(),
                plural(r, "replica")
            );
            match &replicas {
                Some(v) => {
                    f = f
                        .label(Ctx::value_label(v))
                        .notes(ctx.default_note(c, v))
                        .notes(w.judged_note())
                        .help(format!(
                            "{}\nor waive HA001 for this environment with a reason",
                            ctx.fix(c, v, &min.to_string())
                        ));
                }
                None => {
                    f = f
                        .label("the chart renders one replica")
                        .notes(w.judged_note())
                        .note("the chart has no value for its replica count")
                        .help("run it from a chart version that can scale it, or waive HA001 with a reason");
                }
            }
            sink.push(f);
        }
        let Some(c) = c else { continue };
        for cond in &w.conditions {
            if r <= cond.when_replicas_above {
                continue;
            }
            let v = ctx.value_in(c, w.profile.zip(w.nested.as_ref()), &cond.value);
            let want = cond.equals.to_json();
            if v.value == want {
                continue;
            }
            let mut f = base(v.origin.clone());
            f.message = format!(
                "{} runs {r} replicas but {}; it needs `{}: {}` above {} replica(s)",
                w.what(),
                v.show(),
                v.path,
                show_json(&want),
                cond.when_replicas_above
            );
            sink.push(
                f.label(Ctx::value_label(&v))
                    .notes(ctx.default_note(Some(c), &v))
                    .note(cond.why.clone())
                    .help(ctx.fix(Some(c), &v, &show_json(&want))),
            );
        }
    }
}
