//! HA003: replicas of an ADR 007 controller are not spread across nodes or hosts.

use serde_json::Value as J;

use crate::invariants::facts::{Judged, Val, Workload};
use crate::invariants::selector::{Labels, Selector};
use crate::invariants::{Ctx, Finding, Sink};
use crate::profiles::{Kind, SpreadKind};
use crate::yaml::Origin;

pub const NAME: &str = "unspread-replicas";

doc!(
    r#"## What it does
For each ADR 007 controller running two or more replicas, looks for
something that spreads them over nodes: a required or preferred pod
anti-affinity, or a topology spread constraint, on `kubernetes.io/hostname`
or on the substrate's host label, whose label selector matches the
controller's own pods. With the chart rendered by helm, that is the pod
template as rendered (a term without a label selector selects no pods);
through a chart profile, the merged `affinity` and spread values (a term
without a selector counts when the chart fills one in), and the chart's
built-in spread (the Cilium operator's default affinity, the anti-affinity
Longhorn gives its CSI controllers) when the values leave them empty. It also flags more replicas than
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

/// Whether a term's selector selects the pods. A term without a selector
/// selects nothing once rendered; through a profile it counts, since the
/// chart fills one in.
fn selects(term: &J, pods: &Labels, rendered: bool) -> Result<bool, String> {
    match term.get("labelSelector") {
        None | Some(J::Null) => Ok(!rendered),
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

/// What spreads a workload's pods over nodes or hosts, and the terms whose
/// selector misses the pods.
fn spreads(ctx: &Ctx<'_>, w: &Workload<'_>) -> (Vec<Spread>, Vec<Origin>) {
    let keys = ["kubernetes.io/hostname".to_owned(), ctx.host_label.clone()];
    let rendered = !matches!(w.judged, Judged::Profile | Judged::Runtime);
    let mut spreads = Vec::new();
    let mut mismatched = Vec::new();
    if let Some(a) = &w.affinity {
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
                match selects(term, &w.pod_labels, rendered) {
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
    if let Some(t) = &w.topology_spread {
        for (i, item) in t.value.as_array().into_iter().flatten().enumerate() {
            let key = item["topologyKey"].as_str().unwrap_or("");
            let origin = origin_in(t, &[], i);
            match selects(item, &w.pod_labels, rendered) {
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
    let empty = w.affinity.as_ref().is_none_or(Val::is_empty) && w.topology_spread.as_ref().is_none_or(Val::is_empty);
    if empty && let Some(b) = &w.builtin_spread {
        spreads.push(Spread {
            kind: b.kind,
            key: b.topology_key.clone(),
            origin: w.origin.clone(),
        });
    }
    (spreads, mismatched)
}

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    for w in ctx
        .workloads
        .iter()
        .filter(|w| w.controller.is_some() && w.kind != Kind::DaemonSet)
    {
        let replicas = w.replica_count();
        if replicas < 2 {
            continue;
        }
        let c = w.component;
        let (spreads, mismatched) = spreads(ctx, w);
        let pods: Vec<String> = w.pod_labels.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let base = |origin| {
            let mut f = Finding::new(origin, String::new()).object(w.object_id());
            if let Some(c) = c {
                f = f.component(&c.name);
            }
            f
        };
        if spreads.is_empty() {
            let at = w
                .affinity
                .clone()
                .filter(|a| a.set)
                .or_else(|| w.topology_spread.clone().filter(|t| t.set));
            let (origin, label) = match &at {
                Some(v) => (v.origin.clone(), "spreads nothing over nodes".to_owned()),
                None => (w.origin.clone(), "no anti-affinity or topology spread".to_owned()),
            };
            let mut f = base(origin);
            f.message = format!(
                "{} runs {replicas} replicas with nothing spreading them across nodes or hosts",
                w.what()
            );
            f = f.label(label);
            for m in mismatched {
                f = f.related(m, "its label selector does not match the pods");
            }
            f = f.notes(w.judged_note()).note(format!(
                "wanted: pod anti-affinity or a topology spread constraint on kubernetes.io/hostname or {} selecting {}",
                ctx.host_label,
                pods.join(", ")
            ));
            let target = at
                .clone()
                .or_else(|| w.affinity.clone())
                .filter(|v| v.path.ends_with("affinity"));
            let selector: Vec<String> = w.pod_labels.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            let block = format!(
                "podAntiAffinity:\n  preferredDuringSchedulingIgnoredDuringExecution:\n    - weight: 100\n      podAffinityTerm:\n        topologyKey: kubernetes.io/hostname\n        labelSelector:\n          matchLabels: {{{}}}",
                selector.join(", ")
            );
            let help = match target.as_ref().and_then(|v| ctx.fix_block(c, v, &block)) {
                Some(h) => h,
                None => {
                    let path = w
                        .profile
                        .and_then(|p| p.workloads.iter().find(|x| x.id == w.name))
                        .and_then(|x| x.affinity.as_ref())
                        .map_or("affinity", |r| r.path.as_str());
                    let file = c.map_or_else(String::new, |c| super::base_layer(ctx.platform, &c.dir));
                    format!(
                        "give the pods a preferred podAntiAffinity on kubernetes.io/hostname selecting {} (in {file}, the chart's `{path}` value, if it has one)",
                        pods.join(", ")
                    )
                }
            };
            sink.push(f.help(help));
            continue;
        }
        for s in spreads.iter().filter(|s| s.kind == SpreadKind::RequiredAntiAffinity) {
            let domains = ctx.domains(&s.key) as i64;
            if domains == 0 || replicas <= domains {
                continue;
            }
            let r = w.replicas.as_ref();
            let mut f = base(r.map_or_else(|| w.origin.clone(), |v| v.origin.clone()));
            f.message = format!(
                "{} runs {replicas} replicas under a required anti-affinity on {}, but the cluster has only {domains} such domain(s): {} replica(s) can never be scheduled",
                w.what(),
                s.key,
                replicas - domains
            );
            f = f
                .label(r.map_or_else(|| "replicas".to_owned(), Ctx::value_label))
                .related(s.origin.clone(), "required anti-affinity")
                .help(format!(
                    "run at most {domains} replicas, or make the anti-affinity preferred"
                ));
            if let Some(v) = r {
                f = f.notes(ctx.default_note(c, v));
            }
            sink.push(f.notes(w.judged_note()));
        }
    }
}
