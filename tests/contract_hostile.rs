//! Contracts and environments that are not what they seem: a contract that
//! is a Git LFS pointer, a git-crypt blob, or what a repository's own git
//! filter stored; an environments folder that is a link out of the
//! repository. Each is named as what it is, at its file, in well under five
//! seconds.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::*;

const CONTRACT: &str = "contracts/staging.json";

fn timed(root: &Path, args: &[&str]) -> Output {
    let started = Instant::now();
    let out = strata(root, args);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    out
}

/// `check --env staging` is refused with `code`, and says `words`.
fn refused_with(root: &Path, code: &str, words: &[&str]) -> String {
    let out = timed(root, &["check", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("error[{code}]")), "{err}");
    for w in words {
        assert!(err.contains(w), "no {w:?} in:\n{err}");
    }
    assert!(!err.contains("error[E005]"), "{err}");
    err
}

#[test]
fn a_contract_that_is_a_git_lfs_pointer_is_named() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    write(
        root,
        CONTRACT,
        "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 4242\n",
    );
    refused_with(root, "E030", &[CONTRACT, "Git LFS pointer", "git lfs pull"]);
}

#[test]
fn a_contract_that_git_crypt_left_encrypted_is_named() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    std::fs::write(root.join(CONTRACT), b"\0GITCRYPT\0\x8f\x12\x00\xff\xfe binary").unwrap();
    refused_with(root, "E030", &[CONTRACT, "encrypted by git-crypt", "git-crypt unlock"]);
}

/// A repository's own filter (`.gitattributes`: `filter=vault`), whose
/// smudge step did not run here: strata names the filter.
#[test]
fn a_contract_under_a_repositorys_filter_is_named_in_the_working_tree() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    git(root, &["init", "-q"]);
    write(root, ".gitattributes", "contracts/*.json filter=vault\n");
    write(
        root,
        CONTRACT,
        "vault:v1:c29tZSBjaXBoZXJ0ZXh0IG9mIHRoZSBjb250cmFjdA==\n",
    );
    refused_with(root, "E030", &[CONTRACT, "git filter `vault`", ".gitattributes"]);
}

/// The same in a diff's base: git stores what the clean step wrote (here
/// base64), the working tree holds the contract.
#[test]
fn a_contract_under_a_repositorys_filter_is_named_in_the_base_revision() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    git(root, &["init", "-q"]);
    git(root, &["config", "filter.vault.clean", "base64"]);
    git(root, &["config", "filter.vault.smudge", "base64 -d"]);
    write(root, ".gitattributes", "contracts/*.json filter=vault\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let stored = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["cat-file", "-p", &format!("HEAD:{CONTRACT}")])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&stored.stdout).contains("substrate"),
        "the filter stored the file"
    );
    let out = timed(root, &["diff", "--base", "HEAD"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error[E030]") && err.contains("git filter `vault`"),
        "{err}"
    );
    assert!(!err.contains("error[E005]"), "{err}");
}

#[test]
fn an_environments_folder_linked_out_of_the_repository_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("platform");
    std::fs::create_dir(&root).unwrap();
    copy_dir(&repo().join("fixtures/homelab"), &root);
    let _ = std::fs::remove_dir_all(root.join("rendered"));
    std::fs::rename(root.join("environments"), tmp.path().join("environments")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("environments"), root.join("environments")).unwrap();
    for args in [&["check", "--env", "staging"][..], &["check"]] {
        let out = timed(&root, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("`environments` is a symbolic link to"), "{args:?}: {err}");
        assert!(!err.contains("there is no environments/staging.yaml"), "{err}");
    }
}
