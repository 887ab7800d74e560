//! Output safety: a render writes its tree and its own lock and copies in
//! `.strata/`, and nothing else, whatever it finds on disk — links, pipes,
//! huge or oddly named files, read-only folders, a hostile manifest, a crash
//! half way through a swap. Each test checks the exit code and message, that
//! nothing outside the repository changed, and that no tree was lost.

mod common;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A repository at `<tmp>/repo` and a folder beside it, `<tmp>/outside`, so
/// that anything written outside the repository shows.
struct Sandbox {
    tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("repo");
        copy_dir(&repo().join("fixtures/homelab"), &root);
        let _ = fs::remove_dir_all(root.join("rendered"));
        let outside = base.join("outside");
        write(&outside, "keep.txt", "not strata's\n");
        Sandbox { tmp, root, outside }
    }

    fn rendered(&self) -> PathBuf {
        self.root.join("rendered")
    }

    fn render(&self, args: &[&str]) -> Output {
        run(&self.root, args, &[])
    }

    /// Everything in the sandbox but the repository: what a render must not touch.
    fn outside_state(&self) -> Vec<(PathBuf, String)> {
        listing(self.tmp.path(), Some(&self.root))
    }

    /// What `.strata/` holds, but for its lock and `.gitignore`.
    fn leftovers(&self) -> Vec<String> {
        let Ok(dir) = fs::read_dir(self.root.join(".strata")) else {
            return Vec::new();
        };
        let mut names: Vec<String> = dir
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            // The chart store and caches are state, not leftovers of a write.
            .filter(|n| n != ".gitignore" && !n.ends_with(".strata-lock"))
            .filter(|n| !matches!(n.as_str(), "cache" | "helm" | "charts"))
            .collect();
        // Copies beside the output (after a fallback across file systems).
        names.extend(
            fs::read_dir(&self.root)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(".strata-")),
        );
        names
    }

    /// A change to the inputs that rewrites files in every staging unit.
    fn change(&self, level: &str) {
        write(
            &self.root,
            "gitops/platform/traefik/values-staging.yaml",
            &format!("logs:\n  general:\n    level: {level}\n"),
        );
    }
}

/// Every entry under `dir` but `skip` with its kind and, for files, a hash
/// of the content; links are not followed.
fn listing(dir: &Path, skip: Option<&Path>) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(dir).min_depth(1).sort_by_file_name();
    for entry in walk.into_iter().filter_entry(|e| Some(e.path()) != skip) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(dir).unwrap().to_path_buf();
        let ft = entry.file_type();
        let what = if ft.is_dir() {
            "dir".to_owned()
        } else if ft.is_symlink() {
            format!("link -> {}", fs::read_link(entry.path()).unwrap().display())
        } else if ft.is_file() {
            let m = entry.metadata().unwrap();
            format!(
                "file {} {:?}",
                m.len(),
                fs::read(entry.path())
                    .unwrap()
                    .iter()
                    .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(*b)))
            )
        } else {
            "special".to_owned()
        };
        out.push((rel, what));
    }
    out
}

/// Runs strata with extra environment variables, failing the test rather
/// than hanging if it does not end within two minutes.
fn run(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.arg("--root")
        .arg(root)
        .arg("--color")
        .arg("never")
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env_remove("NO_COLOR")
        .env_remove("STRATA_TEST_NO_EXCHANGE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_bounded(cmd)
}

fn run_bounded(mut cmd: Command) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let (o, e) = (dir.path().join("out"), dir.path().join("err"));
    cmd.stdout(Stdio::from(fs::File::create(&o).unwrap()))
        .stderr(Stdio::from(fs::File::create(&e).unwrap()));
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("strata hung: {}", fs::read_to_string(&e).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: fs::read(&o).unwrap(),
        stderr: fs::read(&e).unwrap(),
    }
}

#[track_caller]
fn assert_ok(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    assert!(!stderr(out).contains("panicked"), "{}", stderr(out));
}

/// Exit 2, every needle in the message, a help line, no panic.
#[track_caller]
fn assert_refused(out: &Output, needles: &[&str]) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "no `{n}` in: {err}");
    }
    assert!(err.contains("help:"), "no help line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn up_to_date(root: &Path) -> bool {
    run(root, &["render", "--check"], &[]).status.code() == Some(0)
}

#[cfg(unix)]
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    let f = tempfile::NamedTempFile::new().unwrap();
    f.as_file().metadata().unwrap().uid() == 0
}

#[test]
fn a_render_leaves_git_status_clean_but_for_rendered() {
    let sb = Sandbox::new();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.com",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&sb.root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git");
        assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
        stdout(&o)
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "platform"]);
    let before = sb.outside_state();
    assert_ok(&sb.render(&["render"]));
    assert_eq!(git(&["status", "--porcelain"]), "?? rendered/\n");
    assert_eq!(fs::read_to_string(sb.root.join(".strata/.gitignore")).unwrap(), "*\n");
    // Committed, a render that changes files shows only those.
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "rendered"]);
    sb.change("DEBUG");
    assert_ok(&sb.render(&["render"]));
    let status = git(&["status", "--porcelain"]);
    assert!(
        status.lines().all(|l| l.starts_with(" M rendered/")
            || l.starts_with(" D rendered/")
            || l.starts_with("?? rendered/")
            || l.ends_with("values-staging.yaml")),
        "{status}"
    );
    assert!(sb.leftovers().is_empty(), "{:?}", sb.leftovers());
    assert_eq!(sb.outside_state(), before);
}

#[cfg(unix)]
#[test]
fn an_output_reached_through_a_link_inside_the_repository_is_refused() {
    use std::os::unix::fs::symlink;
    let sb = Sandbox::new();
    let elsewhere = sb.outside.join("elsewhere");
    write(&elsewhere, "mine.txt", "mine\n");
    let before = sb.outside_state();
    let project = fs::read_to_string(sb.root.join("strata.yaml")).unwrap();
    let with_output = |o: &str| fs::write(sb.root.join("strata.yaml"), format!("{project}output: {o}\n")).unwrap();

    // `rendered -> elsewhere`, from strata.yaml and from --out.
    symlink(&elsewhere, sb.rendered()).unwrap();
    let link = sb.rendered().display().to_string();
    for args in [
        vec!["render"],
        vec!["render", "--out", link.as_str()],
        vec!["render", "--check"],
    ] {
        let err = assert_refused(&sb.render(&args), &[&link, "symbolic link", "real folder"]);
        assert!(!err.contains("wrote"), "{err}");
        assert_eq!(sb.outside_state(), before, "{args:?}");
    }
    fs::remove_file(sb.rendered()).unwrap();

    // `out/sub` where `out` is the link.
    symlink(&elsewhere, sb.root.join("out")).unwrap();
    with_output("out/sub");
    let out_link = sb.root.join("out").display().to_string();
    assert_refused(&sb.render(&["render"]), &[&out_link, "symbolic link"]);
    let sub = sb.root.join("out/sub").display().to_string();
    assert_refused(&sb.render(&["render", "--out", &sub]), &[&out_link, "symbolic link"]);
    assert_eq!(sb.outside_state(), before);
    // Nothing was written, not even strata's own folder.
    assert!(!sb.root.join(".strata").exists());
    assert!(!sb.rendered().exists());

    // A real folder there renders.
    fs::remove_file(sb.root.join("out")).unwrap();
    assert_ok(&sb.render(&["render"]));
    assert!(sb.root.join("out/sub/staging/flux/kustomization.yaml").is_file());
    assert!(sb.root.join(".strata/out/.sub.strata-lock").is_file());
    assert_eq!(sb.outside_state(), before);
}

#[test]
fn the_repository_root_or_a_folder_containing_it_is_refused() {
    let sb = Sandbox::new();
    let before_repo = snapshot_tree(&sb.root);
    let before = sb.outside_state();
    let project = fs::read_to_string(sb.root.join("strata.yaml")).unwrap();
    for output in [".", "./"] {
        fs::write(sb.root.join("strata.yaml"), format!("{project}output: {output}\n")).unwrap();
        assert_refused(&sb.render(&["render"]), &["is the repository root", "subfolder"]);
    }
    fs::write(sb.root.join("strata.yaml"), &project).unwrap();
    let root = sb.root.display().to_string();
    let parent = sb.root.parent().unwrap().display().to_string();
    let dotdot = format!("{root}/..");
    assert_refused(&sb.render(&["render", "--out", &root]), &["is the repository root"]);
    for out in [&parent, &dotdot, &"/".to_owned()] {
        assert_refused(&sb.render(&["render", "--out", out]), &["contains the repository"]);
    }
    assert_eq!(snapshot_tree(&sb.root), before_repo);
    assert!(!sb.root.join(".strata").exists());
    assert_eq!(sb.outside_state(), before);
}

#[cfg(unix)]
#[test]
fn a_lock_or_staging_path_that_is_a_link_is_refused() {
    use std::os::unix::fs::symlink;
    let sb = Sandbox::new();
    assert_ok(&sb.render(&["render"]));
    let tree = snapshot_tree(&sb.rendered());
    let target_dir = sb.outside.join("target");
    write(&target_dir, "precious.txt", "precious\n");
    let before = sb.outside_state();
    sb.change("DEBUG");
    for name in [
        ".rendered.strata-lock",
        ".rendered.strata-staging",
        ".rendered.strata-old",
    ] {
        let p = sb.root.join(".strata").join(name);
        let _ = fs::remove_file(&p);
        let to = if name.ends_with("lock") {
            sb.outside.join("lockfile")
        } else {
            target_dir.clone()
        };
        symlink(&to, &p).unwrap();
        assert_refused(&sb.render(&["render"]), &[&p.display().to_string(), "symbolic link"]);
        fs::remove_file(&p).unwrap();
        assert_eq!(sb.outside_state(), before, "{name}");
        assert_eq!(snapshot_tree(&sb.rendered()), tree, "{name}");
    }
    // The state folder itself.
    let state = sb.root.join(".strata");
    fs::remove_dir_all(&state).unwrap();
    symlink(&target_dir, &state).unwrap();
    assert_refused(
        &sb.render(&["render"]),
        &[&state.display().to_string(), "symbolic link"],
    );
    assert_eq!(sb.outside_state(), before);
    assert_eq!(snapshot_tree(&sb.rendered()), tree);
    fs::remove_file(&state).unwrap();
    assert_ok(&sb.render(&["render"]));
    assert!(up_to_date(&sb.root));
}

#[test]
fn an_out_folder_outside_the_repository_keeps_its_state_beside_it() {
    let sb = Sandbox::new();
    let before_repo = snapshot_tree(&sb.root);
    let tree = sb.outside.join("tree");
    // Charts are judged through profiles here, so that no chart store is
    // made: the write's own state is what this test follows.
    assert_ok(&sb.render(&["--inflate", "off", "render", "--out", tree.to_str().unwrap()]));
    assert!(tree.join("staging/flux/kustomization.yaml").is_file());
    assert!(sb.outside.join(".tree.strata-lock").is_file());
    let beside: Vec<_> = fs::read_dir(&sb.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("strata-staging") || n.contains("strata-old"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
    // Nothing in the repository changed.
    assert_eq!(snapshot_tree(&sb.root), before_repo);
    assert!(!sb.root.join(".strata").exists());
}

const NO_EXCHANGE: (&str, &str) = ("STRATA_TEST_NO_EXCHANGE", "1");

#[test]
fn a_crash_between_the_two_renames_is_repaired_by_the_next_render() {
    let sb = Sandbox::new();
    assert_ok(&run(&sb.root, &["render"], &[NO_EXCHANGE]));
    write(&sb.rendered(), "notes.md", "my notes\n");
    let previous = snapshot_tree(&sb.rendered());
    let before = sb.outside_state();
    // The state of a render killed between `rename(out, old)` and
    // `rename(staging, out)`: no output folder, the previous tree in `old`,
    // a half-made staging copy.
    let old = sb.root.join(".strata/.rendered.strata-old");
    fs::rename(sb.rendered(), &old).unwrap();
    write(
        &sb.root.join(".strata/.rendered.strata-staging"),
        "staging/half.yaml",
        "a: 1\n",
    );
    // The check writes nothing and says the tree is missing.
    assert_eq!(run(&sb.root, &["render", "--check"], &[]).status.code(), Some(1));
    assert!(old.is_dir());
    // The next render moves the previous tree back first: nothing changed, so
    // the tree is exactly the previous one.
    let out = run(&sb.root, &["render"], &[NO_EXCHANGE]);
    assert_ok(&out);
    assert!(stderr(&out).contains("restored"), "{}", stderr(&out));
    assert_eq!(snapshot_tree(&sb.rendered()), previous);
    assert!(sb.leftovers().is_empty(), "{:?}", sb.leftovers());
    // And then renders a change correctly.
    sb.change("DEBUG");
    assert_ok(&run(&sb.root, &["render"], &[NO_EXCHANGE]));
    assert!(up_to_date(&sb.root));
    assert_eq!(
        fs::read_to_string(sb.rendered().join("notes.md")).unwrap(),
        "my notes\n"
    );

    // A crash after both renames: `old` is stale and goes; the tree stays.
    let tree = snapshot_tree(&sb.rendered());
    copy_dir(&sb.rendered(), &old);
    fs::write(old.join("notes.md"), "stale\n").unwrap();
    let out = run(&sb.root, &["render"], &[NO_EXCHANGE]);
    assert_ok(&out);
    assert!(!stderr(&out).contains("restored"), "{}", stderr(&out));
    assert_eq!(snapshot_tree(&sb.rendered()), tree);
    assert!(sb.leftovers().is_empty(), "{:?}", sb.leftovers());
    assert_eq!(sb.outside_state(), before);
}

#[test]
fn a_render_killed_at_any_point_with_the_two_rename_swap_leaves_a_whole_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("p");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["generate", "--components", "40", "--envs", "3", "--out"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rendered = root.join("rendered");
    let old = root.join(".strata/.rendered.strata-old");
    let values = "gitops/platform/component-0003/values-env1.yaml";
    // How long a render that writes takes here, to spread the kills over it.
    write(&root, values, "replicaCount: 9\n");
    let started = Instant::now();
    assert_ok(&run(&root, &["--quiet", "render"], &[NO_EXCHANGE]));
    let full = started.elapsed();
    let mut previous = snapshot_tree(&rendered);
    let (mut killed_without_tree, mut completed_new) = (0, 0);
    let rounds = 16u32;
    for round in 0..rounds {
        write(&root, values, &format!("replicaCount: {}\n", round + 10));
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("--root")
            .arg(&root)
            .args(["--quiet", "render"])
            .env(NO_EXCHANGE.0, NO_EXCHANGE.1)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Mostly in the write phase at the end, a few earlier.
        let at = full.mul_f64(0.3 + 0.8 * f64::from(round) / f64::from(rounds));
        std::thread::sleep(at);
        let _ = child.kill();
        let _ = child.wait();
        if !rendered.exists() {
            // Killed between the renames: the previous tree is whole in `old`.
            assert_eq!(
                snapshot_tree(&old),
                previous,
                "round {round}: old is not the previous tree"
            );
            killed_without_tree += 1;
            continue;
        }
        let now = snapshot_tree(&rendered);
        if now != previous {
            assert!(up_to_date(&root), "round {round}: a torn tree");
            completed_new += 1;
        }
        previous = now;
    }
    let out = run(&root, &["render"], &[NO_EXCHANGE]);
    assert_ok(&out);
    assert!(up_to_date(&root));
    let leftovers: Vec<_> = fs::read_dir(root.join(".strata"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("strata-staging") || n.contains("strata-old"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    eprintln!(
        "{completed_new} of {rounds} killed renders had swapped the new tree in, {killed_without_tree} were killed between the renames"
    );
}

#[cfg(unix)]
#[test]
fn a_read_only_folder_is_reported_and_nothing_is_left_behind() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    assert_ok(&sb.render(&["render"]));
    let flux = sb.rendered().join("staging/flux");
    // Removing a component changes files right in staging/flux.
    fs::remove_dir_all(sb.root.join("gitops/platform/argocd")).unwrap();
    fs::set_permissions(&flux, fs::Permissions::from_mode(0o555)).unwrap();
    let tree = snapshot_tree(&sb.rendered());
    let before = sb.outside_state();
    let err = assert_refused(
        &sb.render(&["render"]),
        &[
            "read-only",
            &flux.display().to_string(),
            "kustomization.yaml",
            "chmod u+w",
        ],
    );
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(snapshot_tree(&sb.rendered()), tree);
    assert!(sb.leftovers().is_empty(), "{:?}", sb.leftovers());
    assert_eq!(sb.outside_state(), before);
    // Writable again, it renders.
    fs::set_permissions(&flux, fs::Permissions::from_mode(0o755)).unwrap();
    assert_ok(&sb.render(&["render"]));
    assert!(up_to_date(&sb.root));
    assert!(!sb.rendered().join("staging/flux/components/argocd").exists());
    assert!(sb.leftovers().is_empty(), "{:?}", sb.leftovers());
}

/// A read-only folder that nothing changes in stays read-only, and does not
/// get its copy stuck.
#[cfg(unix)]
#[test]
fn a_read_only_folder_nothing_changes_in_is_kept_as_it_is() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    assert_ok(&sb.render(&["render"]));
    let mine = sb.rendered().join("mine");
    write(&mine, "notes.md", "mine\n");
    fs::set_permissions(&mine, fs::Permissions::from_mode(0o555)).unwrap();
    sb.change("DEBUG");
    assert_ok(&as_unprivileged(&sb, &["render"]));
    assert!(up_to_date(&sb.root));
    assert_eq!(fs::metadata(&mine).unwrap().permissions().mode() & 0o777, 0o555);
    assert_eq!(fs::read_to_string(mine.join("notes.md")).unwrap(), "mine\n");
    assert!(sb.leftovers().is_empty(), "{:?}", sb.leftovers());
}

/// Runs strata as an unprivileged user: as root, as `nobody` on a tree
/// handed to it, so that permissions bite.
#[cfg(unix)]
fn as_unprivileged(sb: &Sandbox, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.arg("--root")
        .arg(&sb.root)
        .arg("--color")
        .arg("never")
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env_remove("STRATA_TEST_NO_EXCHANGE");
    if is_root() {
        const NOBODY: u32 = 65534;
        for entry in walkdir::WalkDir::new(sb.tmp.path()) {
            std::os::unix::fs::lchown(entry.unwrap().path(), Some(NOBODY), Some(NOBODY)).unwrap();
        }
        cmd.uid(NOBODY).gid(NOBODY);
    }
    run_bounded(cmd)
}

#[cfg(unix)]
#[test]
fn a_write_that_fails_half_way_leaves_no_staging_copy() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    assert_ok(&sb.render(&["render"]));
    // A folder of the user's that strata cannot read: the staging copy is
    // half made when the walk meets it.
    let private = sb.rendered().join("private");
    write(&private, "secret.txt", "s\n");
    sb.change("DEBUG");
    let tree = snapshot_tree(&sb.rendered());
    let before = sb.outside_state();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o000)).unwrap();
    let out = as_unprivileged(&sb, &["render"]);
    fs::set_permissions(&private, fs::Permissions::from_mode(0o755)).unwrap();
    let err = assert_refused(&out, &[&private.display().to_string(), "ermission denied"]);
    assert!(err.contains("the previous tree is unchanged"), "{err}");
    assert_eq!(snapshot_tree(&sb.rendered()), tree);
    assert!(sb.leftovers().is_empty(), "{:?}", sb.leftovers());
    assert_eq!(sb.outside_state(), before);
    assert_ok(&as_unprivileged(&sb, &["render"]));
    assert!(up_to_date(&sb.root));
}

/// Another trick that bites as root: a file where strata needs a folder.
#[test]
fn a_file_where_a_folder_must_go_is_refused_and_nothing_is_left_behind() {
    let sb = Sandbox::new();
    assert_ok(&sb.render(&["render"]));
    let traefik = sb.rendered().join("staging/flux/components/traefik");
    fs::remove_dir_all(&traefik).unwrap();
    fs::write(&traefik, "a file of mine\n").unwrap();
    sb.change("DEBUG");
    let tree = snapshot_tree(&sb.rendered());
    let before = sb.outside_state();
    let err = assert_refused(&sb.render(&["render"]), &["staging/flux/components/traefik", "--force"]);
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(snapshot_tree(&sb.rendered()), tree);
    assert!(sb.leftovers().is_empty(), "{:?}", sb.leftovers());
    assert_eq!(sb.outside_state(), before);
    assert_ok(&sb.render(&["render", "--force"]));
    assert!(traefik.is_dir());
    assert!(up_to_date(&sb.root));
}

#[cfg(unix)]
#[test]
fn pipes_sockets_and_links_in_the_tree_are_kept_and_never_opened() {
    use std::os::unix::fs::FileTypeExt;
    let sb = Sandbox::new();
    assert_ok(&sb.render(&["render"]));
    let r = sb.rendered();
    let mkfifo = |p: &Path| assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
    mkfifo(&r.join("staging/pipe"));
    let _listener = std::os::unix::net::UnixListener::bind(r.join("staging/sock")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", r.join("staging/link")).unwrap();
    // A device (reading /dev/zero would never end), where mknod is allowed.
    let device = Command::new("mknod")
        .arg(r.join("staging/zero"))
        .args(["c", "1", "5"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !device {
        common::skipped("mknod is not allowed here; the device case is not checked");
    }
    // A pipe where strata's own file was: never opened, taken for a hand edit.
    let kustomization = r.join("staging/flux/kustomization.yaml");
    fs::remove_file(&kustomization).unwrap();
    mkfifo(&kustomization);
    let before = sb.outside_state();
    sb.change("DEBUG");
    let err = assert_refused(&sb.render(&["render"]), &["staging/flux/kustomization.yaml"]);
    assert!(err.contains("edited by hand"), "{err}");
    let check = sb.render(&["render", "--check"]);
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    assert!(
        stderr(&check).contains("changed: rendered/staging/flux/kustomization.yaml"),
        "{}",
        stderr(&check)
    );
    fs::remove_file(&kustomization).unwrap();
    assert_ok(&sb.render(&["render"]));
    assert!(up_to_date(&sb.root));
    let ft = |p: &str| fs::symlink_metadata(r.join(p)).unwrap().file_type();
    assert!(ft("staging/pipe").is_fifo());
    assert!(ft("staging/sock").is_socket());
    assert!(ft("staging/link").is_symlink());
    if device {
        assert!(ft("staging/zero").is_char_device());
    }
    assert_eq!(
        fs::read_link(r.join("staging/link")).unwrap(),
        Path::new("/etc/hostname")
    );
    assert_eq!(sb.outside_state(), before);
}

#[test]
fn a_large_file_of_the_users_is_never_read() {
    let sb = Sandbox::new();
    assert_ok(&sb.render(&["render"]));
    let big = sb.rendered().join("staging/big.bin");
    let f = fs::File::create(&big).unwrap();
    f.set_len(200 << 20).unwrap();
    // A read would move the access time past the modification time.
    let long_ago = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    f.set_times(fs::FileTimes::new().set_accessed(long_ago)).unwrap();
    drop(f);
    let before = sb.outside_state();
    sb.change("DEBUG");
    let started = Instant::now();
    assert_ok(&sb.render(&["render"]));
    assert!(up_to_date(&sb.root));
    assert_ok(&sb.render(&["render"]));
    let m = fs::metadata(&big).unwrap();
    assert_eq!(m.len(), 200 << 20);
    assert_eq!(m.accessed().unwrap(), long_ago, "the file was read");
    assert!(started.elapsed() < Duration::from_secs(90), "{:?}", started.elapsed());
    assert_eq!(sb.outside_state(), before);
}

#[cfg(unix)]
#[test]
fn a_file_name_that_is_not_utf8_is_kept_as_is() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new();
    assert_ok(&sb.render(&["render"]));
    let name = OsStr::from_bytes(b"caf\xe9.txt");
    let dir = OsStr::from_bytes(b"d\xff");
    fs::write(sb.rendered().join(name), "latin-1 name\n").unwrap();
    write(&sb.rendered().join(dir), "inside.txt", "inside\n");
    let before = sb.outside_state();
    sb.change("DEBUG");
    assert_ok(&sb.render(&["render"]));
    assert!(up_to_date(&sb.root));
    assert_eq!(fs::read(sb.rendered().join(name)).unwrap(), b"latin-1 name\n");
    assert_eq!(
        fs::read(sb.rendered().join(dir).join("inside.txt")).unwrap(),
        b"inside\n"
    );
    let check = sb.render(&["render", "--check"]);
    assert!(!stderr(&check).contains("caf"), "{}", stderr(&check));
    assert_eq!(sb.outside_state(), before);
}

#[test]
fn manifest_entries_outside_the_folder_are_ignored_with_a_warning() {
    let sb = Sandbox::new();
    assert_ok(&sb.render(&["render"]));
    let victim = sb.outside.join("keep.txt");
    let victim_hash = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(fs::read(&victim).unwrap());
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let manifest_path = sb.rendered().join(".strata-manifest.json");
    let mut manifest: serde_json::Value = serde_json::from_str(&fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let hostile = [
        "../../outside/keep.txt".to_owned(),
        victim.display().to_string(),
        "staging/../../../outside/keep.txt".to_owned(),
    ];
    for p in &hostile {
        manifest["files"][p] = victim_hash.clone().into();
    }
    fs::write(&manifest_path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    let before = sb.outside_state();
    for args in [vec!["render", "--env", "staging"], vec!["render"]] {
        let check = sb.render(&["render", "--check"]);
        assert!(!stderr(&check).contains("no longer rendered"), "{}", stderr(&check));
        let out = sb.render(&args);
        assert_ok(&out);
        let err = stderr(&out);
        if args.len() > 1 {
            // The first render warns and rewrites the manifest without them.
            assert!(err.contains("warning:") && err.contains("ignored"), "{err}");
            for p in &hostile {
                assert!(err.contains(p.as_str()), "{p}: {err}");
            }
        } else {
            assert!(!err.contains("warning:"), "{err}");
        }
        assert_eq!(sb.outside_state(), before);
    }
    let text = fs::read_to_string(&manifest_path).unwrap();
    assert!(!text.contains("keep.txt"), "{text}");
    assert!(up_to_date(&sb.root));
}

#[test]
fn the_users_empty_folders_are_kept() {
    let sb = Sandbox::new();
    assert_ok(&sb.render(&["render"]));
    let r = sb.rendered();
    for d in ["mine/empty", "staging/flux/empty", "empty-top"] {
        fs::create_dir_all(r.join(d)).unwrap();
    }
    let before = sb.outside_state();
    // A change, and a removed component whose folder must go.
    sb.change("DEBUG");
    fs::remove_dir_all(sb.root.join("gitops/platform/argocd")).unwrap();
    assert_ok(&sb.render(&["render"]));
    assert!(up_to_date(&sb.root));
    for d in ["mine/empty", "staging/flux/empty", "empty-top"] {
        assert!(r.join(d).is_dir(), "{d}");
    }
    assert!(!r.join("staging/flux/components/argocd").exists());
    assert_eq!(sb.outside_state(), before);
}

/// With `.strata/` on another file system the staging copy goes beside the
/// output, and leaves nothing there. Needs permission to mount a tmpfs.
#[cfg(target_os = "linux")]
#[test]
fn staging_beside_the_output_when_state_is_on_another_file_system() {
    let sb = Sandbox::new();
    let state = sb.root.join(".strata");
    fs::create_dir(&state).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64m", "strata-test"])
        .arg(&state)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        common::skipped("cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN)");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(state.clone());
    let before = sb.outside_state();
    assert_ok(&sb.render(&["render"]));
    write(&sb.rendered(), "notes.md", "mine\n");
    sb.change("DEBUG");
    assert_ok(&sb.render(&["render"]));
    assert!(up_to_date(&sb.root));
    assert_eq!(fs::read_to_string(sb.rendered().join("notes.md")).unwrap(), "mine\n");
    assert!(state.join(".rendered.strata-lock").is_file());
    assert!(sb.leftovers().is_empty(), "{:?}", sb.leftovers());
    assert_eq!(sb.outside_state(), before);
}
