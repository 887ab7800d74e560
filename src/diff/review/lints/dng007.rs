//! DNG007: a replica count or PodDisruptionBudget change breaks high
//! availability.

use serde_json::Value as J;

use super::super::immutable::at;
use super::super::{EnvSides, Pair};
use super::danger;
use crate::invariants::quantity::{IntOrPercent, allowed_disruptions};
use crate::invariants::selector::{Labels, Selector};

pub const NAME: &str = "high-availability-weakened";

doc!(
    r#"## What it does
On an environment with `topology: ha`, flags a change that takes away what
ADR 007's HA001 and HA002 ask of a workload, for every Deployment and
StatefulSet the change touches (not only the controllers the HA rules
judge): its replicas lowered from two or more to one; a
PodDisruptionBudget that allowed an eviction and now allows none for the
pods it selects (`maxUnavailable: 0`, or `minAvailable` up to the replica
count), as the disruption controller computes it; and a
PodDisruptionBudget removed while a workload it selected still runs two
or more replicas.

## Why is this bad?
One replica is down for every node drain and every upgrade. A budget that
allows no eviction blocks `kubectl drain`, and so every Talos or
Kubernetes upgrade, until someone deletes it by hand; a budget removed
lets a drain take every replica at once.

## Example
```yaml
replicaCount: 1          # was 2
podDisruptionBudget:
  minAvailable: 2        # with 2 replicas: no eviction allowed
```

Use instead:
```yaml
replicaCount: 2
podDisruptionBudget:
  maxUnavailable: 1
```
"#
);

pub fn check(sides: &EnvSides<'_>, pair: &Pair<'_>, out: &mut Vec<super::Danger>) {
    if !sides.ha() {
        return;
    }
    let said = match pair.kind {
        "Deployment" | "StatefulSet" => replicas(pair),
        "PodDisruptionBudget" => budget(sides, pair),
        _ => None,
    };
    if let Some(message) = said {
        out.push(danger(
            "DNG007",
            pair,
            message,
            vec!["keep two replicas and a budget that allows one eviction (HA001, HA002)".to_owned()],
        ));
    }
}

fn replica_count(v: &J) -> i64 {
    at(v, &["spec", "replicas"]).and_then(J::as_i64).unwrap_or(1)
}

fn replicas(pair: &Pair<'_>) -> Option<String> {
    let (base, head) = (pair.base?, pair.head?);
    let (a, b) = (replica_count(base), replica_count(head));
    // A workload scaled by an autoscaler leaves `replicas` out.
    if at(head, &["spec", "replicas"]).is_none() && at(base, &["spec", "replicas"]).is_none() {
        return None;
    }
    (a >= 2 && b < 2).then(|| {
        format!(
            "{} goes from {a} replicas to {b}: no replica survives a drain",
            pair.display()
        )
    })
}

fn labels(v: &J) -> Labels {
    at(v, &["spec", "template", "metadata", "labels"])
        .and_then(J::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// The evictions a budget allows for each workload of the environment it
/// selects (in the budget's namespace), by workload.
fn evictions(sides: &EnvSides<'_>, pdb: &J, namespace: Option<&str>) -> Vec<(String, i64, i64)> {
    let Some(selector) = at(pdb, &["spec", "selector"]).and_then(|s| Selector::from_label_selector(s).ok()) else {
        return Vec::new();
    };
    let parse = |k: &str| at(pdb, &["spec", k]).and_then(|v| IntOrPercent::parse(v).ok());
    let (min, max) = (parse("minAvailable"), parse("maxUnavailable"));
    sides
        .workloads()
        .into_iter()
        .filter(|(_, ns, _)| *ns == namespace)
        .filter(|(_, _, w)| selector.matches(&labels(w)))
        .map(|(id, _, w)| {
            let n = replica_count(w);
            (id, n, allowed_disruptions(min, max, n))
        })
        .collect()
}

fn budget(sides: &EnvSides<'_>, pair: &Pair<'_>) -> Option<String> {
    let base = pair.base?;
    match pair.head {
        Some(head) => {
            let before = evictions(sides, base, pair.namespace);
            let blocked: Vec<String> = evictions(sides, head, pair.namespace)
                .into_iter()
                .filter(|(id, n, now)| *n >= 2 && *now == 0 && before.iter().any(|(b, _, was)| b == id && *was > 0))
                .map(|(id, n, _)| format!("{id} ({n} replicas)"))
                .collect();
            (!blocked.is_empty()).then(|| {
                format!(
                    "{} now allows no eviction of {}: it blocks every node drain",
                    pair.display(),
                    blocked.join(", ")
                )
            })
        }
        None => {
            let left: Vec<String> = evictions(sides, base, pair.namespace)
                .into_iter()
                .filter(|(_, n, _)| *n >= 2)
                .map(|(id, n, _)| format!("{id} ({n} replicas)"))
                .collect();
            (!left.is_empty()).then(|| {
                format!(
                    "{} is removed while {} still run: a drain may take every replica at once",
                    pair.display(),
                    left.join(", ")
                )
            })
        }
    }
}
