//! DNG001: a change to a field the API server refuses to update.

use serde_json::Value as J;

use super::super::immutable::{self, Refused};
use super::super::{EnvSides, Pair};
use super::{annotation, danger};
use crate::load::Target;
use crate::render::Source;

pub const NAME: &str = "immutable-field-changed";

doc!(
    r#"## What it does
Flags a change to a field that the Kubernetes API server refuses to
update: a StorageClass's `parameters`, `provisioner`, `reclaimPolicy` or
`volumeBindingMode`; the `selector` of a Deployment, ReplicaSet, DaemonSet
or Job; every field of a StatefulSet's spec but `replicas`, `ordinals`,
`template`, `updateStrategy`, `revisionHistoryLimit`,
`persistentVolumeClaimRetentionPolicy` and `minReadySeconds` (so its
`volumeClaimTemplates`, labels included, and `serviceName`); a Job's pod
template; a Service's `clusterIP` or `loadBalancerClass`; a
PersistentVolumeClaim's spec but a larger storage request; a
PersistentVolume's volume source; a RoleBinding's `roleRef`; a Secret's
`type`, and the data of an `immutable: true` Secret or ConfigMap; a
PriorityClass's `value`; an IngressClass's `controller`; a CSIDriver's
`attachRequired` and `volumeLifecycleModes`; a CRD's group, plural name,
kind and scope; and a custom resource's field whose CRD (rendered in the
environment) declares it immutable with the rule `self == oldSelf`. The
list follows the update validation of Kubernetes v1.35
(`pkg/apis/*/validation/validation.go` in k8s.io/kubernetes).

The finding says "replace needed", how each engine of the environment
takes it, and, where the engine can replace the object, the `patches:`
entry that asks it to.

## Why is this bad?
The engine's apply is refused ("field is immutable"), the sync or
reconciliation fails, and it keeps failing until the object is deleted and
created again. Flux's kustomize-controller replaces an object only when
the object carries `kustomize.toolkit.fluxcd.io/force: enabled` (or its
Kustomization has `spec.force: true`); Argo CD only when the object carries
`argocd.argoproj.io/sync-options: Force=true,Replace=true` (`Replace=true`
alone replaces with an update, which the server refuses the same way).
Helm, and so a HelmRelease and an Argo CD Helm source, updates in place:
neither can replace it. Replacing deletes the object first: a StatefulSet's
pods go with it, a PersistentVolumeClaim its volume (unless reclaimed by
hand).

## Example
```yaml
# gitops/platform/longhorn/manifests/storageclass.yaml
parameters:
  numberOfReplicas: "2"   # was "3"
```

Use instead:
```yaml
# a new StorageClass beside the old one, then move the claims over
metadata:
  name: longhorn-2-replicas
parameters:
  numberOfReplicas: "2"
```
or let the engine replace the object for this one change (the finding
gives the `patches:` entry), and remove the annotation once it is applied.
"#
);

const FLUX_FORCE: &str = "kustomize.toolkit.fluxcd.io/force";
const ARGO_OPTIONS: &str = "argocd.argoproj.io/sync-options";

pub fn check(sides: &EnvSides<'_>, pair: &Pair<'_>, out: &mut Vec<super::Danger>) {
    let (Some(base), Some(head)) = (pair.base, pair.head) else {
        return;
    };
    let schema = sides.crd_schema(pair.api_version, pair.kind);
    let refused = immutable::refused(pair.api_version, pair.kind, base, head, schema);
    if refused.is_empty() {
        return;
    }
    let engines = engines(sides, pair, head);
    if engines.is_empty() {
        return;
    }
    let fields: Vec<String> = refused.iter().map(field).collect();
    let message = format!(
        "replace needed: the API server refuses to update {} of {}",
        fields.join(", "),
        pair.display()
    );
    let mut help: Vec<String> = engines.iter().map(|e| e.say(pair)).collect();
    if let Some(patch) = patch(sides, pair, head, &engines) {
        help.push(patch);
    }
    out.push(danger("DNG001", pair, message, help));
}

/// One refused field as the finding names it.
fn field(r: &Refused) -> String {
    if r.maybe {
        format!("`{}` (perhaps: {})", r.field, r.why)
    } else {
        format!("`{}` ({})", r.field, r.why)
    }
}

/// How one engine applies the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    /// kustomize-controller applies it as written.
    FluxApply,
    /// helm-controller upgrades the release that holds it.
    FluxHelm,
    /// Argo CD applies it as written.
    ArgoApply,
    /// Argo CD renders the chart itself and applies what it renders.
    ArgoHelm,
}

impl Engine {
    fn say(self, pair: &Pair<'_>) -> String {
        let delete = format!(
            "`kubectl delete {} {}{}`",
            pair.kind.to_lowercase(),
            pair.name,
            pair.namespace.map(|n| format!(" -n {n}")).unwrap_or_default()
        );
        match self {
            Engine::FluxApply => format!(
                "Flux: kustomize-controller's apply is refused; with the annotation `{FLUX_FORCE}: enabled` on the object it deletes and recreates it"
            ),
            Engine::FluxHelm => format!(
                "Flux: helm-controller's upgrade fails (helm updates in place; `spec.upgrade.force` replaces with an update the server refuses the same way): delete the object before the upgrade ({delete}), or give it a new name"
            ),
            Engine::ArgoApply => format!(
                "Argo CD: the sync is refused; with the annotation `{ARGO_OPTIONS}: Force=true,Replace=true` on the object it deletes and recreates it (`Replace=true` alone is an update, refused the same way)"
            ),
            Engine::ArgoHelm => format!(
                "Argo CD: the sync is refused; it renders the chart itself, so strata cannot annotate the object: sync once with `argocd app sync {} --force --replace`, or delete the object by hand ({delete}), or hydrate the component",
                pair.component.unwrap_or(pair.name)
            ),
        }
    }
}

/// The engines that apply the object, leaving out those that create it
/// anew each time (a Helm hook: helm and Argo CD delete and create hooks).
fn engines(sides: &EnvSides<'_>, pair: &Pair<'_>, head: &J) -> Vec<Engine> {
    let hook = annotation(head, "helm.sh/hook").is_some() || annotation(head, "argocd.argoproj.io/hook").is_some();
    let by_helm = pair.by_helm(sides);
    let mut out = Vec::new();
    for t in sides.targets() {
        let e = match (t, by_helm) {
            (Target::Flux, true) => Engine::FluxHelm,
            (Target::Flux, false) => Engine::FluxApply,
            (Target::Argo, true) => Engine::ArgoHelm,
            (Target::Argo, false) => Engine::ArgoApply,
        };
        // Flux's kustomize-controller applies a hook as an ordinary object.
        let recreates = hook && e != Engine::FluxApply;
        if !recreates {
            out.push(e);
        }
    }
    out
}

/// The annotations that let the engines replace the object, written where
/// strata can carry them: a `patches:` entry in the component's
/// config.yaml for what its chart renders into a hydrated tree, or the
/// manifest file itself.
fn patch(sides: &EnvSides<'_>, pair: &Pair<'_>, head: &J, engines: &[Engine]) -> Option<String> {
    let mut wanted: Vec<(&str, String)> = Vec::new();
    if engines.contains(&Engine::FluxApply) {
        wanted.push((FLUX_FORCE, "enabled".to_owned()));
    }
    if engines.contains(&Engine::ArgoApply) {
        let value = match annotation(head, ARGO_OPTIONS) {
            Some(v) if !v.trim().is_empty() => format!("{v},Force=true,Replace=true"),
            _ => "Force=true,Replace=true".to_owned(),
        };
        wanted.push((ARGO_OPTIONS, value));
    }
    if wanted.is_empty() {
        return None;
    }
    match &pair.object.source {
        Source::Chart { .. } => {
            let component = pair.component?;
            let has = head
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .is_some_and(J::is_object);
            let ops: Vec<String> = if has {
                wanted
                    .iter()
                    .map(|(k, v)| {
                        let op = if annotation(head, k).is_some() {
                            "replace"
                        } else {
                            "add"
                        };
                        format!(
                            "    - {{op: {op}, path: /metadata/annotations/{}, value: \"{v}\"}}",
                            k.replace('~', "~0").replace('/', "~1")
                        )
                    })
                    .collect()
            } else {
                let map: Vec<String> = wanted.iter().map(|(k, v)| format!("{k}: \"{v}\"")).collect();
                vec![format!(
                    "    - {{op: add, path: /metadata/annotations, value: {{{}}}}}",
                    map.join(", ")
                )]
            };
            let ns = pair.namespace.map(|n| format!(", namespace: {n}")).unwrap_or_default();
            // In the environment's own file: a patch on chart output is
            // refused where Argo CD renders the chart itself.
            Some(format!(
                "for this change, under `patches:` in the file of each environment named ({}/<env>.yaml), then remove it once applied:\n- target: {{kind: {}, name: {}{ns}}}\n  component: {component}\n  patch:\n{}",
                sides.platform.project.environments,
                pair.kind,
                pair.name,
                ops.join("\n")
            ))
        }
        Source::Manifest => {
            let lines: Vec<String> = wanted.iter().map(|(k, v)| format!("    {k}: \"{v}\"")).collect();
            Some(format!(
                "for this change, in {}, then remove it once applied:\nmetadata:\n  annotations:\n{}",
                pair.object.origin.file,
                lines.join("\n")
            ))
        }
        _ => None,
    }
}
