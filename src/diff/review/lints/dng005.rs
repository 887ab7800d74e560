//! DNG005: what deleting an object deletes with it changes.

use serde_json::Value as J;

use super::super::immutable::{at, group};
use super::super::{EnvSides, Pair};
use super::danger;

pub const NAME: &str = "deletion-behaviour-changed";

doc!(
    r#"## What it does
Flags a change to what deleting an object takes with it: the finalizers of
any object (an Argo CD Application's
`resources-finalizer.argocd.argoproj.io`, in any of its forms, above all),
and a Flux Kustomization's `spec.deletionPolicy` (`MirrorPrune`, the
default, `Delete`, `WaitForTermination` or `Orphan`, as
fluxcd/kustomize-controller `docs/spec/v1/kustomizations.md` defines them).

## Why is this bad?
With the resources finalizer, deleting an Application (or the App of Apps
that generates it, or removing the component from an environment) deletes
every resource it deployed, volumes and CRDs with their objects included;
without it they are orphaned and keep running. A finalizer whose
controller is gone leaves the object stuck in deletion. strata writes
neither for a component that ships CRDs or is the engine itself; a patch
or a template override may.

## Example
```yaml
metadata:
  finalizers:
    - resources-finalizer.argocd.argoproj.io   # added to longhorn's Application
```

Use instead:
```yaml
metadata:
  finalizers: []     # deleting the Application leaves the volumes be
```
"#
);

pub fn check(_sides: &EnvSides<'_>, pair: &Pair<'_>, out: &mut Vec<super::Danger>) {
    let (Some(base), Some(head)) = (pair.base, pair.head) else {
        return;
    };
    let finalizers = |v: &J| -> Vec<String> {
        at(v, &["metadata", "finalizers"])
            .and_then(J::as_array)
            .map(|f| f.iter().filter_map(J::as_str).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let (old, new) = (finalizers(base), finalizers(head));
    let mut said = Vec::new();
    let cascade = |f: &str| f.starts_with("resources-finalizer.argocd.argoproj.io");
    for f in new.iter().filter(|f| !old.contains(f)) {
        if cascade(f) {
            said.push(format!(
                "finalizer `{f}` added: deleting the Application deletes every resource it deployed"
            ));
        } else {
            said.push(format!(
                "finalizer `{f}` added: deleting it waits for that finalizer's controller"
            ));
        }
    }
    for f in old.iter().filter(|f| !new.contains(f)) {
        if cascade(f) {
            said.push(format!(
                "finalizer `{f}` removed: deleting the Application leaves its resources running"
            ));
        } else {
            said.push(format!("finalizer `{f}` removed"));
        }
    }
    if group(pair.api_version) == "kustomize.toolkit.fluxcd.io" && pair.kind == "Kustomization" {
        let policy = |v: &J| {
            at(v, &["spec", "deletionPolicy"])
                .and_then(J::as_str)
                .unwrap_or("MirrorPrune")
                .to_owned()
        };
        let (a, b) = (policy(base), policy(head));
        if a != b {
            let means = match b.as_str() {
                "Delete" | "WaitForTermination" => "deleting the Kustomization deletes what it applied",
                "Orphan" => "deleting the Kustomization leaves what it applied running",
                _ => "deleting the Kustomization deletes what it applied when it prunes",
            };
            said.push(format!("deletionPolicy {a} → {b}: {means}"));
        }
    }
    if said.is_empty() {
        return;
    }
    out.push(danger(
        "DNG005",
        pair,
        format!("{}: {}", pair.display(), said.join("; ")),
        vec!["check what removing this component, or its Application, would now delete".to_owned()],
    ));
}
