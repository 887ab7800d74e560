//! Every program strata starts runs within its bounds: helm, the chart
//! renderer and kubectl, and whatever they start. A wrapper that leaves a
//! child running keeps strata waiting for no one, and the child dies with
//! the run; a template that builds a gigabyte is stopped at the memory
//! bound and named; each way the renderer fails is named as the
//! renderer's, with its real cause.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::charts::{self, platform};
use common::stderr;

/// Long enough that a run which waited for it is plainly stuck.
const LEFT_RUNNING: u32 = 300;

/// The renderer, as `tests/renderer.rs` finds it; `None` skips (and fails
/// in CI unless `STRATA_HELM_RENDERER=off`).
#[allow(clippy::disallowed_methods)]
fn renderer() -> Option<PathBuf> {
    let set = std::env::var_os("STRATA_HELM_RENDERER").filter(|v| !v.is_empty());
    if set.as_deref() == Some(std::ffi::OsStr::new("off")) {
        common::skipped("STRATA_HELM_RENDERER=off: no renderer to test");
        return None;
    }
    let found = set.map(PathBuf::from).or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join("strata-helm-renderer"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("strata-helm-renderer is required in CI: .ci/run builds it");
        }
        common::skipped("strata-helm-renderer is not on the PATH");
    }
    found
}

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// A wrapper around `program` that first starts a child which sleeps for
/// [`LEFT_RUNNING`] seconds holding the wrapper's output, and records its
/// pid in `pids`.
fn leaving_a_child(dir: &Path, name: &str, program: &Path, pids: &Path) -> PathBuf {
    let path = dir.join(name);
    executable(
        &path,
        &format!(
            "#!/bin/sh\nsleep {LEFT_RUNNING} &\necho $! >> '{}'\nexec '{}' \"$@\"\n",
            pids.display(),
            program.display()
        ),
    );
    path
}

/// Whether process `pid` still runs (a zombie waiting for its parent does
/// not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .is_some_and(|zombie| !zombie)
}

/// The pids a wrapper recorded; any still running is killed (by its pid:
/// the test started it), and reported.
fn survivors(pids: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(pids).unwrap_or_default();
    let left: Vec<u32> = text
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .filter(|p| running(*p))
        .collect();
    for p in &left {
        let _ = Command::new("kill").arg("-9").arg(p.to_string()).status();
    }
    left
}

/// Runs strata with exactly the helm and renderer given (none, if `None`).
fn strata(
    root: &Path,
    helm: Option<&Path>,
    renderer: Option<&Path>,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Output, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.arg("--root")
        .arg(root)
        .args(["--color", "never", "--verbose"])
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env("PATH", charts::path_without_helm())
        .env_remove("STRATA_HELM_MEMORY")
        .env(
            "STRATA_HELM_RENDERER",
            renderer.map_or_else(|| "off".into(), |r| r.as_os_str().to_owned()),
        );
    match helm {
        Some(h) => cmd.env("STRATA_HELM", h),
        None => cmd.env_remove("STRATA_HELM"),
    };
    cmd.envs(env.iter().copied());
    let started = Instant::now();
    let out = cmd.output().expect("run strata");
    (out, started.elapsed())
}

/// A platform with the test chart `web` as component `web`.
fn web_platform() -> tempfile::TempDir {
    let tmp = platform(&[("web", "chart:\n  path: charts/web\n", "{}\n")]);
    common::copy_dir(&charts::chart_dir("web-1"), &tmp.path().join("charts/web"));
    tmp
}

#[test]
fn a_helm_that_leaves_a_child_running_keeps_no_one_waiting() {
    let helm = need_helm!();
    let tmp = web_platform();
    let root = tmp.path();
    let pids = root.join("pids");
    let wrapper = leaving_a_child(root, "helm-wrapper", &helm, &pids);
    let (out, took) = strata(root, Some(&wrapper), None, &["check", "--env", "dev"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("rendered by the helm binary"), "{}", stderr(&out));
    assert!(
        took < Duration::from_secs(u64::from(LEFT_RUNNING) / 3),
        "waited {took:?}"
    );
    assert!(std::fs::read_to_string(&pids).unwrap().lines().count() >= 2);
    assert_eq!(survivors(&pids), Vec::<u32>::new(), "children outlived the run");
}

#[test]
fn a_renderer_that_leaves_a_child_running_keeps_no_one_waiting() {
    let Some(renderer) = renderer() else { return };
    let tmp = web_platform();
    let root = tmp.path();
    let pids = root.join("pids");
    let wrapper = leaving_a_child(root, "strata-helm-renderer", &renderer, &pids);
    let (out, took) = strata(root, None, Some(&wrapper), &["check", "--env", "dev"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("release(s) rendered by"), "{err}");
    assert!(
        took < Duration::from_secs(u64::from(LEFT_RUNNING) / 3),
        "waited {took:?}"
    );
    // One child of `-version`, one of the renderer that served the run.
    assert!(std::fs::read_to_string(&pids).unwrap().lines().count() >= 2);
    assert_eq!(survivors(&pids), Vec::<u32>::new(), "children outlived the run");
}

#[test]
fn a_kubectl_that_leaves_a_child_running_keeps_no_one_waiting() {
    let Some(kubectl) = common::kubectl() else { return };
    let kubectl = if kubectl.is_absolute() {
        kubectl
    } else {
        which(&kubectl).expect("kubectl on the PATH")
    };
    let tmp = tempfile::tempdir().unwrap();
    let pids = tmp.path().join("pids");
    let wrapper = leaving_a_child(tmp.path(), "kubectl", &kubectl, &pids);
    let source = common::repo().join("tests/import/flux");
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(tmp.path())
        .args(["--color", "never", "--inflate", "off", "import", "flux"])
        .arg(&source)
        .args(["--out", "platform"])
        .env("STRATA_TODAY", "2026-12-02")
        .env("STRATA_KUBECTL", &wrapper)
        .env("STRATA_HELM_RENDERER", "off")
        .env("PATH", charts::path_without_helm())
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    assert!(
        took < Duration::from_secs(u64::from(LEFT_RUNNING) / 3),
        "waited {took:?}"
    );
    assert!(
        !std::fs::read_to_string(&pids).unwrap_or_default().is_empty(),
        "kubectl ran"
    );
    assert_eq!(survivors(&pids), Vec::<u32>::new(), "children outlived the run");
}

#[allow(clippy::disallowed_methods)]
fn which(name: &Path) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The helm build a stand-in renderer claims, as `-version` prints it.
const BUILD: &str = r#"version.BuildInfo{Version:"v4.3.2", GitCommit:"", GitTreeState:"", GoVersion:"go1.26.8", KubeClientVersion:"v1.37"}"#;

/// A stand-in for the renderer that answers `-version` as the renderer
/// does, then serves with `body` (a shell script).
fn stand_in(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("strata-helm-renderer");
    executable(
        &path,
        &format!("#!/bin/sh\nif [ \"$1\" = -version ]; then echo '{BUILD}'; exit 0; fi\n{body}\n"),
    );
    path
}

#[test]
fn a_renderer_that_prints_garbage_is_named_with_what_it_printed() {
    let tmp = web_platform();
    let root = tmp.path();
    let fake = stand_in(root, "echo 'Welcome to the renderer!'; cat >/dev/null");
    let (out, took) = strata(root, None, Some(&fake), &["check", "--env", "dev"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E012]"), "{err}");
    assert!(err.contains("cannot render chart web for component web"), "{err}");
    assert!(err.contains("strata-helm-renderer ("), "{err}");
    assert!(
        err.contains("the line `Welcome to the renderer!` is no JSON frame header"),
        "{err}"
    );
    assert!(
        !err.contains("within 30 s") && !err.contains("helm cannot render"),
        "{err}"
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[test]
fn a_renderer_killed_while_rendering_is_named_as_the_renderer_not_helm() {
    let tmp = web_platform();
    let root = tmp.path();
    let hello = serde_json::json!({"hello": "strata-helm-renderer", "protocol": 1, "helm": BUILD, "jobs": 1, "len": 0});
    // Says hello, reads the first request's header, and is killed.
    let fake = stand_in(root, &format!("echo '{hello}'\nread header\nkill -KILL $$"));
    let (out, _) = strata(root, None, Some(&fake), &["check", "--env", "dev"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E012]"), "{err}");
    assert!(
        err.contains(
            "cannot render chart web for component web in environment dev: strata-helm-renderer was killed by signal 9"
        ),
        "{err}"
    );
    assert!(!err.contains("helm cannot render"), "{err}");
    assert!(err.contains("the chart renderer failed, not the chart"), "{err}");
}

/// `web` and `huge` (a template that builds a gigabyte string); the first
/// renders, the second is stopped at the memory bound and named.
fn memory_case(helm: Option<&Path>, renderer: Option<&Path>, program: &str) {
    let tmp = platform(&[
        ("web", "chart:\n  path: charts/web\n", "{}\n"),
        ("huge", "chart:\n  path: charts/bigstring\n", "doublings: 30\n"),
    ]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("web-1"), &root.join("charts/web"));
    common::copy_dir(&charts::chart_dir("bigstring"), &root.join("charts/bigstring"));
    let (out, took) = strata(root, helm, renderer, &["check", "--env", "dev"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "cannot render chart bigstring for component huge in environment dev: {program} needed more than 384 MiB rendering this chart"
        )),
        "{err}"
    );
    assert!(err.contains("STRATA_HELM_MEMORY"), "{err}");
    assert_eq!(
        err.matches("error[E012]").count(),
        1,
        "only the huge chart fails: {err}"
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
    // A larger bound is the user's to give.
    let (out, _) = strata(
        root,
        helm,
        renderer,
        &["check", "--env", "dev"],
        &[("STRATA_HELM_MEMORY", "32")],
    );
    assert!(
        stderr(&out).contains("STRATA_HELM_MEMORY=32 is not a number of MiB from 64"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_template_that_builds_a_gigabyte_is_stopped_at_the_memory_bound_by_helm() {
    let helm = need_helm!();
    memory_case(Some(&helm), None, "helm");
}

#[test]
fn a_template_that_builds_a_gigabyte_is_stopped_at_the_memory_bound_by_the_renderer() {
    let Some(renderer) = renderer() else { return };
    memory_case(None, Some(&renderer), "strata-helm-renderer");
}
