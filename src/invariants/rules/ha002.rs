//! HA002: an ADR 007 controller has no PodDisruptionBudget, several, or one
//! that allows no eviction.

use serde_json::Value as J;

use crate::invariants::facts::{Pdb, ProfilePdb, Workload, show_json};
use crate::invariants::quantity::{IntOrPercent, allowed_disruptions};
use crate::invariants::{Ctx, Finding, Sink};
use crate::profiles::Kind;
use crate::yaml::Origin;

pub const NAME: &str = "controller-without-disruption-budget";

doc!(
    r#"## What it does
For each ADR 007 controller, finds the PodDisruptionBudgets that select its
pods: any budget in the environment — rendered by its own chart, by another
component's chart, or written in any component's `manifests/` — in the same
namespace whose `spec.selector` (`matchLabels` and `matchExpressions`)
matches the pods' real labels; and the ones the software creates itself
(Longhorn's for the CSI attacher and provisioner). For a component whose
chart was not rendered, the chart's own budget is read through the chart
profile (its switch and bounds, the chart's defaults, and the bound its
template writes when none is given). It flags a controller with none, with more
than one, or with one that allows no eviction at the replica count:
`maxUnavailable: 0`, or `minAvailable` at or above the replicas, with
percentages rounded up as the disruption controller rounds them.

A controller that runs as a DaemonSet is exempt. Its pods are tied to
their nodes: `kubectl drain --ignore-daemonsets`, and the drain helpers
built on it, leave DaemonSet pods in place rather than evict them, and the
DaemonSet controller replaces them in a rolling update by deleting them,
not through the eviction API, so a budget is never consulted; the pod on
a node under maintenance goes down with that node whatever a budget says.
HA001 judges such a controller by the nodes it runs on instead.

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

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    for w in ctx
        .workloads
        .iter()
        .filter(|w| w.controller.is_some() && w.kind != Kind::DaemonSet)
    {
        let replicas = w.replica_count();
        if replicas < 1 {
            continue;
        }
        let c = w.component;
        let pdbs = ctx.pdbs_of(w);
        let base = || {
            let mut f = Finding::new(w.origin.clone(), String::new()).object(w.object_id());
            if let Some(c) = c {
                f = f.component(&c.name);
            }
            f
        };
        match pdbs.as_slice() {
            [] => {
                // A budget selects by labels that stay across versions: one
                // on the chart's or the app's version stops selecting the
                // pods of the next one in the middle of its rollout.
                let stable = crate::invariants::selector::stable(&w.pod_labels);
                let labels: Vec<String> = stable.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let left_out = w.pod_labels.len() - stable.len();
                let mut f = base();
                f.message = format!("{} has no PodDisruptionBudget", w.what());
                match &w.profile_pdb {
                    ProfilePdb::Off(v) => {
                        f.origin = v.origin.clone();
                        f = f
                            .label(if v.set {
                                "switched off here".to_owned()
                            } else {
                                Ctx::value_label(v)
                            })
                            .notes(ctx.default_note(c, v))
                            .notes(w.judged_note());
                        let on = if v.value.is_object() {
                            "{maxUnavailable: 1}"
                        } else {
                            "true"
                        };
                        f = f.help(format!(
                            "{}{}\nor waive HA002 for this environment with a reason",
                            ctx.fix(c, v, on),
                            if v.value.is_object() {
                                ""
                            } else {
                                "\nwith `maxUnavailable: 1`"
                            }
                        ));
                    }
                    _ => {
                        let dir = c.map_or_else(String::new, |c| format!("{}/manifests", c.dir));
                        f = f
                            .label("nothing renders a PodDisruptionBudget for its pods")
                            .notes(w.judged_note())
                            .note(format!(
                                "no PodDisruptionBudget in namespace {} selects pods labelled {}",
                                w.namespace,
                                labels.join(", ")
                            ))
                            .help(format!(
                                "turn on the chart's own budget if it has one, or add a PodDisruptionBudget with `maxUnavailable: 1` selecting {} to {dir}/{}",
                                labels.join(", "),
                                if left_out > 0 {
                                    " (the selector leaves out the labels that carry a version: they change with every upgrade)"
                                } else {
                                    ""
                                }
                            ));
                    }
                }
                sink.push(f);
            }
            [pdb] => judge(pdb, replicas, w, base, sink),
            many => {
                let names: Vec<&str> = many.iter().map(|p| p.name.as_str()).collect();
                let mut f = base();
                f.origin = many[1].origin.clone();
                f.message = format!(
                    "{} PodDisruptionBudgets select the pods of {} ({}); the eviction API refuses to evict a pod that more than one selects",
                    many.len(),
                    w.what(),
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

fn judge(pdb: &Pdb, replicas: i64, inst: &Workload<'_>, base: impl Fn() -> Finding, sink: &mut Sink) {
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
    f = f.notes(inst.judged_note());
    sink.push(f);
}
