//! HA003: replicas of an ADR 007 controller are not spread across nodes or hosts.

use serde_json::Value as J;

use super::set_in;
use crate::invariants::facts::Val;
use crate::invariants::profile::{Kind, SpreadKind, version_origin};
use crate::invariants::selector::{Labels, Selector};
use crate::invariants::{Ctx, Finding, Sink};
use crate::yaml::Origin;

pub const NAME: &str = "unspread-replicas";

doc!(
    r#"## What it does
For each ADR 007 controller running two or more replicas, looks for
something that spreads them over nodes: a required or preferred pod
anti-affinity, or a topology spread constraint, on `kubernetes.io/hostname`
or on the substrate's host label, whose label selector matches the
controller's own pods (a term without a selector counts when the chart fills
one in). The chart's built-in spread (the Cilium operator's default
affinity, the anti-affinity Longhorn gives its CSI controllers) counts when
the values leave affinity and spread empty. It also flags more replicas than
there are nodes (or hosts) under a required anti-affinity, since the rest
can never be scheduled.

## Why is this bad?
Two replicas on one node are one replica as far as a node or host failure is
concerned: ADR 007 asks for two replicas "spread across nodes".

## Example
```yaml
# gitops/platform/coredns/values.yaml
replicaCount: 2
affinity: {}
```

Use instead:
```yaml
replicaCount: 2
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              app.kubernetes.io/name: coredns
```
"#
);

struct Spread {
    kind: SpreadKind,
    key: String,
    origin: Origin,
}

/// Whether a term's selector selects the pods; absent selectors count (the
/// chart fills in its own).
fn selects(term: &J, pods: &Labels) -> Result<bool, String> {
    match term.get("labelSelector") {
        None | Some(J::Null) => Ok(true),
        Some(s) => Ok(Selector::from_label_selector(s)?.matches(pods)),
    }
}

fn origin_in(v: &Val, path: &[&str], index: usize) -> Origin {
    let mut node = v.node.as_ref();
    for p in path {
        node = node.and_then(|n| n.get(p));
    }
    node.and_then(|n| crate::invariants::facts::seq_item(n, index))
        .map_or_else(|| v.origin.clone(), |n| n.origin.clone())
}

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let keys = ["kubernetes.io/hostname".to_owned(), ctx.host_label.clone()];
    for inst in ctx.workloads() {
        if !inst.workload.adr007 || inst.workload.kind == Kind::DaemonSet {
            continue;
        }
        let replicas = inst.replica_count();
        if replicas < 2 {
            continue;
        }
        let c = inst.component;
        let w = inst.workload;
        let aff = w.affinity.as_ref().map(|r| ctx.value(c, r));
        let tsc = w.topology_spread.as_ref().map(|r| ctx.value(c, r));
        let mut spreads = Vec::new();
        let mut mismatched = Vec::new();
        if let Some(a) = &aff {
            let anti = &a.value["podAntiAffinity"];
            let groups = [
                (
                    "requiredDuringSchedulingIgnoredDuringExecution",
                    SpreadKind::RequiredAntiAffinity,
                ),
                (
                    "preferredDuringSchedulingIgnoredDuringExecution",
                    SpreadKind::PreferredAntiAffinity,
                ),
            ];
            for (field, kind) in groups {
                for (i, item) in anti[field].as_array().into_iter().flatten().enumerate() {
                    let term = if kind == SpreadKind::PreferredAntiAffinity {
                        &item["podAffinityTerm"]
                    } else {
                        item
                    };
                    let key = term["topologyKey"].as_str().unwrap_or("");
                    let origin = origin_in(a, &["podAntiAffinity", field], i);
                    match selects(term, &inst.pod_labels) {
                        Ok(true) if keys.iter().any(|k| k == key) => spreads.push(Spread {
                            kind,
                            key: key.to_owned(),
                            origin,
                        }),
                        Ok(false) => mismatched.push(origin),
                        _ => {}
                    }
                }
            }
        }
        if let Some(t) = &tsc {
            for (i, item) in t.value.as_array().into_iter().flatten().enumerate() {
                let key = item["topologyKey"].as_str().unwrap_or("");
                let origin = origin_in(t, &[], i);
                match selects(item, &inst.pod_labels) {
                    Ok(true) if keys.iter().any(|k| k == key) => spreads.push(Spread {
                        kind: SpreadKind::TopologySpread,
                        key: key.to_owned(),
                        origin,
                    }),
                    Ok(false) => mismatched.push(origin),
                    _ => {}
                }
            }
        }
        let empty = aff.as_ref().is_none_or(Val::is_empty) && tsc.as_ref().is_none_or(Val::is_empty);
        if empty && let Some(b) = &w.builtin_spread {
            spreads.push(Spread {
                kind: b.kind,
                key: b.topology_key.clone(),
                origin: version_origin(c),
            });
        }
        let pods: Vec<String> = inst.pod_labels.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        if spreads.is_empty() {
            let at = aff.clone().filter(|a| a.set).or_else(|| tsc.clone().filter(|t| t.set));
            let (origin, label) = match &at {
                Some(v) => (v.origin.clone(), "spreads nothing over nodes".to_owned()),
                None => (version_origin(c), "no anti-affinity or topology spread".to_owned()),
            };
            let mut f = Finding::new(
                origin,
                format!(
                    "{} runs {replicas} replicas with nothing spreading them across nodes or hosts",
                    inst.what()
                ),
            )
            .label(label)
            .component(&c.name)
            .object(inst.object_id());
            for m in mismatched {
                f = f.related(m, "its label selector does not match the pods");
            }
            f = f.note(format!(
                "wanted: pod anti-affinity or a topology spread constraint on kubernetes.io/hostname or {} selecting {}",
                ctx.host_label,
                pods.join(", ")
            ));
            let path = w.affinity.as_ref().map_or("affinity", |r| r.path.as_str());
            f = f.help(format!(
                "{} with a preferred podAntiAffinity on kubernetes.io/hostname",
                set_in(ctx.platform, &inst, path, "…")
            ));
            sink.push(f);
            continue;
        }
        for s in spreads.iter().filter(|s| s.kind == SpreadKind::RequiredAntiAffinity) {
            let domains = ctx.domains(&s.key) as i64;
            if domains == 0 || replicas <= domains {
                continue;
            }
            let r = inst.replicas.as_ref();
            let mut f = Finding::new(
                r.map_or_else(|| version_origin(c), |v| v.origin.clone()),
                format!(
                    "{} runs {replicas} replicas under a required anti-affinity on {}, but the cluster has only {domains} such domain(s): {} replica(s) can never be scheduled",
                    inst.what(),
                    s.key,
                    replicas - domains
                ),
            )
            .label(r.map_or_else(|| "replicas".to_owned(), Ctx::value_label))
            .related(s.origin.clone(), "required anti-affinity")
            .component(&c.name)
            .object(inst.object_id())
            .help(format!(
                "run at most {domains} replicas, or make the anti-affinity preferred"
            ));
            if let Some(v) = r {
                f = f.notes(ctx.default_note(c, v));
            }
            sink.push(f);
        }
    }
}
