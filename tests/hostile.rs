//! Hostile input: each case gets a clear error at file:line:column and exit
//! 2, nothing written, and no panic, hang or runaway memory. And data
//! safety: a render killed at any point leaves a whole tree, and concurrent
//! renders of one tree do not corrupt it.
//!
//! The corpus after the first cases breaks an example rendered before and
//! also checks that the earlier tree is intact (a component that cannot be
//! loaded is an error, never a folder removed from the tree) and that
//! nothing outside the repository changed. `bench/hostile.sh` measures the
//! time and memory of the heavy cases on a release build.

mod common;

use std::path::{Path, PathBuf};
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

// ---------------------------------------------------------------------------
// The corpus below breaks an example that was rendered before, then renders
// (or diffs) again. Each case checks the exit code and the message, that the
// tree rendered before is still there byte for byte (nothing is removed on
// a guess), and that nothing outside the repository changed.

/// The example platform rendered once, copied for every case.
fn rendered_example() -> &'static Path {
    static BASE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap().keep();
        copy_dir(&repo().join("fixtures/homelab"), &dir);
        let _ = std::fs::remove_dir_all(dir.join("rendered"));
        let out = strata(&dir, &["render"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let _ = std::fs::remove_dir_all(dir.join(".strata"));
        dir
    })
}

/// A copy of the rendered example in `repo/`, beside `outside/` (a folder
/// of files a hostile input may point at).
struct Case {
    tmp: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(rendered_example(), &tmp.path().join("repo"));
        let outside = tmp.path().join("outside");
        write(&outside, "secret.yaml", "password: hunter2\n");
        write(&outside, "strata.yaml", "platform: gitops/platform\n");
        copy_dir(
            &repo().join("fixtures/homelab/gitops/platform/coredns"),
            &outside.join("coredns"),
        );
        write(&outside, "schemas/evil-v1.json", "not a schema, and never to be read\n");
        Case { tmp }
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }

    fn outside(&self) -> PathBuf {
        self.tmp.path().join("outside")
    }

    fn tree(&self) -> Vec<(String, Vec<u8>)> {
        snapshot_tree(&self.root().join("rendered"))
    }

    /// Runs strata in the repository with extra environment variables.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.arg("--root").arg(self.root()).args(["--color", "never"]).args(args);
        cmd.env("STRATA_TODAY", "2026-12-02").env_remove("NO_COLOR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run strata")
    }

    /// Breaks the example with `edit` (given the repository and the folder
    /// outside it), runs `args` and checks the outcome as described above.
    fn refused(self, code: i32, args: &[&str], edit: impl FnOnce(&Path, &Path)) -> String {
        let before = self.tree();
        assert!(!before.is_empty());
        edit(&self.root(), &self.outside());
        let outside = snapshot_tree(&self.outside());
        let started = std::time::Instant::now();
        let out = self.run(args, &[]);
        let elapsed = started.elapsed();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert!(err.contains("help:"), "no help line: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
        assert!(self.tree() == before, "the rendered tree changed: {err}");
        assert!(
            snapshot_tree(&self.outside()) == outside,
            "something outside the repository changed"
        );
        err
    }
}

/// `strata render` of the example broken by `edit`: exit 2, and see [`Case::refused`].
fn rejected(edit: impl FnOnce(&Path, &Path)) -> String {
    Case::new().refused(2, &["render"], edit)
}

#[cfg(unix)]
fn link(target: impl AsRef<Path>, at: &Path) {
    let _ = std::fs::remove_file(at);
    let _ = std::fs::remove_dir_all(at);
    std::os::unix::fs::symlink(target, at).unwrap();
}

fn edit(root: &Path, rel: &str, f: impl FnOnce(String) -> String) {
    let p = root.join(rel);
    let s = std::fs::read_to_string(&p).unwrap();
    std::fs::write(p, f(s)).unwrap();
}

const PLATFORM: &str = "gitops/platform";

// --- A component that cannot be loaded stops the render --------------------

#[test]
fn a_misnamed_config_yml_stops_the_render_and_names_the_remedy() {
    let err = rejected(|r, _| {
        let dir = r.join(PLATFORM).join("traefik");
        std::fs::rename(dir.join("config.yaml"), dir.join("config.yml")).unwrap();
    });
    assert!(err.contains("gitops/platform/traefik/config.yml"), "{err}");
    assert!(err.contains("no config.yaml") && err.contains("git mv"), "{err}");
}

#[test]
fn a_config_yaml_in_capitals_is_named() {
    let err = rejected(|r, _| {
        let dir = r.join(PLATFORM).join("traefik");
        std::fs::rename(dir.join("config.yaml"), dir.join("Config.YAML")).unwrap();
    });
    assert!(err.contains("`Config.YAML` but no config.yaml"), "{err}");
}

#[test]
fn values_without_config_yaml_stop_the_render() {
    let err = rejected(|r, _| std::fs::remove_file(r.join(PLATFORM).join("longhorn/config.yaml")).unwrap());
    assert!(err.contains("folder gitops/platform/longhorn holds"), "{err}");
    assert!(err.contains("`values.yaml`") && err.contains("no config.yaml"), "{err}");
}

#[test]
fn manifests_alone_make_a_component_folder() {
    let err = rejected(|r, _| {
        write(
            r,
            "gitops/platform/extra/manifests/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
        );
    });
    assert!(
        err.contains("gitops/platform/extra") && err.contains("`manifests`"),
        "{err}"
    );
}

#[test]
fn an_empty_folder_is_no_component_and_changes_nothing() {
    let case = Case::new();
    let before = case.tree();
    std::fs::create_dir_all(case.root().join(PLATFORM).join("notes")).unwrap();
    write(&case.root(), "gitops/platform/notes/README.md", "plans\n");
    let out = case.run(&["render"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(case.tree() == before);
}

#[cfg(unix)]
#[test]
fn a_component_folder_linked_out_of_the_repository_stops_the_render() {
    let err = rejected(|r, o| link(o.join("coredns"), &r.join(PLATFORM).join("coredns")));
    assert!(
        err.contains("component folder gitops/platform/coredns cannot be read"),
        "{err}"
    );
    assert!(err.contains("leaves the repository"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_component_folder_linked_to_nothing_stops_the_render() {
    let err = rejected(|r, o| link(o.join("gone"), &r.join(PLATFORM).join("coredns")));
    assert!(
        err.contains("gitops/platform/coredns") && err.contains("symbolic link to nothing"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn a_component_folder_linked_to_itself_stops_the_render() {
    let err = rejected(|r, _| link("coredns", &r.join(PLATFORM).join("coredns")));
    assert!(err.contains("gitops/platform/coredns") && err.contains("loop"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_config_yaml_linked_out_of_the_repository_stops_the_render() {
    let err = rejected(|r, o| {
        link(
            o.join("coredns/config.yaml"),
            &r.join(PLATFORM).join("coredns/config.yaml"),
        )
    });
    assert!(
        err.contains("gitops/platform/coredns/config.yaml") && err.contains("leaves the repository"),
        "{err}"
    );
}

#[test]
fn a_config_yaml_that_is_a_folder_stops_the_render() {
    let err = rejected(|r, _| {
        let p = r.join(PLATFORM).join("coredns/config.yaml");
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
    });
    assert!(
        err.contains("gitops/platform/coredns/config.yaml") && err.contains("not a regular file"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn a_manifests_folder_linked_out_of_the_repository_stops_the_render() {
    let err = rejected(|r, o| {
        std::fs::create_dir_all(o.join("manifests")).unwrap();
        link(o.join("manifests"), &r.join(PLATFORM).join("traefik/manifests"));
    });
    assert!(
        err.contains("gitops/platform/traefik/manifests") && err.contains("leaves the repository"),
        "{err}"
    );
}

// --- Kinds and apiVersions are names, never paths ---------------------------

/// Configures a schema folder inside the repository, so that kinds are
/// looked up as files.
fn with_schemas(r: &Path) {
    write(r, "schemas/k8s/.keep", "");
    edit(r, "strata.yaml", |s| s + "schemas: [schemas/k8s]\n");
}

fn manifest(r: &Path, api_version: &str, kind: &str) {
    write(
        r,
        "gitops/platform/traefik/manifests/evil.yaml",
        &format!("apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: x\n"),
    );
}

#[test]
fn a_kind_that_climbs_out_of_the_schema_folder_is_refused_at_its_line() {
    let err = rejected(|r, _| {
        with_schemas(r);
        manifest(r, "v1", "../../../outside/schemas/evil");
    });
    assert!(err.contains("gitops/platform/traefik/manifests/evil.yaml:2:7"), "{err}");
    assert!(err.contains("is not a Kubernetes kind"), "{err}");
    assert!(
        !err.contains("never to be read") && !err.contains("cannot be used"),
        "{err}"
    );
}

#[test]
fn a_kind_with_a_slash_is_refused() {
    let err = rejected(|r, _| {
        with_schemas(r);
        manifest(r, "v1", "Config/Map");
    });
    assert!(err.contains("kind `Config/Map` is not a Kubernetes kind"), "{err}");
}

#[test]
fn a_kind_with_a_backslash_is_refused() {
    let err = rejected(|r, _| {
        with_schemas(r);
        manifest(r, "v1", "'..\\..\\evil'");
    });
    assert!(err.contains("is not a Kubernetes kind"), "{err}");
}

#[test]
fn an_api_version_that_climbs_out_is_refused_at_its_line() {
    let err = rejected(|r, _| {
        with_schemas(r);
        manifest(r, "../../outside/v1", "ConfigMap");
    });
    assert!(err.contains("evil.yaml:1:13"), "{err}");
    assert!(err.contains("is not a Kubernetes API version"), "{err}");
}

#[test]
fn an_api_version_with_an_empty_group_label_is_refused() {
    let err = rejected(|r, _| {
        with_schemas(r);
        manifest(r, "a..b/v1", "ConfigMap");
    });
    assert!(err.contains("apiVersion `a..b/v1`"), "{err}");
}

#[test]
fn a_kind_made_by_a_template_is_checked_too() {
    let err = rejected(|r, _| {
        with_schemas(r);
        write(
            r,
            "gitops/platform/traefik/manifests/evil.yaml.j2",
            "apiVersion: v1\nkind: {{ '../' * 3 }}etc\nmetadata:\n  name: x\n",
        );
    });
    assert!(
        err.contains("kind `../../../etc`") && err.contains("rendered output"),
        "{err}"
    );
}

#[test]
fn a_kind_longer_than_a_label_is_refused() {
    let err = rejected(|r, _| manifest(r, "v1", &"K".repeat(64)));
    assert!(err.contains("at most 63"), "{err}");
}

#[test]
fn a_strata_template_giving_a_path_as_kind_is_never_looked_up() {
    // A generated object is judged by the schema stage: a finding (exit 1),
    // and no file outside the schema folder is opened.
    let err = Case::new().refused(1, &["render"], |r, _| {
        with_schemas(r);
        write(
            r,
            "templates/flux/namespace.yaml.j2",
            "apiVersion: v1\nkind: ../../../outside/schemas/evil\nmetadata:\n  name: {{ namespace.name | tojson }}\n",
        );
    });
    assert!(
        err.contains("is not a Kubernetes kind") && err.contains("not validated"),
        "{err}"
    );
    assert!(!err.contains("never to be read"), "{err}");
}

// --- Memory and time are bounded --------------------------------------------

#[test]
fn a_template_that_repeats_strings_is_stopped_at_the_template() {
    let err = rejected(|r, _| {
        write(
            r,
            "gitops/platform/traefik/manifests/configmap-big.yaml.j2",
            "{% set ns = namespace(s='xxxxxxxxxxxxxxxx' * 65536) %}{% for i in range(12) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}\n",
        )
    });
    assert!(err.contains("configmap-big.yaml.j2:1"), "{err}");
    assert!(err.contains("ran too long or built too much"), "{err}");
}

#[test]
fn one_huge_repetition_is_refused_before_it_is_built() {
    let err = rejected(|r, _| {
        write(
            r,
            "gitops/platform/traefik/manifests/configmap-big.yaml.j2",
            "{{ 'x' * 99999999 }}\n",
        )
    });
    assert!(
        err.contains("configmap-big.yaml.j2:1") && err.contains("built too much"),
        "{err}"
    );
}

#[test]
fn nindent_cannot_build_a_gigabyte() {
    let err = rejected(|r, _| {
        write(
            r,
            "gitops/platform/traefik/manifests/configmap-big.yaml.j2",
            "data: {{ 'a\\nb' | nindent(1000000000) }}\n",
        )
    });
    assert!(
        err.contains("configmap-big.yaml.j2:1") && err.contains("output is too large"),
        "{err}"
    );
}

#[test]
fn a_template_output_over_the_limit_is_refused() {
    let err = rejected(|r, _| {
        write(
            r,
            "gitops/platform/traefik/manifests/configmap-big.yaml.j2",
            "{% for i in range(9) %}{{ 'y' * 1048576 }}{% endfor %}\n",
        )
    });
    assert!(
        err.contains("configmap-big.yaml.j2") && err.contains("output is too large"),
        "{err}"
    );
}

/// `n` components named c000.., each with a config.yaml whose `requires`
/// is `requires(i)`.
fn components(r: &Path, n: usize, requires: impl Fn(usize) -> Vec<String>) {
    std::fs::remove_dir_all(r.join(PLATFORM)).unwrap();
    for i in 0..n {
        let reqs: String = requires(i).iter().map(|x| format!("  - {x}\n")).collect();
        let reqs = if reqs.is_empty() {
            reqs
        } else {
            format!("requires:\n{reqs}")
        };
        write(
            r,
            &format!("{PLATFORM}/c{i:03}/config.yaml"),
            &format!(
                "component: c{i:03}\nnamespace: c{i:03}\nchart:\n  repoURL: https://charts.example.com\n  name: c\n  version: 1.0.0\n{reqs}"
            ),
        );
    }
}

#[test]
fn five_hundred_components_requiring_each_other_are_refused_quickly_and_briefly() {
    let err = rejected(|r, _| {
        components(r, 500, |i| {
            (0..500).filter(|j| *j != i).map(|j| format!("c{j:03}")).collect()
        })
    });
    assert!(err.contains("`requires` forms a cycle"), "{err}");
    assert!(
        err.contains("500 components require each other") && err.contains("more)"),
        "{err}"
    );
    assert!(err.len() < 20_000, "{} bytes of diagnostics", err.len());
}

#[test]
fn many_separate_cycles_are_counted() {
    let err = rejected(|r, _| components(r, 100, |i| vec![format!("c{:03}", i ^ 1)]));
    assert!(
        err.contains("40 more group(s) of components require each other"),
        "{err}"
    );
    assert!(err.matches("forms a cycle").count() == 10, "{err}");
}

#[test]
fn a_long_cycle_is_shown_cut_short() {
    let err = rejected(|r, _| components(r, 300, |i| vec![format!("c{:03}", (i + 1) % 300)]));
    assert!(
        err.contains("c000 -> c001 -> c002") && err.contains("(289 more) -> c000"),
        "{err}"
    );
}

#[test]
fn thousands_of_unknown_requirements_are_counted() {
    let err = rejected(|r, _| components(r, 100, |i| (0..100).map(|j| format!("ghost-{i}-{j}")).collect()));
    assert!(err.contains("which is no component"), "{err}");
    assert!(err.contains("9990 more requirement(s) name no component"), "{err}");
    assert!(err.len() < 20_000, "{} bytes of diagnostics", err.len());
}

#[test]
fn an_environment_leaving_out_what_hundreds_require_is_counted() {
    let err = rejected(|r, _| {
        components(r, 200, |i| if i == 0 { vec![] } else { vec!["c000".into()] });
        edit(r, "environments/staging.yaml", |s| {
            s + "components:\n  exclude: [c000]\n"
        });
    });
    assert!(err.contains("189 more required component(s)"), "{err}");
}

#[test]
fn tens_of_thousands_of_findings_print_a_bounded_report() {
    let err = rejected(|r, _| {
        let keys: String = (0..20_000).map(|i| format!("unknown{i}: 1\n")).collect();
        edit(r, "gitops/platform/traefik/config.yaml", |s| s + &keys);
    });
    assert!(err.contains("more diagnostic(s) not shown"), "{err}");
    assert!(err.len() < 400_000, "{} bytes of diagnostics", err.len());
}

#[test]
fn a_large_values_file_renders_in_bounded_time() {
    let case = Case::new();
    let text: String = (0..60_000).map(|i| format!("key{i:07}: value-{i:07}\n")).collect();
    write(&case.root(), "gitops/platform/traefik/values-staging.yaml", &text);
    let started = std::time::Instant::now();
    let out = case.run(&["render", "--env", "staging"], &[]);
    // 1.5 MB of values do not fit the ConfigMap that carries them to Flux:
    // a clear error, in bounded time.
    let err = stderr(&out);
    assert!(
        out.status.code() != Some(2) || err.contains("holds at most 1 MiB"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
}

#[test]
fn jobs_beyond_four_per_core_are_capped_with_a_warning() {
    let case = Case::new();
    let before = case.tree();
    let out = case.run(&["--jobs", "100000", "render"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning: --jobs 100000 is more than 4 threads per core"));
    assert!(case.tree() == before);
    let out = case.run(&["--jobs", "0", "render", "--check"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn rayon_num_threads_cannot_ask_for_thousands_of_threads() {
    let case = Case::new();
    let started = std::time::Instant::now();
    let out = case.run(&["render", "--check"], &[("RAYON_NUM_THREADS", "100000")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(30));
}

// --- strata.yaml ------------------------------------------------------------

#[cfg(unix)]
#[test]
fn a_strata_yaml_linked_out_of_the_repository_is_refused() {
    let err = rejected(|r, o| link(o.join("strata.yaml"), &r.join("strata.yaml")));
    assert!(
        err.contains("cannot read strata.yaml") && err.contains("leaves the repository"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn a_strata_yaml_linked_to_an_endless_device_is_refused_at_once() {
    let err = rejected(|r, _| link("/dev/zero", &r.join("strata.yaml")));
    assert!(err.contains("strata.yaml") && err.contains("/dev/zero"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_project_redirect_through_a_link_out_is_refused() {
    let err = rejected(|r, o| {
        std::fs::create_dir_all(o.join("elsewhere")).unwrap();
        write(o, "elsewhere/strata.yaml", "platform: p\n");
        link(o.join("elsewhere"), &r.join("sub"));
        std::fs::write(r.join("strata.yaml"), "project: sub\n").unwrap();
    });
    assert!(err.contains("`project: sub` leads out of the repository"), "{err}");
}

// --- Inputs of every kind that are not regular files inside -----------------

#[cfg(unix)]
#[test]
fn a_values_file_that_is_a_pipe_is_never_opened() {
    let err = rejected(|r, _| {
        let p = r.join("gitops/platform/traefik/values-staging.yaml");
        std::fs::remove_file(&p).unwrap();
        let ok = Command::new("mkfifo").arg(&p).status().unwrap();
        assert!(ok.success());
    });
    assert!(
        err.contains("values-staging.yaml") && err.contains("not a regular file"),
        "{err}"
    );
}

#[test]
fn a_values_file_that_is_a_folder_is_refused() {
    let err = rejected(|r, _| {
        let p = r.join("gitops/platform/traefik/values-staging.yaml");
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
    });
    assert!(
        err.contains("values-staging.yaml") && err.contains("not a regular file"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn a_contract_linked_out_of_the_repository_is_refused() {
    let err = rejected(|r, o| link(o.join("secret.yaml"), &r.join("contracts/staging.json")));
    assert!(
        err.contains("contracts/staging.json") && err.contains("leaves the repository"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_manifest_linked_out_of_the_repository_is_refused() {
    let err = rejected(|r, o| {
        link(
            o.join("secret.yaml"),
            &r.join("gitops/platform/traefik/manifests/stolen.yaml"),
        )
    });
    assert!(
        err.contains("manifests/stolen.yaml") && err.contains("leaves the repository"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_template_override_linked_out_of_the_repository_is_refused() {
    let err = rejected(|r, o| {
        std::fs::create_dir_all(r.join("templates/flux")).unwrap();
        link(o.join("secret.yaml"), &r.join("templates/flux/namespace.yaml.j2"));
    });
    assert!(
        err.contains("templates/flux/namespace.yaml.j2") && err.contains("leaves the repository"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn a_values_schema_linked_out_of_the_repository_is_refused() {
    let err = rejected(|r, o| {
        link(
            o.join("secret.yaml"),
            &r.join("gitops/platform/traefik/values.schema.json"),
        )
    });
    assert!(
        err.contains("values.schema.json") && err.contains("leaves the repository"),
        "{err}"
    );
}

#[test]
fn an_environment_file_over_the_limit_is_refused() {
    let err = rejected(|r, _| {
        let f = std::fs::File::create(r.join("environments/staging.yaml")).unwrap();
        f.set_len(9 * 1024 * 1024).unwrap();
    });
    assert!(
        err.contains("environments/staging.yaml") && err.contains("over the limit"),
        "{err}"
    );
}

#[test]
fn nul_bytes_in_a_values_file_are_placed() {
    let err = rejected(|r, _| write(r, VALUES, "a: 1\nb: \"x\0y\n"));
    assert!(err.contains(VALUES), "{err}");
}

#[test]
fn an_alias_bomb_in_a_contract_is_refused() {
    let err = rejected(|r, _| {
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let mut prev = 'a';
        for c in 'b'..='j' {
            text.push_str(&format!(
                "{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
            prev = c;
        }
        write(r, "contracts/staging.json", &text);
    });
    assert!(err.contains("contracts/staging.json"), "{err}");
}

#[test]
fn a_deeply_nested_json_contract_is_refused() {
    let err = rejected(|r, _| {
        write(
            r,
            "contracts/staging.json",
            &format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
        )
    });
    assert!(
        err.contains("contracts/staging.json") && err.contains("nested deeper than 128"),
        "{err}"
    );
}

// --- Clear messages ------------------------------------------------------------

#[test]
fn a_tab_indented_json_contract_is_accepted() {
    let case = Case::new();
    let before = case.tree();
    let p = case.root().join("contracts/staging.json");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let tabbed = serde_json::to_string_pretty(&json).unwrap().replace("  ", "\t");
    assert!(tabbed.contains("\n\t\t\""));
    std::fs::write(&p, tabbed).unwrap();
    let out = case.run(&["render"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(case.tree() == before);
}

#[test]
fn a_multi_document_values_file_is_explained() {
    let err = rejected(|r, _| write(r, VALUES, "a: 1\n---\nb: 2\n"));
    assert!(err.contains(&format!("{VALUES}:2:1")), "{err}");
    assert!(
        err.contains("more than one YAML document") && err.contains("remove this `---`"),
        "{err}"
    );
}

#[test]
fn a_key_over_1024_characters_is_explained() {
    let err = rejected(|r, _| write(r, VALUES, &format!("{}: 1\n", "k".repeat(1100))));
    assert!(err.contains(&format!("{VALUES}:1:")), "{err}");
    assert!(
        err.contains("1100 characters") && err.contains("at most 1024") && err.contains("`? key`"),
        "{err}"
    );
}

#[test]
fn an_int_tag_on_text_is_explained() {
    let err = rejected(|r, _| write(r, VALUES, "replicas: !!int abc\n"));
    assert!(err.contains(&format!("{VALUES}:1:")), "{err}");
    assert!(
        err.contains("`abc` is not an integer, but its tag `!!int` says it is"),
        "{err}"
    );
}

#[test]
fn a_bool_tag_on_text_is_explained() {
    let err = rejected(|r, _| write(r, VALUES, "flags: [!!bool maybe]\n"));
    assert!(err.contains("`maybe` is not a boolean"), "{err}");
}

#[test]
fn a_list_as_a_key_is_explained() {
    let err = rejected(|r, _| write(r, VALUES, "? [a, b]\n: 1\n"));
    assert!(err.contains("a mapping key must be a string"), "{err}");
}

#[test]
fn different_objects_colliding_on_one_file_name_are_both_named() {
    let err = rejected(|r, _| {
        write(
            r,
            "gitops/platform/traefik/manifests/roles.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: \"system:edge\"\nrules: []\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: system-edge\nrules: []\n",
        )
    });
    assert!(
        err.contains("ClusterRole/system:edge and ClusterRole/system-edge would both be written to"),
        "{err}"
    );
    assert!(
        err.contains("clusterrole-system-edge.yaml") && err.contains("rename one"),
        "{err}"
    );
}

#[test]
fn two_spellings_of_a_kind_colliding_are_both_named() {
    let err = rejected(|r, _| {
        write(
            r,
            "gitops/platform/traefik/manifests/cms.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\n---\napiVersion: v1\nkind: Configmap\nmetadata:\n  name: same\n",
        )
    });
    assert!(
        err.contains("ConfigMap/traefik/same and Configmap/traefik/same would both be written"),
        "{err}"
    );
}

// --- A base revision is read by the working tree's rules ----------------------

/// The case's repository as a git repository with one commit.
fn committed(case: &Case) {
    let root = case.root();
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "base"]);
}

#[cfg(unix)]
#[test]
fn a_linked_values_layer_is_no_change_against_its_commit() {
    let case = Case::new();
    let root = case.root();
    let target = root.join("shared/traefik-staging.yaml");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(root.join(VALUES), &target).unwrap();
    link("../../../shared/traefik-staging.yaml", &root.join(VALUES));
    committed(&case);
    let out = case.run(&["diff", "--base", "HEAD", "--exit-code"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("no changes against HEAD"), "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn a_base_revision_with_a_layer_linked_out_is_refused_as_the_working_tree_would_be() {
    let case = Case::new();
    let root = case.root();
    let real = std::fs::read_to_string(root.join(VALUES)).unwrap();
    link(case.outside().join("secret.yaml"), &root.join(VALUES));
    committed(&case);
    std::fs::remove_file(root.join(VALUES)).unwrap();
    std::fs::write(root.join(VALUES), real).unwrap();
    let out = case.run(&["diff", "--base", "HEAD"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(VALUES) && err.contains("leaves the repository"), "{err}");
    assert!(err.contains("the base revision HEAD"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn dubious_ownership_is_named_with_its_remedy() {
    let case = Case::new();
    committed(&case);
    let out = case.run(&["diff", "--base", "HEAD"], &[("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("dubious ownership") && !err.contains("not inside a git repository"),
        "{err}"
    );
    assert!(err.contains("git config --global --add safe.directory"), "{err}");
}

#[test]
fn dubious_ownership_does_not_change_the_rendered_paths() {
    // The platform in a subfolder of its git repository, with no `git.path`:
    // the engines' paths come from where the root is in the repository.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("platform");
    copy_dir(rendered_example(), &root);
    for env in ["dev", "staging", "production"] {
        edit(&root, &format!("environments/{env}.yaml"), |s| {
            s.lines()
                .filter(|l| !l.trim_start().starts_with("path:"))
                .collect::<Vec<_>>()
                .join("\n")
                + "\n"
        });
    }
    git(tmp.path(), &["init", "-q"]);
    let run = |env: &[(&str, &str)]| {
        let _ = std::fs::remove_dir_all(root.join("rendered"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.arg("--root")
            .arg(&root)
            .args(["--color", "never", "render"])
            .env("STRATA_TODAY", "2026-12-02");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        snapshot_tree(&root.join("rendered"))
    };
    let trusted = run(&[]);
    let refused = run(&[("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")]);
    assert!(
        trusted
            .iter()
            .any(|(_, b)| String::from_utf8_lossy(b).contains("./platform/rendered"))
    );
    assert!(
        trusted == refused,
        "the tree depends on whether git trusts the repository"
    );
}

#[test]
fn a_git_lfs_pointer_in_the_base_revision_is_named() {
    let case = Case::new();
    let root = case.root();
    let real = std::fs::read_to_string(root.join(VALUES)).unwrap();
    std::fs::write(
        root.join(VALUES),
        "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n",
    )
    .unwrap();
    committed(&case);
    std::fs::write(root.join(VALUES), real).unwrap();
    let out = case.run(&["diff", "--base", "HEAD"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(VALUES) && err.contains("Git LFS pointer in HEAD"), "{err}");
    assert!(err.contains("git lfs untrack"), "{err}");
}

#[test]
fn a_git_crypt_blob_in_the_base_revision_is_named() {
    let case = Case::new();
    let root = case.root();
    let real = std::fs::read(root.join("contracts/staging.json")).unwrap();
    std::fs::write(
        root.join("contracts/staging.json"),
        b"\0GITCRYPT\0\x8f\x12\x00\xff binary",
    )
    .unwrap();
    committed(&case);
    std::fs::write(root.join("contracts/staging.json"), real).unwrap();
    let out = case.run(&["diff", "--base", "HEAD"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("contracts/staging.json") && err.contains("encrypted by git-crypt"),
        "{err}"
    );
}

#[test]
fn a_long_list_where_every_item_changed_diffs_in_bounded_time() {
    let case = Case::new();
    let root = case.root();
    let list = |prefix: &str| -> String {
        std::iter::once("extraArgs:\n".to_owned())
            .chain((0..20_000).map(|i| format!("  - --{prefix}-{i}\n")))
            .collect()
    };
    write(&root, "gitops/platform/traefik/values-dev.yaml", &list("old"));
    committed(&case);
    write(&root, "gitops/platform/traefik/values-dev.yaml", &list("new"));
    let started = std::time::Instant::now();
    let out = case.run(&["diff", "--base", "HEAD", "--env", "dev", "--format", "json"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let changed = json["objects"].as_array().unwrap();
    assert!(!changed.is_empty());
    assert!(stdout(&out).contains("too large to compare line by line"), "no note");
}

// --- Found by fuzzing --------------------------------------------------------

/// fuzz/template: a syntax error at a multi-byte character put the engine's
/// error range inside the character, and placing the error panicked.
#[test]
fn a_template_syntax_error_at_a_multi_byte_character_is_placed() {
    let err = rejected(|r, _| write(r, "gitops/platform/traefik/manifests/configmap-x.yaml.j2", "{{\u{7c7}"));
    assert!(err.contains("configmap-x.yaml.j2:1:"), "{err}");
    assert!(err.contains("template error"), "{err}");
}
