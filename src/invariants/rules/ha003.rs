//! HA003: replicas of an ADR 007 controller are not spread across nodes or hosts.

use serde_json::Value as J;

use crate::invariants::facts::{Judged, Val, Workload};
use crate::invariants::selector::{self, Labels, Selector};
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

The fix it suggests keeps the kind of spread the values chose (a required
or a preferred anti-affinity, or a topology spread constraint) and selects
the pods by labels that stay the same across versions: never
`helm.sh/chart`, `chart`, `app.kubernetes.io/version`, or any label whose
value holds a version number, which would stop matching the old pods in
the middle of every rolling update.

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

/// The pod labels a spread should select: every one but those that carry
/// a version (see [`selector::stable`]).
fn stable_labels(w: &Workload<'_>) -> Vec<(String, String)> {
    selector::stable(&w.pod_labels)
}

/// How the pods' spread was written, so that the help keeps that choice:
/// a required or preferred anti-affinity (preferred when the values hold
/// neither, or both), or a topology spread constraint when only that was
/// written; with the topology key used, when it is one HA003 accepts.
fn chosen(ctx: &Ctx<'_>, w: &Workload<'_>) -> (SpreadKind, String) {
    let keys = ["kubernetes.io/hostname", ctx.host_label.as_str()];
    let anti = w.affinity.as_ref().map(|a| &a.value["podAntiAffinity"]);
    let terms = |field: &str| -> Vec<J> { anti.and_then(|a| a[field].as_array()).cloned().unwrap_or_default() };
    let required = terms("requiredDuringSchedulingIgnoredDuringExecution");
    let preferred = terms("preferredDuringSchedulingIgnoredDuringExecution");
    let spread = w
        .topology_spread
        .as_ref()
        .and_then(|t| t.value.as_array().cloned())
        .unwrap_or_default();
    let key_of = |terms: &[J], inner: Option<&str>| {
        terms
            .iter()
            .filter_map(|t| inner.map_or(t, |i| &t[i])["topologyKey"].as_str())
            .find(|k| keys.contains(k))
            .map(str::to_owned)
    };
    let (kind, key) = if !required.is_empty() && preferred.is_empty() {
        (SpreadKind::RequiredAntiAffinity, key_of(&required, None))
    } else if required.is_empty() && preferred.is_empty() && !spread.is_empty() {
        (SpreadKind::TopologySpread, key_of(&spread, None))
    } else {
        (
            SpreadKind::PreferredAntiAffinity,
            key_of(&preferred, Some("podAffinityTerm")),
        )
    };
    (kind, key.unwrap_or_else(|| "kubernetes.io/hostname".to_owned()))
}

/// The YAML that spreads the pods, of the kind the values chose, under the
/// value it goes in (`affinity`, or `topologySpreadConstraints`).
fn spread_block(kind: SpreadKind, key: &str, selector: &[(String, String)]) -> String {
    let labels: Vec<String> = selector.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let labels = labels.join(", ");
    match kind {
        SpreadKind::RequiredAntiAffinity => format!(
            "podAntiAffinity:\n  requiredDuringSchedulingIgnoredDuringExecution:\n    - topologyKey: {key}\n      labelSelector:\n        matchLabels: {{{labels}}}"
        ),
        SpreadKind::PreferredAntiAffinity => format!(
            "podAntiAffinity:\n  preferredDuringSchedulingIgnoredDuringExecution:\n    - weight: 100\n      podAffinityTerm:\n        topologyKey: {key}\n        labelSelector:\n          matchLabels: {{{labels}}}"
        ),
        SpreadKind::TopologySpread => format!(
            "- maxSkew: 1\n  topologyKey: {key}\n  whenUnsatisfiable: ScheduleAnyway\n  labelSelector:\n    matchLabels: {{{labels}}}"
        ),
    }
}

/// The help of a workload nothing spreads: the YAML to write in the layer
/// that set the value (or the base layer), keeping the kind of spread the
/// values chose, and selecting the pods by labels that do not change with
/// the version.
fn spread_help(ctx: &Ctx<'_>, w: &Workload<'_>, at: Option<&Val>, selector: &[(String, String)]) -> String {
    let c = w.component;
    let (kind, key) = chosen(ctx, w);
    let field = if kind == SpreadKind::TopologySpread {
        "topologySpreadConstraints"
    } else {
        "affinity"
    };
    let own = if kind == SpreadKind::TopologySpread {
        w.topology_spread.as_ref()
    } else {
        w.affinity.as_ref()
    };
    let target = at
        .filter(|v| v.path.ends_with(field))
        .or(own.filter(|v| v.path.ends_with(field)));
    let unchanging = if selector.len() < w.pod_labels.len() {
        "\n(the selector leaves out labels that carry a version: they change with every upgrade, and the spread would stop matching the pods in the middle of a rolling update)"
    } else {
        ""
    };
    if selector.is_empty() {
        return format!(
            "give the pods a label that does not change with the version (such as app.kubernetes.io/name), and spread them on {key} with a selector on it"
        );
    }
    if let Some(h) = target
        .as_ref()
        .and_then(|v| ctx.fix_block(c, v, &spread_block(kind, &key, selector)))
    {
        return format!("{h}{unchanging}");
    }
    let path = w
        .profile
        .and_then(|p| p.workloads.iter().find(|x| x.id == w.name))
        .and_then(|x| {
            if kind == SpreadKind::TopologySpread {
                x.topology_spread.as_ref()
            } else {
                x.affinity.as_ref()
            }
        })
        .map_or_else(
            || field.to_owned(),
            |r| w.nested.as_ref().map_or_else(|| r.path.clone(), |n| n.path(&r.path)),
        );
    let file = c.map_or_else(String::new, |c| super::base_layer(ctx.platform, &c.dir));
    let what = match kind {
        SpreadKind::RequiredAntiAffinity => "a required podAntiAffinity",
        SpreadKind::PreferredAntiAffinity => "a preferred podAntiAffinity",
        SpreadKind::TopologySpread => "a topology spread constraint",
    };
    let labels: Vec<String> = selector.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!(
        "give the pods {what} on {key} selecting {} (in {file}, the chart's `{path}` value, if it has one){unchanging}",
        labels.join(", ")
    )
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
        let selector = stable_labels(w);
        let pods: Vec<String> = selector.iter().map(|(k, v)| format!("{k}: {v}")).collect();
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
                .as_ref()
                .map(|a| ctx.located(a))
                .filter(|a| a.set)
                .or_else(|| w.topology_spread.as_ref().map(|t| ctx.located(t)).filter(|t| t.set));
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
            sink.push(f.help(spread_help(ctx, w, at.as_ref(), &selector)));
            continue;
        }
        for s in spreads.iter().filter(|s| s.kind == SpreadKind::RequiredAntiAffinity) {
            let domains = ctx.domains(&s.key) as i64;
            if domains == 0 || replicas <= domains {
                continue;
            }
            let located = w.replicas.as_ref().map(|v| ctx.located(v));
            let r = located.as_ref();
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

#[cfg(test)]
mod tests {
    use crate::invariants::selector::holds_version;

    #[test]
    fn versions_in_label_values() {
        for v in ["web-1.0.0", "v1.27.3", "1.18.2", "cilium-1.18.2-rc.1"] {
            assert!(holds_version(v), "{v}");
        }
        for v in ["web", "1.27", "coredns", "10", "a.b.c", "1.2.x", ""] {
            assert!(!holds_version(v), "{v}");
        }
    }
}
