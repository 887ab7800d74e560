//! Which kinds are cluster-scoped, and which namespaced: an object of a
//! namespaced kind without a namespace is applied into its release's
//! namespace (by Helm, and by the engines from a hydrated tree), so strata
//! writes that namespace in. A custom resource's scope comes from its own
//! CRD (`spec.scope`) wherever the environment ships one; Kubernetes' own
//! kinds from the API's fixed table; the kinds of well-known controllers
//! that register their CRDs at run time (Cilium's) from a short list.

use std::collections::BTreeMap;

use serde_json::Value as J;

use super::{Object, Source};
use crate::diag::{Diagnostic, codes};

/// Kubernetes' own cluster-scoped kinds (the API's, in 1.25 to 1.37).
const KUBERNETES_CLUSTER_KINDS: &[&str] = &[
    "Namespace",
    "Node",
    "PersistentVolume",
    "StorageClass",
    "CSIDriver",
    "CSINode",
    "VolumeAttachment",
    "VolumeAttributesClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "PriorityClass",
    "PriorityLevelConfiguration",
    "FlowSchema",
    "RuntimeClass",
    "IngressClass",
    "IPAddress",
    "ServiceCIDR",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "APIService",
    "CertificateSigningRequest",
    "ClusterTrustBundle",
    "DeviceClass",
    "StorageVersionMigration",
];

/// Cluster-scoped kinds of controllers that register their CRDs at run
/// time or are usually installed apart from the platform, used where the
/// environment ships no CRD for them.
const KNOWN_CLUSTER_KINDS: &[&str] = &[
    "VolumeSnapshotClass",
    "VolumeSnapshotContent",
    "ClusterIssuer",
    "ClusterSecretStore",
    "ClusterExternalSecret",
    "CiliumClusterwideNetworkPolicy",
    "CiliumL2AnnouncementPolicy",
    "CiliumLoadBalancerIPPool",
    "CiliumNode",
    "CiliumIdentity",
    "CiliumBGPClusterConfig",
    "CiliumBGPPeerConfig",
    "CiliumBGPAdvertisement",
    "CiliumBGPNodeConfigOverride",
    "GatewayClass",
];

/// Where a kind is scoped, by `group/Kind`.
#[derive(Clone, Debug, Default)]
pub struct Scopes {
    /// From the CRDs the environment ships: `group/Kind` → cluster-scoped.
    from_crds: BTreeMap<String, bool>,
}

/// The group of an apiVersion (`""` for the core group).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

impl Scopes {
    /// The scopes of the custom resources whose CRDs are among `objects`;
    /// a CRD that names no group, kind, scope or version is an error at the
    /// object (Kubernetes refuses it).
    pub fn of<'a>(objects: impl Iterator<Item = &'a Object>) -> Result<Scopes, Vec<Diagnostic>> {
        let mut scopes = Scopes::default();
        let mut diags = Vec::new();
        for o in objects.filter(|o| o.kind() == "CustomResourceDefinition") {
            match crd_scope(&o.value) {
                Ok((key, cluster)) => {
                    scopes.from_crds.insert(key, cluster);
                }
                Err(why) => diags.push(bad_crd(o, &why)),
            }
        }
        if diags.is_empty() { Ok(scopes) } else { Err(diags) }
    }

    /// Whether objects of this kind take no namespace.
    pub fn cluster_scoped(&self, api_version: &str, kind: &str) -> bool {
        let group = group_of(api_version);
        if let Some(cluster) = self.from_crds.get(&format!("{group}/{kind}")) {
            return *cluster;
        }
        KUBERNETES_CLUSTER_KINDS.contains(&kind) || KNOWN_CLUSTER_KINDS.contains(&kind)
    }

    /// Writes `namespace` into an object of a namespaced kind that has
    /// none, as Helm and the engines do when they apply it.
    pub fn default_namespace(&self, value: &mut J, namespace: &str) {
        let (api_version, kind) = (
            value["apiVersion"].as_str().unwrap_or(""),
            value["kind"].as_str().unwrap_or(""),
        );
        if self.cluster_scoped(api_version, kind) {
            return;
        }
        if value["metadata"]["namespace"].as_str().is_none_or(str::is_empty)
            && let Some(meta) = value["metadata"].as_object_mut()
        {
            meta.insert("namespace".into(), J::String(namespace.to_owned()));
        }
    }
}

/// `group/Kind` of a CRD and whether its resources are cluster-scoped.
fn crd_scope(crd: &J) -> Result<(String, bool), String> {
    let spec = &crd["spec"];
    let group = spec["group"]
        .as_str()
        .filter(|g| !g.is_empty())
        .ok_or("it names no `spec.group`")?;
    let kind = spec["names"]["kind"]
        .as_str()
        .filter(|k| !k.is_empty())
        .ok_or("it names no `spec.names.kind`")?;
    let versions = spec["versions"].as_array().map_or(0, Vec::len);
    if versions == 0 {
        return Err("it lists no `spec.versions`".into());
    }
    let cluster = match spec["scope"].as_str() {
        Some("Cluster") => true,
        Some("Namespaced") => false,
        Some(other) => return Err(format!("its `spec.scope` is `{other}`, neither Namespaced nor Cluster")),
        None => return Err("it has no `spec.scope`".into()),
    };
    Ok((format!("{group}/{kind}"), cluster))
}

fn bad_crd(o: &Object, why: &str) -> Diagnostic {
    let (origin, from) = match &o.source {
        Source::Chart { template } => (o.origin.clone(), format!(" (rendered by {template})")),
        _ => (o.field_origin("spec"), String::new()),
    };
    Diagnostic::error(
        codes::OBJECT,
        origin,
        format!(
            "CustomResourceDefinition {}{from} cannot be installed: {why}",
            o.name()
        ),
    )
    .with_label("this definition")
    .with_help("Kubernetes refuses such a CRD: give it spec.group, spec.names.kind, spec.scope and at least one entry in spec.versions")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn crd(scope: &str) -> J {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Widget"}, "scope": scope, "versions": [{"name": "v1"}]},
        })
    }

    #[test]
    fn a_crd_decides_its_kind_and_the_rest_come_from_the_tables() {
        assert_eq!(crd_scope(&crd("Cluster")), Ok(("example.com/Widget".into(), true)));
        let mut s = Scopes::default();
        s.from_crds.insert("example.com/Widget".into(), true);
        assert!(s.cluster_scoped("example.com/v1", "Widget"));
        assert!(!s.cluster_scoped("other.example.com/v1", "Widget"));
        assert!(s.cluster_scoped("v1", "Namespace"));
        assert!(s.cluster_scoped("rbac.authorization.k8s.io/v1", "ClusterRole"));
        assert!(!s.cluster_scoped("apps/v1", "Deployment"));
        // A CRD of a known cluster-scoped name, shipped namespaced, wins.
        s.from_crds.insert("cert-manager.io/ClusterIssuer".into(), false);
        assert!(!s.cluster_scoped("cert-manager.io/v1", "ClusterIssuer"));

        let mut v = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        s.default_namespace(&mut v, "apps");
        assert!(v["metadata"].get("namespace").is_none());
        let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        s.default_namespace(&mut v, "apps");
        assert_eq!(v["metadata"]["namespace"], "apps");
    }

    #[test]
    fn a_crd_without_what_kubernetes_needs_is_refused() {
        let mut c = crd("Namespaced");
        c["spec"]["versions"] = json!([]);
        assert!(crd_scope(&c).unwrap_err().contains("spec.versions"));
        let mut c = crd("Namespaced");
        c["spec"].as_object_mut().unwrap().remove("scope");
        assert!(crd_scope(&c).unwrap_err().contains("spec.scope"));
        assert!(crd_scope(&crd("Global")).unwrap_err().contains("Global"));
    }
}
