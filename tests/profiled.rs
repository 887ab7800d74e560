//! Judging through chart profiles, end to end: a wrapper chart's dependency
//! is judged against its own profile with its values under its key; a
//! profile's version range is checked only where the profile is used; and
//! on `topology: ha`, components that are neither rendered nor described by
//! a profile are named as not checked.

mod common;

use std::path::Path;

use strata::diag::{Diagnostic, Severity};

/// A platform: fixtures/rules/HA001/pass (three nodes, a CoreDNS that
/// meets ADR 007) with a substrate type that runs `rules`, and `files`.
fn platform(rules: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = common::repo().join("fixtures/rules/HA001/pass");
    common::copy_dir(&from, dir.path());
    let substrate = dir.path().join("substrates/talos.yaml");
    let text = std::fs::read_to_string(&substrate)
        .unwrap()
        .replace("rules: [HA001]", &format!("rules: [{rules}]"));
    std::fs::write(&substrate, text).unwrap();
    for (rel, text) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// Compiles `dir` with its chart store in `dir/.strata`, rendering with
/// `helm` when given; every finding but notes, and their text.
fn check(dir: &Path, helm: Option<&Path>) -> (Vec<Diagnostic>, String) {
    common::charts::compile_findings(dir, helm, |d| d.severity != Severity::Note && d.code != "E023")
}

/// A wrapper chart `edge` around a Traefik chart of `version`, switched by
/// `traefik.enabled`, with the Traefik chart's own defaults (one replica).
fn wrapper(version: &str) -> Vec<(String, String)> {
    vec![
        (
            "charts/edge/Chart.yaml".into(),
            format!(
                "apiVersion: v2\nname: edge\nversion: 0.1.0\ndependencies:\n  - name: traefik\n    version: {version}\n    repository: https://traefik.github.io/charts\n    condition: traefik.enabled\n"
            ),
        ),
        ("charts/edge/values.yaml".into(), "traefik:\n  enabled: true\n".into()),
        (
            "charts/edge/charts/traefik/Chart.yaml".into(),
            format!("apiVersion: v2\nname: traefik\nversion: {version}\n"),
        ),
        (
            "charts/edge/charts/traefik/values.yaml".into(),
            "deployment:\n  enabled: true\n  replicas: 1\npodDisruptionBudget:\n  enabled: false\nservice:\n  enabled: true\n  type: LoadBalancer\n  spec: {}\n".into(),
        ),
        (
            "gitops/platform/edge/config.yaml".into(),
            "component: edge\nnamespace: edge\nchart:\n  path: charts/edge\n".into(),
        ),
    ]
}

fn with<'a>(files: &'a [(String, String)], more: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut out: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    out.extend_from_slice(more);
    out
}

const EDGE_VALUES: &str = "gitops/platform/edge/values.yaml";

/// The wrapper's dependency is judged against the Traefik profile, its
/// values read under `traefik:`; a top-level key the wrapper ignores is not
/// judged, and the finding says the values are nested.
#[test]
fn a_wrapper_charts_dependency_is_judged_under_its_key() {
    let files = wrapper("37.1.1");
    let values = "# The wrapper passes nothing at the top level on to Traefik.\ndeployment:\n  replicas: 3\ntraefik:\n  deployment:\n    replicas: 1\n";
    let dir = platform("HA001", &with(&files, &[(EDGE_VALUES, values)]));
    let (diags, text) = check(dir.path(), None);
    assert_eq!(diags.len(), 1, "{text}");
    let d = &diags[0];
    assert_eq!(d.code, "HA001", "{text}");
    assert!(d.origin.file.ends_with(EDGE_VALUES), "{text}");
    assert_eq!(d.origin.line, 6, "points at traefik.deployment.replicas:\n{text}");
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("its values sit under `traefik:` (dependency traefik 37.1.1 of chart edge)")),
        "{text}"
    );
    assert!(text.contains("set `traefik.deployment.replicas: 2`"), "{text}");

    // Unset, the dependency's own default (one replica, in its values.yaml) is judged.
    let dir = platform("HA001", &with(&files, &[(EDGE_VALUES, "deployment:\n  replicas: 3\n")]));
    let (diags, text) = check(dir.path(), None);
    assert_eq!(diags.len(), 1, "{text}");
    assert!(
        diags[0]
            .notes
            .iter()
            .any(|n| n.contains("no layer of edge sets `traefik.deployment.replicas`, so the chart's default 1 applies (values.yaml of chart traefik 37.1.1)")),
        "{text}"
    );

    // Enough replicas under the key: nothing to say.
    let good = "traefik:\n  deployment:\n    replicas: 2\n";
    let dir = platform("HA001", &with(&files, &[(EDGE_VALUES, good)]));
    let (diags, text) = check(dir.path(), None);
    assert!(diags.is_empty(), "{text}");
}

/// A dependency its condition switches off runs nothing.
#[test]
fn a_wrapper_dependency_switched_off_is_not_judged() {
    let files = wrapper("37.1.1");
    let dir = platform("HA001", &with(&files, &[(EDGE_VALUES, "traefik:\n  enabled: false\n")]));
    let (diags, text) = check(dir.path(), None);
    assert!(diags.is_empty(), "{text}");
}

/// The range of the dependency's profile is checked against the
/// dependency's version, not the wrapper's.
#[test]
fn a_wrapper_dependency_outside_its_profiles_range_is_named() {
    let files = wrapper("36.3.0");
    let good = "traefik:\n  deployment:\n    replicas: 2\n";
    let dir = platform("HA001", &with(&files, &[(EDGE_VALUES, good)]));
    let (diags, text) = check(dir.path(), None);
    assert_eq!(diags.len(), 1, "{text}");
    assert_eq!(
        (diags[0].code, diags[0].severity),
        ("E004", Severity::Warning),
        "{text}"
    );
    assert!(
        diags[0].message.starts_with(
            "dependency traefik 36.3.0 of chart edge is outside the range >=37.0.0, <38.0.0 of chart profile traefik"
        ),
        "{text}"
    );
}

/// A local chart named after a profile, with a version outside its range.
fn coredns_chart(dir: &Path) {
    let web = common::repo().join("tests/charts/web-1");
    let to = dir.join("charts/coredns");
    std::fs::create_dir_all(&to).unwrap();
    common::copy_dir(&web, &to);
    let chart = to.join("Chart.yaml");
    let text = std::fs::read_to_string(&chart).unwrap();
    let text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("name:") {
                "name: coredns".to_owned()
            } else if l.starts_with("version:") {
                "version: 9.9.9".to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(chart, text + "\n").unwrap();
}

/// The version range matters only where the profile is used: a chart helm
/// renders is judged by what it renders, whatever its version.
#[test]
fn the_version_range_is_checked_only_where_the_profile_is_used() {
    let files = [
        (
            "gitops/platform/dns/config.yaml",
            "component: dns\nnamespace: dns\nchart:\n  path: charts/coredns\n",
        ),
        (
            "gitops/platform/dns/values.yaml",
            "image:\n  repository: coredns/coredns\n  tag: 1.12.3\nreplicas: 2\nreplicaCount: 2\n",
        ),
    ];
    let dir = platform("HA001", &files);
    coredns_chart(dir.path());
    // Not rendered: judged through the coredns profile, whose range 9.9.9 is outside.
    let (diags, text) = check(dir.path(), None);
    let range: Vec<&Diagnostic> = diags.iter().filter(|d| d.code == "E004").collect();
    assert_eq!(range.len(), 1, "{text}");
    assert!(
        range[0].message.starts_with("chart coredns 9.9.9 is outside the range"),
        "{text}"
    );
    assert!(
        range[0].origin.file.ends_with("gitops/platform/dns/config.yaml"),
        "{text}"
    );

    // Rendered: no profile default is used, so no warning.
    let Some(helm) = common::charts::helm() else { return };
    let (diags, text) = check(dir.path(), Some(&helm));
    assert!(diags.iter().all(|d| d.code != "E004"), "{text}");
}

/// On `topology: ha`, a component whose chart is neither rendered nor
/// described by a profile is named as not checked; a component without a
/// chart is its manifests, judged as objects, and is not named.
#[test]
fn components_neither_rendered_nor_profiled_are_named_as_not_checked() {
    let files = [
        (
            "gitops/platform/api/config.yaml",
            "component: api\nnamespace: api\nchart:\n  repoURL: https://charts.example.com\n  name: api\n  version: 1.0.0\n",
        ),
        (
            "gitops/platform/worker/config.yaml",
            "component: worker\nnamespace: worker\nchart:\n  repoURL: https://charts.example.com\n  name: worker\n  version: 1.0.0\n",
        ),
        (
            "gitops/platform/policies/config.yaml",
            "component: policies\nnamespace: policies\n",
        ),
        (
            "gitops/platform/policies/manifests/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: policies\n  namespace: policies\ndata: {a: b}\n",
        ),
    ];
    let dir = platform("HA001", &files);
    let (diags, text) = check(dir.path(), None);
    assert_eq!(diags.len(), 1, "{text}");
    let d = &diags[0];
    assert_eq!((d.code, d.severity), ("E015", Severity::Warning), "{text}");
    assert!(
        d.message
            .starts_with("not checked: no rule sees what api, worker run: their charts are not rendered"),
        "{text}"
    );
    assert!(
        !d.message.contains("policies") && !d.message.contains("coredns"),
        "{text}"
    );
    assert!(
        d.origin.file.ends_with("environments/staging.yaml") && d.origin.line == 3,
        "{text}"
    );

    // `topology: single`: no rule would read them anyway.
    let env = dir.path().join("environments/staging.yaml");
    let text = std::fs::read_to_string(&env)
        .unwrap()
        .replace("topology: ha", "topology: single");
    std::fs::write(&env, text).unwrap();
    let (diags, text) = check(dir.path(), None);
    assert!(diags.is_empty(), "{text}");
}

/// A component an environment does not take runs nothing there, whether
/// its chart is rendered or judged through its profile.
#[test]
fn a_component_the_environment_leaves_out_is_not_judged() {
    let files = [("gitops/platform/coredns/values.yaml", "replicaCount: 1\n")];
    let dir = platform("HA001", &files);
    let (diags, text) = check(dir.path(), None);
    assert_eq!(diags.len(), 1, "{text}");
    let env = dir.path().join("environments/staging.yaml");
    let mut text = std::fs::read_to_string(&env).unwrap();
    text.push_str("components:\n  exclude: [coredns]\n");
    std::fs::write(&env, text).unwrap();
    let (diags, text) = check(dir.path(), None);
    assert!(diags.is_empty(), "{text}");
}

/// A dependency under an alias: its values sit under the alias, and a
/// component that names the dependency's profile (`profile: traefik`) on a
/// wrapper chart is judged the same way.
#[test]
fn a_wrapper_dependency_under_an_alias_is_judged_under_the_alias() {
    let mut files = wrapper("37.1.1");
    files[0].1 = files[0].1.replace(
        "    condition: traefik.enabled\n",
        "    alias: proxy\n    condition: proxy.enabled\n",
    );
    files[1].1 = "proxy:\n  enabled: true\n".into();
    files[4].1.push_str("profile: traefik\n");
    let values = "traefik:\n  deployment:\n    replicas: 3\nproxy:\n  deployment:\n    replicas: 1\n";
    let dir = platform("HA001", &with(&files, &[(EDGE_VALUES, values)]));
    let (diags, text) = check(dir.path(), None);
    assert_eq!(diags.len(), 1, "{text}");
    assert_eq!(diags[0].origin.line, 6, "points at proxy.deployment.replicas:\n{text}");
    assert!(
        text.contains("its values sit under `proxy:` (dependency traefik 37.1.1 of chart edge)"),
        "{text}"
    );
}

/// A local wrapper chart named after its dependency, whose dependency is
/// not in the store (not pulled) and lies outside the profile's range: its
/// values are read under the dependency's key, the range is named (E004),
/// and a top-level key the wrapper passes on to nothing is not judged.
#[test]
fn an_unrendered_wrapper_whose_dependency_is_out_of_range_is_judged_under_its_key() {
    let files = [
        (
            "charts/cilium/Chart.yaml",
            "apiVersion: v2\nname: cilium\nversion: 0.1.0\ndependencies:\n  - name: cilium\n    version: 1.19.1\n    repository: https://helm.cilium.io\n",
        ),
        ("charts/cilium/values.yaml", "cilium:\n  operator:\n    replicas: 2\n"),
        (
            "gitops/platform/cilium/config.yaml",
            "component: cilium\nnamespace: kube-system\nchart:\n  path: charts/cilium\n",
        ),
        (
            "gitops/platform/cilium/values.yaml",
            "# Nothing at the top level reaches the dependency.\noperator:\n  replicas: 3\ncilium:\n  operator:\n    replicas: 1\n",
        ),
    ];
    let dir = platform("HA001", &files);
    let (diags, text) = check(dir.path(), None);
    let range: Vec<&Diagnostic> = diags.iter().filter(|d| d.code == "E004").collect();
    assert_eq!(range.len(), 1, "{text}");
    assert!(
        range[0]
            .message
            .starts_with("dependency cilium 1.19.1 of chart cilium is outside the range >=1.18.0, <1.19.0"),
        "{text}"
    );
    let ha: Vec<&Diagnostic> = diags.iter().filter(|d| d.code == "HA001").collect();
    assert_eq!(ha.len(), 1, "{text}");
    assert!(
        ha[0].origin.file.ends_with("gitops/platform/cilium/values.yaml"),
        "{text}"
    );
    assert_eq!(ha[0].origin.line, 6, "points at cilium.operator.replicas:\n{text}");

    // Under the key, enough replicas: nothing but the range.
    let good = [(
        files[3].0,
        "operator:\n  replicas: 1\ncilium:\n  operator:\n    replicas: 2\n",
    )];
    let mut all: Vec<(&str, &str)> = files[..3].to_vec();
    all.extend_from_slice(&good);
    let dir = platform("HA001", &all);
    let (diags, text) = check(dir.path(), None);
    assert!(diags.iter().all(|d| d.code == "E004"), "{text}");
}
