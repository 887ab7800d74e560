//! The HA rules on a chart of one's own: `ha: true` has them judge its
//! Deployment, and each finding points at the values line that decided the
//! value (found by rendering the chart again, as `strata explain` finds
//! where a value goes), or at the chart's own default, never at the
//! chart's pin; the PodDisruptionBudget they suggest selects no label that
//! carries a version.

#[macro_use]
mod common;

use std::path::Path;

use common::charts::{platform, strata_with};
use common::{stderr, write};

/// A chart `shop` whose replica count sits under a key of its own
/// (`scale.count`, default 1) and whose pods carry the chart's and the
/// app's version in their labels, as `helm create` writes them.
fn shop_chart(root: &Path) {
    write(
        root,
        "charts/shop/Chart.yaml",
        "apiVersion: v2\nname: shop\nversion: 0.1.0\nappVersion: \"2.4.1\"\n",
    );
    write(
        root,
        "charts/shop/values.yaml",
        "scale:\n  count: 1\nimage: nginx:1.27\n",
    );
    write(
        root,
        "charts/shop/templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.scale.count }}\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: shop\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: shop\n        app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}\n        helm.sh/chart: shop-{{ .Chart.Version }}\n    spec:\n      containers:\n        - name: shop\n          image: {{ .Values.image }}\n",
    );
}

#[test]
fn findings_on_a_chart_of_ones_own_point_at_the_values_line_that_decides() {
    let helm = need_helm!();
    let tmp = platform(&[("shop", "chart:\n  path: charts/shop\nha: true\n", "image: nginx:1.27\n")]);
    let root = tmp.path();
    shop_chart(root);
    write(root, "gitops/platform/shop/values-staging.yaml", "scale:\n  count: 1\n");
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Deployment shop (shop, `ha: true`)"), "{err}");
    let ha001 = err
        .split("\n\n")
        .find(|d| d.starts_with("error[HA001]"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        ha001.contains("--> gitops/platform/shop/values-staging.yaml:2:10"),
        "the layer line, not the chart's pin: {ha001}"
    );
    assert!(
        ha001.contains("set `scale.count: 2` in gitops/platform/shop/values-staging.yaml"),
        "{ha001}"
    );
    // The budget it suggests selects the pods by what stays across versions.
    let ha002 = err
        .split("\n\n")
        .find(|d| d.starts_with("error[HA002]"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(ha002.contains("selecting app.kubernetes.io/name=shop to"), "{ha002}");
    assert!(
        !ha002.contains("helm.sh/chart=") && !ha002.contains("app.kubernetes.io/version="),
        "{ha002}"
    );

    // No layer sets it: the chart's own default, in its values.yaml.
    std::fs::remove_file(root.join("gitops/platform/shop/values-staging.yaml")).unwrap();
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "staging"]);
    let err = stderr(&out);
    let ha001 = err
        .split("\n\n")
        .find(|d| d.starts_with("error[HA001]"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(ha001.contains("--> charts/shop/values.yaml:2:10"), "{ha001}");
    assert!(
        ha001.contains("set `scale.count: 2` in gitops/platform/shop/values.yaml"),
        "{ha001}"
    );

    // Enough replicas: HA001 is quiet; without `ha: true` nothing is judged.
    write(
        root,
        "gitops/platform/shop/values.yaml",
        "image: nginx:1.27\nscale:\n  count: 2\n",
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "staging"]);
    assert!(!stderr(&out).contains("error[HA001]"), "{}", stderr(&out));
    let config = std::fs::read_to_string(root.join("gitops/platform/shop/config.yaml")).unwrap();
    write(
        root,
        "gitops/platform/shop/config.yaml",
        &config.replace("ha: true\n", ""),
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "staging"]);
    let err = stderr(&out);
    assert!(!err.contains("error[HA"), "{err}");
    assert!(!err.contains("Deployment shop"), "{err}");
}
