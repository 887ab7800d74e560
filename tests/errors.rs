//! Bad input: every case exits 2 with an error naming file:line:column and a
//! help line, and writes nothing.

mod common;

use common::*;

fn append(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    let mut s = std::fs::read_to_string(&p).unwrap();
    s.push_str(text);
    std::fs::write(p, s).unwrap();
}

#[test]
fn malformed_yaml() {
    let err = refused(|r| {
        write(
            r,
            "gitops/platform/traefik/values-staging.yaml",
            "service:\n  type: [LoadBalancer\n",
        )
    });
    assert!(err.contains("gitops/platform/traefik/values-staging.yaml:"), "{err}");
    assert!(err.contains("error[E002]"), "{err}");
}

#[test]
fn duplicate_keys() {
    let err = refused(|r| {
        write(
            r,
            "gitops/platform/traefik/values-staging.yaml",
            "a: 1\nb:\n  c: 2\na: 3\n",
        )
    });
    assert!(err.contains("duplicate key `a`"), "{err}");
    assert!(err.contains("gitops/platform/traefik/values-staging.yaml:4:1"), "{err}");
}

#[test]
fn unknown_config_key_suggests_the_nearest() {
    let err = refused(|r| append(r, "gitops/platform/coredns/config.yaml", "requiers: [cilium]\n"));
    assert!(err.contains("unknown key `requiers`"), "{err}");
    assert!(err.contains("did you mean `requires`?"), "{err}");
    let line = std::fs::read_to_string(repo().join("fixtures/homelab/gitops/platform/coredns/config.yaml"))
        .unwrap()
        .lines()
        .count()
        + 1;
    assert!(
        err.contains(&format!("gitops/platform/coredns/config.yaml:{line}:1")),
        "{err}"
    );
}

#[test]
fn missing_contract_file() {
    let err = refused(|r| std::fs::remove_file(r.join("contracts/staging.json")).unwrap());
    assert!(err.contains("contracts/staging.json"), "{err}");
    assert!(err.contains("environments/staging.yaml:"), "{err}");
    assert!(err.contains("tofu output -json"), "{err}");
}

#[test]
fn substrate_mismatch_names_both_files() {
    let err = refused(|r| {
        let p = r.join("environments/staging.yaml");
        let s = std::fs::read_to_string(&p)
            .unwrap()
            .replace("substrate: talos", "substrate: kind");
        std::fs::write(p, s).unwrap();
    });
    assert!(err.contains("environments/staging.yaml:"), "{err}");
    assert!(err.contains("contracts/staging.json:"), "{err}");
    assert!(err.contains("`kind`") && err.contains("`talos`"), "{err}");
}

#[test]
fn requires_cycle_is_listed() {
    let err = refused(|r| {
        let p = r.join("gitops/platform/cilium/config.yaml");
        let s = std::fs::read_to_string(&p).unwrap();
        let s = s
            .lines()
            .filter(|l| !l.starts_with("requires"))
            .collect::<Vec<_>>()
            .join("\n")
            + "\nrequires: [argocd]\n";
        std::fs::write(p, s).unwrap();
    });
    assert!(err.contains("cycle"), "{err}");
    assert!(err.contains("cilium") && err.contains("argocd"), "{err}");
    assert!(err.contains("gitops/platform/"), "{err}");
}

#[test]
fn requirement_naming_no_component() {
    let err = refused(|r| {
        let p = r.join("gitops/platform/traefik/config.yaml");
        let s = std::fs::read_to_string(&p)
            .unwrap()
            .replace("cert-manager", "cert-manger");
        std::fs::write(p, s).unwrap();
    });
    assert!(err.contains("`cert-manger`, which is no component"), "{err}");
    assert!(err.contains("did you mean `cert-manager`?"), "{err}");
}

#[test]
fn wrong_type_in_config() {
    let err = refused(|r| {
        let p = r.join("gitops/platform/traefik/config.yaml");
        let s = std::fs::read_to_string(&p)
            .unwrap()
            .replace("version: 37.1.1", "version: 37.1");
        std::fs::write(p, s).unwrap();
    });
    assert!(err.contains("`version` must be a string, found a number"), "{err}");
    assert!(err.contains("quote the value"), "{err}");
}

#[test]
fn template_errors_point_at_the_template() {
    let err = refused(|r| {
        write(
            r,
            "gitops/platform/traefik/manifests/configmap-bad.yaml.j2",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  x: \"{{ values.no.such.key }}\"\n",
        )
    });
    assert!(
        err.contains("gitops/platform/traefik/manifests/configmap-bad.yaml.j2:6"),
        "{err}"
    );
    assert!(err.contains("undefined"), "{err}");
}

#[test]
fn a_template_that_loops_for_ever_is_stopped() {
    let err = refused(|r| {
        write(
            r,
            "gitops/platform/traefik/manifests/configmap-loop.yaml.j2",
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n",
        )
    });
    assert!(err.contains("ran too long"), "{err}");
}

#[test]
fn unknown_environment_is_named() {
    let tmp = scratch("homelab");
    let out = strata(tmp.path(), &["render", "--env", "stagign"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("did you mean `staging`?"), "{}", stderr(&out));
}

#[test]
fn no_strata_yaml_is_explained() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(tmp.path())
        .arg("render")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no strata.yaml"), "{}", stderr(&out));
}

#[test]
fn errors_in_an_overridden_strata_template_point_at_it() {
    let err = refused(|r| {
        let builtin = std::fs::read_to_string(repo().join("templates/flux/helmrelease.yaml.j2")).unwrap();
        write(
            r,
            "templates/flux/helmrelease.yaml.j2",
            &builtin.replace("component.component", "component.nope"),
        );
    });
    assert!(err.contains("templates/flux/helmrelease.yaml.j2:"), "{err}");
    assert!(err.contains("component.nope"), "{err}");
    assert!(err.contains("config.yaml"), "names the component being rendered: {err}");
}
