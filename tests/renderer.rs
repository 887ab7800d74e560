//! The chart renderer (`strata-helm-renderer`, built from `renderer/`) and
//! the helm binary give strata the same objects: every test chart (those of
//! `tests/charts/` and `renderer/testdata/charts/`) is rendered through
//! strata both ways, as local charts and as an archive from the store, with
//! several value sets, and the written trees and the diagnostics must be the
//! same bytes. The renderer's own Go tests compare it with `helm template`
//! directly; this test covers strata's client: framing, ids, parallel
//! requests, API versions, errors and the fallback.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::charts::{self, Repo};
use common::{snapshot_tree, stderr, write};

/// The renderer: `STRATA_HELM_RENDERER`, else `strata-helm-renderer` on the
/// PATH (`.ci/run` builds it there). Missing, the test is skipped with a
/// note, and fails in CI unless turned off (`STRATA_HELM_RENDERER=off`, as
/// `.ci/run` does where Go is not installed).
#[allow(clippy::disallowed_methods)]
fn renderer() -> Option<PathBuf> {
    let set = std::env::var_os("STRATA_HELM_RENDERER").filter(|v| !v.is_empty());
    if set.as_deref() == Some(std::ffi::OsStr::new("off")) {
        eprintln!("note: STRATA_HELM_RENDERER=off; skipping a test of the chart renderer");
        return None;
    }
    let found = set.map(PathBuf::from).or_else(|| {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("strata-helm-renderer"))
                .find(|p| p.is_file())
        })
    });
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("strata-helm-renderer is required in CI: .ci/run builds it (cd renderer && go build)");
        }
        eprintln!(
            "note: strata-helm-renderer not found; skipping (cd renderer && go build -o <PATH folder>/strata-helm-renderer .)"
        );
    }
    found
}

macro_rules! need {
    () => {
        match (charts::helm(), renderer()) {
            (Some(h), Some(r)) => (h, r),
            _ => return,
        }
    };
}

/// Runs strata with helm, and with the renderer or (`None`) without one.
fn strata(root: &Path, helm: &Path, renderer: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.arg("--root")
        .arg(root)
        .args(["--color", "never", "--inflate", "helm", "--verbose"])
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env_remove("NO_COLOR")
        .env("PATH", charts::path_without_helm())
        .env("STRATA_HELM", helm)
        .env(
            "STRATA_HELM_RENDERER",
            renderer.map_or_else(|| "off".into(), |r| r.as_os_str().to_owned()),
        );
    cmd.output().expect("run strata")
}

const ENVS: [&str; 3] = ["base", "overrides", "nulls"];

/// A platform of one kind cluster per value set, on topology `single`,
/// hydrated, without components yet.
fn platform() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        root,
        "strata.yaml",
        "platform: gitops/platform\nhydrate: true\ntargets: [flux]\n",
    );
    for env in ENVS {
        write(
            root,
            &format!("environments/{env}.yaml"),
            &format!(
                "substrate: kind\ncontract: contracts/{env}.json\ntopology: single\ngit:\n  url: https://git.example.com/p.git\n  revision: main\n"
            ),
        );
        write(
            root,
            &format!("contracts/{env}.json"),
            &format!(
                r#"{{"substrate": "kind", "cluster_name": "{env}", "endpoint": "https://127.0.0.1:6443", "internal_endpoint": "https://{env}-control-plane:6443",
  "nodes": [{{"name": "{env}-cp", "address": "172.18.0.2", "host": "h1", "roles": ["control-plane", "worker"], "labels": {{"kubernetes.io/hostname": "{env}-cp"}}, "cpu": 64, "memory_mib": 262144}}]}}"#
            ),
        );
    }
    tmp
}

/// A component with its config (after the name) and values per environment.
fn component(root: &Path, name: &str, config: &str, values: &[String]) {
    write(
        root,
        &format!("gitops/platform/{name}/config.yaml"),
        &format!("component: {name}\nnamespace: {name}\nsync: automated\ntier: addon\n{config}"),
    );
    write(
        root,
        &format!("gitops/platform/{name}/values.yaml"),
        values.first().map_or("", String::as_str),
    );
    for (env, v) in ENVS.iter().zip(values).skip(1) {
        write(root, &format!("gitops/platform/{name}/values-{env}.yaml"), v);
    }
}

/// A local chart, copied into the platform.
fn local(root: &Path, from: &Path, name: &str) -> String {
    common::copy_dir(from, &root.join("charts").join(name));
    format!("chart:\n  path: charts/{name}\n")
}

fn repo_dir(rel: &str) -> PathBuf {
    common::repo().join(rel)
}

/// Every file of a tree, with its bytes.
type Tree = Vec<(String, Vec<u8>)>;

/// Renders `root` both ways into two folders and returns both trees and
/// both outputs, after checking that the renderer, not the binary, rendered.
fn both_ways(root: &Path, helm: &Path, renderer: &Path, args: &[&str]) -> [(Tree, Output); 2] {
    [Some(renderer), None].map(|r| {
        // The same folder each time, so that messages naming it match.
        let out_dir = root.join("tree");
        let _ = std::fs::remove_dir_all(&out_dir);
        let _ = std::fs::remove_dir_all(root.join(".strata/cache/inflate"));
        let mut full: Vec<&str> = args.to_vec();
        let out_arg = out_dir.display().to_string();
        if args.first() == Some(&"render") {
            full.extend(["--out", &out_arg]);
        }
        let out = strata(root, helm, r, &full);
        let err = stderr(&out);
        let by = match r {
            Some(r) => format!("rendered by {}", r.display()),
            None => format!("rendered by the helm binary {}", helm.display()),
        };
        assert!(err.contains(&by), "expected `{by}`:\n{err}");
        (snapshot_tree(&out_dir), out)
    })
}

/// What strata printed, without the lines that name the program or time
/// the stages.
fn printed(o: &Output) -> String {
    stderr(o)
        .lines()
        .filter(|l| !l.starts_with("charts: ") && !l.contains(" ms"))
        .map(|l| format!("{l}\n"))
        .collect()
}

const OVERRIDES: &str = "replicas: 3\nreplicaCount: 2\npdb:\n  enabled: true\npodDisruptionBudget:\n  enabled: true\nnodeSelector:\n  disk: ssd\ndatabase:\n  host: db.example\nsize: 7\n";
const NULLS: &str =
    "nodeSelector: null\nresources: null\nimage:\n  tag: null\ntolerations: ~\ndatabase:\n  host: db.example\n";

#[test]
fn every_test_chart_renders_the_same_through_the_renderer_and_the_binary() {
    let (helm, renderer) = need!();
    let mut components: Vec<(String, String, [String; 3])> = Vec::new();
    let tmp = platform();
    let root = tmp.path();
    let mut add = |name: &str, from: PathBuf, values: [String; 3], extra: &str| {
        let chart = local(root, &from, name);
        components.push((name.to_owned(), format!("{chart}{extra}"), values));
    };
    let plain = || [String::new(), OVERRIDES.to_owned(), NULLS.to_owned()];
    for chart in ["cilium-mini", "gadget", "longhorn-mini", "strict", "web-1", "widget"] {
        let base = if chart == "strict" {
            "database:\n  host: db\n"
        } else {
            ""
        };
        add(
            chart,
            repo_dir(&format!("tests/charts/{chart}")),
            [base.to_owned(), OVERRIDES.to_owned(), NULLS.to_owned()],
            "",
        );
    }
    // A chart that generates a password each time stays a release.
    add("noisy", repo_dir("tests/charts/noisy"), plain(), "hydrate: false\n");
    for entry in std::fs::read_dir(repo_dir("tests/charts/standins")).unwrap() {
        let entry = entry.unwrap();
        let name = format!("standin-{}", entry.file_name().to_string_lossy());
        add(&name, entry.path(), plain(), "");
    }
    // One chart as an archive from the store, as pulled charts are.
    let repo = Repo::serve(&["web-2"]);
    components.push((
        "web-archive".to_owned(),
        format!("chart:\n  repoURL: {}\n  name: web\n  version: 2.0.0\n", repo.url),
        plain(),
    ));
    for (name, config, values) in &components {
        component(root, name, config, values);
    }
    let pulled = charts::strata_with(root, Some(&helm), &["charts", "pull"]);
    assert_eq!(pulled.status.code(), Some(0), "{}", stderr(&pulled));
    let by_renderer = same_trees(root, &helm, &renderer);
    assert!(by_renderer.len() > 100, "{} files", by_renderer.len());
    for (env, needle) in [
        ("overrides", "kind: PodDisruptionBudget"),
        ("base", "kind: CustomResourceDefinition"), // crds/
        ("base", "kind: Dial"),
    ] {
        assert!(contains(&by_renderer, env, needle), "no `{needle}` in {env}");
    }
}

/// Whether a file of `env` in a tree holds `needle`.
fn contains(tree: &[(String, Vec<u8>)], env: &str, needle: &str) -> bool {
    tree.iter()
        .any(|(p, b)| p.starts_with(&format!("{env}/")) && String::from_utf8_lossy(b).contains(needle))
}

#[test]
fn the_renderers_own_test_charts_render_the_same_through_it_and_the_binary() {
    let (helm, renderer) = need!();
    let tmp = platform();
    let root = tmp.path();
    let values = |chart: &str, file: &str| {
        std::fs::read_to_string(repo_dir(&format!("renderer/testdata/values/{chart}/{file}.yaml"))).unwrap()
    };
    // Nulls deleting defaults in the chart and its subchart, but not the
    // name `lookup` needs (a failure compared below).
    let nulls = values("app", "nulls").replace("existingSecret: null\n", "");
    let add = |name: &str, chart: &str, values: &[String]| {
        let config = local(root, &repo_dir(chart), name);
        component(root, name, &config, values);
    };
    // Subcharts under aliases with conditions, lookup, Capabilities, tpl,
    // Files, CRDs and hooks; the API versions come from widget's CRD.
    add(
        "app",
        "renderer/testdata/charts/app",
        &[values("app", "defaults"), values("app", "overrides"), nulls],
    );
    add(
        "guarded",
        "renderer/testdata/charts/guarded",
        &[values("guarded", "valid")],
    );
    add(
        "badyaml",
        "renderer/testdata/charts/badyaml",
        &[values("badyaml", "fine")],
    );
    add("widget", "tests/charts/widget", &[]);
    let by_renderer = same_trees(root, &helm, &renderer);
    for (env, needle) in [
        ("overrides", "says hi"),                   // tpl
        ("base", "kind: Gadget"),                   // APIVersions.Has
        ("base", "credentials: generated"),         // lookup, client-only
        ("overrides", "app-queue"),                 // a subchart under an alias, switched on
        ("base", "kind: CustomResourceDefinition"), // crds/
        ("base", "app.ini"),                        // .Files
    ] {
        assert!(contains(&by_renderer, env, needle), "no `{needle}` in {env}");
    }
}

/// Renders `root` with the renderer and with the binary, checks that both
/// trees and what strata printed are the same bytes, and returns the tree.
fn same_trees(root: &Path, helm: &Path, renderer: &Path) -> Tree {
    let [(by_renderer, r_out), (by_binary, b_out)] = both_ways(root, helm, renderer, &["render"]);
    assert_eq!(r_out.status.code(), Some(0), "{}", stderr(&r_out));
    assert_eq!(printed(&r_out), printed(&b_out));
    let names = |t: &[(String, Vec<u8>)]| t.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(names(&by_renderer), names(&by_binary));
    for ((path, a), (_, b)) in by_renderer.iter().zip(&by_binary) {
        assert!(
            a == b,
            "{path} differs:\n{}\n---\n{}",
            String::from_utf8_lossy(a),
            String::from_utf8_lossy(b)
        );
    }
    by_renderer
}

#[test]
fn failing_charts_fail_with_the_same_message_either_way() {
    let (helm, renderer) = need!();
    let values = |chart: &str, file: &str| {
        std::fs::read_to_string(repo_dir(&format!("renderer/testdata/values/{chart}/{file}.yaml"))).unwrap()
    };
    let cases: Vec<(&str, &str, String)> = vec![
        (
            "badyaml",
            "renderer/testdata/charts/badyaml",
            values("badyaml", "broken"),
        ),
        (
            "guarded",
            "renderer/testdata/charts/guarded",
            values("guarded", "explode"),
        ),
        (
            "guarded",
            "renderer/testdata/charts/guarded",
            values("guarded", "no-tag"),
        ),
        (
            "guarded",
            "renderer/testdata/charts/guarded",
            values("guarded", "null-required"),
        ),
        ("lib", "renderer/testdata/charts/lib", String::new()),
        ("undeclared", "renderer/testdata/charts/undeclared", String::new()),
        ("strict", "tests/charts/strict", String::new()),
        ("app", "renderer/testdata/charts/app", values("app", "nulls")),
    ];
    for (name, chart, v) in cases {
        let tmp = platform();
        let root = tmp.path();
        let config = local(root, &repo_dir(chart), name);
        component(root, name, &config, std::slice::from_ref(&v));
        let [(_, r_out), (_, b_out)] = both_ways(root, &helm, &renderer, &["check"]);
        let said = printed(&r_out);
        assert_eq!(r_out.status.code(), b_out.status.code(), "{name} {v}: {said}");
        assert_ne!(r_out.status.code(), Some(0), "{name} {v}: {said}");
        assert_eq!(said, printed(&b_out), "{name} {v}");
    }
}

#[test]
fn a_renderer_that_cannot_start_leaves_the_binary_to_render() {
    let (helm, _) = need!();
    let tmp = platform();
    let root = tmp.path();
    let config = local(root, &repo_dir("tests/charts/web-1"), "web");
    component(root, "web", &config, &[]);
    // A program that is not the renderer: it prints no helm build.
    let fake = root.join("fake-renderer");
    write(root, "fake-renderer", "#!/bin/sh\necho hello\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = strata(root, &helm, Some(&fake), &["check"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("rendered by the helm binary"), "{err}");
    assert!(err.contains("fake-renderer cannot be used"), "{err}");
}
