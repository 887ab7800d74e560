//! HA002: an ADR 007 controller has no PodDisruptionBudget, several, or one
//! that allows no eviction.

use serde_json::Value as J;

use super::set_in;
use crate::invariants::facts::{Inst, Pdb, Val, manifest_pdbs, show_json};
use crate::invariants::profile::{Kind, version_origin};
use crate::invariants::quantity::{IntOrPercent, allowed_disruptions};
use crate::invariants::{Ctx, Finding, Sink};
use crate::yaml::Origin;

pub const NAME: &str = "controller-without-disruption-budget";

doc!(
    r#"## What it does
For each ADR 007 controller, finds the PodDisruptionBudgets that select its
pods: the chart's own (its switch and bounds read through the chart profile,
with the chart's defaults and the bound its template writes when none is
given), ones the software creates itself (Longhorn's for the CSI attacher and
provisioner), and PodDisruptionBudgets in the component's `manifests/` whose
`spec.selector` (`matchLabels` and `matchExpressions`) matches the pod
labels in the same namespace. It flags a controller with none, with more
than one, or with one that allows no eviction at the replica count:
`maxUnavailable: 0`, or `minAvailable` at or above the replicas, with
percentages rounded up as the disruption controller rounds them.

## Why is this bad?
Without a PodDisruptionBudget a node drain may evict every replica at once,
and a second drain running beside the first (two hosts in maintenance) can
take the controller down. A budget that allows no eviction blocks every
drain instead, so upgrades hang. The eviction API refuses pods selected by
more than one budget.

## Example
```yaml
# gitops/platform/coredns/values.yaml
replicaCount: 2
podDisruptionBudget:
  minAvailable: 2
```

Use instead:
```yaml
replicaCount: 2
podDisruptionBudget:
  maxUnavailable: 1
```
"#
);

/// A bound, unless the value is unset (`null` or the empty string, which
/// charts treat as unset).
fn bound(v: &Val) -> Option<(J, Origin)> {
    match &v.value {
        J::Null => None,
        J::String(s) if s.is_empty() => None,
        other => Some((other.clone(), v.origin.clone())),
    }
}

/// The chart's PDB, or the value that switches it off.
fn chart_pdb(ctx: &Ctx<'_>, inst: &Inst<'_>) -> Result<Option<Pdb>, Val> {
    let Some(spec) = &inst.workload.pdb else {
        return Ok(None);
    };
    let c = inst.component;
    if let Some(e) = &spec.enabled {
        let v = ctx.value(c, e);
        if !v.truthy() {
            return Err(v);
        }
    }
    let mut min = spec.min_available.as_ref().and_then(|r| bound(&ctx.value(c, r)));
    let mut max = spec.max_unavailable.as_ref().and_then(|r| bound(&ctx.value(c, r)));
    let mut notes = Vec::new();
    if min.is_none() && max.is_none() {
        let at = version_origin(c);
        min = spec
            .rendered_when_unset
            .min_available
            .as_ref()
            .map(|n| (n.to_json(), at.clone()));
        max = spec
            .rendered_when_unset
            .max_unavailable
            .as_ref()
            .map(|n| (n.to_json(), at));
        if let Some((v, _)) = min
            .as_ref()
            .map(|m| ("minAvailable", m))
            .or(max.as_ref().map(|m| ("maxUnavailable", m)))
        {
            notes.push(format!(
                "with neither bound set the chart writes `{v}: {}` ({})",
                show_json(&min.as_ref().or(max.as_ref()).map(|b| b.0.clone()).unwrap_or(J::Null)),
                inst.profile.describe()
            ));
        }
    }
    if let Some(by) = &spec.managed_by {
        notes.push(format!(
            "{by} creates this PodDisruptionBudget at run time ({})",
            inst.profile.describe()
        ));
    }
    Ok(Some(Pdb {
        name: format!("{} (chart)", inst.workload.id),
        min_available: min,
        max_unavailable: max,
        origin: version_origin(c),
        from_chart: true,
        notes,
    }))
}

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    for inst in ctx.workloads() {
        if !inst.workload.adr007 || inst.workload.kind == Kind::DaemonSet {
            continue;
        }
        let c = inst.component;
        let replicas = inst.replica_count();
        if replicas < 1 {
            continue;
        }
        let mut pdbs = Vec::new();
        let off = match chart_pdb(ctx, &inst) {
            Ok(Some(p)) => {
                pdbs.push(p);
                None
            }
            Ok(None) => None,
            Err(v) => Some(v),
        };
        pdbs.extend(
            manifest_pdbs(ctx, &c.namespace, &inst.pod_labels)
                .into_iter()
                .map(|(p, _)| p),
        );
        let base = || {
            Finding::new(version_origin(c), String::new())
                .component(&c.name)
                .object(inst.object_id())
        };
        match pdbs.as_slice() {
            [] => {
                let labels: Vec<String> = inst.pod_labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let mut f = base();
                f.message = format!("{} has no PodDisruptionBudget", inst.what());
                match off {
                    Some(v) => {
                        f.origin = v.origin.clone();
                        f = f
                            .label(if v.set {
                                "switched off here".to_owned()
                            } else {
                                Ctx::value_label(&v)
                            })
                            .notes(ctx.default_note(c, &v));
                        let on = if v.value.is_object() {
                            "{maxUnavailable: 1}"
                        } else {
                            "true"
                        };
                        f = f.help(format!(
                            "{}{}, or waive HA002 for this environment with a reason",
                            set_in(ctx.platform, &inst, &v.path, on),
                            if v.value.is_object() {
                                ""
                            } else {
                                " with `maxUnavailable: 1`"
                            }
                        ));
                    }
                    None => {
                        f = f
                            .label("the chart renders no PodDisruptionBudget for it")
                            .note(format!(
                                "no PodDisruptionBudget in {}/manifests selects pods labelled {}",
                                c.dir,
                                labels.join(", ")
                            ))
                            .help(format!(
                                "add a PodDisruptionBudget with `maxUnavailable: 1` selecting {} to {}/manifests/",
                                labels.join(", "),
                                c.dir
                            ));
                    }
                }
                sink.push(f);
            }
            [pdb] => judge(pdb, replicas, &inst, base, sink),
            many => {
                let names: Vec<&str> = many.iter().map(|p| p.name.as_str()).collect();
                let mut f = base();
                f.origin = many[1].origin.clone();
                f.message = format!(
                    "{} PodDisruptionBudgets select the pods of {} ({}); the eviction API refuses to evict a pod that more than one selects",
                    many.len(),
                    inst.what(),
                    names.join(", ")
                );
                f = f
                    .label("a second PodDisruptionBudget")
                    .related(many[0].origin.clone(), "the first")
                    .notes(many.iter().flat_map(|p| p.notes.clone()))
                    .help("keep exactly one PodDisruptionBudget for these pods");
                sink.push(f);
            }
        }
    }
}

fn judge(pdb: &Pdb, replicas: i64, inst: &Inst<'_>, base: impl Fn() -> Finding, sink: &mut Sink) {
    if let (Some(_), Some((_, o))) = (&pdb.min_available, &pdb.max_unavailable) {
        let mut f = base();
        f.origin = o.clone();
        f.message = format!(
            "PodDisruptionBudget {} of {} sets both minAvailable and maxUnavailable; the API server rejects it",
            pdb.name,
            inst.what()
        );
        sink.push(
            f.label("second bound")
                .help("keep one of the two bounds, e.g. `maxUnavailable: 1`"),
        );
        return;
    }
    let parse = |b: &Option<(J, Origin)>| -> Result<Option<IntOrPercent>, (String, Origin)> {
        match b {
            None => Ok(None),
            Some((v, o)) => IntOrPercent::parse(v).map(Some).map_err(|e| (e, o.clone())),
        }
    };
    let (min, max) = match (parse(&pdb.min_available), parse(&pdb.max_unavailable)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err((e, o)), _) | (_, Err((e, o))) => {
            let mut f = base();
            f.origin = o;
            f.message = format!("PodDisruptionBudget {} of {}: {e}", pdb.name, inst.what());
            sink.push(
                f.label("not a valid bound")
                    .help("write an integer, or a percentage such as 50%"),
            );
            return;
        }
    };
    let allowed = allowed_disruptions(min, max, replicas);
    if allowed >= 1 {
        return;
    }
    let (what, origin) = match (&pdb.max_unavailable, &pdb.min_available) {
        (Some((v, o)), _) => (format!("maxUnavailable: {}", show_json(v)), o.clone()),
        (None, Some((v, o))) => (format!("minAvailable: {}", show_json(v)), o.clone()),
        (None, None) => ("no bound".to_owned(), pdb.origin.clone()),
    };
    let label = if pdb.from_chart && origin == pdb.origin {
        "chart default"
    } else {
        "set here"
    };
    let mut f = base();
    f.origin = origin;
    f.message = format!(
        "PodDisruptionBudget {} allows no eviction of {}: {what} with {}",
        pdb.name,
        inst.what(),
        crate::invariants::facts::plural(replicas, "replica")
    );
    f = f
        .label(label)
        .notes(pdb.notes.clone())
        .note("a budget that allows no eviction blocks every node drain, so upgrades and host maintenance hang")
        .help(format!(
            "use `maxUnavailable: 1`, or a minAvailable below {}",
            crate::invariants::facts::plural(replicas, "replica")
        ));
    sink.push(f);
}
