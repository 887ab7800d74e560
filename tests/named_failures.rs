//! What used to pass in silence, or under another name, is named for what
//! it is: a patch that matches nothing is a warning at its line; a tree
//! written outside the repository holds no path of this machine; a file
//! read through a symbolic link is named as a link, with where it leads.

mod common;

use std::path::Path;

use common::{scratch, stderr, strata, write};

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

#[test]
fn a_patch_that_matches_nothing_is_a_warning_at_its_line() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let config = "gitops/platform/traefik/config.yaml";
    let text = read(root, config);
    // The first patch names a HelmRelease that does not exist (a typo of
    // traefik); the second applies.
    write(
        root,
        config,
        &format!(
            "{text}patches:\n  - target: {{kind: HelmRelease, name: traefk}}\n    patch:\n      - {{op: add, path: /spec/timeout, value: 15m}}\n  - target: {{kind: HelmRelease, name: traefik}}\n    patch:\n      - {{op: add, path: /spec/timeout, value: 20m}}\n"
        ),
    );
    let line = read(root, config).lines().position(|l| l.contains("traefk")).unwrap() + 1;
    let env = "environments/dev.yaml";
    let e = read(root, env);
    write(
        root,
        env,
        &format!(
            "{e}patches:\n  - target: {{kind: GitRepository, name: nowhere}}\n    patch:\n      - {{op: add, path: /spec/interval, value: 9m}}\n"
        ),
    );
    let out = strata(root, &["render"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "a warning writes the tree: {err}");
    assert!(
        err.contains("warning[E042]: this patch matches no object in environment dev: nothing strata writes or the chart renders is a HelmRelease named traefk"),
        "{err}"
    );
    assert!(err.contains(&format!("--> {config}:{line}:")), "at its line: {err}");
    assert!(err.contains("is a GitRepository named nowhere"), "{err}");
    // Once for each environment, and the patch that applies is not named.
    assert_eq!(err.matches("named traefk").count(), 3, "{err}");
    assert!(!err.contains("HelmRelease named traefik"), "{err}");
    assert!(read(root, "rendered/dev/flux/components/traefik/helmrelease-traefik.yaml").contains("timeout: 20m"));
    // `strata rule` explains it.
    let rule = common::stdout(&strata(root, &["rule", "E042"]));
    assert!(rule.contains("patch-matches-nothing"), "{rule}");
}

#[test]
fn a_tree_written_outside_the_repository_holds_no_path_of_this_machine() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let elsewhere = tempfile::tempdir().unwrap();
    let out_dir = elsewhere.path().join("look");
    let out = strata(root, &["render", "--out", out_dir.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("outside the repository"), "{err}");
    let out = strata(root, &["render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The same bytes as the tree in its place, and no absolute path.
    let there = common::snapshot_tree(&out_dir);
    let here = common::snapshot_tree(&root.join("rendered"));
    assert!(!there.is_empty());
    assert_eq!(
        there.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        here.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for ((path, a), (_, b)) in there.iter().zip(&here) {
        let text = String::from_utf8_lossy(a);
        let tmp_path = elsewhere.path().display().to_string();
        assert!(!text.contains(&tmp_path), "{path} names {tmp_path}:\n{text}");
        assert!(a == b, "{path} differs from the tree written in place");
    }
}

#[cfg(unix)]
#[test]
fn a_file_read_through_a_link_out_is_named_as_a_link_out() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("argo");
    common::copy_dir(&common::repo().join("tests/import/argo"), &tree);
    // The git generator's file of one cluster, moved out and linked back.
    let config = tree.join("clusters/staging/config.json");
    let outside = tmp.path().join("stolen.json");
    std::fs::rename(&config, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &config).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(tmp.path())
        .args([
            "--color",
            "never",
            "--inflate",
            "off",
            "import",
            "argo",
            "argo",
            "--out",
            "platform",
        ])
        .env("STRATA_TODAY", "2026-12-02")
        .output()
        .unwrap();
    let err = stderr(&out);
    // The import's copy of the tree names the link and where it leads.
    assert!(
        err.contains(&format!(
            "argo/clusters/staging/config.json is a symbolic link to {}, which is outside the imported tree",
            outside.display()
        )),
        "{err}"
    );
    assert!(!err.contains("Too many levels"), "{err}");
    assert!(!tmp.path().join("platform").exists(), "nothing is written");
}

#[cfg(unix)]
#[test]
fn a_platform_file_read_through_a_link_out_is_named_as_a_link_out() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("values.yaml");
    let values = root.join("gitops/platform/traefik/values-dev.yaml");
    std::fs::rename(&values, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &values).unwrap();
    let out = strata(root, &["--inflate", "off", "check"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "path leaves the repository: `gitops/platform/traefik/values-dev.yaml` is a symbolic link to {}",
            outside.display()
        )),
        "{err}"
    );
    assert!(!err.contains("Too many levels"), "{err}");
}
