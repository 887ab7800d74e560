//! Order by construction, end to end: custom resources after their CRDs
//! (ORD001), with the CRDs the charts render and those the cluster
//! provides; and CRDs the API server would refuse, named at their file.

mod common;

use common::charts::{self, platform, strata_with};
use common::{stderr, write};

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gizmos.example.org\nspec:\n  group: example.org\n  names: {kind: Gizmo, plural: gizmos}\n  scope: Namespaced\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";
const GIZMO: &str = "apiVersion: example.org/v1\nkind: Gizmo\nmetadata:\n  name: one\n";

#[test]
fn a_custom_resource_of_a_group_nothing_ships_is_named_with_both_remedies() {
    let tmp = platform(&[]);
    let root = tmp.path();
    write(
        root,
        "gitops/platform/shop/config.yaml",
        "component: shop\nnamespace: shop\n",
    );
    write(root, "gitops/platform/shop/manifests/gizmo.yaml", GIZMO);
    let out = strata_with(root, None, &["check", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error[ORD001]"), "{err}");
    assert!(
        err.contains("no component of the environment ships the CRD of example.org/Gizmo"),
        "{err}"
    );
    assert!(
        err.contains("--> gitops/platform/shop/manifests/gizmo.yaml:2:7"),
        "{err}"
    );
    assert!(err.contains("crds_provided"), "{err}");
    // The cluster has it before any component runs: said in strata.yaml.
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &format!("{text}crds_provided: [example.org]\n"));
    let out = strata_with(root, None, &["check", "--env", "staging"]);
    assert!(!stderr(&out).contains("ORD001"), "{}", stderr(&out));
}

#[test]
fn a_crd_in_a_required_chart_orders_its_resources_and_one_in_another_does_not() {
    let Some(helm) = charts::helm() else { return };
    // The gadget chart ships the Gadget CRD; `shop` has a Gadget.
    let tmp = platform(&[("gadget", "chart:\n  path: charts/gadget\n", "")]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("gadget"), &root.join("charts/gadget"));
    write(
        root,
        "gitops/platform/shop/config.yaml",
        "component: shop\nnamespace: shop\n",
    );
    write(
        root,
        "gitops/platform/shop/manifests/gadget.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: blue\nspec:\n  size: 1\n",
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`gadget` ships it, and component `shop` does not require it"),
        "{err}"
    );
    assert!(
        err.contains("add `gadget` to `requires` in gitops/platform/shop/config.yaml"),
        "{err}"
    );
    write(
        root,
        "gitops/platform/shop/config.yaml",
        "component: shop\nnamespace: shop\nrequires: [gadget]\n",
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "staging"]);
    assert!(!stderr(&out).contains("ORD001"), "{}", stderr(&out));
    // Hydrated, every CRD is applied first, in crds/: no requires needed.
    write(
        root,
        "gitops/platform/shop/config.yaml",
        "component: shop\nnamespace: shop\n",
    );
    let env = std::fs::read_to_string(root.join("environments/staging.yaml")).unwrap();
    write(root, "environments/staging.yaml", &format!("{env}hydrate: true\n"));
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "staging"]);
    assert!(!stderr(&out).contains("ORD001"), "{}", stderr(&out));
}

#[test]
fn a_crd_the_api_server_would_refuse_is_an_error_at_its_file() {
    let tmp = platform(&[]);
    let root = tmp.path();
    write(
        root,
        "gitops/platform/shop/config.yaml",
        "component: shop\nnamespace: shop\n",
    );
    write(
        root,
        "gitops/platform/shop/manifests/crd.yaml",
        &CRD.replace("  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n", "  versions: []\n"),
    );
    write(root, "gitops/platform/shop/manifests/gizmo.yaml", GIZMO);
    let out = strata_with(root, None, &["render", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E020]"), "{err}");
    assert!(
        err.contains("CustomResourceDefinition gizmos.example.org cannot be installed: it lists no `spec.versions`"),
        "{err}"
    );
    assert!(err.contains("--> gitops/platform/shop/manifests/crd.yaml:"), "{err}");
    // Whole, it orders its resource in the same component, and scopes it.
    write(root, "gitops/platform/shop/manifests/crd.yaml", CRD);
    let out = strata_with(root, None, &["render", "--env", "staging"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(root.join("rendered/staging/flux/components/shop/gizmo-one.yaml")).unwrap();
    assert!(text.contains("namespace: shop"), "{text}");
}

/// The chart that ships a custom resource's CRD is not rendered here (no
/// helm): strata reads the CRD's group from the chart without helm and
/// says its chart was not rendered, never that nothing ships it; a
/// requirement on it orders the resource. A chart it cannot read at all
/// is named as one that may ship it.
#[test]
fn a_crd_whose_chart_is_not_rendered_is_said_so() {
    let tmp = platform(&[("gadget", "chart:\n  path: charts/gadget\n", "")]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("gadget"), &root.join("charts/gadget"));
    write(
        root,
        "gitops/platform/shop/config.yaml",
        "component: shop\nnamespace: shop\n",
    );
    write(
        root,
        "gitops/platform/shop/manifests/gadget.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: blue\nspec:\n  size: 1\n",
    );
    let out = strata_with(root, None, &["check", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`gadget` would ship it (its chart was not rendered here; it holds a CRD of example.com"),
        "{err}"
    );
    assert!(!err.contains("no component of the environment ships"), "{err}");
    assert!(err.contains("add `gadget` to `requires`"), "{err}");
    write(
        root,
        "gitops/platform/shop/config.yaml",
        "component: shop\nnamespace: shop\nrequires: [gadget]\n",
    );
    let out = strata_with(root, None, &["check", "--env", "staging"]);
    assert!(!stderr(&out).contains("ORD001"), "{}", stderr(&out));

    // A remote chart strata has not pulled: it cannot tell, and says which.
    std::fs::remove_dir_all(root.join("gitops/platform/gadget")).unwrap();
    write(
        root,
        "gitops/platform/shop/config.yaml",
        "component: shop\nnamespace: shop\n",
    );
    write(
        root,
        "gitops/platform/gadgets/config.yaml",
        "component: gadgets\nnamespace: gadgets\nchart:\n  repoURL: https://charts.example.org\n  name: gadget\n  version: 0.2.0\n",
    );
    let out = strata_with(root, None, &["check", "--env", "staging"]);
    let err = stderr(&out);
    assert!(
        err.contains("the chart of `gadgets` was not rendered here, so strata cannot tell whether it does"),
        "{err}"
    );
}
