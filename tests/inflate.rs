//! Charts rendered with the real helm: `strata charts pull` from a chart
//! repository served on 127.0.0.1, the lock and the store, the modes, the
//! render cache, chart errors, unstable charts, wrapper charts, schema
//! validation of what charts render, and `strata diff` of chart objects.

#[macro_use]
mod common;

use std::path::Path;

use common::charts::{self, Repo, counting_helm, platform, remote, strata_with, template_runs};
use common::{stderr, stdout, write};

fn pull(root: &Path, helm: &Path) -> std::process::Output {
    strata_with(root, Some(helm), &["charts", "pull"])
}

/// `diff --base HEAD --env dev` with helm, in JSON: its text, the document,
/// and what each chart object did, as `status Kind name`.
fn chart_diff(root: &Path, helm: &Path) -> (String, serde_json::Value, Vec<String>) {
    let out = strata_with(
        root,
        Some(helm),
        &[
            "--inflate",
            "helm",
            "diff",
            "--base",
            "HEAD",
            "--env",
            "dev",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let diff: serde_json::Value = serde_json::from_str(&text).unwrap();
    let objects: Vec<String> = diff["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["target"] == "chart")
        .map(|o| {
            format!(
                "{} {} {}",
                o["status"].as_str().unwrap(),
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect();
    (text, diff, objects)
}

#[test]
fn pull_pins_archives_by_digest_and_renders_offline() {
    let helm = need_helm!();
    let repo = Repo::serve(&["web-1"]);
    let tmp = platform(&[("web", &remote(&repo.url, "web", "1.0.0"), "replicas: 2\n")]);
    let root = tmp.path();

    let out = pull(root, &helm);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 chart(s) fetched"), "{}", stderr(&out));
    let lock = charts::read(&root.join("strata.lock"));
    let (_, _, bytes) = charts::package(&charts::chart_dir("web-1"));
    let digest = format!("sha256:{}", charts::sha256_hex(&bytes));
    assert!(lock.contains(&format!("digest: {digest}")), "{lock}");
    assert!(lock.contains(&format!("repoURL: {}", repo.url)), "{lock}");
    assert!(
        root.join(".strata/charts")
            .join(format!("{}.tgz", digest.replace(':', "-")))
            .is_file()
    );
    // The store ignores itself in git.
    assert_eq!(charts::read(&root.join(".strata/.gitignore")).lines().last(), Some("*"));

    // A second pull fetches nothing: the lock pins it and the store has it.
    let hits = repo.hits();
    let out = pull(root, &helm);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("0 chart(s) fetched, 1 already in the store"),
        "{}",
        stderr(&out)
    );
    assert_eq!(repo.hits(), hits, "a pull with everything pinned went to the network");
    assert_eq!(charts::read(&root.join("strata.lock")), lock);

    // Rendering is offline: the repository is gone.
    drop(repo);
    let out = strata_with(
        root,
        Some(&helm),
        &["--inflate", "helm", "check", "--env", "dev", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_tampered_or_missing_archive_is_named_with_the_remedy() {
    let helm = need_helm!();
    let repo = Repo::serve(&["web-1"]);
    let tmp = platform(&[("web", &remote(&repo.url, "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();
    assert_eq!(pull(root, &helm).status.code(), Some(0));
    let stored: Vec<_> = std::fs::read_dir(root.join(".strata/charts"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tgz"))
        .collect();
    assert_eq!(stored.len(), 1);
    let archive = &stored[0];
    let good = std::fs::read(archive).unwrap();

    // Tampered: an input error in every mode that uses the store, naming
    // the chart, both digests and the remedy.
    let (_, _, other) = charts::package(&charts::chart_dir("web-2"));
    std::fs::write(archive, &other).unwrap();
    for mode in ["auto", "helm"] {
        let out = strata_with(root, Some(&helm), &["--inflate", mode, "render"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("error[E013]"), "{err}");
        assert!(err.contains(&format!("sha256:{}", charts::sha256_hex(&good))), "{err}");
        assert!(err.contains(&format!("sha256:{}", charts::sha256_hex(&other))), "{err}");
        assert!(err.contains("strata charts pull"), "{err}");
        assert!(!root.join("rendered").exists());
    }

    // Missing: auto judges through profiles and says why; helm refuses.
    std::fs::remove_file(archive).unwrap();
    let out = strata_with(root, Some(&helm), &["check", "--env", "dev"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("note[E015]"), "{err}");
    assert!(err.contains("web (not in .strata/charts)"), "{err}");
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "dev"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("run `strata charts pull`"), "{err}");

    // A pull brings the pinned archive back, byte for byte.
    assert_eq!(pull(root, &helm).status.code(), Some(0));
    assert_eq!(std::fs::read(archive).unwrap(), good);
}

#[test]
fn a_repository_that_changes_a_published_version_is_refused() {
    let helm = need_helm!();
    let repo = Repo::serve(&["web-1"]);
    let tmp = platform(&[("web", &remote(&repo.url, "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();
    assert_eq!(pull(root, &helm).status.code(), Some(0));
    let lock = charts::read(&root.join("strata.lock"));
    std::fs::remove_dir_all(root.join(".strata")).unwrap();
    // Same name and version, other bytes.
    write(repo.dir.path(), "tmp/Chart.yaml", "");
    common::copy_dir(&charts::chart_dir("web-1"), &repo.dir.path().join("tmp"));
    write(repo.dir.path(), "tmp/templates/extra.yaml", "# extra\n");
    let (_, _, bytes) = charts::package(&repo.dir.path().join("tmp"));
    std::fs::write(repo.path_of("web-1.0.0.tgz"), &bytes).unwrap();
    let index = charts::read(&repo.path_of("index.yaml"));
    let old = charts::sha256_hex(&charts::package(&charts::chart_dir("web-1")).2);
    std::fs::write(
        repo.path_of("index.yaml"),
        index.replace(&old, &charts::sha256_hex(&bytes)),
    )
    .unwrap();

    let out = pull(root, &helm);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("serves different bytes"), "{err}");
    assert!(err.contains("--update"), "{err}");
    assert_eq!(
        charts::read(&root.join("strata.lock")),
        lock,
        "the lock changed on a failed pull"
    );
    // --update accepts the new archive.
    let out = strata_with(root, Some(&helm), &["charts", "pull", "--update"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(charts::read(&root.join("strata.lock")).contains(&charts::sha256_hex(&bytes)));
}

#[test]
fn without_helm_auto_says_so_and_helm_mode_refuses() {
    let tmp = platform(&[("web", "chart:\n  path: charts/web\n", "{}\n")]);
    common::copy_dir(&charts::chart_dir("web-1"), &tmp.path().join("charts/web"));
    let out = strata_with(tmp.path(), None, &["check", "--env", "dev"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("web (helm is not on the PATH)"), "{err}");
    let out = strata_with(tmp.path(), None, &["--inflate", "helm", "check", "--env", "dev"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs the helm binary"), "{err}");
    // Pulling needs helm only for OCI registries; nothing to fetch here.
    let out = strata_with(tmp.path(), None, &["charts", "pull"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // off says that charts are not rendered.
    let out = strata_with(tmp.path(), None, &["--inflate", "off", "check", "--env", "dev"]);
    assert!(stderr(&out).contains("`inflate: off`"), "{}", stderr(&out));
}

#[test]
fn the_cache_renders_each_release_once_and_exactly_what_changed() {
    let helm = need_helm!();
    let scratch = tempfile::tempdir().unwrap();
    let (counting, log) = counting_helm(scratch.path(), &helm);
    let tmp = platform(&[
        ("web", "chart:\n  path: charts/web\n", "replicas: 2\n"),
        ("api", "chart:\n  path: charts/web\n", "replicas: 3\n"),
    ]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("web-1"), &root.join("charts/web"));
    let check = |args: &[&str]| {
        let mut all = vec!["check"];
        all.extend_from_slice(args);
        let out = strata_with(root, Some(&counting), &all);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    };
    check(&[]);
    // Two components; the same values in all three environments are one
    // release to render.
    assert_eq!(template_runs(&log), 2);
    write(root, "gitops/platform/web/values-dev.yaml", "replicas: 1\n");
    check(&[]);
    assert_eq!(template_runs(&log), 3);
    check(&[]);
    assert_eq!(template_runs(&log), 3, "a warm run started helm");
    // One values layer of one component in one environment.
    write(root, "gitops/platform/api/values-staging.yaml", "replicas: 4\n");
    check(&[]);
    assert_eq!(template_runs(&log), 4);
    // A corrupt entry is ignored and replaced.
    for fan in std::fs::read_dir(root.join(".strata/cache/inflate")).unwrap() {
        for f in std::fs::read_dir(fan.unwrap().path()).unwrap() {
            std::fs::write(f.unwrap().path(), b"garbage").unwrap();
        }
    }
    check(&[]);
    assert_eq!(template_runs(&log), 8);
    check(&[]);
    assert_eq!(template_runs(&log), 8);
}

#[test]
fn concurrent_runs_share_the_cache() {
    let helm = need_helm!();
    let tmp = platform(&[
        ("web", "chart:\n  path: charts/web\n", "replicas: 2\n"),
        ("api", "chart:\n  path: charts/web\n", "replicas: 3\n"),
    ]);
    let root = tmp.path().to_path_buf();
    common::copy_dir(&charts::chart_dir("web-1"), &root.join("charts/web"));
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let root = root.clone();
            let helm = helm.clone();
            std::thread::spawn(move || {
                strata_with(&root, Some(&helm), &["--inflate", "helm", "check", "--format", "json"])
            })
        })
        .collect();
    let outs: Vec<_> = runs.into_iter().map(|h| h.join().unwrap()).collect();
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
        assert_eq!(stdout(o), stdout(&outs[0]));
    }
}

#[test]
fn a_required_value_that_is_missing_is_helms_message_at_the_component() {
    let helm = need_helm!();
    let tmp = platform(&[("db", "chart:\n  path: charts/strict\n", "database: {}\n")]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("strict"), &root.join("charts/strict"));
    write(
        root,
        "gitops/platform/db/values-dev.yaml",
        "database:\n  host: db.dev\n",
    );
    let out = strata_with(root, Some(&helm), &["render"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E012]"), "{err}");
    assert!(err.contains("database.host is required"), "{err}");
    assert!(err.contains("component db in environment staging"), "{err}");
    assert!(!err.contains("environment dev"), "dev sets the value: {err}");
    assert!(err.contains("--> gitops/platform/db/config.yaml"), "{err}");
    assert!(!root.join("rendered").exists());
}

#[test]
fn a_chart_that_renders_differently_each_time_is_named() {
    let helm = need_helm!();
    let tmp = platform(&[("noisy", "chart:\n  path: charts/noisy\n", "{}\n")]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("noisy"), &root.join("charts/noisy"));
    for _ in 0..2 {
        // Cold, then from the cache: the warning holds either way.
        let out = strata_with(root, Some(&helm), &["check", "--env", "dev"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("warning[E014]"), "{err}");
        assert!(err.contains("Secret/noisy/noisy-password"), "{err}");
        assert!(!err.contains("ConfigMap/noisy/noisy-settings"), "{err}");
        assert!(err.contains("randAlphaNum"), "{err}");
    }
}

#[test]
fn a_wrapper_chart_gets_its_dependencies_from_the_lock() {
    let helm = need_helm!();
    let repo = Repo::serve(&["web-1", "web-2"]);
    let tmp = platform(&[(
        "site",
        "chart:\n  path: charts/site\n",
        "frontend:\n  replicas: 2\n  pdb:\n    enabled: true\nbackend:\n  deployment:\n    replicas: 3\n",
    )]);
    let root = tmp.path();
    write(
        root,
        "charts/site/Chart.yaml",
        &format!(
            "apiVersion: v2\nname: site\nversion: 0.1.0\ndependencies:\n  - name: web\n    alias: frontend\n    version: ^1.0.0\n    repository: {0}\n  - name: web\n    alias: backend\n    version: \">=2.0.0\"\n    repository: {0}\n  - name: sidecar\n    version: 0.1.0\n    repository: file://../sidecar\n",
            repo.url
        ),
    );
    write(root, "charts/site/values.yaml", "frontend: {}\n");
    write(
        root,
        "charts/sidecar/Chart.yaml",
        "apiVersion: v2\nname: sidecar\nversion: 0.1.0\n",
    );
    write(
        root,
        "charts/sidecar/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-sidecar\n",
    );
    // Before a pull: the remote dependencies are not locked.
    let out = strata_with(root, Some(&helm), &["check", "--env", "dev"]);
    assert!(
        stderr(&out).contains("site (its dependencies are not in strata.lock)"),
        "{}",
        stderr(&out)
    );
    let out = pull(root, &helm);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lock = charts::read(&root.join("strata.lock"));
    assert!(lock.contains("path: charts/site"), "{lock}");
    assert!(
        lock.contains("constraint: ^1.0.0") && lock.contains("version: \"1.0.0\""),
        "{lock}"
    );
    assert!(
        lock.contains("alias: backend") && lock.contains("version: \"2.0.0\""),
        "{lock}"
    );

    // What the wrapper renders, through a diff against the committed state:
    // the aliased subcharts get their values from under their alias.
    common::git(root, &["init", "-q"]);
    common::git(root, &["add", "-A"]);
    common::git(root, &["commit", "-qm", "site"]);
    assert!(
        common::git(root, &["status", "--porcelain"]).is_empty(),
        ".strata/ is not ignored"
    );
    write(
        root,
        "gitops/platform/site/values-dev.yaml",
        "frontend:\n  replicas: 5\nbackend:\n  deployment:\n    replicas: 1\n",
    );
    let (text, diff, changed) = chart_diff(root, &helm);
    assert_eq!(
        changed,
        vec!["changed Deployment site-backend", "changed Deployment site-frontend"],
        "{diff:#}"
    );
    assert!(
        text.contains("-  replicas: 2") || text.contains("replicas: 2"),
        "{text}"
    );
}

#[test]
fn custom_resources_are_checked_against_the_crds_their_chart_ships() {
    let helm = need_helm!();
    let tmp = platform(&[("widgets", "chart:\n  path: charts/widget\n", "spec:\n  colour: blue\n")]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("widget"), &root.join("charts/widget"));
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "dev"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A field the CRD does not have, set in a layer: found, at that line.
    write(
        root,
        "gitops/platform/widgets/values-dev.yaml",
        "spec:\n  color: blue\n",
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "dev"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Widget/widgets/widgets"), "{err}");
    assert!(err.contains("color"), "{err}");
    assert!(err.contains("--> gitops/platform/widgets/values-dev.yaml:2"), "{err}");
    assert!(err.contains("the CRD widgets.example.com"), "{err}");
}

#[test]
fn diff_compares_chart_objects_only_where_both_revisions_rendered_them() {
    let helm = need_helm!();
    let repo = Repo::serve(&["web-1", "web-2"]);
    let tmp = platform(&[("web", &remote(&repo.url, "web", "1.0.0"), "replicas: 2\n")]);
    let root = tmp.path();
    assert_eq!(pull(root, &helm).status.code(), Some(0));
    common::git(root, &["init", "-q"]);
    common::git(root, &["add", "-A"]);
    common::git(root, &["commit", "-qm", "web 1"]);
    // A chart bump; the old archive is no longer in the store.
    let config = charts::read(&root.join("gitops/platform/web/config.yaml"));
    write(
        root,
        "gitops/platform/web/config.yaml",
        &config.replace("version: 1.0.0", "version: 2.0.0"),
    );
    std::fs::remove_dir_all(root.join(".strata/charts")).unwrap();
    assert_eq!(pull(root, &helm).status.code(), Some(0));
    let out = strata_with(
        root,
        Some(&helm),
        &["diff", "--base", "HEAD", "--env", "dev", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let diff: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let notes = diff["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("chart of web renders in dev is not compared")),
        "{diff:#}"
    );
    assert!(
        !diff["objects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["target"] == "chart"),
        "{diff:#}"
    );
    // The release itself still shows the bump.
    assert!(
        diff["objects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["kind"] == "HelmRelease"),
        "{diff:#}"
    );
    // With both archives in the store, the chart objects are compared.
    std::fs::remove_dir_all(root.join(".strata")).unwrap();
    write(root, "gitops/platform/web/config.yaml", &config);
    assert_eq!(pull(root, &helm).status.code(), Some(0));
    write(
        root,
        "gitops/platform/web/config.yaml",
        &config.replace("version: 1.0.0", "version: 2.0.0"),
    );
    assert_eq!(pull(root, &helm).status.code(), Some(0));
    let out = strata_with(
        root,
        Some(&helm),
        &["diff", "--base", "HEAD", "--env", "dev", "--format", "json"],
    );
    let diff: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(diff["notes"].as_array().unwrap().is_empty(), "{diff:#}");
    assert!(
        diff["objects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["target"] == "chart" && o["kind"] == "Deployment"),
        "{diff:#}"
    );
}

#[test]
fn diff_shows_what_a_new_crd_changes_in_charts_that_ask_for_api_versions() {
    let helm = need_helm!();
    let tmp = platform(&[("monitor", "chart:\n  path: charts/monitor\n", "{}\n")]);
    let root = tmp.path();
    write(
        root,
        "charts/monitor/Chart.yaml",
        "apiVersion: v2\nname: monitor\nversion: 0.1.0\n",
    );
    write(
        root,
        "charts/monitor/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-base\n\
         {{- if .Capabilities.APIVersions.Has \"example.com/v1/Widget\" }}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-widgets\n{{- end }}\n",
    );
    common::copy_dir(&charts::chart_dir("widget"), &root.join("charts/widget"));
    common::git(root, &["init", "-q"]);
    common::git(root, &["add", "-A"]);
    common::git(root, &["commit", "-qm", "monitor"]);
    // A new component whose chart ships the Widget CRD: the change reaches
    // only that component, but the monitor chart now renders one more object.
    write(
        root,
        "gitops/platform/widgets/config.yaml",
        "component: widgets\nnamespace: widgets\nsync: automated\ntier: addon\nchart:\n  path: charts/widget\n",
    );
    write(root, "gitops/platform/widgets/values.yaml", "spec:\n  colour: blue\n");
    let (_, _, chart_objects) = chart_diff(root, &helm);
    assert!(
        chart_objects.contains(&"added ConfigMap monitor-widgets".to_owned()),
        "{chart_objects:?}"
    );
    assert!(
        chart_objects.contains(&"added Widget widgets".to_owned()),
        "{chart_objects:?}"
    );
    // The monitor's other object is the same on both sides: not listed.
    assert!(
        !chart_objects.iter().any(|o| o.contains("monitor-base")),
        "{chart_objects:?}"
    );
}

/// The CRDs the cluster has before any component runs (`crds_provided:`)
/// are API versions a chart that asks `.Capabilities.APIVersions` sees: a
/// chart that refuses to render without the Gateway API renders, and one
/// that renders a Gateway only where the cluster serves it does.
#[test]
fn crds_the_cluster_provides_are_api_versions_the_charts_see() {
    let helm = need_helm!();
    let tmp = platform(&[("edge", "chart:\n  path: charts/edge\n", "{}\n")]);
    let root = tmp.path();
    write(
        root,
        "charts/edge/Chart.yaml",
        "apiVersion: v2\nname: edge\nversion: 0.1.0\n",
    );
    write(
        root,
        "charts/edge/templates/gateway.yaml",
        "{{- if not (.Capabilities.APIVersions.Has \"gateway.networking.k8s.io/v1\") }}\n\
         {{- fail \"the cluster needs the Gateway API (gateway.networking.k8s.io/v1)\" }}\n\
         {{- end }}\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-base\n\
         {{- if .Capabilities.APIVersions.Has \"gateway.networking.k8s.io/v1/Gateway\" }}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: {{ .Release.Name }}\n\
         spec:\n  gatewayClassName: edge\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n{{- end }}\n",
    );
    // Not provided: the chart refuses, and the help points at crds_provided.
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E012]"), "{err}");
    assert!(err.contains("the cluster needs the Gateway API"), "{err}");
    assert!(err.contains("crds_provided"), "{err}");

    // Provided as a group: every version the environment's objects use of
    // it. None uses one yet: the chart still refuses.
    let strata_yaml = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(
        root,
        "strata.yaml",
        &format!("{strata_yaml}crds_provided: [gateway.networking.k8s.io]\n"),
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "staging"]);
    assert!(stderr(&out).contains("error[E012]"), "{}", stderr(&out));
    // An HTTPRoute among the manifests uses v1: now the chart renders.
    write(
        root,
        "gitops/platform/edge/manifests/route.yaml",
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: web\n  namespace: edge\nspec:\n  parentRefs: [{name: edge}]\n",
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "staging"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Provided as an API version with its kind: the Gateway is rendered too.
    std::fs::remove_file(root.join("gitops/platform/edge/manifests/route.yaml")).unwrap();
    write(
        root,
        "strata.yaml",
        &format!("{strata_yaml}crds_provided: [gateway.networking.k8s.io/v1/Gateway]\nhydrate: true\n"),
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "staging"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gateway = root.join("rendered/staging/flux/components/edge/gateway-edge.yaml");
    assert!(gateway.is_file(), "{}", stderr(&out));
    // ORD001 reads the group out of the version: the Gateway's CRD is the cluster's.
    assert!(!stderr(&out).contains("ORD001"), "{}", stderr(&out));
}
