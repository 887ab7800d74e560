//! The admission preview end to end, on platforms and a chart of our own,
//! with the real programs (Kubernetes' and Kyverno's own code): Talos'
//! cluster-wide baseline refusing host access and warning below
//! restricted, a chart's field traced to its values line, a Namespace label
//! Kubernetes refuses, waivers, and the note when a program is missing.

#[macro_use]
mod common;

use std::path::Path;

use strata::diag::{self, Diagnostic, Severity, Sources};
use strata::pipeline::{self, Options};
use strata::world::FsWorld;

/// The ADM001 fixture platform (three Talos nodes, a `web` component),
/// copied, with `web`'s namespace and manifests replaced; `builtin_talos`
/// drops the fixture's substrate type, so the built-in `talos` (Talos'
/// own PodSecurity defaults, every rule) judges.
fn platform(builtin_talos: bool, namespace: &str, manifests: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    common::copy_dir(&common::repo().join("fixtures/rules/ADM001/fail"), tmp.path());
    if builtin_talos {
        std::fs::remove_dir_all(tmp.path().join("substrates")).unwrap();
    }
    let web = tmp.path().join("gitops/platform/web");
    std::fs::remove_dir_all(web.join("manifests")).unwrap();
    common::write(
        tmp.path(),
        "gitops/platform/web/config.yaml",
        &format!("component: web\nnamespace:\n{namespace}tier: addon\n"),
    );
    for (name, text) in manifests {
        common::write(tmp.path(), &format!("gitops/platform/web/manifests/{name}"), text);
    }
    tmp
}

/// The admission findings (ADM, E073, E074, and waiver notes) of a compile.
fn judge(dir: &Path, helm: Option<&Path>) -> Option<(Vec<Diagnostic>, String)> {
    let settings = common::admission::settings(dir)?;
    let world = FsWorld::new(dir, "2026-10-01".to_owned()).unwrap();
    let sources = Sources::default();
    let opts = Options {
        admission: Some(settings),
        inflate: strata::inflate::Settings {
            helm: helm.map(Path::to_path_buf),
            state_root: Some(dir.to_path_buf()),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut diags = match pipeline::compile(&world, &sources, &opts) {
        Ok(c) => c.findings,
        Err(d) => panic!("did not compile:\n{}", diag::render_text(&d, &sources, false)),
    };
    diags.retain(|d| d.code.starts_with("ADM") || ["E011", "E073", "E074"].contains(&d.code));
    diag::normalize(&mut diags);
    let text = diag::render_text(&diags, &sources, false);
    Some((diags, text))
}

fn deployment(name: &str, pod: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: web\nspec:\n  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n{pod}      containers:\n        - name: app\n          image: registry.example.org/app:1.0.0\n"
    )
}

fn summary(diags: &[Diagnostic]) -> Vec<String> {
    diags
        .iter()
        .map(|d| format!("{} {:?} {}:{}", d.code, d.severity, d.origin.file, d.origin.line))
        .collect()
}

#[test]
fn talos_refuses_host_access_at_baseline_and_warns_below_restricted() {
    let host = deployment("host", "      hostNetwork: true\n");
    let plain = deployment("plain", "");
    let tmp = platform(true, "  name: web\n", &[("host.yaml", &host), ("plain.yaml", &plain)]);
    let Some((diags, text)) = judge(tmp.path(), None) else {
        return;
    };
    let m = "gitops/platform/web/manifests";
    let mut got = summary(&diags);
    got.sort();
    // A pod the enforce level refuses gets no warnings (PodSecurity skips
    // them), but its audit level still records what restricted forbids.
    assert_eq!(
        got,
        [
            format!("ADM001 Error {m}/host.yaml:15"),
            format!("ADM001 Note {m}/host.yaml:1"),
            format!("ADM001 Warning {m}/plain.yaml:1"),
        ],
        "{text}"
    );
    assert!(
        text.contains("PodSecurity \"baseline:latest\" (enforce level of namespace web) forbids host namespaces"),
        "{text}"
    );
    assert!(
        text.contains(
            "has no label pod-security.kubernetes.io/enforce: baseline:latest is the talos substrate's default"
        ),
        "{text}"
    );
    assert!(
        text.contains("PodSecurity \"restricted:latest\" (warn level of namespace web)"),
        "{text}"
    );
    // The plain pod's audit level repeats its warn level: no note of its own.
    assert_eq!(
        diags.iter().filter(|d| d.severity == Severity::Note).count(),
        1,
        "{text}"
    );
}

#[test]
fn a_namespace_label_lifts_the_default_and_a_bad_one_is_refused() {
    let host = deployment("host", "      hostNetwork: true\n");
    let privileged = "  name: web\n  labels:\n    pod-security.kubernetes.io/enforce: privileged\n    pod-security.kubernetes.io/warn: privileged\n    pod-security.kubernetes.io/audit: privileged\n";
    let tmp = platform(true, privileged, &[("host.yaml", &host)]);
    let Some((diags, text)) = judge(tmp.path(), None) else {
        return;
    };
    assert!(diags.is_empty(), "{text}");

    let typo = "  name: web\n  labels:\n    pod-security.kubernetes.io/enforce: restrictd\n";
    let tmp = platform(true, typo, &[("host.yaml", &host)]);
    let Some((diags, text)) = judge(tmp.path(), None) else {
        return;
    };
    let refused: Vec<&Diagnostic> = diags
        .iter()
        .filter(|d| d.message.starts_with("Namespace web"))
        .collect();
    assert_eq!(refused.len(), 1, "{text}");
    assert_eq!(refused[0].severity, Severity::Error);
    assert!(refused[0].message.contains("restrictd"), "{text}");
}

#[test]
fn a_chart_s_offending_field_is_found_at_its_values_line() {
    let helm = need_helm!();
    let tmp = platform(
        false,
        "  name: web\n  labels:\n    pod-security.kubernetes.io/enforce: baseline\n",
        &[],
    );
    common::copy_dir(
        &common::repo().join("tests/charts/pod-security"),
        &tmp.path().join("charts/pod-security"),
    );
    common::write(
        tmp.path(),
        "gitops/platform/web/config.yaml",
        "component: web\nnamespace:\n  name: web\n  labels:\n    pod-security.kubernetes.io/enforce: baseline\ntier: addon\nchart:\n  path: charts/pod-security\n",
    );
    common::write(
        tmp.path(),
        "gitops/platform/web/values.yaml",
        "replicas: 2\nsecurityContext:\n  privileged: true\n",
    );
    let Some((diags, text)) = judge(tmp.path(), Some(&helm)) else {
        return;
    };
    assert_eq!(
        summary(&diags),
        ["ADM001 Error gitops/platform/web/values.yaml:3"],
        "{text}"
    );
    assert!(text.contains("`securityContext.privileged` renders"), "{text}");
    assert!(text.contains("pod-security/templates/deployment.yaml"), "{text}");
}

#[test]
fn a_waiver_silences_a_finding_and_an_unused_one_is_named() {
    let host = deployment("host", "      hostNetwork: true\n");
    let tmp = platform(
        false,
        "  name: web\n  labels:\n    pod-security.kubernetes.io/enforce: baseline\n",
        &[("host.yaml", &host)],
    );
    let env = tmp.path().join("environments/staging.yaml");
    let mut text = std::fs::read_to_string(&env).unwrap();
    text.push_str(
        "waivers:\n  - rule: ADM001\n    object: Deployment/web/host\n    reason: the host agent needs the node's network\n    expires: 2027-01-31\n  - rule: ADM001\n    component: coredns\n    reason: nothing to waive\n    expires: 2027-01-31\n",
    );
    std::fs::write(&env, text).unwrap();
    let Some((diags, text)) = judge(tmp.path(), None) else {
        return;
    };
    assert_eq!(summary(&diags), ["E011 Warning environments/staging.yaml:12"], "{text}");
    assert!(
        text.contains("waiver of ADM001 for component coredns matches no finding"),
        "{text}"
    );
}

#[test]
fn check_says_when_the_preview_did_not_run_and_goes_on() {
    let host = deployment("host", "      hostNetwork: true\n");
    let tmp = platform(
        false,
        "  name: web\n  labels:\n    pod-security.kubernetes.io/enforce: baseline\n",
        &[("host.yaml", &host)],
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--root", &tmp.path().to_string_lossy(), "--color", "never", "check"])
        .env("STRATA_ADMISSION", tmp.path().join("no-such-program"))
        .env("STRATA_KYVERNO", "off")
        .env("STRATA_TODAY", "2026-10-01")
        .output()
        .unwrap();
    let err = common::stderr(&out);
    assert!(err.contains("note[E073]"), "{err}");
    assert!(
        err.contains("the admission preview of Pod Security (ADM001) did not run for environment staging"),
        "{err}"
    );
    assert!(err.contains("no-such-program is not a file"), "{err}");
    assert!(!err.contains("error[ADM001]"), "{err}");
}

/// The admission program judges with the Kubernetes release the chart
/// renderer renders with: every k8s.io module both require is at one version.
#[test]
fn the_admission_program_shares_the_renderer_s_kubernetes_release() {
    let versions = |file: &str| -> std::collections::BTreeMap<String, String> {
        std::fs::read_to_string(common::repo().join(file))
            .unwrap()
            .lines()
            .filter_map(|l| {
                let mut parts = l.split_whitespace();
                let (module, version) = (parts.next()?, parts.next()?);
                (module.starts_with("k8s.io/") && version.starts_with("v0."))
                    .then(|| (module.to_owned(), version.to_owned()))
            })
            .collect()
    };
    let renderer = versions("renderer/go.mod");
    let admission = versions("admission/go.mod");
    let shared: Vec<&String> = admission.keys().filter(|m| renderer.contains_key(*m)).collect();
    assert!(shared.len() >= 4, "{admission:?}");
    for m in shared {
        assert_eq!(admission[m], renderer[m], "{m}");
    }
}
