//! DNG004: pruning or suspension of a Flux or Argo CD object is turned.

use serde_json::Value as J;

use super::super::immutable::{at, group};
use super::super::{EnvSides, Pair};
use super::{annotation, danger};

pub const NAME: &str = "prune-or-suspend-changed";

doc!(
    r#"## What it does
Flags a change to whether an engine prunes or reconciles: a Flux
Kustomization's `spec.prune` or `spec.suspend`; the `spec.suspend` of a
HelmRelease, GitRepository, HelmRepository or OCIRepository; an Argo CD
Application's automated sync (`syncPolicy.automated`, its `prune` and its
`enabled`); and, on any object, the annotations
`kustomize.toolkit.fluxcd.io/prune: disabled`,
`kustomize.toolkit.fluxcd.io/reconcile: disabled`, an
`argocd.argoproj.io/sync-options` with `Prune=false`, and
`helm.sh/resource-policy: keep`. Fields and annotations as Flux
(`docs/spec/v1/kustomizations.md` of fluxcd/kustomize-controller) and Argo
CD (`docs/user-guide/sync-options.md`, `auto_sync.md` of argoproj/argo-cd)
document them.

## Why is this bad?
Pruning turned on deletes, on the next sync, every object the engine
applied before and the tree no longer holds: a component left out of an
environment goes with its volumes. Pruning turned off leaves what the tree
drops running, unseen. A suspended object is no longer reconciled: the
change it was meant to roll out, and every later one, waits silently.

## Example
```yaml
# environments/production.yaml, patches:
- target: {kind: Kustomization, name: longhorn}
  patch:
    - {op: replace, path: /spec/prune, value: false}
```

Use instead:
```yaml
# keep pruning on; keep one object with an annotation in its manifest
metadata:
  annotations:
    kustomize.toolkit.fluxcd.io/prune: disabled
```
"#
);

pub fn check(_sides: &EnvSides<'_>, pair: &Pair<'_>, out: &mut Vec<super::Danger>) {
    let (base, head) = match (pair.base, pair.head) {
        (Some(b), Some(h)) => (b, h),
        _ => return,
    };
    let mut said = Vec::new();
    let flag = |v: &J, path: &[&str]| at(v, path).and_then(J::as_bool).unwrap_or(false);
    let g = group(pair.api_version);
    if g == "kustomize.toolkit.fluxcd.io" && pair.kind == "Kustomization" {
        match (flag(base, &["spec", "prune"]), flag(head, &["spec", "prune"])) {
            (false, true) => said.push("pruning turned on: objects it applied and the tree no longer holds are deleted on the next reconciliation".to_owned()),
            (true, false) => said.push("pruning turned off: objects the tree drops keep running".to_owned()),
            _ => {}
        }
    }
    let suspends = matches!(
        (g, pair.kind),
        ("kustomize.toolkit.fluxcd.io", "Kustomization")
            | ("helm.toolkit.fluxcd.io", "HelmRelease")
            | (
                "source.toolkit.fluxcd.io",
                "GitRepository" | "HelmRepository" | "OCIRepository"
            )
    );
    if suspends {
        match (flag(base, &["spec", "suspend"]), flag(head, &["spec", "suspend"])) {
            (false, true) => {
                said.push("suspended: Flux stops reconciling it, and what it applies stays as it is".to_owned())
            }
            (true, false) => {
                said.push("resumed: Flux reconciles it again, rolling out every change made meanwhile".to_owned())
            }
            _ => {}
        }
    }
    if g == "argoproj.io" && pair.kind == "Application" {
        said.extend(argo(base, head));
    }
    said.extend(annotations(base, head));
    if said.is_empty() {
        return;
    }
    out.push(danger(
        "DNG004",
        pair,
        format!("{}: {}", pair.display(), said.join("; ")),
        vec!["make sure this is meant for every environment it reaches, and say why in the change".to_owned()],
    ));
}

/// An Application's automated sync turned on or off, or its pruning.
fn argo(base: &J, head: &J) -> Vec<String> {
    let automated = |v: &J| {
        at(v, &["spec", "syncPolicy", "automated"])
            .filter(|a| !a.is_null())
            .is_some_and(|a| a.get("enabled").and_then(J::as_bool) != Some(false))
    };
    let prune = |v: &J| at(v, &["spec", "syncPolicy", "automated", "prune"]).and_then(J::as_bool) == Some(true);
    let mut said = Vec::new();
    match (automated(base), automated(head)) {
        (true, false) => said.push("automated sync turned off: Argo CD no longer applies changes by itself".to_owned()),
        (false, true) => {
            said.push("automated sync turned on: every change to the tree is applied as soon as it is seen".to_owned())
        }
        _ => {}
    }
    match (prune(base), prune(head)) {
        (false, true) => {
            said.push("pruning turned on: resources the tree no longer holds are deleted on sync".to_owned())
        }
        (true, false) => said.push("pruning turned off: resources the tree drops keep running".to_owned()),
        _ => {}
    }
    said
}

/// Per-object annotations that keep an object from pruning or reconciling.
fn annotations(base: &J, head: &J) -> Vec<String> {
    let disabled = |v: &J, key: &str| annotation(v, key).is_some_and(|s| s.eq_ignore_ascii_case("disabled"));
    let no_prune = |v: &J| {
        annotation(v, "argocd.argoproj.io/sync-options")
            .is_some_and(|s| s.split(',').any(|o| o.trim().eq_ignore_ascii_case("Prune=false")))
    };
    let keep = |v: &J| annotation(v, "helm.sh/resource-policy") == Some("keep");
    let checks: [(&str, bool, bool); 4] = [
        (
            "Flux prune",
            disabled(base, "kustomize.toolkit.fluxcd.io/prune"),
            disabled(head, "kustomize.toolkit.fluxcd.io/prune"),
        ),
        (
            "Flux reconcile",
            disabled(base, "kustomize.toolkit.fluxcd.io/reconcile"),
            disabled(head, "kustomize.toolkit.fluxcd.io/reconcile"),
        ),
        ("Argo CD prune", no_prune(base), no_prune(head)),
        ("helm uninstall", keep(base), keep(head)),
    ];
    checks
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(what, _, now_off)| {
            if now_off {
                format!("{what} turned off for this object by its annotation")
            } else {
                format!("{what} turned back on for this object (its annotation is gone)")
            }
        })
        .collect()
}
