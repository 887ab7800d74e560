//! Hydrated output, end to end with the real helm: a platform with a local
//! chart and a remote one served on 127.0.0.1 renders as the objects its
//! charts render, for Flux and for Argo CD; every folder builds with
//! kubectl kustomize, every object validates against the Kubernetes 1.35
//! strict schemas and the CRD schemas, and the tree is read as the engines
//! read it: CRDs first, hooks as each engine treats them, nothing that
//! would put a Secret into git, values that reach Helm with their nulls.

#[macro_use]
mod common;

use std::path::Path;
use std::process::Command;

use common::charts::{self, Repo, platform, strata_with};
use common::{kubectl, stderr, write};
use serde_json::Value as J;

fn docs(path: &Path) -> Vec<J> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    strata::yaml::parse_plain_multi(&std::sync::Arc::from("doc"), &text).unwrap()
}

fn doc(root: &Path, rel: &str) -> J {
    docs(&root.join(rel)).remove(0)
}

/// Every file of a folder of the tree, as objects (not the kustomization).
fn folder(root: &Path, rel: &str) -> Vec<J> {
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(root.join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "kustomization.yaml"))
        .collect();
    paths.sort();
    for p in paths {
        out.extend(docs(&p));
    }
    out
}

fn kinds(objects: &[J]) -> Vec<String> {
    let mut k: Vec<String> = objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    k.sort();
    k
}

/// A hydrated platform: `gadget` from a chart in the repository, `web` from
/// a chart repository on 127.0.0.1, pulled into the store.
fn hydrated(helm: &Path, repo: &Repo) -> tempfile::TempDir {
    let tmp = platform(&[
        ("gadget", "chart:\n  path: charts/gadget\n", "greeting: hi\n"),
        (
            "web",
            &format!(
                "chart:\n  repoURL: {}\n  name: web\n  version: 1.0.0\nrequires: [gadget]\n",
                repo.url
            ),
            "replicas: 2\n",
        ),
    ]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("gadget"), &root.join("charts/gadget"));
    // A layer deletes a chart default with null.
    write(root, "gitops/platform/gadget/values-staging.yaml", "extraLabel: null\n");
    // One of the web release's manifests uses the gadget chart's CRD.
    write(
        root,
        "gitops/platform/web/manifests/gadget.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: front\nspec:\n  size: 1\n",
    );
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &format!("{text}hydrate: true\n"));
    let out = strata_with(root, Some(helm), &["charts", "pull"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    tmp
}

#[test]
fn a_hydrated_tree_holds_what_the_charts_render_and_builds_for_both_engines() {
    let helm = need_helm!();
    let repo = Repo::serve(&["web-1"]);
    let tmp = hydrated(&helm, &repo);
    let root = tmp.path();
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");

    // The charts' own objects, in their folders; no Helm release or source.
    let flux = "rendered/staging/flux";
    let gadget = folder(root, &format!("{flux}/components/gadget"));
    assert_eq!(
        kinds(&gadget),
        [
            "Deployment/gadget",
            "Dial/gadget-dial",
            "Gadget/gadget",
            "Service/gadget"
        ]
    );
    assert!(
        !root
            .join(format!("{flux}/components/gadget/helmrelease-gadget.yaml"))
            .exists()
    );
    let web = folder(root, &format!("{flux}/components/web"));
    assert!(
        web.iter()
            .all(|o| o["kind"] != "HelmRelease" && o["kind"] != "HelmRepository"),
        "{web:?}"
    );
    assert!(web.iter().any(|o| o["kind"] == "Deployment"), "{web:?}");
    // The release's manifests join the chart's objects.
    assert!(
        web.iter()
            .any(|o| o["kind"] == "Gadget" && o["metadata"]["name"] == "front")
    );
    // Every CRD in crds/, never pruned.
    let crds = folder(root, &format!("{flux}/crds"));
    assert_eq!(
        kinds(&crds),
        [
            "CustomResourceDefinition/dials.example.com",
            "CustomResourceDefinition/gadgets.example.com"
        ]
    );
    for c in &crds {
        assert_eq!(
            c["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"],
            "disabled"
        );
    }
    // The test hook never reaches the tree; the pre-install Job is applied
    // before the rest by a Kustomization of its own, and recreated when its
    // template changes.
    let hooks = folder(root, &format!("{flux}/components/gadget/pre-hooks"));
    assert_eq!(kinds(&hooks), ["Job/gadget-migrate"]);
    assert_eq!(
        hooks[0]["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/force"],
        "enabled"
    );
    assert!(
        err.contains("note[E025]") && err.contains("Job/gadget/gadget-migrate"),
        "{err}"
    );
    // Namespaces by each kind's scope: the namespaced Gadget gets the
    // release's, the cluster-scoped Dial none.
    let g = gadget.iter().find(|o| o["kind"] == "Gadget").unwrap();
    assert_eq!(g["metadata"]["namespace"], "gadget");
    let d = gadget.iter().find(|o| o["kind"] == "Dial").unwrap();
    assert!(d["metadata"].get("namespace").is_none(), "{d}");
    // The values that reached helm: the null deleted the chart's default.
    let deploy = gadget.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert!(
        deploy["metadata"]["labels"].get("gadget.example.com/extra").is_none(),
        "{deploy}"
    );
    assert_eq!(
        deploy["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"],
        "hi"
    );

    // Flux: strata-crds first, every component after it.
    let ks = doc(root, &format!("{flux}/kustomization-strata-crds.yaml"));
    assert_eq!(ks["spec"]["prune"], false);
    assert_eq!(ks["spec"]["deletionPolicy"], "Orphan");
    let ks = doc(root, &format!("{flux}/kustomization-gadget.yaml"));
    let deps: Vec<&str> = ks["spec"]["dependsOn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(
        deps.contains(&"strata-crds") && deps.contains(&"gadget-pre-hooks"),
        "{deps:?}"
    );
    assert_eq!(ks["spec"]["wait"], true);
    let pre = doc(root, &format!("{flux}/kustomization-gadget-pre-hooks.yaml"));
    assert_eq!(
        pre["spec"]["path"],
        "./rendered/staging/flux/components/gadget/pre-hooks"
    );
    // It ships CRDs: deleting its Kustomization leaves its objects.
    assert_eq!(ks["spec"]["deletionPolicy"], "Orphan");
    let ks = doc(root, &format!("{flux}/kustomization-web.yaml"));
    let deps: Vec<&str> = ks["spec"]["dependsOn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(deps.contains(&"strata-crds") && deps.contains(&"gadget"), "{deps:?}");

    // Argo CD: directory sources, CRDs in the lowest wave, no cascade
    // finalizer on what ships CRDs.
    let argo = "rendered/staging/argo";
    let app = doc(root, &format!("{argo}/application-strata-crds.yaml"));
    assert_eq!(app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"], "-1");
    let app = doc(root, &format!("{argo}/application-gadget.yaml"));
    assert_eq!(app["spec"]["source"]["path"], "rendered/staging/argo/components/gadget");
    assert!(app["spec"]["source"].get("helm").is_none() && app["spec"]["source"].get("chart").is_none());
    assert!(app["metadata"].get("finalizers").is_none(), "{app}");
    let web_app = doc(root, &format!("{argo}/application-web.yaml"));
    let wave = |a: &J| {
        a["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]
            .as_str()
            .unwrap()
            .parse::<i64>()
            .unwrap()
    };
    assert!(wave(&web_app) > wave(&app), "web requires gadget");
    // Argo CD runs the hook itself: the annotation stays.
    let argo_job = folder(root, &format!("{argo}/components/gadget"))
        .into_iter()
        .find(|o| o["kind"] == "Job")
        .unwrap();
    assert_eq!(
        argo_job["metadata"]["annotations"]["helm.sh/hook"],
        "pre-install,pre-upgrade"
    );
    assert!(
        argo_job["metadata"]["annotations"]
            .get("kustomize.toolkit.fluxcd.io/force")
            .is_none()
    );

    // Every folder builds with kustomize.
    if let Some(kubectl) = kubectl() {
        for entry in walkdir::WalkDir::new(root.join("rendered/staging"))
            .into_iter()
            .filter_map(Result::ok)
        {
            if entry.file_type().is_dir() && entry.path().join("kustomization.yaml").exists() {
                let o = Command::new(&kubectl)
                    .arg("kustomize")
                    .arg(entry.path())
                    .output()
                    .unwrap();
                assert!(
                    o.status.success(),
                    "{}: {}",
                    entry.path().display(),
                    String::from_utf8_lossy(&o.stderr)
                );
            }
        }
    }
}

#[test]
fn a_hydrated_tree_validates_against_the_kubernetes_and_crd_schemas() {
    let helm = need_helm!();
    let (Some(k8s), Some(crds)) = (
        common::required_dir("STRATA_TEST_K8S_SCHEMAS", None, "Kubernetes schemas"),
        common::crd_schemas(),
    ) else {
        return;
    };
    let repo = Repo::serve(&["web-1"]);
    let tmp = hydrated(&helm, &repo);
    let root = tmp.path();
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(
        root,
        "strata.yaml",
        &format!("{text}schemas: [{}, {}]\n", k8s.display(), crds.display()),
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("E010") && !err.contains("E021"), "{err}");
}

#[test]
fn a_chart_that_renders_a_secret_is_not_hydrated() {
    let helm = need_helm!();
    let tmp = platform(&[("noisy", "chart:\n  path: charts/noisy\n", "")]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("noisy"), &root.join("charts/noisy"));
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &format!("{text}hydrate: true\n"));
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "dev"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E024]"), "{err}");
    assert!(err.contains("Secret/noisy/"), "{err}");
    assert!(err.contains("noisy/templates/secret.yaml"), "{err}");
    assert!(err.contains("--> gitops/platform/noisy/config.yaml"), "{err}");
    assert!(err.contains("hydrate: false"), "{err}");
    assert!(!root.join("rendered").exists(), "nothing is written");

    // `hydrate: false` keeps it a Helm release, and its Secret out of git.
    let config = std::fs::read_to_string(root.join("gitops/platform/noisy/config.yaml")).unwrap();
    write(
        root,
        "gitops/platform/noisy/config.yaml",
        &format!("{config}hydrate: false\n"),
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "dev"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        root.join("rendered/dev/flux/components/noisy/helmrelease-noisy.yaml")
            .exists()
    );
    let all: Vec<J> = walkdir::WalkDir::new(root.join("rendered"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "yaml"))
        .flat_map(|e| docs(e.path()))
        .collect();
    assert!(all.iter().all(|o| o["kind"] != "Secret"), "a Secret reached the tree");
}

/// Key material in an object of any kind is refused from a hydrated
/// tree: a ConfigMap with a base64 private key in its binaryData, or a
/// ServiceAccount token in an annotation. The message names the object and
/// the place, never the material.
#[test]
fn key_material_in_any_object_is_not_hydrated() {
    let helm = need_helm!();
    let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----\n";
    let jwt =
        "eyJhbGciOiJSUzI1NiIsImtpZCI6Im9uZSJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.bm90LWEtcmVhbC1zaWduYXR1cmUtYnV0LWxvbmc";
    for (template, shows) in [
        (
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vault-ca\nbinaryData:\n  ca.key: {}\n",
                strata::secrets::base64_encode(key.as_bytes())
            ),
            "ConfigMap/vault/vault-ca (vault/templates/object.yaml), which holds a base64-encoded PEM private key at binaryData.ca\\.key,",
        ),
        (
            format!(
                "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: vault\n  annotations:\n    example.com/token: {jwt}\n"
            ),
            "which holds a JSON Web Token at metadata.annotations.example\\.com/token",
        ),
    ] {
        let tmp = platform(&[("vault", "chart:\n  path: charts/vault\n", "")]);
        let root = tmp.path();
        write(
            root,
            "charts/vault/Chart.yaml",
            "apiVersion: v2\nname: vault\nversion: 0.1.0\n",
        );
        write(root, "charts/vault/templates/object.yaml", &template);
        let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
        write(root, "strata.yaml", &format!("{text}hydrate: true\n"));
        let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "dev"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("error[E024]"), "{err}");
        assert!(err.contains(shows), "{err}");
        assert!(
            !err.contains("MIIBOgIBAAJBAKj34") && !err.contains("bm90LWEtcmVhbC1zaWduYXR1cmU"),
            "{err}"
        );
        assert!(!root.join("rendered").exists(), "nothing is written");
    }
}

#[test]
fn a_hydrated_environment_without_helm_says_what_to_do() {
    let tmp = platform(&[("gadget", "chart:\n  path: charts/gadget\n", "")]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("gadget"), &root.join("charts/gadget"));
    let text = std::fs::read_to_string(root.join("environments/dev.yaml")).unwrap();
    write(root, "environments/dev.yaml", &format!("{text}hydrate: true\n"));
    let out = strata_with(root, None, &["render", "--env", "dev"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("environment dev is hydrated"), "{err}");
    assert!(
        err.contains("strata charts pull") && err.contains("hydrate: false"),
        "{err}"
    );
}

/// The objects `kubectl kustomize` gives for `objects` with `patches` as
/// helm-controller's post-renderer applies them (its kustomize patches,
/// each a target and JSON 6902 operations as text).
fn post_rendered(kubectl: &Path, objects: &str, patches: &J) -> Vec<J> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("all.yaml"), objects).unwrap();
    let k = serde_json::json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["all.yaml"],
        "patches": patches,
    });
    std::fs::write(dir.path().join("kustomization.yaml"), k.to_string()).unwrap();
    let o = Command::new(kubectl).arg("kustomize").arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    strata::yaml::parse_plain_multi(&std::sync::Arc::from("built"), &String::from_utf8_lossy(&o.stdout)).unwrap()
}

#[test]
fn patches_on_chart_output_reach_what_every_engine_applies() {
    let helm = need_helm!();
    let tmp = platform(&[(
        "gadget",
        "chart:\n  path: charts/gadget\npatches:\n  - target: {kind: Deployment, name: gadget}\n    patch:\n      - {op: replace, path: /spec/replicas, value: 3}\n      - {op: add, path: /metadata/labels/patched, value: \"yes\"}\n",
        "",
    )]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("gadget"), &root.join("charts/gadget"));

    // Flux, Helm release: the patch travels as a post-renderer, and what
    // strata judged is what kustomize makes of the chart's output with it.
    let out = strata_with(
        root,
        Some(&helm),
        &["--inflate", "helm", "render", "--env", "staging", "--target", "flux"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let hr = doc(root, "rendered/staging/flux/components/gadget/helmrelease-gadget.yaml");
    let patches = &hr["spec"]["postRenderers"][0]["kustomize"]["patches"];
    assert_eq!(
        patches[0]["target"],
        serde_json::json!({"kind": "Deployment", "name": "gadget"})
    );
    if let Some(kubectl) = kubectl() {
        let rendered = Command::new(&helm)
            .args(["template", "gadget", "charts/gadget", "--namespace", "gadget"])
            .current_dir(root)
            .output()
            .unwrap();
        assert!(rendered.status.success());
        let built = post_rendered(&kubectl, &String::from_utf8_lossy(&rendered.stdout), patches);
        let d = built.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(d["spec"]["replicas"], 3);
        assert_eq!(d["metadata"]["labels"]["patched"], "yes");
    }

    // Hydrated: the patched object is what is written.
    let text = std::fs::read_to_string(root.join("environments/staging.yaml")).unwrap();
    write(root, "environments/staging.yaml", &format!("{text}hydrate: true\n"));
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "staging"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for target in ["flux", "argo"] {
        let d = doc(
            root,
            &format!("rendered/staging/{target}/components/gadget/deployment-gadget.yaml"),
        );
        assert_eq!(d["spec"]["replicas"], 3, "{target}");
        assert_eq!(d["metadata"]["labels"]["patched"], "yes", "{target}");
    }

    // Argo CD renders a Helm source itself, with no post-renderer.
    write(root, "environments/staging.yaml", &text);
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E017]") && err.contains("no post-renderer"), "{err}");
    assert!(err.contains("hydrate: true"), "{err}");
    assert!(err.contains("--> gitops/platform/gadget/config.yaml:"), "{err}");

    // An operation that does not apply to the chart's object points at itself.
    let config = std::fs::read_to_string(root.join("gitops/platform/gadget/config.yaml")).unwrap();
    write(
        root,
        "gitops/platform/gadget/config.yaml",
        &config.replace("/spec/replicas, value: 3", "/spec/nothing/here, value: 3"),
    );
    let out = strata_with(
        root,
        Some(&helm),
        &["--inflate", "helm", "render", "--env", "staging", "--target", "flux"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot be applied to Deployment/gadget"), "{err}");
}
