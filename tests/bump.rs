//! `strata diff` on a chart bump: the test chart `shop` in two versions,
//! pulled from a chart repository served over HTTP on 127.0.0.1 into the
//! store at each of two commits. 2.0.0 renames `replicaCount` to
//! `replicas`, stops reading `legacyAnnotations` (which 1.0.0 read only
//! through `index`), keeps reading `team` only through a `tpl` string of its
//! defaults and `extraEnv` only through `index`, names `debug` only in its
//! `values.schema.json`, and changes the defaults `image.tag`, `logLevel`
//! and `service.port`. What strata says each key does is checked against
//! what helm itself renders.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};

use common::charts::{self, Repo, platform, remote, strata_with};
use common::*;
use serde_json::{Value, json};

const VALUES: &str = "\
replicaCount: 2
service:
  port: 8081
legacyAnnotations:
  owner: team-a
extraEnv:
  MODE: fast
team: payments
debug: true
cache:
  enabled: true
  size: 2Gi
";

const STAGING: &str = "logLevel: debug\nreplicaCount: 3\n";

const SHOP: &str = "gitops/platform/shop";

/// A repository whose base commit pins shop 1.0.0 and whose working tree
/// pins 2.0.0, both pulled into the store; and the repository server.
fn bumped() -> (tempfile::TempDir, Repo) {
    let repo = Repo::serve(&["shop-1", "shop-2"]);
    let tmp = platform(&[("shop", &remote(&repo.url, "shop", "1.0.0"), VALUES)]);
    let root = tmp.path();
    write(root, &format!("{SHOP}/values-staging.yaml"), STAGING);
    write(root, ".gitignore", ".strata/\n");
    let pulled = strata_with(root, None, &["charts", "pull"]);
    assert_eq!(pulled.status.code(), Some(0), "{}", stderr(&pulled));
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "shop 1"]);
    let config = root.join(SHOP).join("config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("version: 1.0.0", "version: 2.0.0")).unwrap();
    let pulled = strata_with(root, None, &["charts", "pull"]);
    assert_eq!(pulled.status.code(), Some(0), "{}", stderr(&pulled));
    (tmp, repo)
}

fn diff(root: &Path, format: &str) -> String {
    let out = strata_with(root, None, &["diff", "--base", "HEAD", "--format", format]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

/// The JSON entry of shop's bump in one environment.
fn entry(doc: &Value, env: &str) -> Value {
    doc["chart_bumps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["environment"] == env && b["component"] == "shop")
        .unwrap_or_else(|| panic!("no bump in {env}: {doc:#}"))
        .clone()
}

fn paths(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|x| x["path"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_bump_names_the_overrides_it_stops_reading_and_the_defaults_it_changes() {
    let (tmp, _repo) = bumped();
    let root = tmp.path();
    let doc: Value = serde_json::from_str(&diff(root, "json")).unwrap();
    let staging = entry(&doc, "staging");
    assert_eq!(
        (&staging["chart"], &staging["old_version"], &staging["new_version"]),
        (&json!("shop"), &json!("1.0.0"), &json!("2.0.0"))
    );
    assert_eq!(staging["source"]["file"], format!("{SHOP}/config.yaml"));
    // Read by 1.0.0 and not by 2.0.0: the renamed key (where the merge
    // takes it from, and the lower layer that sets it too), and the key
    // 1.0.0 read only through `index`. Not `team` (a tpl string of the
    // defaults reads it), not `extraEnv` (`index`), not `debug` (the
    // schema names it), not `cache.*` (the subchart and its condition).
    // In the order the layers write them.
    assert_eq!(
        paths(&staging["stale_overrides"]),
        ["replicaCount", "legacyAnnotations.owner"]
    );
    let renamed = &staging["stale_overrides"][0];
    assert_eq!(
        (&renamed["file"], &renamed["line"]),
        (&json!(format!("{SHOP}/values-staging.yaml")), &json!(2))
    );
    assert_eq!(
        renamed["also"],
        json!([{"file": format!("{SHOP}/values.yaml"), "line": 1, "column": 1}])
    );
    assert_eq!(renamed["old_read"], "shop/templates/deployment.yaml:10");
    assert_eq!(renamed["hint"], "replicas");
    let legacy = &staging["stale_overrides"][1];
    assert_eq!(
        (&legacy["file"], &legacy["line"]),
        (&json!(format!("{SHOP}/values.yaml")), &json!(5))
    );
    assert_eq!(legacy["old_read"], "shop/templates/deployment.yaml:7");

    // Defaults changed under keys no layer sets: in staging logLevel is set,
    // in dev it is not; service.port is set everywhere.
    assert_eq!(paths(&staging["changed_defaults"]), ["image.tag", "replicas"]);
    assert_eq!(
        staging["changed_defaults"][0],
        json!({"path": "image.tag", "old": "1.27", "new": "1.28"})
    );
    assert_eq!(staging["changed_defaults"][1], json!({"path": "replicas", "new": 1}));
    let dev = entry(&doc, "dev");
    assert_eq!(paths(&dev["changed_defaults"]), ["image.tag", "logLevel", "replicas"]);
    assert_eq!(
        dev["changed_defaults"][1],
        json!({"path": "logLevel", "old": "info", "new": "warn"})
    );
    let renamed = &dev["stale_overrides"][0];
    assert_eq!(
        (&renamed["file"], &renamed["line"]),
        (&json!(format!("{SHOP}/values.yaml")), &json!(1))
    );
    assert_eq!(renamed["also"], json!([]));

    // The text folds the environments that read the same.
    let text = diff(root, "text");
    assert!(
        text.contains("~ shop in dev, production: chart shop 1.0.0 -> 2.0.0 (gitops/platform/shop/config.yaml:"),
        "{text}"
    );
    assert!(text.contains(
        "override no longer read: replicaCount at gitops/platform/shop/values-staging.yaml:2 (1.0.0 read it at shop/templates/deployment.yaml:10; perhaps now replicas)\n      also set at gitops/platform/shop/values.yaml:1"
    ), "{text}");
    assert!(
        text.contains("default changed: image.tag \"1.27\" -> \"1.28\""),
        "{text}"
    );
    let md = diff(root, "markdown");
    assert!(md.contains("**Chart bumps**"), "{md}");
    assert!(
        md.contains(
            "override `legacyAnnotations.owner` is no longer read (set at `gitops/platform/shop/values.yaml:5`)"
        ),
        "{md}"
    );
    assert!(md.contains("default `logLevel`: `\"info\"` → `\"warn\"`"), "{md}");
}

#[test]
fn a_version_missing_from_the_store_is_named_not_guessed() {
    let (tmp, _repo) = bumped();
    let root = tmp.path();
    let (_, _, old) = charts::package(&charts::chart_dir("shop-1"));
    let stored = root.join(format!(".strata/charts/sha256-{}.tgz", charts::sha256_hex(&old)));
    std::fs::remove_file(&stored).unwrap();
    let doc: Value = serde_json::from_str(&diff(root, "json")).unwrap();
    let staging = entry(&doc, "staging");
    assert_eq!(staging["compared"], false);
    assert_eq!(staging["unavailable"]["side"], "base");
    assert_eq!(
        staging["unavailable"]["reason"],
        "shop 1.0.0 at HEAD is not in .strata/charts"
    );
    assert!(staging.get("stale_overrides").is_none());
    let text = diff(root, "text");
    assert!(
        text.contains("not compared: shop 1.0.0 at HEAD is not in .strata/charts"),
        "{text}"
    );
    assert!(
        text.contains("run `strata charts pull` on a checkout of HEAD"),
        "{text}"
    );
}

/// `helm template` of a test chart with these values (as YAML).
fn render(helm: &Path, chart: &Path, values: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("values.yaml");
    std::fs::write(&file, values).unwrap();
    let out = std::process::Command::new(helm)
        .args(["template", "shop"])
        .arg(chart)
        .arg("-f")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The release's values without one top-level key.
fn without(values: &str, key: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in values.lines() {
        if !line.starts_with(' ') {
            skipping = line.starts_with(&format!("{key}:"));
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn helm_agrees_with_what_the_bump_says_each_key_does() {
    let helm = need_helm!();
    let (tmp, _repo) = bumped();
    let doc: Value = serde_json::from_str(&diff(tmp.path(), "json")).unwrap();
    let dev = entry(&doc, "dev");
    let stale: Vec<String> = paths(&dev["stale_overrides"]);
    let dirs: Vec<PathBuf> = ["shop-1", "shop-2"].iter().map(|c| charts::chart_dir(c)).collect();
    let [old, new] = [&dirs[0], &dirs[1]].map(|d| render(&helm, d, VALUES));
    for key in ["replicaCount", "legacyAnnotations", "team", "extraEnv", "cache"] {
        let gone = without(VALUES, key);
        let stops_mattering = stale.iter().any(|s| s.split('.').next() == Some(key));
        // 1.0.0 reads every one of them: leaving it out changes the render.
        assert_ne!(render(&helm, &dirs[0], &gone), old, "1.0.0 ignores {key}");
        // 2.0.0 renders the same without a key strata calls unread, and
        // differently without one it reads.
        let same = render(&helm, &dirs[1], &gone) == new;
        assert_eq!(same, stops_mattering, "{key}: strata says stale = {stops_mattering}");
    }
    // The defaults strata lists as changed are what helm renders without
    // the override: 2.0.0's image tag, one replica.
    assert!(
        new.contains("image: \"nginx:1.28\"") && new.contains("replicas: 1"),
        "{new}"
    );
    assert!(
        old.contains("image: \"nginx:1.27\"") && old.contains("replicas: 2"),
        "{old}"
    );
}
