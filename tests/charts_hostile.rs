//! Hostile charts, locks, caches and repositories: a lock entry pointing at
//! another chart's archive, a local chart that names itself `..` or finds a
//! file planted in its prepared copy, a forged render cache entry, a chart
//! that renders forever (and a strata killed meanwhile), a CRD whose
//! version would fake an API for other charts, chart names that are helm
//! flags, and a repository index of hundreds of thousands of versions.
//! Each hostile run takes under 5 s (on a release build: `cargo test
//! --release --test charts_hostile`; a debug build gets 20 s) and 512 MiB,
//! and says what is wrong, where, and what to do.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::charts::{self, Repo, platform, remote, strata_with};
use common::{stderr, write};

/// How long one hostile run may take.
const MAX_TIME: Duration = Duration::from_secs(if cfg!(debug_assertions) { 20 } else { 5 });
/// The most memory (peak resident) any run may use.
const MAX_MEMORY_KIB: i64 = 512 * 1024;

/// The peak resident memory of every child process waited for so far, KiB.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn children_peak_kib() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage` into the pointer it is given.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) };
    assert_eq!(rc, 0);
    // SAFETY: initialised by the successful call above.
    unsafe { usage.assume_init() }.ru_maxrss
}

#[cfg(not(target_os = "linux"))]
fn children_peak_kib() -> i64 {
    0
}

/// Runs strata on a hostile input with `env`, and checks the bounds.
fn hostile(root: &Path, helm: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.arg("--root")
        .arg(root)
        .args(["--color", "never"])
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env_remove("NO_COLOR")
        .env("PATH", charts::path_without_helm());
    match helm {
        Some(h) => cmd.env("STRATA_HELM", h),
        None => cmd.env_remove("STRATA_HELM"),
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let out = cmd.output().expect("run strata");
    let took = started.elapsed();
    assert!(took < MAX_TIME, "{args:?} took {took:?}: {}", stderr(&out));
    let peak = children_peak_kib();
    assert!(peak < MAX_MEMORY_KIB, "a run used {peak} KiB");
    eprintln!(
        "hostile {args:?}: {took:?}, peak of all runs so far {} MiB",
        peak / 1024
    );
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    out
}

/// A chart folder of our own, written into `dir`.
fn chart(dir: &Path, name: &str, files: &[(&str, &str)]) {
    write(
        dir,
        "Chart.yaml",
        &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
    );
    for (p, text) in files {
        write(dir, p, text);
    }
}

/// Makes every environment hydrated: the tree holds what the charts
/// render, so a test can see what strata judged.
fn hydrate(root: &Path) {
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &format!("{text}hydrate: true\n"));
}

/// Every file under `dir`, relative.
fn files_under(dir: &Path) -> Vec<String> {
    common::snapshot_tree(dir).into_iter().map(|(p, _)| p).collect()
}

// --- The lock and the archives it pins ----------------------------------------

#[test]
fn a_lock_entry_pointing_at_another_charts_archive_is_refused() {
    let helm = need_helm!();
    let repo = Repo::serve(&["web-1", "widget"]);
    let tmp = platform(&[
        ("web", &remote(&repo.url, "web", "1.0.0"), "{}\n"),
        ("widget", &remote(&repo.url, "widget", "0.1.0"), "{}\n"),
    ]);
    let root = tmp.path();
    let out = strata_with(root, Some(&helm), &["charts", "pull"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let digest = |c: &str| {
        format!(
            "sha256:{}",
            charts::sha256_hex(&charts::package(&charts::chart_dir(c)).2)
        )
    };
    let (web, widget) = (digest("web-1"), digest("widget"));
    // web's entry now names widget's archive, which is in the store and
    // hashes to the digest: only the archive's own Chart.yaml tells.
    let lock = std::fs::read_to_string(root.join("strata.lock")).unwrap();
    std::fs::write(root.join("strata.lock"), lock.replace(&web, &widget)).unwrap();
    for mode in ["auto", "helm"] {
        let out = hostile(root, Some(&helm), &["--inflate", mode, "render"], &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{mode}: {err}");
        assert!(err.contains("error[E026]"), "{err}");
        assert!(
            err.contains(&format!("strata.lock pins web 1.0.0 (component web) to the archive {widget}, and that archive is chart widget 0.1.0")),
            "{err}"
        );
        assert!(err.contains("--> strata.lock:"), "{err}");
        assert!(
            err.contains("component web pins it at gitops/platform/web/config.yaml:"),
            "{err}"
        );
        assert!(err.contains("git checkout strata.lock"), "{err}");
        assert!(!root.join("rendered").exists());
    }
}

// --- Local charts ---------------------------------------------------------------

#[test]
fn a_local_chart_named_dot_dot_writes_nothing() {
    let helm = need_helm!();
    let tmp = platform(&[("app", "chart:\n  path: charts/app\n", "{}\n")]);
    let root = tmp.path();
    write(
        root,
        "charts/app/Chart.yaml",
        "apiVersion: v2\nname: ..\nversion: 0.1.0\n",
    );
    write(
        root,
        "charts/app/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: planted\n",
    );
    for mode in ["auto", "helm"] {
        let out = hostile(root, Some(&helm), &["--inflate", mode, "render"], &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{mode}: {err}");
        assert!(err.contains("error[E027]"), "{err}");
        assert!(err.contains("charts/app/Chart.yaml: `..` is not a chart name"), "{err}");
        assert!(err.contains("--> gitops/platform/app/config.yaml"), "{err}");
        let local = root.join(".strata/cache/local");
        assert!(files_under(&local).is_empty(), "written: {:?}", files_under(&local));
        assert!(files_under(&root.join(".strata/cache")).is_empty());
    }
}

#[test]
fn a_file_planted_in_a_prepared_local_chart_does_not_persist() {
    let helm = need_helm!();
    let tmp = platform(&[("web", "chart:\n  path: charts/web\n", "{}\n")]);
    let root = tmp.path();
    hydrate(root);
    common::copy_dir(&charts::chart_dir("web-1"), &root.join("charts/web"));
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let prepared: Vec<PathBuf> = std::fs::read_dir(root.join(".strata/cache/local"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(prepared.len(), 1, "{prepared:?}");
    let planted = prepared[0].join("web/templates/planted.yaml");
    std::fs::write(
        &planted,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: planted-by-someone\n",
    )
    .unwrap();
    std::fs::remove_dir_all(root.join("rendered")).unwrap();
    let out = hostile(root, Some(&helm), &["--inflate", "helm", "--no-cache", "render"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tree: String = common::snapshot_tree(&root.join("rendered"))
        .into_iter()
        .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
        .collect();
    assert!(!tree.contains("planted-by-someone"), "a planted template was rendered");
    assert!(!planted.exists(), "the planted file is still there");
}

// --- The render cache ---------------------------------------------------------------

#[test]
fn a_forged_render_cache_entry_is_judged_unless_no_cache_is_given() {
    let helm = need_helm!();
    let tmp = platform(&[("web", "chart:\n  path: charts/web\n", "replicas: 2\n")]);
    let root = tmp.path();
    hydrate(root);
    common::copy_dir(&charts::chart_dir("web-1"), &root.join("charts/web"));
    let render = |extra: &[&str]| {
        let _ = std::fs::remove_dir_all(root.join("rendered"));
        let mut args = vec!["--inflate", "helm"];
        args.extend_from_slice(extra);
        args.extend(["render", "--env", "dev"]);
        let out = hostile(root, Some(&helm), &args, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        common::snapshot_tree(&root.join("rendered"))
            .into_iter()
            .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
            .collect::<String>()
    };
    let real = render(&[]);
    assert!(real.contains("replicas: 2"));
    // Whoever can write .strata/ can write an entry that is sound by every
    // check strata can make: its key, its length, its digest.
    let entry = common::snapshot_tree(&root.join(".strata/cache/inflate"))
        .into_iter()
        .next()
        .expect("a cache entry");
    let path = root.join(".strata/cache/inflate").join(&entry.0);
    let text = String::from_utf8(entry.1).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    let forged_body = body.replace("replicas: 2", "replicas: 9");
    let mut parts: Vec<&str> = header.split(' ').collect();
    let n = parts.len();
    let len = forged_body.len().to_string();
    let sum = charts::sha256_hex(forged_body.as_bytes());
    parts[n - 2] = &len;
    parts[n - 1] = &sum;
    std::fs::write(&path, format!("{}\n{forged_body}", parts.join(" "))).unwrap();
    assert!(
        render(&[]).contains("replicas: 9"),
        "the trust model says a writer of .strata chooses"
    );
    // --no-cache renders with helm and leaves the cache alone.
    let fresh = render(&["--no-cache"]);
    assert!(fresh.contains("replicas: 2") && !fresh.contains("replicas: 9"));
    assert!(std::fs::read_to_string(&path).unwrap().contains("replicas: 9"));
    // An entry copied under another release's name is never read for it.
    write(root, "gitops/platform/web/values-dev.yaml", "replicas: 3\n");
    let other = render(&[]);
    assert!(other.contains("replicas: 3"), "{other}");
}

// --- helm's time ------------------------------------------------------------------------

/// A chart whose template loops for many minutes, in a tiny amount of memory.
fn slow_chart(dir: &Path) {
    chart(
        dir,
        "slow",
        &[(
            "templates/cm.yaml",
            "{{- range $i := until 100000 }}{{- range $j := until 100000 }}{{- end }}{{- end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slow\n",
        )],
    );
}

/// A wrapper around helm that writes the process id of each `template`
/// run into `dir/pids`, then becomes helm (the same process).
fn pid_recording_helm(dir: &Path, helm: &Path) -> (PathBuf, PathBuf) {
    let pids = dir.join("pids");
    let script = dir.join("helm");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$1\" = template ]; then echo $$ >> '{}'; fi\nexec '{}' \"$@\"\n",
            pids.display(),
            helm.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (script, pids)
}

/// Whether a process is alive (not gone, and not a zombie waiting for a
/// parent that no longer reaps it).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

fn pids_of(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn helm_dies_with_a_strata_killed_by_sigkill() {
    let helm = need_helm!();
    let scratch = tempfile::tempdir().unwrap();
    let (wrapper, pids) = pid_recording_helm(scratch.path(), &helm);
    let tmp = platform(&[("slow", "chart:\n  path: charts/slow\n", "{}\n")]);
    let root = tmp.path();
    slow_chart(&root.join("charts/slow"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--root")
        .arg(root)
        .args(["--inflate", "helm", "render", "--env", "dev"])
        .env("STRATA_TODAY", "2026-12-02")
        .env("STRATA_HELM", &wrapper)
        .env("PATH", charts::path_without_helm())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while pids_of(&pids).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "helm template never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let running = pids_of(&pids);
    assert!(running.iter().all(|p| alive(p)), "helm ended before strata was killed");
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    while running.iter().any(|p| alive(p)) {
        assert!(
            killed.elapsed() < Duration::from_secs(3),
            "helm template {running:?} outlived the strata that started it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn one_helm_run_is_stopped_at_its_timeout() {
    let helm = need_helm!();
    let scratch = tempfile::tempdir().unwrap();
    let (wrapper, pids) = pid_recording_helm(scratch.path(), &helm);
    let tmp = platform(&[("slow", "chart:\n  path: charts/slow\n", "{}\n")]);
    let root = tmp.path();
    slow_chart(&root.join("charts/slow"));
    let out = hostile(
        root,
        Some(&wrapper),
        &["--inflate", "helm", "check", "--env", "dev"],
        &[("STRATA_HELM_TIMEOUT", "2")],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E012]"), "{err}");
    assert!(err.contains("helm ran for more than 2 s and was stopped"), "{err}");
    assert!(err.contains("STRATA_HELM_TIMEOUT"), "{err}");
    assert!(err.contains("--> gitops/platform/slow/config.yaml"), "{err}");
    assert!(
        pids_of(&pids).iter().all(|p| !alive(p)),
        "a stopped helm is still running"
    );
    // A limit that is no number is named.
    let out = hostile(root, Some(&wrapper), &["check"], &[("STRATA_HELM_TIMEOUT", "soon")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("STRATA_HELM_TIMEOUT=soon is not a whole number of seconds"));
}

#[test]
fn all_helm_runs_of_a_command_are_stopped_at_its_deadline() {
    let helm = need_helm!();
    let tmp = platform(&[
        ("slow", "chart:\n  path: charts/slow\n", "{}\n"),
        ("slower", "chart:\n  path: charts/slow\n", "x: 1\n"),
    ]);
    let root = tmp.path();
    slow_chart(&root.join("charts/slow"));
    let out = hostile(
        root,
        Some(&helm),
        &["--inflate", "helm", "--jobs", "1", "check", "--env", "dev"],
        &[("STRATA_HELM_TIMEOUT", "100"), ("STRATA_HELM_DEADLINE", "2")],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("passed their deadline"), "{err}");
    assert!(err.contains("STRATA_HELM_DEADLINE"), "{err}");
    assert!(
        err.contains("component slow ") && err.contains("component slower "),
        "{err}"
    );
}

// --- What reaches helm's command line -----------------------------------------------------

#[test]
fn a_crd_version_with_a_comma_never_reaches_helm() {
    let helm = need_helm!();
    let tmp = platform(&[
        ("crds", "chart:\n  path: charts/crds\n", "{}\n"),
        ("asks", "chart:\n  path: charts/asks\n", "{}\n"),
    ]);
    let root = tmp.path();
    hydrate(root);
    let crd = |version: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: tricks.example.com\nspec:\n  group: example.com\n  names: {{kind: Trick, plural: tricks, singular: trick, listKind: TrickList}}\n  scope: Namespaced\n  versions:\n    - name: {version}\n      served: true\n      storage: true\n      schema: {{openAPIV3Schema: {{type: object}}}}\n"
        )
    };
    chart(
        &root.join("charts/crds"),
        "crds",
        &[("crds/trick.yaml", &crd("'v1,policy/v9'"))],
    );
    chart(
        &root.join("charts/asks"),
        "asks",
        &[(
            "templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: asks\ndata:\n  fake: {{ .Capabilities.APIVersions.Has \"policy/v9\" | quote }}\n",
        )],
    );
    let out = hostile(root, Some(&helm), &["--inflate", "helm", "render"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E027]"), "{err}");
    assert!(
        err.contains("CustomResourceDefinition tricks.example.com (crds/crds/trick.yaml of component crds)"),
        "{err}"
    );
    assert!(
        err.contains("apiVersion `example.com/v1,policy/v9` is not a Kubernetes API version"),
        "{err}"
    );
    assert!(!root.join("rendered").exists());
    // A quote is refused the same way, not left to break helm's reading.
    chart(
        &root.join("charts/crds"),
        "crds",
        &[("crds/trick.yaml", &crd("'v1\"x'"))],
    );
    let out = hostile(root, Some(&helm), &["--inflate", "helm", "render"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error[E027]") && err.contains("example.com/v1\"x"),
        "{err}"
    );
    // A sound version reaches the chart that asks.
    chart(&root.join("charts/crds"), "crds", &[("crds/trick.yaml", &crd("v1"))]);
    chart(
        &root.join("charts/asks"),
        "asks",
        &[(
            "templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: asks\ndata:\n  real: {{ .Capabilities.APIVersions.Has \"example.com/v1\" | quote }}\n  fake: {{ .Capabilities.APIVersions.Has \"policy/v9\" | quote }}\n",
        )],
    );
    let out = hostile(root, Some(&helm), &["--inflate", "helm", "render", "--env", "dev"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tree: String = common::snapshot_tree(&root.join("rendered"))
        .into_iter()
        .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
        .collect();
    assert!(
        tree.contains("real: \"true\"") && tree.contains("fake: \"false\""),
        "{tree}"
    );
}

#[test]
fn chart_names_and_versions_that_are_flags_are_refused() {
    let helm = need_helm!();
    let scratch = tempfile::tempdir().unwrap();
    let (counting, log) = charts::counting_helm(scratch.path(), &helm);
    let repo = Repo::serve(&["web-1"]);
    for (name, version, why) in [
        ("--post-renderer=x", "1.0.0", "`--post-renderer=x` is not a chart name"),
        ("-f", "1.0.0", "`-f` is not a chart name"),
        ("web", "--set=a", "`--set=a` is not a chart version"),
        ("web", "1.0.0,2.0.0", "`1.0.0,2.0.0` is not a chart version"),
    ] {
        let tmp = platform(&[(
            "web",
            &remote(&repo.url, &format!("\"{name}\""), &format!("\"{version}\"")),
            "{}\n",
        )]);
        let root = tmp.path();
        let out = hostile(root, Some(&counting), &["charts", "pull"], &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(why), "{err}");
        for mode in ["auto", "helm"] {
            let out = hostile(root, Some(&counting), &["--inflate", mode, "render"], &[]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{mode}: {err}");
            assert!(err.contains("error[E027]") && err.contains(why), "{err}");
            assert!(err.contains("--> gitops/platform/web/config.yaml"), "{err}");
        }
    }
    let runs = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        runs.lines().all(|l| l == "version"),
        "helm ran with a hostile argument: {runs}"
    );
}

// --- Repositories ------------------------------------------------------------------------------

#[test]
fn an_index_of_three_hundred_thousand_versions_is_refused_within_bounds() {
    let repo = Repo::serve(&["web-1"]);
    // Short entries, in flow style, so that a debug build reads the first
    // hundred thousand in seconds; a full-size entry is refused the same.
    let mut index = String::with_capacity(12 << 20);
    index.push_str("apiVersion: v1\nentries:\n  web:\n");
    for i in 0..300_000 {
        index.push_str(&format!("  - {{version: 0.{}.{}}}\n", i / 1000, i % 1000));
    }
    std::fs::write(repo.path_of("index.yaml"), &index).unwrap();
    let tmp = platform(&[("web", &remote(&repo.url, "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();
    let out = hostile(root, None, &["charts", "pull"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot pull web 1.0.0"), "{err}");
    assert!(
        err.contains("index.yaml lists more than 100000 chart versions, the limit"),
        "{err}"
    );
    // Over the byte limit: refused before it is read whole.
    let big = "#".repeat(65 << 20);
    std::fs::write(repo.path_of("index.yaml"), big).unwrap();
    let out = hostile(root, None, &["charts", "pull"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("index.yaml at") && err.contains("is larger than 64 MiB, the limit"),
        "{err}"
    );
}
