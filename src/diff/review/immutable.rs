//! The fields the Kubernetes API server refuses to change on update, so
//! that an apply of the new object fails with "field is immutable" and the
//! object must be replaced (deleted and created again).
//!
//! The list follows the update validation of Kubernetes v1.35 (module
//! `k8s.io/kubernetes`), function by function:
//!
//! - `pkg/apis/apps/validation/validation.go`: `ValidateDeploymentUpdate`,
//!   `ValidateReplicaSetUpdate`, `ValidateDaemonSetSpecUpdate` (the
//!   selector); `ValidateStatefulSetUpdate` (every field of the spec but
//!   replicas, ordinals, template, updateStrategy, revisionHistoryLimit,
//!   persistentVolumeClaimRetentionPolicy and minReadySeconds);
//! - `pkg/apis/batch/validation/validation.go`: `ValidateJobSpecUpdate`
//!   (selector, completionMode, podFailurePolicy, backoffLimitPerIndex,
//!   managedBy, successPolicy, completions of a non-indexed Job, and the
//!   pod template, of which a suspended Job may change its scheduling
//!   directives only);
//! - `pkg/apis/core/validation/validation.go`: `ValidateServiceUpdate`
//!   (`validateUpgradeDowngradeClusterIPs`, `validateLoadBalancerClassField`),
//!   `ValidatePersistentVolumeClaimUpdate` (the spec but
//!   `resources.requests.storage`, which may only grow, and
//!   `volumeAttributesClassName`), `ValidatePersistentVolumeUpdate` (the
//!   volume source and volumeMode), `ValidateSecretUpdate` (type; data once
//!   `immutable: true`), `ValidateConfigMapUpdate` (data once immutable);
//! - `pkg/apis/storage/validation/validation.go`:
//!   `ValidateStorageClassUpdate` (parameters, provisioner, reclaimPolicy,
//!   volumeBindingMode), `ValidateCSIDriverUpdate` (attachRequired,
//!   volumeLifecycleModes), `ValidateVolumeAttributesClassUpdate`
//!   (driverName, parameters);
//! - `pkg/apis/rbac/validation/validation.go`: `ValidateRoleBindingUpdate`
//!   and `ValidateClusterRoleBindingUpdate` ("cannot change roleRef");
//! - `pkg/apis/scheduling/validation/validation.go`:
//!   `ValidatePriorityClassUpdate` (value, preemptionPolicy);
//! - `pkg/apis/networking/validation/validation.go`:
//!   `validateIngressClassSpecUpdate` (controller);
//! - `k8s.io/apiextensions-apiserver`,
//!   `pkg/apis/apiextensions/validation/validation.go`: a
//!   CustomResourceDefinition's group, plural name, and (once established)
//!   scope and kind.
//!
//! A custom resource's own immutable fields are read from its CRD: a
//! property whose `x-kubernetes-validations` hold the rule `self == oldSelf`
//! (what kubebuilder's `+k8s:immutable` marker writes) is refused by the
//! API server's CEL validation when it changes.
//!
//! Fields the server fills in on create (a defaulted `reclaimPolicy`, an
//! allocated `clusterIP`) are compared with their default where the
//! manifest leaves them out, so that writing the default out is no change.

use serde_json::Value as J;

/// A change the API server refuses on update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The field, as a dotted path (`spec.selector`).
    pub field: String,
    /// What the server answers, in its own terms.
    pub why: String,
    /// The server may accept it: it depends on what it filled in at
    /// creation (an allocated address, a default storage class).
    pub maybe: bool,
}

impl Refused {
    fn new(field: &str, why: &str) -> Refused {
        Refused {
            field: field.to_owned(),
            why: why.to_owned(),
            maybe: false,
        }
    }
}

/// The value at a path of keys.
pub(super) fn at<'a>(v: &'a J, path: &[&str]) -> Option<&'a J> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

/// Whether the value at `path` differs, a missing value read as `default`.
fn differs(old: &J, new: &J, path: &[&str], default: &J) -> bool {
    at(old, path).unwrap_or(default) != at(new, path).unwrap_or(default)
}

/// The group of an apiVersion (`""` for the core group).
pub(super) fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Every change between `old` and `new` (two versions of the same object:
/// same apiVersion, kind, namespace and name) that the API server refuses
/// on update. `crd_schema` is the object's version's `openAPIV3Schema` when
/// it is a custom resource whose CRD the environment renders.
pub fn refused(api_version: &str, kind: &str, old: &J, new: &J, crd_schema: Option<&J>) -> Vec<Refused> {
    let mut out = Vec::new();
    let mut fields = |specs: &[(&[&str], &str, J)]| {
        for (path, why, default) in specs {
            if differs(old, new, path, default) {
                out.push(Refused::new(&path.join("."), why));
            }
        }
    };
    match (group(api_version), kind) {
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") => {
            fields(&[(&["spec", "selector"], "field is immutable", J::Null)]);
        }
        ("apps", "StatefulSet") => out.extend(statefulset(old, new)),
        ("batch", "Job") => out.extend(job(old, new)),
        ("", "Service") => out.extend(service(old, new)),
        ("", "PersistentVolumeClaim") => out.extend(claim(old, new)),
        ("", "PersistentVolume") => out.extend(volume(old, new)),
        ("", "Secret") => {
            fields(&[(&["type"], "field is immutable", J::from("Opaque"))]);
            out.extend(sealed(old, new, &["data", "stringData", "immutable"]));
        }
        ("", "ConfigMap") => out.extend(sealed(old, new, &["data", "binaryData", "immutable"])),
        ("storage.k8s.io", "StorageClass") => fields(&[
            (&["parameters"], "updates to parameters are forbidden", J::Null),
            (&["provisioner"], "updates to provisioner are forbidden", J::Null),
            (
                &["reclaimPolicy"],
                "updates to reclaimPolicy are forbidden",
                J::from("Delete"),
            ),
            (&["volumeBindingMode"], "field is immutable", J::from("Immediate")),
        ]),
        ("storage.k8s.io", "CSIDriver") => fields(&[
            (&["spec", "attachRequired"], "field is immutable", J::from(true)),
            (
                &["spec", "volumeLifecycleModes"],
                "field is immutable",
                serde_json::json!(["Persistent"]),
            ),
        ]),
        ("storage.k8s.io", "VolumeAttributesClass") => fields(&[
            (&["driverName"], "updates to driverName are forbidden", J::Null),
            (&["parameters"], "updates to parameters are forbidden", J::Null),
        ]),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            fields(&[(&["roleRef"], "cannot change roleRef", J::Null)]);
        }
        ("scheduling.k8s.io", "PriorityClass") => fields(&[
            (&["value"], "may not be changed in an update", J::Null),
            (
                &["preemptionPolicy"],
                "field is immutable",
                J::from("PreemptLowerPriority"),
            ),
        ]),
        ("networking.k8s.io", "IngressClass") => {
            fields(&[(&["spec", "controller"], "field is immutable", J::Null)]);
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => fields(&[
            (&["spec", "group"], "field is immutable", J::Null),
            (&["spec", "names", "plural"], "field is immutable", J::Null),
            (
                &["spec", "names", "kind"],
                "field is immutable once the CRD is established",
                J::Null,
            ),
            (
                &["spec", "scope"],
                "field is immutable once the CRD is established",
                J::Null,
            ),
        ]),
        _ => {}
    }
    if let Some(schema) = crd_schema {
        let mut path = Vec::new();
        cel_immutable(schema, Some(old), Some(new), &mut path, &mut out);
    }
    out
}

/// A StatefulSet's spec but the fields an update may change.
fn statefulset(old: &J, new: &J) -> Vec<Refused> {
    const MUTABLE: &[&str] = &[
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    ];
    let defaults = |k: &str| match k {
        "podManagementPolicy" => J::from("OrderedReady"),
        "serviceName" => J::from(""),
        "volumeClaimTemplates" => J::Array(Vec::new()),
        _ => J::Null,
    };
    spec_keys(old, new)
        .into_iter()
        .filter(|k| !MUTABLE.contains(&k.as_str()))
        .filter(|k| differs(old, new, &["spec", k], &defaults(k)))
        .map(|k| {
            Refused::new(
                &format!("spec.{k}"),
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            )
        })
        .collect()
}

/// The keys of `spec` on either side, sorted.
fn spec_keys(old: &J, new: &J) -> Vec<String> {
    let mut keys: Vec<String> = [old, new]
        .iter()
        .filter_map(|v| v.get("spec").and_then(J::as_object))
        .flat_map(|m| m.keys().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

fn job(old: &J, new: &J) -> Vec<Refused> {
    let null = J::Null;
    let mut out = Vec::new();
    for k in [
        "selector",
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        if differs(old, new, &["spec", k], &null) {
            out.push(Refused::new(&format!("spec.{k}"), "field is immutable"));
        }
    }
    let indexed = at(new, &["spec", "completionMode"]).and_then(J::as_str) == Some("Indexed");
    if !indexed && differs(old, new, &["spec", "completions"], &null) {
        out.push(Refused::new("spec.completions", "field is immutable"));
    }
    // A suspended Job may change its scheduling directives, labels and
    // annotations (`validatePodTemplateUpdate`).
    let suspended = at(old, &["spec", "suspend"]) == Some(&J::Bool(true));
    let template = |v: &J| {
        let mut t = at(v, &["spec", "template"]).cloned().unwrap_or(J::Null);
        if suspended && let J::Object(m) = &mut t {
            m.remove("metadata");
            if let Some(J::Object(spec)) = m.get_mut("spec") {
                for k in ["nodeSelector", "tolerations", "schedulingGates"] {
                    spec.remove(k);
                }
                if let Some(J::Object(aff)) = spec.get_mut("affinity") {
                    aff.remove("nodeAffinity");
                }
            }
        }
        t
    };
    if template(old) != template(new) {
        out.push(Refused::new("spec.template", "field is immutable"));
    }
    out
}

fn service(old: &J, new: &J) -> Vec<Refused> {
    let ty = |v: &J| {
        at(v, &["spec", "type"])
            .and_then(J::as_str)
            .unwrap_or("ClusterIP")
            .to_owned()
    };
    let (old_type, new_type) = (ty(old), ty(new));
    let mut out = Vec::new();
    if old_type != "ExternalName" && new_type != "ExternalName" {
        let ip = |v: &J| {
            at(v, &["spec", "clusterIP"])
                .or_else(|| at(v, &["spec", "clusterIPs"]).and_then(|l| l.get(0)))
                .and_then(J::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        match (ip(old), ip(new)) {
            (Some(a), Some(b)) if a != b => out.push(Refused::new("spec.clusterIP", "may not change once set")),
            (None, Some(_)) => out.push(Refused {
                field: "spec.clusterIP".into(),
                why: "the server allocated an address when it created the Service; any other may not be set".into(),
                maybe: true,
            }),
            _ => {}
        }
    }
    if old_type == "LoadBalancer"
        && new_type == "LoadBalancer"
        && differs(old, new, &["spec", "loadBalancerClass"], &J::Null)
    {
        out.push(Refused::new("spec.loadBalancerClass", "may not change once set"));
    }
    out
}

fn claim(old: &J, new: &J) -> Vec<Refused> {
    let mut out = Vec::new();
    // Everything but the storage request and the attributes class.
    let rest = |v: &J| {
        let mut spec = v.get("spec").cloned().unwrap_or(J::Null);
        if let J::Object(m) = &mut spec {
            m.remove("volumeAttributesClassName");
            m.remove("storageClassName");
            if let Some(J::Object(requests)) = m.get_mut("resources").and_then(|r| r.get_mut("requests")) {
                requests.remove("storage");
            }
        }
        spec
    };
    let (a, b) = (rest(old), rest(new));
    if let (J::Object(a), J::Object(b)) = (&a, &b) {
        let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            if a.get(k) != b.get(k) {
                out.push(Refused::new(
                    &format!("spec.{k}"),
                    "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
                ));
            }
        }
    }
    let class = |v: &J| at(v, &["spec", "storageClassName"]).cloned();
    match (class(old), class(new)) {
        (Some(a), b) if Some(&a) != b.as_ref() => out.push(Refused::new(
            "spec.storageClassName",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        )),
        (None, Some(_)) => out.push(Refused {
            field: "spec.storageClassName".into(),
            why: "the claim took the cluster's default class when it was created; another may not be set".into(),
            maybe: true,
        }),
        _ => {}
    }
    let size =
        |v: &J| at(v, &["spec", "resources", "requests", "storage"]).and_then(crate::invariants::quantity::memory_mib);
    if let (Some(a), Some(b)) = (size(old), size(new))
        && b < a
    {
        out.push(Refused::new(
            "spec.resources.requests.storage",
            "field can not be less than previous value",
        ));
    }
    out
}

fn volume(old: &J, new: &J) -> Vec<Refused> {
    // What an update may change; every other key of the spec is the volume
    // source, or volumeMode.
    const MUTABLE: &[&str] = &[
        "capacity",
        "accessModes",
        "claimRef",
        "persistentVolumeReclaimPolicy",
        "storageClassName",
        "mountOptions",
        "nodeAffinity",
        "volumeAttributesClassName",
    ];
    let mut out: Vec<Refused> = spec_keys(old, new)
        .into_iter()
        .filter(|k| !MUTABLE.contains(&k.as_str()))
        .filter(|k| differs(old, new, &["spec", k], &J::Null))
        .map(|k| {
            Refused::new(
                &format!("spec.{k}"),
                "spec.persistentvolumesource is immutable after creation",
            )
        })
        .collect();
    if at(old, &["spec", "nodeAffinity"]).is_some() && differs(old, new, &["spec", "nodeAffinity"], &J::Null) {
        out.push(Refused::new("spec.nodeAffinity", "field is immutable once set"));
    }
    out
}

/// A Secret or ConfigMap marked `immutable: true`: none of `fields` may
/// change.
fn sealed(old: &J, new: &J, fields: &[&str]) -> Vec<Refused> {
    if old.get("immutable") != Some(&J::Bool(true)) {
        return Vec::new();
    }
    fields
        .iter()
        .filter(|k| differs(old, new, &[k], &J::Null))
        .map(|k| Refused::new(k, "field is immutable when `immutable` is set"))
        .collect()
}

/// Whether a schema node declares itself immutable with the CEL rule
/// `self == oldSelf`.
fn declares_immutable(schema: &J) -> bool {
    schema
        .get("x-kubernetes-validations")
        .and_then(J::as_array)
        .is_some_and(|rules| {
            rules.iter().any(|r| {
                r.get("rule")
                    .and_then(J::as_str)
                    .is_some_and(|s| s.split_whitespace().collect::<String>() == "self==oldSelf")
            })
        })
}

/// Walks a CRD schema and both values side by side; a property declared
/// immutable whose value differs is refused. (The API server checks a
/// transition rule only where the old value exists.)
fn cel_immutable(schema: &J, old: Option<&J>, new: Option<&J>, path: &mut Vec<String>, out: &mut Vec<Refused>) {
    let (Some(old), Some(new)) = (old, new) else { return };
    if old == new {
        return;
    }
    if !path.is_empty() && declares_immutable(schema) {
        let message = schema
            .get("x-kubernetes-validations")
            .and_then(J::as_array)
            .and_then(|r| r.iter().find_map(|r| r.get("message").and_then(J::as_str)))
            .unwrap_or("field is immutable (the CRD's rule `self == oldSelf`)");
        out.push(Refused::new(&path.join("."), message));
        return;
    }
    let Some(props) = schema.get("properties").and_then(J::as_object) else {
        return;
    };
    for (k, sub) in props {
        path.push(k.clone());
        cel_immutable(sub, old.get(k), new.get(k), path, out);
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(r: &[Refused]) -> Vec<&str> {
        r.iter().map(|r| r.field.as_str()).collect()
    }

    #[test]
    fn storage_class_parameters_and_defaults() {
        let old = json!({"provisioner": "driver.longhorn.io", "parameters": {"numberOfReplicas": "3"}});
        let mut new = old.clone();
        new["parameters"]["numberOfReplicas"] = json!("2");
        new["reclaimPolicy"] = json!("Delete");
        let r = refused("storage.k8s.io/v1", "StorageClass", &old, &new, None);
        // Writing the default reclaimPolicy out is no change.
        assert_eq!(fields(&r), ["parameters"]);
        new["reclaimPolicy"] = json!("Retain");
        let r = refused("storage.k8s.io/v1", "StorageClass", &old, &new, None);
        assert_eq!(fields(&r), ["parameters", "reclaimPolicy"]);
    }

    #[test]
    fn statefulset_allows_template_and_replicas_only() {
        let old = json!({"spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"a": "b"}},
            "template": {"x": 1}, "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {"helm.sh/chart": "db-1.0.0"}}}]}});
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(3);
        new["spec"]["template"] = json!({"x": 2});
        new["spec"]["podManagementPolicy"] = json!("OrderedReady");
        assert!(refused("apps/v1", "StatefulSet", &old, &new, None).is_empty());
        new["spec"]["volumeClaimTemplates"][0]["metadata"]["labels"]["helm.sh/chart"] = json!("db-1.0.1");
        new["spec"]["podManagementPolicy"] = json!("Parallel");
        let r = refused("apps/v1", "StatefulSet", &old, &new, None);
        assert_eq!(fields(&r), ["spec.podManagementPolicy", "spec.volumeClaimTemplates"]);
    }

    #[test]
    fn service_cluster_ip_and_claims() {
        let old = json!({"spec": {"clusterIP": "10.0.0.5", "ports": []}});
        let new = json!({"spec": {"clusterIP": "10.0.0.6", "ports": []}});
        assert_eq!(fields(&refused("v1", "Service", &old, &new, None)), ["spec.clusterIP"]);
        // Dropping the address keeps the allocated one.
        assert!(refused("v1", "Service", &old, &json!({"spec": {"ports": []}}), None).is_empty());
        // ExternalName on either side is free to change.
        let ext = json!({"spec": {"type": "ExternalName", "externalName": "x"}});
        assert!(refused("v1", "Service", &old, &ext, None).is_empty());

        let pvc = json!({"spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "10Gi"}}}});
        let mut grown = pvc.clone();
        grown["spec"]["resources"]["requests"]["storage"] = json!("20Gi");
        assert!(refused("v1", "PersistentVolumeClaim", &pvc, &grown, None).is_empty());
        let mut shrunk = pvc.clone();
        shrunk["spec"]["resources"]["requests"]["storage"] = json!("5Gi");
        shrunk["spec"]["storageClassName"] = json!("slow");
        let r = refused("v1", "PersistentVolumeClaim", &pvc, &shrunk, None);
        assert_eq!(fields(&r), ["spec.storageClassName", "spec.resources.requests.storage"]);
    }

    #[test]
    fn job_template_unless_suspended_scheduling() {
        let old = json!({"spec": {"template": {"spec": {"containers": [{"image": "a:1"}]}}}});
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("a:2");
        assert_eq!(fields(&refused("batch/v1", "Job", &old, &new, None)), ["spec.template"]);
        let mut sus = old.clone();
        sus["spec"]["suspend"] = json!(true);
        let mut moved = sus.clone();
        moved["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        assert!(refused("batch/v1", "Job", &sus, &moved, None).is_empty());
    }

    #[test]
    fn a_crd_rule_self_equals_old_self_makes_a_field_immutable() {
        let schema = json!({"properties": {"spec": {"properties": {
            "controllerName": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]},
            "description": {"type": "string"}}}}});
        let old = json!({"spec": {"controllerName": "a", "description": "x"}});
        let new = json!({"spec": {"controllerName": "b", "description": "y"}});
        let r = refused(
            "gateway.networking.k8s.io/v1",
            "GatewayClass",
            &old,
            &new,
            Some(&schema),
        );
        assert_eq!(fields(&r), ["spec.controllerName"]);
        assert_eq!(r[0].why, "Value is immutable");
    }

    #[test]
    fn role_binding_role_ref_and_sealed_config() {
        let old = json!({"roleRef": {"kind": "ClusterRole", "name": "view"}});
        let new = json!({"roleRef": {"kind": "ClusterRole", "name": "edit"}});
        assert_eq!(
            fields(&refused(
                "rbac.authorization.k8s.io/v1",
                "RoleBinding",
                &old,
                &new,
                None
            )),
            ["roleRef"]
        );
        let cm = json!({"immutable": true, "data": {"a": "1"}});
        let changed = json!({"immutable": true, "data": {"a": "2"}});
        assert_eq!(fields(&refused("v1", "ConfigMap", &cm, &changed, None)), ["data"]);
        assert!(refused("v1", "ConfigMap", &json!({"data": {"a": "1"}}), &changed, None).is_empty());
    }
}
