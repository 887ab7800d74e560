//! `strata diff`'s base revision reads `strata.yaml` and every location it
//! names by the working tree's rules: schema folders inside the repository,
//! absolute, climbing out of it, or pulled into `.strata/schemas/` (which
//! git never holds), and profile and template folders outside the platform
//! folder. Where only a values file changed, no finding differs between the
//! two sides, and the diff shows exactly the objects that carry the value.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// The Kubernetes schemas (`STRATA_TEST_K8S_SCHEMAS`) and the CRD schemas.
fn schemas() -> Option<(PathBuf, PathBuf)> {
    let k8s = required_dir("STRATA_TEST_K8S_SCHEMAS", None, "Kubernetes schemas")?;
    Some((k8s, crd_schemas()?))
}

/// How a platform names its schemas.
#[derive(Clone, Copy, Debug)]
enum Where {
    /// Committed in the repository: `schemas: [schemas/k8s, schemas/crds]`.
    Inside,
    /// Absolute paths out of the repository.
    Absolute,
    /// `../shared/…`, climbing out of the repository.
    ClimbingOut,
    /// No `schemas:`: what `strata schemas pull` left in `.strata/schemas/`.
    Pulled,
}

/// A repository at `<tmp>/repo` holding the homelab platform with its
/// schemas named `how`, its profiles and templates in folders of their own
/// outside the platform folder, committed.
fn platform(tmp: &Path, how: Where, (k8s, crds): &(PathBuf, PathBuf)) -> PathBuf {
    let root = tmp.join("repo");
    std::fs::create_dir(&root).unwrap();
    copy_dir(&repo().join("fixtures/homelab"), &root);
    let _ = std::fs::remove_dir_all(root.join("rendered"));
    let schemas = match how {
        Where::Inside => {
            copy_dir(k8s, &root.join("schemas/k8s"));
            copy_dir(crds, &root.join("schemas/crds"));
            "schemas: [schemas/k8s, schemas/crds]\n".to_owned()
        }
        Where::Absolute => format!("schemas: [{}, {}]\n", k8s.display(), crds.display()),
        Where::ClimbingOut => {
            copy_dir(k8s, &tmp.join("shared/k8s"));
            copy_dir(crds, &tmp.join("shared/crds"));
            "schemas: [../shared/k8s, ../shared/crds]\n".to_owned()
        }
        Where::Pulled => {
            copy_dir(k8s, &root.join(".strata/schemas/kubernetes/v1.35.0-standalone-strict"));
            copy_dir(crds, &root.join(".strata/schemas/crds"));
            write(&root, ".strata/.gitignore", "*\n");
            String::new()
        }
    };
    // A repository's own profile and template, outside the platform folder.
    let traefik = std::fs::read_to_string(repo().join("substrates/profiles/traefik.yaml")).unwrap();
    write(&root, "shared/profiles/traefik.yaml", &traefik);
    let namespace = std::fs::read_to_string(repo().join("templates/flux/namespace.yaml.j2")).unwrap();
    write(&root, "shared/templates/flux/namespace.yaml.j2", &namespace);
    let project = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(
        &root,
        "strata.yaml",
        &format!("{project}\n{schemas}profiles: shared/profiles\ntemplates: shared/templates\n"),
    );
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "base"]);
    root
}

fn codes(out: &std::process::Output) -> Vec<String> {
    let v: Value = serde_json::from_str(&stdout(out)).unwrap_or_else(|_| panic!("{}", stderr(out)));
    v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_base_reads_every_configured_location_as_the_working_tree_does() {
    let Some(schemas) = schemas() else { return };
    for how in [Where::Inside, Where::Absolute, Where::ClimbingOut, Where::Pulled] {
        let tmp = tempfile::tempdir().unwrap();
        let root = platform(tmp.path(), how, &schemas);
        // The working tree validates against the schemas: no location is
        // unusable, none is missing.
        let check = strata(&root, &["check", "--format", "json"]);
        let found = codes(&check);
        for code in ["E021", "E022", "E023"] {
            assert!(!found.iter().any(|c| c == code), "{how:?}: {code} in {found:?}");
        }
        // Only a values file changes.
        let values = root.join("gitops/platform/traefik/values-staging.yaml");
        let text = std::fs::read_to_string(&values).unwrap();
        assert!(text.contains("192.168.10.240"));
        std::fs::write(&values, text.replace("192.168.10.240", "192.168.10.241")).unwrap();

        let out = strata(&root, &["diff", "--base", "HEAD", "--format", "json"]);
        assert_eq!(out.status.code(), Some(0), "{how:?}: {}", stderr(&out));
        let diff: Value = serde_json::from_str(&stdout(&out)).unwrap();
        for side in ["introduced", "fixed"] {
            let findings = diff["findings"][side].as_array().unwrap();
            assert!(findings.is_empty(), "{how:?}: {side} {findings:#?}");
        }
        let mut changed: Vec<String> = diff["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let field = |k: &str| o[k].as_str().unwrap_or_default().to_owned();
                [
                    field("status"),
                    field("environment"),
                    field("target"),
                    field("kind"),
                    field("name"),
                ]
                .join(" ")
            })
            .collect();
        changed.sort();
        assert_eq!(
            changed,
            [
                "changed staging argo Application traefik",
                "changed staging flux ConfigMap traefik-values",
                "changed staging flux HelmRelease traefik",
            ],
            "{how:?}"
        );
        let text = stdout(&out);
        assert!(
            text.contains("192.168.10.241") && text.contains("192.168.10.240"),
            "{how:?}"
        );
    }
}

/// Contracts that CI writes and git ignores (as SEC002 recommends): the
/// base revision has none, and its compile reads the working tree's, and
/// says so; a values change is not told as a finding fixed and another
/// introduced because a file name carries the values' digest.
#[test]
fn a_contract_git_ignores_is_read_from_the_working_tree_for_the_base() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    write(root, ".gitignore", "contracts/*.json\n");
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    assert!(!git(root, &["ls-files"]).contains("contracts/staging.json"));
    write(
        root,
        "gitops/platform/traefik/values-staging.yaml",
        "deployment:\n  replicas: 3\n",
    );
    let out = strata(
        root,
        &["diff", "--base", "HEAD", "--env", "staging", "--format", "json"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "note: HEAD has no contracts/staging.json, which git does not track: the base reads the working tree's"
        ),
        "{err}"
    );
    let diff: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(!diff["objects"].as_array().unwrap().is_empty(), "{diff:#}");
}

#[test]
fn a_findings_identity_leaves_out_the_values_digest_of_a_file_name() {
    let a = "no schema for ConfigMap (v1): 1 object(s), rendered/staging/flux/components/web/configmap-web-values-0123456789.yaml";
    let b = "no schema for ConfigMap (v1): 1 object(s), rendered/staging/flux/components/web/configmap-web-values-abcdef0123.yaml";
    assert_eq!(strata::diag::identity(a), strata::diag::identity(b));
    assert_ne!(strata::diag::identity(a), strata::diag::identity("another finding"));
    assert_eq!(strata::diag::identity("web-values-12"), "web-values-12");
}
