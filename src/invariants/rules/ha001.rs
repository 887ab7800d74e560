//! HA001: an ADR 007 controller runs a single replica.

use super::set_in;
use crate::invariants::profile::Kind;
use crate::invariants::{Ctx, Finding, Sink};

pub const NAME: &str = "single-replica-controller";

doc!(
    r#"## What it does
For each controller ADR 007 names (the Cilium operator, the Longhorn CSI
controllers, CoreDNS, Traefik, the cert-manager webhook, the External
Secrets controller, webhook and cert-controller), reads its replica count
from the merged values through the chart profile — the chart's own default
when no layer sets it — and flags fewer than two (the `min_replicas`
setting). It also flags a controller whose chart needs another value for
more than one replica to work (External Secrets needs `leaderElect: true`).

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

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let min = ctx.settings.min_replicas;
    for inst in ctx.workloads() {
        if !inst.workload.adr007 || inst.workload.kind == Kind::DaemonSet {
            continue;
        }
        let r = inst.replica_count();
        let c = inst.component;
        if r < min {
            let mut f = Finding::new(
                inst.replicas
                    .as_ref()
                    .map_or_else(|| crate::invariants::profile::version_origin(c), |v| v.origin.clone()),
                format!(
                    "{} runs {}; ADR 007 wants at least {min}",
                    inst.what(),
                    crate::invariants::facts::plural(r, "replica")
                ),
            )
            .component(&c.name)
            .object(inst.object_id());
            match &inst.replicas {
                Some(v) => {
                    f = f.label(Ctx::value_label(v)).notes(ctx.default_note(c, v)).help(format!(
                        "{}, or waive HA001 for this environment with a reason",
                        set_in(ctx.platform, &inst, &v.path, &min.to_string())
                    ));
                }
                None => {
                    f = f
                        .label("the chart renders one replica")
                        .note(format!(
                            "the chart has no value for its replica count ({})",
                            inst.profile.describe()
                        ))
                        .help("run it from a chart version that can scale it, or waive HA001 with a reason");
                }
            }
            sink.push(f);
        }
        for cond in &inst.workload.conditions {
            if r <= cond.when_replicas_above {
                continue;
            }
            let v = ctx.value(c, &cond.value);
            let want = cond.equals.to_json();
            if v.value == want {
                continue;
            }
            sink.push(
                Finding::new(
                    v.origin.clone(),
                    format!(
                        "{} runs {r} replicas but {}; it needs `{}: {}` above {} replica(s)",
                        inst.what(),
                        v.show(),
                        cond.value.path,
                        crate::invariants::facts::show_json(&want),
                        cond.when_replicas_above
                    ),
                )
                .label(Ctx::value_label(&v))
                .notes(ctx.default_note(c, &v))
                .note(cond.why.clone())
                .help(set_in(
                    ctx.platform,
                    &inst,
                    &cond.value.path,
                    &crate::invariants::facts::show_json(&want),
                ))
                .component(&c.name)
                .object(inst.object_id()),
            );
        }
    }
}
