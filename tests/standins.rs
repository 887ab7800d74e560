//! The example platforms judged both ways: through the chart profiles
//! (`--inflate off`), and by rendering their charts with helm (`--inflate
//! helm`) from stand-in charts in `tests/charts/standins/` — small charts of
//! our own that render, for the values keys the profiles document, the
//! objects the pinned upstream charts render and the rules read. Both ways
//! must give the same findings, at the same lines.

#[macro_use]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value as J;
use strata::charts::archive::{self, ChartInfo};

use common::charts::{self, strata_with};
use common::standins::{install, install_standins, standins};
use common::{repo, scratch, stderr, stdout};

/// `strata check` of one environment: `CODE file:line` of every error and
/// warning of the invariants, sorted, and the JSON for failure messages.
fn findings(root: &Path, helm: &Path, mode: &str, env: &str) -> (Vec<String>, String) {
    let out = strata_with(
        root,
        Some(helm),
        &["--inflate", mode, "check", "--env", env, "--format", "json"],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "--inflate {mode} check --env {env}: {}",
        stderr(&out)
    );
    let text = stdout(&out);
    let doc: J = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let mut got: Vec<String> = doc["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["severity"] != "note")
        // The admission preview's findings (what Talos' Pod Security
        // default makes of the stand-ins' pods) are tests/admission.rs's.
        .filter(|d| !d["code"].as_str().unwrap_or("").starts_with("ADM"))
        .map(|d| {
            format!(
                "{} {}:{}",
                d["code"].as_str().unwrap_or(""),
                d["file"].as_str().unwrap_or(""),
                d["line"]
            )
        })
        .collect();
    got.sort();
    (got, text)
}

#[test]
fn adr_007_staging_today_in_both_modes() {
    let helm = need_helm!();
    let tmp = scratch("adr-007-staging-today");
    install_standins(tmp.path());
    // The list of tests/rules.rs `adr_007_staging_today_reports_exactly_the_adr_problems`.
    let gp = "gitops/platform";
    let mut want: Vec<String> = vec![
        "TOPO001 contracts/staging.json:111".to_owned(),
        "TOPO002 contracts/staging.json:115".to_owned(),
        format!("NET002 {gp}/cilium/manifests/ciliuml2announcementpolicy-ingress-address.yaml:14"),
        format!("NET001 {gp}/traefik/values.yaml:78"),
        format!("STO001 {gp}/longhorn/values-substrate-talos.yaml:13"),
        format!("STO001 {gp}/longhorn/values-substrate-talos.yaml:16"),
        format!("HA001 {gp}/traefik/config.yaml:6"),
        format!("HA001 {gp}/coredns/config.yaml:6"),
        format!("HA001 {gp}/cert-manager/config.yaml:6"),
        // controller, webhook, cert-controller
        format!("HA001 {gp}/external-secrets/config.yaml:6"),
        format!("HA001 {gp}/external-secrets/config.yaml:6"),
        format!("HA001 {gp}/external-secrets/config.yaml:6"),
        format!("HA002 {gp}/cilium/config.yaml:6"),
        format!("HA002 {gp}/traefik/config.yaml:6"),
        format!("HA002 {gp}/coredns/config.yaml:6"),
        format!("HA002 {gp}/cert-manager/config.yaml:6"),
        format!("HA002 {gp}/external-secrets/config.yaml:6"),
        format!("HA002 {gp}/external-secrets/config.yaml:6"),
        format!("HA002 {gp}/external-secrets/config.yaml:6"),
    ];
    want.sort();
    for mode in ["helm", "off"] {
        let (got, json) = findings(tmp.path(), &helm, mode, "staging");
        assert_eq!(got, want, "--inflate {mode}:\n{json}");
    }
}

#[test]
fn homelab_in_both_modes() {
    let helm = need_helm!();
    let tmp = scratch("homelab");
    install_standins(tmp.path());
    for env in ["staging", "production", "dev"] {
        for mode in ["helm", "off"] {
            let (got, json) = findings(tmp.path(), &helm, mode, env);
            assert!(got.is_empty(), "homelab {env}, --inflate {mode}:\n{json}");
        }
    }
}

/// Findings about values a layer sets point at that layer's line in both
/// modes: CoreDNS's replica count while `k8sAppLabelOverride` relabels its
/// pods, and a chart's budget switched off.
#[test]
fn layer_lines_are_found_in_both_modes() {
    let helm = need_helm!();
    let tmp = scratch("homelab");
    install_standins(tmp.path());
    common::write(
        tmp.path(),
        "gitops/platform/coredns/values-staging.yaml",
        "replicaCount: 1\n",
    );
    common::write(
        tmp.path(),
        "gitops/platform/cert-manager/values-staging.yaml",
        "webhook:\n  podDisruptionBudget:\n    enabled: false\n",
    );
    for mode in ["helm", "off"] {
        let (got, json) = findings(tmp.path(), &helm, mode, "staging");
        assert_eq!(
            got,
            vec![
                "HA001 gitops/platform/coredns/values-staging.yaml:1",
                "HA002 gitops/platform/cert-manager/values-staging.yaml:3",
            ],
            "--inflate {mode}:\n{json}"
        );
    }
}

/// A value a template falls back to, outside the path the profile names:
/// Longhorn's manager and driver deployer take global.nodeSelector when
/// their own selector is empty. Both modes point at its line.
#[test]
fn a_fallback_value_is_found_in_both_modes() {
    let helm = need_helm!();
    let tmp = scratch("homelab");
    install_standins(tmp.path());
    common::write(
        tmp.path(),
        "gitops/platform/longhorn/values-staging.yaml",
        "global:\n  nodeSelector:\n    node-role.kubernetes.io/worker: \"\"\n",
    );
    for mode in ["helm", "off"] {
        let (got, json) = findings(tmp.path(), &helm, mode, "staging");
        assert_eq!(
            got,
            vec!["STO001 gitops/platform/longhorn/values-staging.yaml:3"],
            "--inflate {mode}:\n{json}"
        );
    }
}

/// Upstream Longhorn 1.9.1 leaves the CSI replica counts and the
/// default-replica-count and guaranteed-instance-manager-cpu settings `~` in
/// its values.yaml, and Longhorn applies 3, 3 and 12 itself (the profile's
/// defaults). With such a chart in the store and none of them set, both
/// modes judge Longhorn's own defaults: the CSI controllers run 3 replicas,
/// and 3 replicas per volume exceed staging's two hosts.
#[test]
fn values_a_chart_leaves_null_are_judged_by_the_software_default() {
    let helm = need_helm!();
    let upstream = tempfile::tempdir().unwrap();
    let longhorn = upstream.path().join("longhorn");
    common::copy_dir(&repo().join("tests/charts/standins/longhorn"), &longhorn);
    let values = std::fs::read_to_string(longhorn.join("values.yaml")).unwrap();
    let mut nulled = values.clone();
    for (from, to) in [
        ("attacherReplicaCount: 3", "attacherReplicaCount: ~"),
        ("provisionerReplicaCount: 3", "provisionerReplicaCount: ~"),
        ("resizerReplicaCount: 3", "resizerReplicaCount: ~"),
        ("snapshotterReplicaCount: 3", "snapshotterReplicaCount: ~"),
        ("defaultReplicaCount: 3", "defaultReplicaCount: ~"),
        ("guaranteedInstanceManagerCPU: 12", "guaranteedInstanceManagerCPU: ~"),
    ] {
        assert!(
            nulled.contains(from),
            "{from} is not in the longhorn stand-in's values.yaml"
        );
        nulled = nulled.replace(from, to);
    }
    std::fs::write(longhorn.join("values.yaml"), nulled).unwrap();
    let dirs: Vec<PathBuf> = standins()
        .into_iter()
        .map(|d| if d.ends_with("longhorn") { longhorn.clone() } else { d })
        .collect();

    let tmp = scratch("adr-007-staging-today");
    install(tmp.path(), &dirs);
    // No layer sets the CSI replica counts or defaultSettings.defaultReplicaCount.
    let base = tmp.path().join("gitops/platform/longhorn/values.yaml");
    let text = std::fs::read_to_string(&base).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !(l.trim() == "csi:" || (l.contains("ReplicaCount:") && !l.contains("defaultClass"))))
        .collect();
    std::fs::write(&base, kept.join("\n") + "\n").unwrap();
    common::write(
        tmp.path(),
        "gitops/platform/longhorn/values-staging.yaml",
        "persistence:\n  defaultClassReplicaCount: 2\n",
    );
    for mode in ["helm", "off"] {
        let (got, json) = findings(tmp.path(), &helm, mode, "staging");
        let longhorn: Vec<&String> = got.iter().filter(|f| f.contains("/longhorn/")).collect();
        assert_eq!(
            longhorn,
            vec![
                "STO001 gitops/platform/longhorn/config.yaml:6",
                "STO001 gitops/platform/longhorn/values-substrate-talos.yaml:13",
                "STO001 gitops/platform/longhorn/values-substrate-talos.yaml:16",
            ],
            "--inflate {mode}:\n{json}"
        );
    }
}

/// Every `{path, default}` of a profile, as (path, default).
fn value_refs(v: &J, out: &mut Vec<(String, J)>) {
    match v {
        J::Object(m) => {
            if let Some(J::String(path)) = m.get("path") {
                out.push((path.clone(), m.get("default").cloned().unwrap_or(J::Null)));
            }
            for x in m.values() {
                value_refs(x, out);
            }
        }
        J::Array(items) => items.iter().for_each(|x| value_refs(x, out)),
        _ => {}
    }
}

/// What strata reads as a stand-in's defaults is what its profile says the
/// chart's defaults are: with the chart in the store, strata takes unset
/// values from the chart's values.yaml, without it from the profile, and the
/// two modes must agree.
#[test]
fn standin_defaults_are_the_profile_defaults() {
    let infos: BTreeMap<String, ChartInfo> = standins()
        .iter()
        .map(|d| {
            let (name, _, bytes) = charts::package(d);
            (name, archive::read_archive(&bytes).expect("read a stand-in archive"))
        })
        .collect();
    let mut checked = 0;
    for (file, text) in strata::profiles::BUILTIN {
        let name: std::sync::Arc<str> = std::sync::Arc::from(*file);
        let profile = strata::yaml::parse(&name, text).expect("parse a profile").to_json();
        let chart = profile["chart"].as_str().expect("chart");
        let info = infos
            .get(chart)
            .unwrap_or_else(|| panic!("no stand-in for the profile of chart {chart}"));
        let mut refs = Vec::new();
        value_refs(&profile, &mut refs);
        for (path, default) in refs {
            let found = info.default_at(&path).cloned().unwrap_or(J::Null);
            assert_eq!(
                found, default,
                "{chart}: `{path}` is {found} in the stand-in's values.yaml, {default} in {file}"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} value references checked");
}
