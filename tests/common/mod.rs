//! Helpers shared by the end-to-end tests: a scratch copy of a fixture
//! platform, and running the real `strata` binary on it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The helm binary a test runs with, or a return from the test: as
/// [`charts::helm`] decides (a note locally, a failure under `CI=true`).
#[allow(unused_macros)]
macro_rules! need_helm {
    () => {
        match $crate::common::charts::helm() {
            Some(h) => h,
            None => return,
        }
    };
}

pub mod admission;
#[macro_use]
pub mod apiserver;
pub mod charts;
pub mod skip;
pub mod standins;

pub use skip::skipped;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A folder of test data named by the environment variable `var` (as
/// `.ci/run` sets it), else `default`. Missing, it fails the test in CI
/// (`CI=true`); elsewhere the caller skips, and says so.
#[allow(clippy::disallowed_methods)]
pub fn required_dir(var: &str, default: Option<PathBuf>, what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(var).map(PathBuf::from).or(default);
    match dir {
        Some(d) if d.is_dir() => Some(d),
        other => {
            let why = match other {
                Some(d) => format!("{} is not a folder", d.display()),
                None => format!("{var} is not set"),
            };
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{what}: {why}; .ci/run finds it and sets {var}");
            }
            skipped(&format!("{what}: {why} (run .ci/run, or set {var})"));
            None
        }
    }
}

/// The CRD schema catalog of the kinds strata writes:
/// `STRATA_TEST_CRD_SCHEMAS`, else `../shared/schemas/crds` beside the
/// repository.
pub fn crd_schemas() -> Option<PathBuf> {
    required_dir(
        "STRATA_TEST_CRD_SCHEMAS",
        Some(repo().join("../shared/schemas/crds")),
        "CRD schemas",
    )
}

/// Copies `fixtures/<name>` (without its rendered tree) into a new temporary folder.
pub fn scratch(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_dir(&repo().join("fixtures").join(name), tmp.path());
    let _ = std::fs::remove_dir_all(tmp.path().join("rendered"));
    tmp
}

pub fn copy_dir(from: &Path, to: &Path) {
    // A `.strata/` state folder left by a local run is not part of a fixture.
    let walk = walkdir::WalkDir::new(from)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_name() != ".strata");
    for entry in walk {
        let entry = entry.expect("walk");
        let rel = entry.path().strip_prefix(from).expect("prefix");
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).expect("mkdir");
        } else {
            std::fs::copy(entry.path(), &dest).expect("copy");
        }
    }
}

pub fn strata(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--root")
        .arg(root)
        .arg("--color")
        .arg("never")
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env_remove("NO_COLOR")
        .output()
        .expect("run strata")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Breaks a scratch copy of the example with `edit`, renders it, and returns
/// stderr, checking the render was refused as bad input should be: exit 2,
/// nothing written, a help line, no panic, and no hang.
pub fn refused(edit: impl FnOnce(&Path)) -> String {
    let tmp = scratch("homelab");
    edit(tmp.path());
    let started = std::time::Instant::now();
    let out = strata(tmp.path(), &["render"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!tmp.path().join("rendered").exists(), "something was written: {err}");
    assert!(err.contains("help:"), "no help line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    err
}

/// Every file under `dir` with its bytes, sorted by path.
pub fn snapshot_tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.expect("walk");
        if entry.file_type().is_file() {
            let rel = entry
                .path()
                .strip_prefix(dir)
                .expect("prefix")
                .to_string_lossy()
                .into_owned();
            out.push((rel, std::fs::read(entry.path()).expect("read")));
        }
    }
    out
}

pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(p, text).expect("write");
}

/// Whether kubectl is available; in CI it must be.
#[allow(clippy::disallowed_methods)]
pub fn kubectl() -> Option<PathBuf> {
    let found = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(PathBuf::from("kubectl"));
    }
    if std::env::var_os("CI").is_some() {
        panic!("kubectl is required in CI");
    }
    skipped("kubectl is not on the PATH");
    None
}

/// Runs git in `dir` with a fixed identity; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=strata test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
