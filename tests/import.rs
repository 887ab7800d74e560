//! `strata import`: a Flux tree in the shape of fluxcd's
//! flux2-kustomize-helm-example (clusters/staging and clusters/production
//! applying shared infrastructure and app folders, with kustomize overlays
//! and Flux Kustomization patches on HelmRelease values) and an Argo CD
//! tree (an app of apps, a multi-source Application with `$values`, an
//! ApplicationSet with a list generator, one with a git files generator)
//! become platforms whose rendered releases carry, environment by
//! environment, exactly the values worked out by hand below from each
//! engine's documented precedence; and what cannot be converted is listed.
//! These trees name real chart repositories, so they are imported with
//! `--offline`: the values are compared, and every release is listed as not
//! proven, its chart not being at hand (tests/import_layouts.rs imports
//! trees whose charts a repository on 127.0.0.1 serves, to the end).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use common::{repo, snapshot_tree, stderr};

fn tree(name: &str) -> PathBuf {
    repo().join("tests/import").join(name)
}

/// Runs strata in `dir` with `path` as the PATH (kubectl is found there).
fn run_in(dir: &Path, path: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir)
        .args(["--color", "never"])
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env("PATH", path)
        .env_remove("STRATA_KUBECTL")
        .env_remove("STRATA_HELM")
        .output()
        .expect("run strata")
}

/// The PATH with kubectl on it, or `None` (the test then skips).
#[allow(clippy::disallowed_methods)]
fn kubectl_path() -> Option<String> {
    let kubectl = common::kubectl()?;
    let found = if kubectl.is_absolute() {
        Some(kubectl)
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join("kubectl"))
            .find(|p| p.is_file())
    }?;
    Some(format!("{}:/usr/bin:/bin", found.parent()?.display()))
}

/// Imports `source` offline into a new folder, checks that every value
/// matched and that the only errors are releases whose charts are not at
/// hand (or whose values the import cannot read), renders it; returns the
/// folder and the import's messages.
fn import(engine: &str, source: &str, path: &str) -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().unwrap();
    let src = tree(source);
    let out = run_in(
        tmp.path(),
        path,
        &[
            "import",
            engine,
            src.to_str().unwrap(),
            "--out",
            "platform",
            "--offline",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("0 release(s) differ from the source's"), "{err}");
    for line in err.lines().filter(|l| l.starts_with("error")) {
        assert!(line.starts_with("error[E066]"), "{line}");
    }
    assert!(
        err.contains("its chart could not be rendered: not in strata.lock"),
        "{err}"
    );
    let root = tmp.path().join("platform");
    let render = run_in(&root, path, &["--inflate", "off", "render"]);
    assert_eq!(render.status.code(), Some(0), "{}", stderr(&render));
    (tmp, err)
}

fn parse(text: &str) -> Vec<Value> {
    strata::yaml::parse_plain_multi(&std::sync::Arc::from("t"), text).unwrap()
}

/// The values a rendered release carries: the Flux values ConfigMap's
/// `values.yaml`, or the Argo CD Application's `helm.values`.
fn rendered_values(root: &Path, env: &str, target: &str, component: &str) -> Value {
    let dir = root.join("rendered").join(env).join(target);
    for e in walkdir::WalkDir::new(&dir).sort_by_file_name() {
        let e = e.unwrap();
        if !e.file_type().is_file() {
            continue;
        }
        let doc = parse(&std::fs::read_to_string(e.path()).unwrap()).remove(0);
        let name = doc["metadata"]["name"].as_str().unwrap_or("");
        let text = match (target, doc["kind"].as_str()) {
            ("flux", Some("ConfigMap")) if name.starts_with(&format!("{component}-values-")) => {
                doc["data"]["values.yaml"].as_str().unwrap().to_owned()
            }
            ("argo", Some("Application")) if name == component => doc["spec"]["source"]["helm"]["values"]
                .as_str()
                .unwrap_or("{}")
                .to_owned(),
            _ => continue,
        };
        return parse(&text).into_iter().next().unwrap_or(json!({}));
    }
    panic!("no values of {component} under {}", dir.display());
}

fn podinfo_flux(env: &str) -> Value {
    let host = format!("podinfo.{env}.example.org");
    let ingress = json!({"enabled": true, "className": "nginx",
        "hosts": [{"host": host, "paths": [{"path": "/", "pathType": "ImplementationSpecific"}]}]});
    let resources = json!({"requests": {"cpu": "100m", "memory": "64Mi"}});
    match env {
        // valuesFrom defaults, then the targetPath (after inline values, and
        // winning over the staging patch's ui.message), then inline values
        // with the strategic merge patch.
        "staging" => json!({
            "resources": resources,
            "cache": "tcp://redis:6379",
            "replicaCount": 1,
            "ingress": ingress,
            "ui": {"color": "#34577c", "logo": "https://example.org/logo.png", "message": "Hello from strata"},
        }),
        // The JSON 6902 patch: replicaCount, hpa, a null logo; the Secret's
        // values are not in git.
        _ => json!({
            "resources": resources,
            "cache": "",
            "replicaCount": 3,
            "hpa": {"enabled": true, "maxReplicas": 6},
            "ingress": ingress,
            "ui": {"color": "#34577c", "logo": null, "message": "Hello from strata"},
        }),
    }
}

#[test]
fn a_flux_tree_becomes_a_platform_with_each_releases_values() {
    let Some(path) = kubectl_path() else { return };
    let (tmp, err) = import("flux", "flux", &path);
    let root = tmp.path().join("platform");
    for env in ["staging", "production"] {
        assert_eq!(
            rendered_values(&root, env, "flux", "podinfo"),
            podinfo_flux(env),
            "{env}"
        );
        let mut nginx = json!({"controller": {
            "service": {"type": "LoadBalancer", "externalTrafficPolicy": "Cluster"},
            "admissionWebhooks": {"enabled": true}}});
        if env == "production" {
            // The Flux Kustomization's own patch.
            nginx["controller"]["replicaCount"] = json!(3);
            nginx["controller"]["service"]["externalTrafficPolicy"] = json!("Local");
        }
        assert_eq!(rendered_values(&root, env, "flux", "ingress-nginx"), nginx, "{env}");
        assert_eq!(
            rendered_values(&root, env, "flux", "cert-manager"),
            json!({"crds": {"enabled": true, "keep": true}})
        );
    }
    // Layers: what both clusters share, and each one's patches.
    let base = std::fs::read_to_string(root.join("gitops/platform/ingress-nginx/values.yaml")).unwrap();
    assert!(
        base.contains("type: LoadBalancer") && !base.contains("replicaCount"),
        "{base}"
    );
    let prod = std::fs::read_to_string(root.join("gitops/platform/ingress-nginx/values-production.yaml")).unwrap();
    assert!(prod.contains("replicaCount: 3"), "{prod}");
    // Charts from a HelmRepository and an OCIRepository; the apps wait for
    // the infrastructure, as their Kustomizations do.
    let cm = std::fs::read_to_string(root.join("gitops/platform/cert-manager/config.yaml")).unwrap();
    assert!(
        cm.contains("repoURL: oci://quay.io/jetstack/charts") && cm.contains("oci: true"),
        "{cm}"
    );
    assert!(cm.contains("version: v1.16.2"), "{cm}");
    let podinfo = std::fs::read_to_string(root.join("gitops/platform/podinfo/config.yaml")).unwrap();
    assert!(
        podinfo.contains("requires:\n- cert-manager\n- ingress-nginx\n"),
        "{podinfo}"
    );
    let env = std::fs::read_to_string(root.join("environments/production.yaml")).unwrap();
    assert!(env.contains("https://git.example.com/fleet/flux-infra.git"), "{env}");
    // What was not converted, each with its reason; a release whose values
    // come from a Secret cannot be proven equal.
    assert!(
        err.contains("component podinfo in environment production cannot be proven equal: the engine gives it values from Secret podinfo/podinfo-tokens (not in git)"),
        "{err}"
    );
    for listed in [
        "values from Secret podinfo/podinfo-tokens (not in git); they are left out",
        "a null in spec.values is kept",
        "spec.values sets a place a targetPath sets",
        "kind ClusterIssuer are not imported: letsencrypt",
    ] {
        assert!(err.contains(listed), "{listed}: {err}");
    }
    assert!(
        !err.contains("ServiceAccount"),
        "Flux's own objects are not listed: {err}"
    );
}

#[test]
fn an_argo_cd_tree_becomes_a_platform_with_each_releases_values() {
    let (tmp, err) = import("argo", "argo", "/usr/bin:/bin");
    let root = tmp.path().join("platform");
    // valueFiles in order, valuesObject (values ignored), then parameters
    // typed as --set types them (forceString stays a string).
    assert_eq!(
        rendered_values(&root, "in-cluster", "argo", "podinfo"),
        json!({"replicaCount": 3,
               "ui": {"color": "#ff0000", "message": "from valuesObject"},
               "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
               "service": {"port": 9898},
               "podAnnotations": {"build": "1234"}})
    );
    assert_eq!(
        rendered_values(&root, "in-cluster", "argo", "ingress-nginx"),
        json!({"controller": {"replicaCount": 2, "service": {"externalTrafficPolicy": "Cluster"},
                              "metrics": {"enabled": true}, "resources": null}})
    );
    let common = json!({"grafana": {"enabled": true, "adminUser": "admin"}});
    let mut staging = common.clone();
    staging["prometheus"] = json!({"prometheusSpec": {"retention": "2d", "replicas": 1}});
    assert_eq!(rendered_values(&root, "staging", "argo", "monitoring"), staging);
    let mut production = common;
    production["grafana"]["ingress"] = json!({"enabled": true, "hosts": ["grafana.example.org"]});
    production["prometheus"] = json!({"prometheusSpec": {"retention": "30d", "replicas": 2,
        "storageSpec": {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "50Gi"}}}}}}});
    assert_eq!(rendered_values(&root, "production", "argo", "monitoring"), production);
    for (env, domain) in [("staging", "staging.example.org"), ("production", "example.org")] {
        assert_eq!(
            rendered_values(&root, env, "argo", "external-dns"),
            json!({"domainFilters": [domain], "txtOwnerId": env, "policy": "sync"})
        );
    }
    // A chart kept in the tree is copied with it; its values files are
    // read beside it, and its own values.yaml stays the chart's default.
    assert_eq!(
        rendered_values(&root, "in-cluster", "argo", "hello"),
        json!({"message": "hi there", "replicas": 3})
    );
    assert!(root.join("charts/hello/templates/configmap.yaml").is_file());
    let hello = std::fs::read_to_string(root.join("gitops/platform/hello/config.yaml")).unwrap();
    assert!(hello.contains("chart:\n  path: charts/hello\n"), "{hello}");
    // An environment takes only the components the tree releases there.
    let staging_env = std::fs::read_to_string(root.join("environments/staging.yaml")).unwrap();
    assert!(
        staging_env.contains(r#"exclude: ["hello", "ingress-nginx", "podinfo"]"#),
        "{staging_env}"
    );
    assert!(
        !root.join("gitops/platform/root").exists(),
        "the app of apps is strata's own"
    );
    for listed in [
        "the matrix generator is not imported",
        "Application guestbook: not a Helm release",
        "value file values-production.yaml: read from the chart archive",
        "kind AppProject are not imported (platform)",
        "component ingress-nginx in environment in-cluster cannot be proven equal: the engine gives it value file values-production.yaml",
    ] {
        assert!(err.contains(listed), "{listed}: {err}");
    }
    assert!(
        !err.contains("Deployment"),
        "what an Application deploys is not listed: {err}"
    );
}

#[test]
fn an_import_is_the_same_every_time() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tree("argo");
    for out in ["a", "b"] {
        let o = run_in(
            tmp.path(),
            "/usr/bin:/bin",
            &["import", "argo", src.to_str().unwrap(), "--out", out, "--offline"],
        );
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    }
    assert_eq!(
        snapshot_tree(&tmp.path().join("a")),
        snapshot_tree(&tmp.path().join("b"))
    );
}

#[test]
fn a_flux_import_without_kubectl_says_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tree("flux");
    let out = run_in(
        tmp.path(),
        "/nonexistent",
        &["import", "flux", src.to_str().unwrap(), "--out", "p"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E032]") && err.contains("needs kubectl"), "{err}");
    assert!(err.contains("help:"), "{err}");
    assert!(!tmp.path().join("p").exists(), "nothing is written");
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tree("argo");
    // Not a folder; a folder with no release; an output folder holding a platform.
    let empty = tempfile::tempdir().unwrap();
    common::write(empty.path(), "notes.yaml", "a: 1\n");
    let file = src.join("argocd/root.yaml");
    for (path, out, says) in [
        (file.to_str().unwrap(), "p", "is not a folder"),
        (empty.path().to_str().unwrap(), "p", "no Helm release"),
    ] {
        let o = run_in(tmp.path(), "/usr/bin:/bin", &["import", "argo", path, "--out", out]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("error[E032]") && err.contains(says), "{err}");
        assert!(!tmp.path().join(out).exists());
    }
    common::write(tmp.path(), "taken/strata.yaml", "platform: mine\n");
    let o = run_in(
        tmp.path(),
        "/usr/bin:/bin",
        &["import", "argo", src.to_str().unwrap(), "--out", "taken"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error[E035]") && err.contains("already holds a platform"),
        "{err}"
    );
    assert_eq!(snapshot_tree(&tmp.path().join("taken")).len(), 1);
}
