//! The controllers ADR 007 names, recognised by what is rendered: the labels
//! their pods carry and the images they run, so that forks, renamed releases
//! and wrapper charts count as well as the upstream charts do.

use super::selector::Labels;

/// One controller ADR 007 wants highly available.
#[derive(Debug, PartialEq, Eq)]
pub struct Controller {
    /// A stable id; a chart profile's `adr007:` names it.
    pub id: &'static str,
    pub title: &'static str,
    /// Pod label sets; a workload whose pods carry every label of one set is it.
    pub labels: &'static [&'static [(&'static str, &'static str)]],
    /// Image patterns, matched against the image's repository without its
    /// registry or tag: `owner/name` against its last two segments, `name`
    /// against the last one; a trailing `*` matches any rest.
    pub images: &'static [&'static str],
}

/// ADR 007, "Controllers": run two replicas of each, spread across nodes,
/// each with a PodDisruptionBudget.
pub const ADR007: &[Controller] = &[
    Controller {
        id: "cilium-operator",
        title: "Cilium operator",
        labels: &[
            &[("io.cilium/app", "operator")],
            &[("name", "cilium-operator")],
            &[("app.kubernetes.io/name", "cilium-operator")],
        ],
        images: &["cilium/operator*"],
    },
    Controller {
        id: "longhorn-csi-attacher",
        title: "Longhorn CSI attacher",
        labels: &[&[("app", "csi-attacher")]],
        images: &["csi-attacher"],
    },
    Controller {
        id: "longhorn-csi-provisioner",
        title: "Longhorn CSI provisioner",
        labels: &[&[("app", "csi-provisioner")]],
        images: &["csi-provisioner"],
    },
    Controller {
        id: "longhorn-csi-resizer",
        title: "Longhorn CSI resizer",
        labels: &[&[("app", "csi-resizer")]],
        images: &["csi-resizer"],
    },
    Controller {
        id: "longhorn-csi-snapshotter",
        title: "Longhorn CSI snapshotter",
        labels: &[&[("app", "csi-snapshotter")]],
        images: &["csi-snapshotter"],
    },
    Controller {
        id: "coredns",
        title: "CoreDNS",
        labels: &[
            &[("k8s-app", "kube-dns")],
            &[("k8s-app", "coredns")],
            &[("app.kubernetes.io/name", "coredns")],
        ],
        images: &["coredns/coredns", "coredns"],
    },
    Controller {
        id: "traefik",
        title: "Traefik",
        labels: &[&[("app.kubernetes.io/name", "traefik")]],
        images: &["traefik", "library/traefik", "traefik/traefik"],
    },
    Controller {
        id: "cert-manager-webhook",
        title: "cert-manager webhook",
        labels: &[&[
            ("app.kubernetes.io/name", "webhook"),
            ("app.kubernetes.io/component", "webhook"),
        ]],
        images: &["cert-manager-webhook", "jetstack/cert-manager-webhook"],
    },
    Controller {
        id: "external-secrets",
        title: "External Secrets",
        labels: &[
            &[("app.kubernetes.io/name", "external-secrets")],
            &[("app.kubernetes.io/name", "external-secrets-webhook")],
            &[("app.kubernetes.io/name", "external-secrets-cert-controller")],
        ],
        images: &["external-secrets/external-secrets"],
    },
];

/// The controller with this id.
pub fn by_id(id: &str) -> Option<&'static Controller> {
    ADR007.iter().find(|c| c.id == id)
}

use crate::render::images::image_matches;
pub use crate::render::images::repository;

/// Which ADR 007 controller a workload is, from its pod labels and the
/// images of its containers.
pub fn recognise(pod_labels: &Labels, images: &[&str]) -> Option<&'static Controller> {
    ADR007.iter().find(|c| {
        c.labels
            .iter()
            .any(|set| set.iter().all(|(k, v)| pod_labels.get(*k).is_some_and(|x| x == v)))
            || images.iter().any(|i| c.images.iter().any(|p| image_matches(p, i)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn repositories_lose_registry_tag_and_digest() {
        assert_eq!(
            repository("quay.io/cilium/operator-generic:v1.18.3@sha256:ab"),
            "cilium/operator-generic"
        );
        assert_eq!(repository("traefik:v3.5"), "traefik");
        assert_eq!(repository("registry.local:5000/team/coredns"), "team/coredns");
        assert_eq!(repository("docker.io/library/traefik"), "library/traefik");
    }

    #[test]
    fn recognises_by_labels_or_images_and_not_by_look_alikes() {
        let c = |l: &[(&str, &str)], i: &[&str]| recognise(&labels(l), i).map(|c| c.id);
        assert_eq!(c(&[("k8s-app", "kube-dns")], &[]), Some("coredns"));
        assert_eq!(c(&[("app", "edge")], &["ghcr.io/acme/coredns:1.12"]), Some("coredns"));
        assert_eq!(
            c(&[], &["quay.io/cilium/operator-generic:v1.18.3"]),
            Some("cilium-operator")
        );
        assert_eq!(c(&[], &["traefik:v3.5.0"]), Some("traefik"));
        // traefik/whoami is not Traefik; a webhook of another chart is not cert-manager's.
        assert_eq!(
            c(&[("app.kubernetes.io/name", "whoami")], &["traefik/whoami:v1.10"]),
            None
        );
        assert_eq!(c(&[("app.kubernetes.io/name", "webhook")], &["example/webhook"]), None);
        assert_eq!(
            c(&[], &["quay.io/jetstack/cert-manager-webhook:v1.18.2"]),
            Some("cert-manager-webhook")
        );
    }
}
