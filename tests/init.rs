//! `strata init`: from an empty folder to a rendered, checked platform in
//! two commands, on either substrate, offline and without helm; and a
//! folder that holds anything of the user's is never written over.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{snapshot_tree, stderr};

/// Runs strata as a user would: in `dir`, with no `--root`, and no helm.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir)
        .args(["--color", "never"])
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env("PATH", "/usr/bin:/bin")
        .env_remove("STRATA_HELM")
        .output()
        .expect("run strata")
}

/// Errors and warnings in a run's output (notes are advice, not findings).
fn findings(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.starts_with("error") || l.starts_with("warning"))
        .collect()
}

fn init_render_check(substrate: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_in(tmp.path(), &["init", "--substrate", substrate, "my-platform"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let root = tmp.path().join("my-platform");
    let render = run_in(&root, &["render"]);
    let err = stderr(&render);
    assert_eq!(render.status.code(), Some(0), "{err}");
    assert!(findings(&err).is_empty(), "{err}");
    let check = run_in(&root, &["check"]);
    let err = stderr(&check);
    assert_eq!(check.status.code(), Some(0), "{err}");
    assert!(findings(&err).is_empty(), "{err}");
    assert!(!err.contains("E015"), "no chart is judged through a profile: {err}");
    assert!(
        !err.contains("E023"),
        "the skeleton says why its objects are not validated, in strata.yaml: {err}"
    );
    tmp
}

#[test]
fn a_kind_platform_renders_and_checks_clean_in_two_commands() {
    let tmp = init_render_check("kind");
    let root = tmp.path().join("my-platform");
    let cm = std::fs::read_to_string(root.join("rendered/dev/flux/components/hello/configmap-hello.yaml")).unwrap();
    // The environment's layer and the contract reached the template.
    assert!(cm.contains("greeting: Hello, dev"), "{cm}");
    assert!(cm.contains("cluster: dev"), "{cm}");
    assert!(root.join("rendered/dev/argo/application-hello.yaml").is_file());
    // The tree is up to date, as pre-commit would check it.
    let again = run_in(&root, &["render", "--check"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
}

#[test]
fn a_talos_platform_runs_the_adr_007_rules_and_passes_them() {
    let tmp = init_render_check("talos");
    let root = tmp.path().join("my-platform");
    let env = std::fs::read_to_string(root.join("environments/staging.yaml")).unwrap();
    assert!(env.contains("\ntopology: ha\n"), "{env}");
    let contract = std::fs::read_to_string(root.join("contracts/staging.yaml")).unwrap();
    assert!(contract.contains("EVERY VALUE BELOW IS AN EXAMPLE"), "{contract}");
    assert!(contract.contains("topology.kubernetes.io/zone: pve-01"), "{contract}");
    // The rules do run: a broken contract value is found.
    let broken = contract.replace("api_vip: 192.0.2.10 ", "api_vip: 192.0.2.150 ");
    assert_ne!(broken, contract);
    std::fs::write(root.join("contracts/staging.yaml"), broken).unwrap();
    let check = run_in(&root, &["check"]);
    let err = stderr(&check);
    assert_eq!(check.status.code(), Some(1), "{err}");
    assert!(err.contains("error[TOPO005]"), "{err}");
}

#[test]
fn the_default_substrate_is_kind_and_the_default_folder_the_working_one() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_in(tmp.path(), &["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(tmp.path().join("environments/dev.yaml").is_file());
    let help = run_in(tmp.path(), &["init", "--help"]);
    let text = common::stdout(&help);
    assert!(text.contains("[default: kind]"), "{text}");
}

#[test]
fn a_folder_that_holds_a_platform_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    common::write(tmp.path(), "strata.yaml", "platform: mine\n");
    let before = snapshot_tree(tmp.path());
    let out = run_in(tmp.path(), &["init", "."]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error[E035]") && err.contains("already holds a platform"),
        "{err}"
    );
    assert!(err.contains("help:"), "{err}");
    assert_eq!(snapshot_tree(tmp.path()), before);
}

#[test]
fn a_users_file_is_never_overwritten_and_nothing_is_written_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    common::write(tmp.path(), "environments/dev.yaml", "mine: true\n");
    let before = snapshot_tree(tmp.path());
    let out = run_in(tmp.path(), &["init"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("environments/dev.yaml already exists"), "{err}");
    assert_eq!(snapshot_tree(tmp.path()), before);
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_out_of_the_folder_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), tmp.path().join("contracts")).unwrap();
    let out = run_in(tmp.path(), &["init"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is a symbolic link"), "{err}");
    assert!(snapshot_tree(outside.path()).is_empty());
    assert!(!tmp.path().join("strata.yaml").exists());
}

#[test]
fn the_skeleton_validates_against_the_kubernetes_schemas() {
    let (Some(k8s), Some(crds)) = (
        common::required_dir("STRATA_TEST_K8S_SCHEMAS", None, "Kubernetes schemas"),
        common::crd_schemas(),
    ) else {
        return;
    };
    for substrate in ["kind", "talos"] {
        let tmp = tempfile::tempdir().unwrap();
        assert!(run_in(tmp.path(), &["init", "--substrate", substrate]).status.success());
        let k8s = k8s.display().to_string();
        let crds = crds.display().to_string();
        let out = run_in(
            tmp.path(),
            &["check", "--strict-schemas", "--schemas", &k8s, "--schemas", &crds],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{substrate}: {err}");
        assert!(findings(&err).is_empty(), "{substrate}: {err}");
    }
}

/// `ha: true` on a component of one's own: the HA rules judge its
/// Deployment as they judge ADR 007's controllers, and `strata check` says
/// first which workloads they judge; an environment can say otherwise.
#[test]
fn a_component_of_ones_own_is_judged_by_the_ha_rules_with_ha_true() {
    let tmp = init_render_check("talos");
    let root = tmp.path().join("my-platform");
    let config = std::fs::read_to_string(root.join("gitops/platform/hello/config.yaml")).unwrap();
    assert!(config.contains("\nha: false\n"), "init shows the key: {config}");
    std::fs::write(
        root.join("gitops/platform/hello/manifests/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: hello\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: hello}\n  template:\n    metadata:\n      labels: {app: hello}\n    spec:\n      containers:\n        - name: hello\n          image: nginx:1.27\n",
    )
    .unwrap();
    // Not opted in: a Deployment of one's own is not judged (as before).
    let check = run_in(&root, &["check"]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    std::fs::write(
        root.join("gitops/platform/hello/config.yaml"),
        config.replace("\nha: false\n", "\nha: true\n"),
    )
    .unwrap();
    let check = run_in(&root, &["check"]);
    let err = stderr(&check);
    assert_eq!(check.status.code(), Some(1), "{err}");
    let judged = err.find("note[E061]").unwrap_or_else(|| panic!("{err}"));
    assert!(
        err.contains("the HA rules (HA001-HA003) judge 1 workload(s) in environment staging: Deployment hello (hello, `ha: true`)"),
        "{err}"
    );
    let first_finding = err.find("error[").unwrap();
    assert!(judged < first_finding, "said up front: {err}");
    for rule in ["HA001", "HA002"] {
        assert!(
            err.contains(&format!("error[{rule}]: Deployment hello (component hello)")),
            "{err}"
        );
    }
    assert!(
        err.contains("--> gitops/platform/hello/manifests/deployment.yaml:6:13"),
        "{err}"
    );
    // The environment says otherwise for itself.
    let env = std::fs::read_to_string(root.join("environments/staging.yaml")).unwrap();
    std::fs::write(
        root.join("environments/staging.yaml"),
        format!("{env}components:\n  hello: {{ha: false}}\n"),
    )
    .unwrap();
    let check = run_in(&root, &["check"]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    // A name that is no component is refused at its line.
    std::fs::write(
        root.join("environments/staging.yaml"),
        format!("{env}components:\n  helo: {{ha: false}}\n"),
    )
    .unwrap();
    let check = run_in(&root, &["check"]);
    let err = stderr(&check);
    assert_eq!(check.status.code(), Some(2), "{err}");
    assert!(err.contains("`components.helo` names no component"), "{err}");
    assert!(err.contains("did you mean `hello`?"), "{err}");
}
