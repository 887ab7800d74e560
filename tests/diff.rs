//! End-to-end tests of `strata diff` and `strata explain`: a git repository
//! in a temporary folder with two commits of the homelab platform (in a
//! subfolder, as in a monorepo), compared in every format.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_strata");
const TODAY: &str = "2026-06-01";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/homelab")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "rendered" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

fn git(dir: &Path, args: &[&str]) {
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
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn strata(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .env("STRATA_TODAY", TODAY)
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

const SECRET_BASE: &str = "admin:hunter2-base-value";
const SECRET_HEAD: &str = "admin:hunter2-head-value";
/// A line of the staging contract's sensitive `client_key`.
const CONTRACT_SECRET: &str = "STRATA-TEST-SECRET-staging-client-key";

/// The fixture's contracts keep no sensitive value (SEC002); staging's
/// `client_key` is given one here, as a contract written with `tofu output
/// -json > FILE` holds it, so that the diff has a secret to keep out.
fn hold_contract_secret(platform: &Path) {
    let path = platform.join("contracts/staging.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    c["client_key"]["value"] = Value::from(format!(
        "-----BEGIN EC PRIVATE KEY-----\n{CONTRACT_SECRET}\nTUlJQmZha2VGYWtlRmFrZUZha2VGYWtlRmFrZQ==\n-----END EC PRIVATE KEY-----\n"
    ));
    write(&path, &serde_json::to_string_pretty(&c).unwrap());
}

fn secret_manifest(value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: basic-auth\n  namespace: traefik\ntype: Opaque\nstringData:\n  users: \"{value}\"\n  realm: homelab\n"
    )
}

fn leaky_configmap(extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pasted\n  namespace: traefik\ndata:\n  a: one\n  key: \"{CONTRACT_SECRET}\"\n  z: last{extra}\n"
    )
}

/// A repository whose first commit is the homelab platform (plus a Secret
/// and a ConfigMap holding a sensitive contract value) in `platform/`, and
/// whose second commit changes a staging value, adds a component, removes
/// one, renames a manifest file and changes the Secret.
struct Repo {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("repo");
        let platform = dir.join("platform");
        copy_dir(&fixture(), &platform);
        hold_contract_secret(&platform);
        write(&dir.join("strata.yaml"), "project: platform\n");
        let traefik = platform.join("gitops/platform/traefik");
        write(
            &traefik.join("manifests/secret-basic-auth.yaml"),
            &secret_manifest(SECRET_BASE),
        );
        write(&traefik.join("manifests/configmap-pasted.yaml"), &leaky_configmap(""));
        git(&dir, &["init", "-q", "-b", "main"]);
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", "base"]);

        let staging = traefik.join("values-staging.yaml");
        let text = std::fs::read_to_string(&staging).unwrap();
        assert!(text.contains("192.168.10.240"));
        write(&staging, &text.replace("192.168.10.240", "192.168.10.241"));
        write(
            &platform.join("gitops/platform/whoami/config.yaml"),
            "component: whoami\nnamespace: whoami\nchart:\n  repoURL: https://traefik.github.io/charts\n  name: whoami\n  version: 5.2.0\nsync: automated\ntier: addon\nrequires:\n  - traefik\n",
        );
        write(&platform.join("gitops/platform/whoami/values.yaml"), "replicas: 2\n");
        std::fs::remove_dir_all(platform.join("gitops/platform/coredns")).unwrap();
        std::fs::rename(
            traefik.join("manifests/networkpolicy-allow-ingress.yaml"),
            traefik.join("manifests/allow-ingress.yaml"),
        )
        .unwrap();
        write(
            &traefik.join("manifests/secret-basic-auth.yaml"),
            &secret_manifest(SECRET_HEAD),
        );
        write(
            &traefik.join("manifests/configmap-pasted.yaml"),
            &leaky_configmap("\n  added: here"),
        );
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", "head"]);
        Repo { _tmp: tmp, dir }
    }

    fn run(&self, args: &[&str]) -> Output {
        strata(&self.dir, args)
    }

    fn json(&self, extra: &[&str]) -> Value {
        let mut args = vec!["diff", "--base", "HEAD~1", "--format", "json"];
        args.extend_from_slice(extra);
        let out = self.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap()
    }
}

fn find<'a>(objects: &'a [Value], env: &str, target: &str, kind: &str, name: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["environment"] == env && o["target"] == target && o["kind"] == kind && o["name"] == name)
}

#[test]
fn json_lists_added_changed_and_removed_objects() {
    let repo = Repo::new();
    let j = repo.json(&[]);
    assert_eq!(j["changed"], true);
    assert_eq!(j["base"]["revision"], "HEAD~1");
    assert_eq!(j["base"]["commit"].as_str().unwrap().len(), 40);
    let objects = j["objects"].as_array().unwrap();

    // The staging value changes the values Flux and Argo CD carry (the
    // Flux ConfigMap, named by its digest, is the same object changed), and
    // the release's reference to the ConfigMap.
    let release = find(objects, "staging", "flux", "HelmRelease", "traefik").unwrap();
    assert_eq!(release["status"], "changed");
    let renamed: Vec<&str> = release["hunks"][0]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["op"] != "context")
        .map(|l| l["text"].as_str().unwrap().trim())
        .collect();
    assert_eq!(renamed.len(), 2, "{renamed:?}");
    assert!(
        renamed.iter().all(|l| l.starts_with("name: traefik-values-")),
        "{renamed:?}"
    );
    for (target, kind, name) in [
        ("flux", "ConfigMap", "traefik-values"),
        ("argo", "Application", "traefik"),
    ] {
        let o = find(objects, "staging", target, kind, name).unwrap_or_else(|| panic!("{target} {kind}"));
        assert_eq!(o["status"], "changed");
        assert_eq!(o["component"], "traefik");
        let lines: Vec<&Value> = o["hunks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|h| h["lines"].as_array().unwrap())
            .collect();
        // The ConfigMap's name changes with its values.
        let values_line = |l: &&&Value| !l["text"].as_str().unwrap().trim().starts_with("name: traefik-values-");
        let changed: Vec<(&str, &str)> = lines
            .iter()
            .filter(|l| l["op"] != "context")
            .filter(values_line)
            .map(|l| (l["op"].as_str().unwrap(), l["text"].as_str().unwrap().trim()))
            .collect();
        assert_eq!(
            changed,
            vec![
                ("removed", "lbipam.cilium.io/ips: \"192.168.10.240\""),
                ("added", "lbipam.cilium.io/ips: \"192.168.10.241\"")
            ]
        );
        // Provenance: the changed line comes from values-staging.yaml, at the line that sets it.
        for l in lines.iter().filter(|l| l["op"] != "context").filter(values_line) {
            assert_eq!(l["source"]["file"], "gitops/platform/traefik/values-staging.yaml");
            assert_eq!(l["source"]["line"], 5);
        }
        // Three lines of context on each side of the change, and its name.
        let h = o["hunks"].as_array().unwrap().last().unwrap();
        assert_eq!(h["old_lines"], 7);
        assert_eq!(h["new_lines"], 7);
    }
    for env in ["dev", "production"] {
        assert!(find(objects, env, "flux", "HelmRelease", "traefik").is_none(), "{env}");
    }

    // The new component's objects are added in every environment, the removed one's removed.
    for env in ["dev", "staging", "production"] {
        let o = find(objects, env, "flux", "HelmRelease", "whoami").unwrap();
        assert_eq!(o["status"], "added");
        assert_eq!(
            o["path"],
            format!("rendered/{env}/flux/components/whoami/helmrelease-whoami.yaml")
        );
        assert_eq!(o["base_path"], Value::Null);
        let first = &o["hunks"][0];
        assert_eq!(
            (first["old_start"].as_u64(), first["old_lines"].as_u64()),
            (Some(0), Some(0))
        );
        assert!(first["lines"].as_array().unwrap().iter().all(|l| l["op"] == "added"));
        assert_eq!(
            find(objects, env, "flux", "Namespace", "whoami").unwrap()["status"],
            "added"
        );
        assert_eq!(
            find(objects, env, "argo", "Application", "whoami").unwrap()["status"],
            "added"
        );

        let r = find(objects, env, "flux", "HelmRelease", "coredns").unwrap();
        assert_eq!(r["status"], "removed");
        assert_eq!(r["path"], Value::Null);
        assert!(r["base_path"].as_str().unwrap().ends_with("helmrelease-coredns.yaml"));
        assert_eq!(
            find(objects, env, "argo", "Application", "coredns").unwrap()["status"],
            "removed"
        );
    }

    // A renamed manifest file is a move, not a change.
    assert!(!objects.iter().any(|o| o["kind"] == "NetworkPolicy"), "{objects:#?}");

    // The summary counts what the objects list says.
    let summary = j["summary"].as_array().unwrap();
    // Three environments, two targets, and the talos environments' substrate
    // patch, which no longer turns Talos's CoreDNS off (coredns is removed).
    assert_eq!(summary.len(), 8, "{summary:#?}");
    for env in ["staging", "production"] {
        let o = find(objects, env, "substrate", "", "").or_else(|| {
            objects
                .iter()
                .find(|o| o["environment"] == env && o["target"] == "substrate")
        });
        assert_eq!(o.map(|o| o["status"].clone()), Some(Value::from("changed")), "{env}");
    }
    for row in summary {
        for status in ["added", "changed", "removed"] {
            let n = objects
                .iter()
                .filter(|o| {
                    o["environment"] == row["environment"] && o["target"] == row["target"] && o["status"] == status
                })
                .count();
            assert_eq!(row[status].as_u64(), Some(n as u64), "{row} {status}");
        }
    }
    assert_eq!(
        j["totals"]["added"].as_u64().unwrap() as usize,
        objects.iter().filter(|o| o["status"] == "added").count()
    );
    // No invariant finding changes on this platform. The new component
    // whoami, whose chart is neither rendered here (no helm) nor described
    // by a chart profile, is only named as not checked (E015).
    let introduced: Vec<&Value> = j["findings"]["introduced"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !(f["code"] == "E015" && f["message"].as_str().is_some_and(|m| m.contains("whoami"))))
        .collect();
    assert!(introduced.is_empty(), "{introduced:#?}");
}

#[test]
fn text_and_markdown_tell_the_same_story() {
    let repo = Repo::new();
    let out = repo.run(&["diff", "--base", "HEAD~1", "--why"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("~ staging/flux HelmRelease traefik/traefik (rendered/staging/flux/components/traefik/helmrelease-traefik.yaml)"),
        "{text}"
    );
    assert!(
        text.contains(
            "-        lbipam.cilium.io/ips: \"192.168.10.240\"    # gitops/platform/traefik/values-staging.yaml:5"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "+        lbipam.cilium.io/ips: \"192.168.10.241\"    # gitops/platform/traefik/values-staging.yaml:5"
        ),
        "{text}"
    );
    assert!(text.contains("+ dev/argo Application argocd/whoami"), "{text}");
    assert!(
        text.contains("- production/flux HelmRelease kube-system/coredns"),
        "{text}"
    );
    // The object's own input is named once, not on every line.
    assert!(text.contains("+ dev/flux HelmRelease whoami/whoami (rendered/dev/flux/components/whoami/helmrelease-whoami.yaml)\n  from gitops/platform/whoami/config.yaml:1\n"), "{text}");
    assert!(!text.contains("    # gitops/platform/whoami/config.yaml"), "{text}");
    assert!(
        text.contains("\n+    replicas: 2    # gitops/platform/whoami/values.yaml:1\n"),
        "{text}"
    );
    assert!(!text.contains("NetworkPolicy"));
    let last = text.lines().last().unwrap();
    assert!(
        last.ends_with("removed against HEAD~1 (") || last.contains("removed against HEAD~1 ("),
        "{last}"
    );

    // Without --why, no provenance.
    let plain = stdout(&repo.run(&["diff", "--base", "HEAD~1"]));
    assert!(!plain.contains("# gitops/platform/traefik/values-staging.yaml"));

    // --exit-code reports the change.
    assert_eq!(
        repo.run(&["diff", "--base", "HEAD~1", "--exit-code"]).status.code(),
        Some(1)
    );

    let j = repo.json(&[]);
    let md = stdout(&repo.run(&["diff", "--base", "HEAD~1", "--format", "markdown"]));
    assert!(md.starts_with("<!-- strata-diff -->\n"), "{md}");
    for row in j["summary"].as_array().unwrap() {
        let line = format!(
            "| {} | {} | {} | {} | {} |",
            row["environment"].as_str().unwrap(),
            row["target"].as_str().unwrap(),
            row["added"],
            row["changed"],
            row["removed"]
        );
        assert!(md.contains(&line), "{line} not in\n{md}");
    }
    let table = md.find("| environment | target | added | changed | removed |").unwrap();
    for component in ["coredns", "traefik", "whoami"] {
        let at = md
            .find(&format!("<summary><b>{component}</b>"))
            .unwrap_or_else(|| panic!("{component}\n{md}"));
        assert!(at > table);
    }
    assert_eq!(md.matches("<details>").count(), md.matches("</details>").count());
    assert!(md.contains("```diff\n"), "{md}");
    assert!(!md.contains("left out"));

    // A small budget: cut, still well-formed, and says what is missing.
    let small = stdout(&repo.run(&[
        "diff",
        "--base",
        "HEAD~1",
        "--format",
        "markdown",
        "--max-bytes",
        "3000",
    ]));
    assert!(small.len() <= 3000, "{}", small.len());
    assert!(small.contains("| staging | flux |"), "{small}");
    assert!(small.contains("left out"), "{small}");
    assert_eq!(small.matches("<details>").count(), small.matches("</details>").count());
}

#[test]
fn secrets_are_never_printed() {
    let repo = Repo::new();
    for format in ["text", "markdown", "json"] {
        let out = repo.run(&["diff", "--base", "HEAD~1", "--why", "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let all = format!("{}{}", stdout(&out), stderr(&out));
        for s in ["hunter2", CONTRACT_SECRET, "BEGIN EC PRIVATE KEY"] {
            assert!(!all.contains(s), "{format} prints {s}:\n{all}");
        }
        // The Secret's change is named without its value.
        assert!(
            all.contains("stringData.users: changed (value not shown)"),
            "{format}:\n{all}"
        );
        // The ConfigMap with the pasted contract value still shows as
        // changed, with only the secret taken out of its line.
        assert!(all.contains("added: here"), "{format}:\n{all}");
        assert!(all.contains("key: <sensitive value redacted>"), "{format}:\n{all}");
    }
    let j = repo.json(&[]);
    let objects = j["objects"].as_array().unwrap();
    let s = find(objects, "dev", "flux", "Secret", "basic-auth").unwrap();
    assert_eq!(s["status"], "changed");
    assert_eq!(
        s["hunks"],
        serde_json::json!([]),
        "only the value changed, and it is not shown"
    );
}

#[test]
fn an_unchanged_tree_diffs_empty() {
    let repo = Repo::new();
    let out = repo.run(&["diff", "--base", "HEAD", "--exit-code"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let j: Value = serde_json::from_str(&stdout(&repo.run(&["diff", "--base", "HEAD", "--format", "json"]))).unwrap();
    assert_eq!(j["changed"], false);
    assert_eq!(j["objects"], serde_json::json!([]));
    assert!(
        j["summary"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["added"] == 0 && r["changed"] == 0 && r["removed"] == 0)
    );
    let md = stdout(&repo.run(&["diff", "--base", "HEAD", "--format", "markdown", "--exit-code"]));
    assert!(md.contains("No change to the rendered tree."), "{md}");

    // The working tree is the head side: an uncommitted edit shows.
    let f = repo.dir.join("platform/gitops/platform/traefik/values-production.yaml");
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, text.replace("192.168.20.240", "192.168.20.250")).unwrap();
    let out = repo.run(&[
        "diff",
        "--base",
        "HEAD",
        "--exit-code",
        "--env",
        "production",
        "--target",
        "flux",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("~ production/flux HelmRelease traefik/traefik"), "{text}");
    assert!(!text.contains("production/argo"), "--target flux: {text}");
}

#[test]
fn env_and_target_select_what_is_compared() {
    let repo = Repo::new();
    let j = repo.json(&["--env", "staging", "--target", "argo"]);
    let objects = j["objects"].as_array().unwrap();
    assert!(!objects.is_empty());
    assert!(
        objects
            .iter()
            .all(|o| o["environment"] == "staging" && o["target"] == "argo")
    );
    assert_eq!(j["summary"].as_array().unwrap().len(), 1);
}

#[test]
fn an_environment_new_in_the_head_is_all_added() {
    let repo = Repo::new();
    let envs = repo.dir.join("platform/environments");
    std::fs::copy(envs.join("dev.yaml"), envs.join("lab.yaml")).unwrap();
    let j = repo.json(&["--env", "lab"]);
    let objects = j["objects"].as_array().unwrap();
    assert!(!objects.is_empty());
    assert!(
        objects
            .iter()
            .all(|o| o["status"] == "added" && o["environment"] == "lab")
    );
}

#[test]
fn a_bad_revision_is_named_with_a_fix() {
    let repo = Repo::new();
    let out = repo.run(&["diff", "--base", "origin/no-such-branch"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("origin/no-such-branch"), "{err}");
    assert!(err.contains("git fetch origin no-such-branch"), "{err}");
    assert_eq!(stdout(&out), "");
}

#[test]
fn a_base_that_does_not_compile_is_an_input_error() {
    let repo = Repo::new();
    let cfg = repo.dir.join("platform/gitops/platform/whoami/config.yaml");
    std::fs::write(&cfg, "component: whoami\nnamespace: whoami\nchartt: {}\n").unwrap();
    git(&repo.dir, &["commit", "-q", "-am", "broken"]);
    std::fs::write(
        &cfg,
        "component: whoami\nnamespace: whoami\nchart:\n  repoURL: https://traefik.github.io/charts\n  name: whoami\n  version: 5.2.0\n",
    )
    .unwrap();
    let out = repo.run(&["diff", "--base", "HEAD"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("chartt"), "{err}");
    assert!(err.contains("the base revision HEAD"), "{err}");
}

/// Only the environments a change reaches are compiled, so only their
/// values layers are read: a layer broken on both sides in another
/// environment does not stop the diff (`strata check` reports it), and
/// `--everything` reads every layer.
#[test]
fn layers_of_environments_the_change_does_not_reach_are_not_read() {
    let repo = Repo::new();
    let layer = repo.dir.join("platform/gitops/platform/traefik/values-dev.yaml");
    write(&layer, "service: [unclosed\n");
    git(&repo.dir, &["commit", "-q", "-am", "a broken dev layer"]);
    let staging = repo.dir.join("platform/gitops/platform/traefik/values-staging.yaml");
    let text = std::fs::read_to_string(&staging).unwrap();
    write(&staging, &text.replace("192.168.10.241", "192.168.10.242"));

    let out = repo.run(&["--verbose", "diff", "--base", "HEAD", "--exit-code"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("can reach staging: traefik"), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("~ staging/flux HelmRelease traefik/traefik"),
        "{}",
        stdout(&out)
    );

    let out = repo.run(&["diff", "--base", "HEAD", "--everything"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("values-dev.yaml"), "{}", stderr(&out));
}

// explain -------------------------------------------------------------------

fn explain(env: &str, component: &str, path: &str) -> (i32, String) {
    let root = fixture();
    let out = strata(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &[
            "--root",
            root.to_str().unwrap(),
            "explain",
            "--env",
            env,
            component,
            path,
        ],
    );
    (
        out.status.code().unwrap_or(-1),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

#[test]
fn explain_shows_the_final_value_and_each_layer() {
    let (code, out) = explain("dev", "traefik", "deployment.replicas");
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "traefik deployment.replicas in dev");
    assert_eq!(lines[1], "  final value: 1");
    assert_eq!(lines[2], "  set at gitops/platform/traefik/values-dev.yaml:3:13");
    let layers = out.split("layers, lowest first:\n").nth(1).unwrap();
    assert_eq!(
        layers,
        "  1. gitops/platform/traefik/values.yaml:8:13: sets 2\n  \
         2. gitops/platform/traefik/values-dev.yaml:3:13: sets 1\n  \
         3. gitops/platform/traefik/values-substrate-kind.yaml: not set\n"
    );
}

#[test]
fn explain_shows_a_deletion_by_null() {
    let (code, out) = explain("dev", "traefik", "resources.limits");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("final value: null (deleted"), "{out}");
    assert!(
        out.contains("2. gitops/platform/traefik/values-dev.yaml:9:11: null, which deletes it"),
        "{out}"
    );
    assert!(
        out.contains("1. gitops/platform/traefik/values.yaml:40:5: sets a mapping"),
        "{out}"
    );
    // Below the deleted mapping, the path is deleted from above.
    let (_, out) = explain("dev", "traefik", "resources.limits.memory");
    assert!(
        out.contains("1. gitops/platform/traefik/values.yaml:40:13: sets 256Mi"),
        "{out}"
    );
    assert!(
        out.contains("2. gitops/platform/traefik/values-dev.yaml:9:11: replaces a mapping above it"),
        "{out}"
    );
    assert!(
        out.contains(
            "final value: not set; a key above it is replaced at gitops/platform/traefik/values-dev.yaml:9:11"
        ),
        "{out}"
    );
}

#[test]
fn explain_falls_back_to_the_chart_default() {
    let (code, out) = explain("staging", "traefik", "deployment.enabled");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("final value: not set by any layer; the chart's default applies: true"),
        "{out}"
    );
    assert!(out.contains("substrates/profiles/traefik.yaml"), "{out}");
    assert!(
        out.contains("3. gitops/platform/traefik/values-substrate-talos.yaml: no such file"),
        "{out}"
    );
    // A path no layer and no chart default has is a mistake: exit 1, with
    // the keys that do exist.
    let (code, out) = explain("staging", "traefik", "not.a.chart.value");
    assert_eq!(code, 1, "{out}");
}

#[test]
fn explain_names_an_unknown_component() {
    let (code, out) = explain("dev", "trafik", "x");
    assert_eq!(code, 2);
    assert!(
        out.contains("no component `trafik`") && out.contains("did you mean `traefik`?"),
        "{out}"
    );
}

#[test]
fn completions_and_man_page_come_from_the_definitions() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bash = strata(here, &["completions", "bash"]);
    assert_eq!(bash.status.code(), Some(0));
    let bash = stdout(&bash);
    for word in ["diff", "explain", "--base", "--exit-code", "--max-bytes"] {
        assert!(bash.contains(word), "{word}");
    }
    let man = strata(here, &["man"]);
    assert_eq!(man.status.code(), Some(0));
    let man = stdout(&man);
    assert!(man.contains(".TH strata 1"), "{man}");
    assert!(man.contains("diff") && man.contains("explain"));
}

#[test]
fn a_shallow_clone_works_once_the_base_is_fetched() {
    let repo = Repo::new();
    let clone = repo.dir.parent().unwrap().join("shallow");
    let url = format!("file://{}", repo.dir.display());
    git(
        repo.dir.parent().unwrap(),
        &["clone", "-q", "--depth", "1", &url, clone.to_str().unwrap()],
    );
    let out = strata(&clone, &["diff", "--base", "HEAD~1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("shallow clone") && err.contains("fetch-depth: 0"), "{err}");

    git(&clone, &["fetch", "-q", "--depth", "2", "origin", "main"]);
    let out = strata(&clone, &["diff", "--base", "HEAD~1", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shallow: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(shallow, repo.json(&[]), "the same diff as in the full clone");
}

/// The output of `strata diff` with `args`, checked to be what it is with
/// `--everything` (both sides compiled whole).
fn as_everything(repo: &Repo, args: &[&str]) -> String {
    let mut everything = args.to_vec();
    everything.push("--everything");
    let (a, b) = (repo.run(args), repo.run(&everything));
    assert_eq!(a.status.code(), b.status.code(), "{}{}", stderr(&a), stderr(&b));
    assert_eq!(stdout(&a), stdout(&b), "{args:?}");
    stdout(&a)
}

/// The codes and files of the findings a diff lists as `which`.
fn findings(diff: &str, which: &str) -> Vec<(String, String)> {
    let j: Value = serde_json::from_str(diff).unwrap();
    j["findings"][which]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_owned(),
                f["file"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn compiling_only_the_reach_gives_the_diff_of_compiling_everything() {
    let repo = Repo::new();
    let same = |args: &[&str]| as_everything(&repo, args);
    // The second commit: a value, a component added and one removed, a
    // manifest renamed, a Secret changed.
    for format in ["json", "markdown", "text"] {
        same(&["diff", "--base", "HEAD~1", "--format", format, "--why"]);
    }
    // Uncommitted edits on top: a layer of one environment, a config
    // another component requires, an environment file.
    let platform = repo.dir.join("platform/gitops/platform");
    let f = platform.join("traefik/values-production.yaml");
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, text.replace("192.168.20.240", "192.168.20.250")).unwrap();
    let out = same(&["diff", "--base", "HEAD", "--format", "json"]);
    let j: Value = serde_json::from_str(&out).unwrap();
    assert!(
        j["objects"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["environment"] == "production"),
        "{out}"
    );
    let f = platform.join("cert-manager/config.yaml");
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, text.replace("tier: addon", "tier: core")).unwrap();
    same(&["diff", "--base", "HEAD", "--format", "json"]);
    let f = repo.dir.join("platform/environments/staging.yaml");
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, text.replace("{branch: main}", "{branch: release}")).unwrap();
    let out = same(&["diff", "--base", "HEAD", "--format", "markdown"]);
    assert!(out.contains("| staging | flux |"), "{out}");
    let verbose = repo.run(&["diff", "--base", "HEAD", "--verbose"]);
    assert!(
        stderr(&verbose).contains("note: the change can reach")
            && stderr(&verbose).contains("staging: every component"),
        "{}",
        stderr(&verbose)
    );
}

/// SEC001 judges only the components a change reaches; a leak elsewhere is
/// on both sides. What the change adds or removes is named as when both
/// sides are compiled whole.
#[test]
fn a_leak_is_judged_where_the_change_reaches() {
    let repo = Repo::new();
    let platform = repo.dir.join("platform/gitops/platform");
    let diff = |repo: &Repo| as_everything(repo, &["diff", "--base", "HEAD", "--format", "json"]);
    // traefik's ConfigMap holds a line of the staging contract's key, at
    // both revisions; the change reaches longhorn only.
    let longhorn = platform.join("longhorn/values.yaml");
    let text = std::fs::read_to_string(&longhorn).unwrap();
    write(&longhorn, &format!("{text}\nextra: one\n"));
    let out = diff(&repo);
    assert!(
        findings(&out, "introduced").is_empty() && findings(&out, "fixed").is_empty(),
        "{out}"
    );
    // A leak the change adds is introduced.
    write(&longhorn, &format!("{text}\nextra: \"{CONTRACT_SECRET}\"\n"));
    let out = diff(&repo);
    assert!(
        findings(&out, "introduced").contains(&("SEC001".into(), "gitops/platform/longhorn/values.yaml".into())),
        "{out}"
    );
    // One it removes is fixed.
    write(&longhorn, &text);
    write(
        &platform.join("traefik/manifests/configmap-pasted.yaml"),
        &leaky_configmap("").replace(CONTRACT_SECRET, "plain"),
    );
    let out = diff(&repo);
    let pasted = "gitops/platform/traefik/manifests/configmap-pasted.yaml";
    assert!(
        findings(&out, "fixed").contains(&("SEC001".into(), pasted.into())),
        "{out}"
    );
    assert!(findings(&out, "introduced").is_empty(), "{out}");
}

/// Every environment's output is searched for every contract's secrets:
/// an environment removed takes its contract's secrets away from the
/// others, so the change reaches every environment.
#[test]
fn an_environment_removed_reaches_the_others_through_its_secrets() {
    let repo = Repo::new();
    std::fs::remove_file(repo.dir.join("platform/environments/staging.yaml")).unwrap();
    let out = as_everything(&repo, &["diff", "--base", "HEAD", "--format", "json"]);
    // traefik's ConfigMap, in production, holds a line of staging's key.
    let pasted = "gitops/platform/traefik/manifests/configmap-pasted.yaml";
    assert!(
        findings(&out, "fixed").contains(&("SEC001".into(), pasted.into())),
        "{out}"
    );
    let verbose = repo.run(&["diff", "--base", "HEAD", "--verbose"]);
    assert!(stderr(&verbose).contains("hold other secrets"), "{}", stderr(&verbose));
}
