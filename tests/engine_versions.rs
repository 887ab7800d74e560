//! The engines' own releases: strata reads the Flux and Argo CD release an
//! environment runs from `engines:` in strata.yaml or from the engine
//! component's chart, writes only the fields that release accepts, refuses
//! a release older than it writes for, and checks its engine objects
//! against the CRDs the engine chart ships.

#[macro_use]
mod common;

use std::path::Path;

use common::charts::{self, strata_with};
use common::{scratch, stderr, strata, write};
use serde_json::{Value as J, json};

fn doc(root: &Path, rel: &str) -> J {
    let text = std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    strata::yaml::parse_plain_multi(&std::sync::Arc::from(rel), &text)
        .unwrap()
        .remove(0)
}

fn render(root: &Path, args: &[&str]) -> String {
    let mut all = vec!["render"];
    all.extend_from_slice(args);
    let out = strata(root, &all);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    err
}

fn set_strata_yaml(root: &Path, extra: &str) {
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &format!("{text}{extra}"));
}

#[test]
fn argo_cd_3_1_of_the_pinned_chart_gets_no_retry_refresh() {
    // The example pins argo-cd chart 8.3.0, which ships Argo CD 3.1: its
    // Application CRD has no `syncPolicy.retry.refresh` (Argo CD 3.2).
    let tmp = scratch("homelab");
    let root = tmp.path();
    let err = render(root, &["--env", "staging", "--target", "argo"]);
    for app in ["application-traefik.yaml", "bootstrap/application-platform.yaml"] {
        let retry = &doc(root, &format!("rendered/staging/argo/{app}"))["spec"]["syncPolicy"]["retry"];
        assert!(retry.get("refresh").is_none(), "{app}: {retry}");
        // Without refresh a retrying sync holds the Application on its
        // revision: the default retry is limited.
        assert_eq!(retry["limit"], 5, "{app}: {retry}");
    }
    assert!(err.contains("note[E056]") && err.contains("Argo CD 3.1"), "{err}");
    assert!(err.contains("argo-cd 8.3.0"), "{err}");

    // The cluster runs 3.2 after all: say so, and strata writes it.
    set_strata_yaml(root, "engines:\n  argo: \"3.2\"\n");
    let err = render(root, &["--env", "staging", "--target", "argo"]);
    let retry = &doc(root, "rendered/staging/argo/application-traefik.yaml")["spec"]["syncPolicy"]["retry"];
    assert_eq!(retry["refresh"], true, "{retry}");
    assert_eq!(retry["limit"], -1, "{retry}");
    assert!(!err.contains("E056"), "{err}");
}

#[test]
fn what_a_user_wrote_that_the_release_does_not_take_is_a_warning_at_its_line() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let cfg = "gitops/platform/traefik/config.yaml";
    let text = std::fs::read_to_string(root.join(cfg)).unwrap();
    write(
        root,
        cfg,
        &format!("{text}retry:\n  limit: -1\n  refresh: true\nremediation:\n  upgrade: retry\n"),
    );
    set_strata_yaml(root, "engines:\n  flux: \"2.6\"\n");
    let err = render(root, &["--env", "staging"]);
    // Argo CD 3.1: refresh left out, and the endless retry named.
    assert!(
        err.contains("warning[E056]") && err.contains("`refresh: true` in the retry of traefik"),
        "{err}"
    );
    assert!(err.contains("the retry of traefik has no limit"), "{err}");
    let retry = &doc(root, "rendered/staging/argo/application-traefik.yaml")["spec"]["syncPolicy"]["retry"];
    assert_eq!(retry["limit"], -1, "what the user wrote stays: {retry}");
    assert!(retry.get("refresh").is_none(), "{retry}");
    // Flux 2.6: no RetryOnFailure. An install retries without limit; the
    // upgrade the user asked to retry is tried once, and the line is named.
    assert!(err.contains("`remediation.upgrade: retry` of traefik"), "{err}");
    let hr = doc(
        root,
        "rendered/staging/flux/components/traefik/helmrelease-traefik.yaml",
    );
    assert_eq!(hr["spec"]["install"]["remediation"], json!({"retries": -1}), "{hr}");
    assert!(hr["spec"]["install"].get("strategy").is_none(), "{hr}");
    assert!(hr["spec"]["upgrade"].get("strategy").is_none(), "{hr}");
    assert!(hr["spec"]["upgrade"].get("remediation").is_none(), "{hr}");
    // On 2.7 the same platform gets RetryOnFailure.
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &text.replace("\"2.6\"", "\"2.7\""));
    render(root, &["--env", "staging", "--target", "flux"]);
    let hr = doc(
        root,
        "rendered/staging/flux/components/traefik/helmrelease-traefik.yaml",
    );
    assert_eq!(
        hr["spec"]["upgrade"]["strategy"],
        json!({"name": "RetryOnFailure"}),
        "{hr}"
    );
}

#[test]
fn an_oci_chart_on_flux_2_5_gets_the_api_version_2_5_serves() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let cfg = "gitops/platform/cilium/config.yaml";
    let text = std::fs::read_to_string(root.join(cfg)).unwrap();
    let text = text.replace(
        "repoURL: https://helm.cilium.io/",
        "repoURL: oci://quay.io/cilium/charts\n  oci: true",
    );
    assert!(text.contains("oci: true"), "{text}");
    write(root, cfg, &text);
    set_strata_yaml(root, "engines:\n  flux: \"2.5\"\n");
    render(root, &["--env", "staging", "--target", "flux"]);
    let repo = doc(
        root,
        "rendered/staging/flux/components/cilium/ocirepository-cilium.yaml",
    );
    assert_eq!(repo["apiVersion"], "source.toolkit.fluxcd.io/v1beta2");
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &text.replace("\"2.5\"", "\"2.6\""));
    render(root, &["--env", "staging", "--target", "flux"]);
    let repo = doc(
        root,
        "rendered/staging/flux/components/cilium/ocirepository-cilium.yaml",
    );
    assert_eq!(repo["apiVersion"], "source.toolkit.fluxcd.io/v1");
}

#[test]
fn a_release_strata_does_not_write_for_or_a_number_is_refused_at_its_line() {
    for (engines, want) in [
        ("engines:\n  flux: \"2.4\"\n", "strata writes for Flux 2.5 or newer"),
        ("engines:\n  flux: 2.10\n", "YAML reads `2.10` as 2.1"),
        ("engines:\n  argo: \"three\"\n", "not a release"),
        ("engines:\n  fluxx: \"2.7\"\n", "unknown key `fluxx`"),
    ] {
        let err = common::refused(|root| set_strata_yaml(root, engines));
        assert!(err.contains(want), "{engines}: {err}");
        assert!(err.contains("strata.yaml:"), "{engines}: {err}");
    }
    // An argo-cd chart older than Argo CD 2.6 is refused at its version.
    let err = common::refused(|root| {
        let cfg = "gitops/platform/argocd/config.yaml";
        let text = std::fs::read_to_string(root.join(cfg)).unwrap();
        write(root, cfg, &text.replace("version: 8.3.0", "version: 5.19.0"));
    });
    assert!(err.contains("error[E055]") && err.contains("argo-cd 5.19.0"), "{err}");
    assert!(err.contains("gitops/platform/argocd/config.yaml:7"), "{err}");
}

/// The example with the argo-cd chart 8.3.0 in its store: a chart of our
/// own that ships an Application CRD as Argo CD 3.1 has it.
fn with_argo_chart(helm: &Path) -> tempfile::TempDir {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let files = tempfile::tempdir().unwrap();
    let (name, version, bytes) = charts::package(&charts::chart_dir("argo-cd-crds"));
    let archive = files.path().join(format!("{name}-{version}.tgz"));
    std::fs::write(&archive, bytes).unwrap();
    let out = strata_with(
        root,
        Some(helm),
        &[
            "charts",
            "add",
            archive.to_str().unwrap(),
            "--repo",
            "https://argoproj.github.io/argo-helm",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    tmp
}

#[test]
fn engine_objects_are_checked_against_the_crds_of_the_engine_chart() {
    let helm = need_helm!();
    let tmp = with_argo_chart(&helm);
    let root = tmp.path();
    // The release comes from the archive's appVersion, and strata writes
    // what its CRDs accept.
    let out = strata_with(root, Some(&helm), &["check", "--env", "staging"]);
    let err = stderr(&out);
    assert!(!err.contains("E057"), "{err}");
    assert!(err.contains("the appVersion of chart argo-cd 8.3.0"), "{err}");

    // Told the cluster runs 3.2 while the chart ships 3.1's CRDs: the
    // Applications carry `refresh`, which those CRDs refuse.
    set_strata_yaml(root, "engines:\n  argo: \"3.2\"\n");
    let out = strata_with(root, Some(&helm), &["check", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error[E057]"), "{err}");
    assert!(
        err.contains("the CRDs of chart argo-cd 8.3.0 (component argocd) refuse it"),
        "{err}"
    );
    assert!(err.contains("refresh"), "{err}");
    assert!(!err.contains("error[E010]"), "reported once, as E057: {err}");
}

#[test]
fn a_value_strata_s_own_schema_and_the_engine_crds_both_refuse_is_reported_once() {
    let helm = need_helm!();
    let tmp = with_argo_chart(&helm);
    let root = tmp.path();
    let cfg = "gitops/platform/traefik/config.yaml";
    let text = std::fs::read_to_string(root.join(cfg)).unwrap();
    write(
        root,
        cfg,
        &format!(
            "{text}patches:\n  - target: {{kind: Application}}\n    patch:\n      - op: replace\n        \
             path: /spec/syncPolicy/retry/limit\n        value: five\n"
        ),
    );
    let out = strata_with(root, Some(&helm), &["check", "--env", "staging", "--format", "json"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    let doc: J = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let found: Vec<String> = doc["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            let object = d["message"].as_str().unwrap_or("").split(' ').next().unwrap_or("");
            format!(
                "{} {}:{} {object}",
                d["code"].as_str().unwrap_or(""),
                d["file"].as_str().unwrap_or(""),
                d["line"]
            )
        })
        .collect();
    // strata's own Application schema says it (E051), at the patch's
    // value, once for each of traefik's Applications; the argo-cd chart's
    // CRD, which refuses the same field, does not say it again (E057), nor
    // does a catalog (E010).
    let want: Vec<String> = ["traefik", "traefik-manifests"]
        .iter()
        .map(|a| format!("E051 {cfg}:17 Application/argocd/{a}"))
        .collect();
    assert_eq!(found, want, "{text}");
}

#[test]
fn server_side_diff_before_argo_cd_2_10_is_left_out_with_a_warning_at_its_line() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let cfg = "gitops/platform/cilium/config.yaml";
    let text = std::fs::read_to_string(root.join(cfg)).unwrap();
    write(root, cfg, &format!("{text}diff: server-side\n"));
    set_strata_yaml(root, "engines:\n  argo: \"2.9\"\n");
    let err = render(root, &["--env", "staging", "--target", "argo"]);
    assert!(
        err.contains("warning[E056]") && err.contains("`diff: server-side` of cilium"),
        "{err}"
    );
    assert!(err.contains("gitops/platform/cilium/config.yaml:10"), "{err}");
    let app = doc(root, "rendered/staging/argo/application-cilium.yaml");
    assert!(
        app["metadata"]["annotations"]
            .get("argocd.argoproj.io/compare-options")
            .is_none(),
        "{app}"
    );
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &text.replace("\"2.9\"", "\"2.10\""));
    render(root, &["--env", "staging", "--target", "argo"]);
    let app = doc(root, "rendered/staging/argo/application-cilium.yaml");
    assert_eq!(
        app["metadata"]["annotations"]["argocd.argoproj.io/compare-options"],
        "ServerSideDiff=true"
    );
}

/// The example with a `flux` component of the flux2 chart 2.15.0 (Flux
/// 2.5) in its store, a chart of our own shipping the HelmRelease and
/// OCIRepository CRDs as that release has them (the example's
/// cert-manager is an OCI chart).
fn with_flux_chart(helm: &Path) -> tempfile::TempDir {
    let tmp = scratch("homelab");
    let root = tmp.path();
    write(
        root,
        "gitops/platform/flux/config.yaml",
        "component: flux\nnamespace: flux-system\nchart:\n  repoURL: https://fluxcd-community.github.io/helm-charts\n  \
         name: flux2\n  version: 2.15.0\nsync: manual\ntier: addon\n",
    );
    write(root, "gitops/platform/flux/values.yaml", "{}\n");
    let files = tempfile::tempdir().unwrap();
    let (name, version, bytes) = charts::package(&charts::chart_dir("flux2-crds"));
    let archive = files.path().join(format!("{name}-{version}.tgz"));
    std::fs::write(&archive, bytes).unwrap();
    let out = strata_with(
        root,
        Some(helm),
        &[
            "charts",
            "add",
            archive.to_str().unwrap(),
            "--repo",
            "https://fluxcd-community.github.io/helm-charts",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    tmp
}

#[test]
fn flux_objects_are_checked_against_the_crds_of_the_flux2_chart() {
    let helm = need_helm!();
    let tmp = with_flux_chart(&helm);
    let root = tmp.path();
    // Flux 2.5 from the archive's appVersion: no RetryOnFailure, and the
    // OCIRepository as v1beta2, which its CRDs accept.
    let out = strata_with(root, Some(&helm), &["check", "--env", "staging"]);
    let err = stderr(&out);
    assert!(!err.contains("E057"), "{err}");
    assert!(
        err.contains("Flux 2.5.0 (the appVersion of chart flux2 2.15.0"),
        "{err}"
    );

    // Told the cluster runs 2.7 while the chart ships 2.5's CRDs: the
    // HelmReleases carry `strategy`, and the OCIRepository is written as
    // v1, which 2.5 does not serve.
    set_strata_yaml(root, "engines:\n  flux: \"2.7\"\n");
    let out = strata_with(root, Some(&helm), &["check", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the CRDs of chart flux2 2.15.0 (component flux) refuse it") && err.contains("strategy"),
        "{err}"
    );
    assert!(
        err.contains("serve OCIRepository as source.toolkit.fluxcd.io/v1beta2, not source.toolkit.fluxcd.io/v1"),
        "{err}"
    );
    assert!(!err.contains("error[E010]"), "reported once, as E057: {err}");
}
