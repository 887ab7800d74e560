//! Hostile input: each case gets a clear error at file:line:column and exit
//! 2, nothing written, and no panic, hang or runaway memory. And data
//! safety: a render killed at any point leaves a whole tree, and concurrent
//! renders of one tree do not corrupt it.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

const VALUES: &str = "gitops/platform/traefik/values-staging.yaml";

#[test]
fn tabs_in_indentation() {
    let err = refused(|r| write(r, VALUES, "service:\n\ttype: LoadBalancer\n"));
    assert!(err.contains(&format!("{VALUES}:2:1")), "{err}");
    assert!(err.contains("tab"), "{err}");
}

#[test]
fn billion_laughs() {
    let mut text =
        String::from("a: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n");
    let mut prev = 'a';
    for c in 'b'..='i' {
        text.push_str(&format!(
            "{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
        ));
        prev = c;
    }
    let err = refused(|r| write(r, VALUES, &text));
    assert!(err.contains(VALUES), "{err}");
}

#[test]
fn a_large_anchored_scalar_repeated_thousands_of_times() {
    let mut text = format!("big: &big \"{}\"\nrefs:\n", "x".repeat(64 * 1024));
    for _ in 0..5000 {
        text.push_str("  - *big\n");
    }
    let err = refused(|r| write(r, VALUES, &text));
    assert!(err.contains(VALUES), "{err}");
}

#[test]
fn a_100_megabyte_values_file_is_refused_over_the_limit() {
    let err = refused(|r| {
        let f = std::fs::File::create(r.join(VALUES)).unwrap();
        f.set_len(100 * 1024 * 1024).unwrap();
    });
    assert!(err.contains(VALUES) && err.contains("over the limit"), "{err}");
}

#[test]
fn non_utf8_bytes_are_placed() {
    let err = refused(|r| std::fs::write(r.join(VALUES), b"a: 1\nb: caf\xe9\n").unwrap());
    assert!(err.contains(&format!("{VALUES}:2:7")), "{err}");
    assert!(err.contains("UTF-8"), "{err}");
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let tmp = scratch("homelab");
    std::fs::write(tmp.path().join(VALUES), "\u{feff}logs:\n  general:\n    level: INFO\n").unwrap();
    let out = strata(tmp.path(), &["render", "--env", "staging"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    let block: String = (0..5000).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
    let err = refused(|r| write(r, VALUES, &block));
    assert!(err.contains(VALUES), "{err}");
    let flow = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let err = refused(|r| write(r, VALUES, &flow));
    assert!(err.contains(VALUES), "{err}");
}

#[test]
fn paths_that_leave_the_repository() {
    let err = refused(|r| {
        let p = r.join("environments/staging.yaml");
        let s = std::fs::read_to_string(&p)
            .unwrap()
            .replace("contracts/staging.json", "../../etc/passwd");
        std::fs::write(p, s).unwrap();
    });
    assert!(
        err.contains("environments/staging.yaml:") && err.contains("climbs above the root"),
        "{err}"
    );
    let err = refused(|r| {
        let p = r.join("environments/staging.yaml");
        let s = std::fs::read_to_string(&p)
            .unwrap()
            .replace("contracts/staging.json", "/etc/passwd");
        std::fs::write(p, s).unwrap();
    });
    assert!(err.contains("is absolute"), "{err}");
    let err = refused(|r| {
        let p = r.join("gitops/platform/traefik/config.yaml");
        let s = std::fs::read_to_string(&p)
            .unwrap()
            .replace("component: traefik", "component: ../traefik");
        std::fs::write(p, s).unwrap();
    });
    assert!(err.contains("gitops/platform/traefik/config.yaml:1:"), "{err}");
}

#[test]
fn templates_cannot_include_files_outside() {
    for target in ["../../../../etc/passwd", "/etc/passwd"] {
        let err = refused(|r| {
            write(
                r,
                "gitops/platform/traefik/manifests/configmap-inc.yaml.j2",
                &format!("{{% include \"{target}\" %}}\n"),
            )
        });
        assert!(err.contains("configmap-inc.yaml.j2:1"), "{err}");
        assert!(err.contains("not found") || err.contains("template"), "{err}");
    }
}

#[test]
fn a_template_that_recurses_is_stopped() {
    let err = refused(|r| {
        write(
            r,
            "gitops/platform/traefik/manifests/configmap-rec.yaml.j2",
            "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}\n",
        )
    });
    assert!(err.contains("configmap-rec.yaml.j2"), "{err}");
}

#[cfg(unix)]
#[test]
fn symbolic_links_out_of_the_repository_and_loops() {
    let err = refused(|r| {
        std::fs::remove_file(r.join(VALUES)).ok();
        std::os::unix::fs::symlink("/etc/hostname", r.join(VALUES)).unwrap();
    });
    assert!(err.contains(VALUES) && err.contains("leaves the repository"), "{err}");
    let err = refused(|r| {
        std::fs::remove_file(r.join(VALUES)).ok();
        let other = r.join("gitops/platform/traefik/loop.yaml");
        std::os::unix::fs::symlink(&other, r.join(VALUES)).unwrap();
        std::os::unix::fs::symlink(r.join(VALUES), &other).unwrap();
    });
    assert!(err.contains(VALUES) && err.contains("loop"), "{err}");
}

#[test]
fn out_pointing_at_a_folder_strata_does_not_own() {
    let tmp = scratch("homelab");
    let mine = tmp.path().join("mine");
    write(&mine, "notes.txt", "keep me\n");
    let out = strata(tmp.path(), &["render", "--out", mine.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not written by strata"), "{}", stderr(&out));
    assert_eq!(
        snapshot_tree(&mine),
        vec![("notes.txt".to_owned(), b"keep me\n".to_vec())]
    );
    // An empty folder is fine.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = strata(tmp.path(), &["render", "--out", empty.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(empty.join("staging/flux/kustomization.yaml").is_file());
}

/// A big synthetic platform, rendered once; returns its folder.
fn big_platform(components: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["generate", "--components", components, "--envs", "3", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    tmp
}

#[test]
fn a_render_killed_at_any_point_leaves_a_whole_tree() {
    let tmp = big_platform("120");
    let root = tmp.path().join("p");
    assert!(strata(&root, &["render"]).status.success());
    let mut previous = snapshot_tree(&root.join("rendered"));
    // Each round changes the values, starts a render, and kills it after a
    // different delay; the tree must then be the previous one or the new one.
    let mut completed_new = 0;
    for round in 0..12u64 {
        write(
            &root,
            "gitops/platform/component-0003/values-env1.yaml",
            &format!("replicaCount: {}\n", round + 10),
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("--root")
            .arg(&root)
            .args(["--quiet", "render"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(40 + round * 37 % 400));
        let _ = child.kill();
        let _ = child.wait();
        let now = snapshot_tree(&root.join("rendered"));
        if now != previous {
            // Not the previous tree: then it must be exactly the new one.
            let check = strata(&root, &["render", "--check"]);
            assert_eq!(
                check.status.code(),
                Some(0),
                "round {round}: a torn tree: {}",
                stderr(&check)
            );
            completed_new += 1;
        }
        previous = now;
    }
    // The next render repairs whatever was left, and cleans up after the killed ones.
    let out = strata(&root, &["render"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(strata(&root, &["render", "--check"]).status.code(), Some(0));
    let leftovers: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("strata-staging") || n.contains("strata-old"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    eprintln!("{completed_new} of 12 killed renders had already swapped the new tree in");
}

#[test]
fn concurrent_renders_do_not_corrupt_the_tree() {
    let tmp = big_platform("40");
    let root = tmp.path().join("p");
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_strata"))
                .arg("--root")
                .arg(&root)
                .args(["--quiet", "render"])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(strata(&root, &["render", "--check"]).status.code(), Some(0));
}
