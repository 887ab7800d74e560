//! `--shard K/N`: the shares of a CI matrix are disjoint and cover every
//! environment, stay put when an environment is added, and a sharded render
//! owns its environments' folders only (it never removes another shard's
//! files); the reports of the N jobs add up to the unsharded one.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;

use common::{snapshot_tree, stderr, stdout};

const N: u32 = 3;

fn strata(root: &Path, args: &[&str]) -> Output {
    let mut full = vec!["--inflate", "off"];
    full.extend_from_slice(args);
    common::strata(root, &full)
}

/// A synthetic platform of `envs` environments (dev, env1, env2, …).
fn generated(envs: usize) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "generate",
            "--components",
            "3",
            "--envs",
            &envs.to_string(),
            "--lines",
            "40",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        std::fs::rename(e.path(), tmp.path().join(e.file_name())).unwrap();
    }
    std::fs::remove_dir(&dir).unwrap();
    tmp
}

/// The environments `--shard k/N` says it compiles.
fn shard_envs(root: &Path, k: u32) -> BTreeSet<String> {
    let out = strata(root, &["--shard", &format!("{k}/{N}"), "check"]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(2), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with(&format!("shard {k}/{N}")))
        .unwrap_or_else(|| panic!("no shard line:\n{err}"));
    match line.split_once(": ") {
        Some((_, envs)) if !line.contains("holds no environment") => envs.split(", ").map(str::to_owned).collect(),
        _ => BTreeSet::new(),
    }
}

fn env_names(root: &Path) -> BTreeSet<String> {
    std::fs::read_dir(root.join("environments"))
        .unwrap()
        .map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".yaml")
                .to_owned()
        })
        .collect()
}

fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    snapshot_tree(&root.join("rendered")).into_iter().collect()
}

/// The top folders (environments) under which two trees differ.
fn changed_envs(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>) -> BTreeSet<String> {
    let paths: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    paths
        .into_iter()
        .filter(|p| a.get(*p) != b.get(*p) && !p.starts_with('.'))
        .map(|p| p.split('/').next().unwrap().to_owned())
        .collect()
}

#[test]
fn the_shares_are_disjoint_and_cover_every_environment() {
    let tmp = generated(9);
    let root = tmp.path();
    let all = env_names(root);
    let shares: Vec<BTreeSet<String>> = (1..=N).map(|k| shard_envs(root, k)).collect();
    let mut union = BTreeSet::new();
    for (i, s) in shares.iter().enumerate() {
        for e in s {
            assert!(union.insert(e.clone()), "{e} is in two shares (the second: {})", i + 1);
        }
    }
    assert_eq!(union, all);
}

#[test]
fn an_added_environment_moves_no_other() {
    let tmp = generated(8);
    let root = tmp.path();
    let before: Vec<BTreeSet<String>> = (1..=N).map(|k| shard_envs(root, k)).collect();
    // A copy of an environment under a new name, contract and all.
    std::fs::copy(root.join("environments/env1.yaml"), root.join("environments/edge.yaml")).unwrap();
    let after: Vec<BTreeSet<String>> = (1..=N).map(|k| shard_envs(root, k)).collect();
    for (b, a) in before.iter().zip(&after) {
        assert!(b.is_subset(a), "{b:?} -> {a:?}");
        assert!(a.difference(b).all(|e| e == "edge"), "{b:?} -> {a:?}");
    }
    assert_eq!(after.iter().filter(|a| a.contains("edge")).count(), 1);
}

#[test]
fn sharded_renders_into_one_tree_add_up_to_the_whole_render_and_touch_only_their_own() {
    let tmp = generated(9);
    let root = tmp.path();
    let out = strata(root, &["render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let whole = tree(root);

    // A change in every environment: a component removed.
    std::fs::remove_dir_all(root.join("gitops/platform/component-0002")).unwrap();
    let stale = strata(root, &["render", "--check"]);
    assert_eq!(stale.status.code(), Some(1));
    let mut current = whole.clone();
    for k in 1..=N {
        let envs = shard_envs(root, k);
        let out = strata(root, &["--shard", &format!("{k}/{N}"), "render"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let next = tree(root);
        let touched = changed_envs(&current, &next);
        assert!(
            touched.is_subset(&envs),
            "shard {k}/{N} of {envs:?} changed {touched:?}"
        );
        // Another shard's files are still there, as they were.
        for (path, bytes) in &current {
            let env = path.split('/').next().unwrap();
            if !envs.contains(env) && !path.starts_with('.') {
                assert_eq!(next.get(path), Some(bytes), "shard {k}/{N} changed {path}");
            }
        }
        // `render --check` of the shard is clean; of the whole, only once all ran.
        let checked = strata(root, &["--shard", &format!("{k}/{N}"), "render", "--check"]);
        assert_eq!(checked.status.code(), Some(0), "{}", stderr(&checked));
        current = next;
    }
    let checked = strata(root, &["render", "--check"]);
    assert_eq!(checked.status.code(), Some(0), "{}", stderr(&checked));
    // The same bytes as one render of the whole tree.
    let sharded = current;
    std::fs::remove_dir_all(root.join("rendered")).unwrap();
    let out = strata(root, &["render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(tree(root), sharded);
}

#[test]
fn a_removed_environment_is_cleared_by_its_own_shard_only() {
    let tmp = generated(6);
    let root = tmp.path();
    let out = strata(root, &["render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let owner = (1..=N).find(|&k| shard_envs(root, k).contains("env2")).unwrap();
    std::fs::remove_file(root.join("environments/env2.yaml")).unwrap();
    for k in (1..=N).filter(|&k| k != owner) {
        let out = strata(root, &["--shard", &format!("{k}/{N}"), "render"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(root.join("rendered/env2").is_dir(), "shard {k}/{N} removed env2");
    }
    let checked = strata(root, &["--shard", &format!("{owner}/{N}"), "render", "--check"]);
    assert_eq!(checked.status.code(), Some(1), "{}", stderr(&checked));
    assert!(
        stderr(&checked).contains("no longer rendered: rendered/env2/"),
        "{}",
        stderr(&checked)
    );
    let out = strata(root, &["--shard", &format!("{owner}/{N}"), "render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!root.join("rendered/env2").exists());
    let checked = strata(root, &["render", "--check"]);
    assert_eq!(checked.status.code(), Some(0), "{}", stderr(&checked));
}

/// The findings of `check --format json`, one line each.
fn findings(root: &Path, shard: Option<u32>) -> BTreeSet<String> {
    let s = shard.map(|k| format!("{k}/{N}"));
    let mut args = Vec::new();
    if let Some(s) = &s {
        args.extend(["--shard", s.as_str()]);
    }
    args.extend(["check", "--format", "json"]);
    let out = strata(root, &args);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.to_string())
        .collect()
}

#[test]
fn the_shards_reports_add_up_to_the_whole_report() {
    let tmp = generated(7);
    let root = tmp.path();
    // A finding in every environment: an expired waiver.
    for e in env_names(root) {
        let path = root.join(format!("environments/{e}.yaml"));
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("waivers:\n  - rule: HA001\n    component: component-0000\n    reason: one host for now\n    expires: 2020-01-31\n");
        std::fs::write(&path, text).unwrap();
    }
    let whole = findings(root, None);
    let union: BTreeSet<String> = (1..=N).flat_map(|k| findings(root, Some(k))).collect();
    assert_eq!(union, whole);
    let expired = whole.iter().filter(|d| d.contains("expired on 2020-01-31")).count();
    assert_eq!(expired, env_names(root).len(), "{whole:#?}");

    // Each shard's SARIF run has a category of its own.
    let out = strata(root, &["--shard", "2/3", "check", "--format", "sarif"]);
    let sarif: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(sarif["runs"][0]["automationDetails"]["id"], "strata/shard-2-of-3/");
}

#[test]
fn shard_is_refused_where_it_does_not_apply() {
    let tmp = generated(2);
    let root = tmp.path();
    for (args, says) in [
        (vec!["--shard", "1/2", "check", "--env", "dev"], "give one of them"),
        (
            vec!["--shard", "1/2", "gates", "--check"],
            "applies to render, check and diff only",
        ),
        (vec!["--shard", "3/2", "check"], "K counts from 1 to N"),
        (vec!["--shard", "two", "check"], "is not K/N"),
    ] {
        let out = strata(root, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// The changed objects of `diff --base HEAD --format json`, one line each.
fn diffed(root: &Path, shard: Option<u32>) -> BTreeSet<String> {
    let s = shard.map(|k| format!("{k}/{N}"));
    let mut args = Vec::new();
    if let Some(s) = &s {
        args.extend(["--shard", s.as_str()]);
    }
    args.extend(["diff", "--base", "HEAD", "--format", "json"]);
    let out = strata(root, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.to_string())
        .collect()
}

#[test]
fn the_shards_diffs_add_up_to_the_whole_diff() {
    let tmp = generated(7);
    let root = tmp.path();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    for e in env_names(root) {
        common::write(
            root,
            &format!("gitops/platform/component-0001/values-{e}.yaml"),
            "replicaCount: 5\n",
        );
    }
    let whole = diffed(root, None);
    let shares: Vec<BTreeSet<String>> = (1..=N).map(|k| diffed(root, Some(k))).collect();
    let total: usize = shares.iter().map(BTreeSet::len).sum();
    let union: BTreeSet<String> = shares.into_iter().flatten().collect();
    assert_eq!(total, union.len(), "an object is in two shards' diffs");
    assert_eq!(union, whole);
    assert!(whole.len() >= env_names(root).len(), "{whole:#?}");
}
