//! The tree converges on the engines as they behave: Flux's git refs,
//! manual components that never block what requires them, remediation by
//! tier, Argo CD's retries and value strings that keep nulls through a
//! merge patch, exact repository URLs, tiers that survive deletion, one
//! Namespace per namespace, a bootstrap root per environment, paths from the
//! git top, cluster objects only where Cilium can announce them, and
//! patches on what strata generates.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{git, kubectl, scratch, stderr, strata, write};
use serde_json::{Value as J, json};

fn doc(root: &Path, rel: &str) -> J {
    let text = std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    strata::yaml::parse_plain_multi(&std::sync::Arc::from(rel), &text)
        .unwrap()
        .remove(0)
}

fn render(root: &Path, args: &[&str]) {
    let mut all = vec!["render"];
    all.extend_from_slice(args);
    let out = strata(root, &all);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

fn edit(root: &Path, rel: &str, from: &str, to: &str) {
    let text = std::fs::read_to_string(root.join(rel)).unwrap();
    assert!(text.contains(from), "{rel} has no `{from}`");
    write(root, rel, &text.replacen(from, to, 1));
}

const STAGING: &str = "environments/staging.yaml";

#[test]
fn git_refs_and_credentials_in_flux_and_argo() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    edit(
        root,
        STAGING,
        "ref: {branch: main}",
        "ref: {tag: v1.4.0}\n  secret: platform-auth",
    );
    render(root, &["--env", "staging"]);
    let repo = doc(root, "rendered/staging/flux/gitrepository-platform.yaml");
    assert_eq!(repo["spec"]["ref"], json!({"tag": "v1.4.0"}));
    assert_eq!(repo["spec"]["secretRef"], json!({"name": "platform-auth"}));
    let app = doc(root, "rendered/staging/argo/application-longhorn-manifests.yaml");
    assert_eq!(app["spec"]["source"]["targetRevision"], "v1.4.0");

    // Two refs at once: Flux would follow one and ignore the other.
    edit(root, STAGING, "ref: {tag: v1.4.0}", "ref: {tag: v1.4.0, branch: main}");
    let err = stderr(&strata(root, &["render"]));
    assert!(err.contains("gives both"), "{err}");
    // `revision:` stays the branch shorthand.
    edit(root, STAGING, "ref: {tag: v1.4.0, branch: main}", "revision: release");
    render(root, &["--env", "staging"]);
    assert_eq!(
        doc(root, "rendered/staging/flux/gitrepository-platform.yaml")["spec"]["ref"],
        json!({"branch": "release"})
    );
    // scp-like addresses are refused with the URL form.
    edit(
        root,
        STAGING,
        "url: https://git.example.com/homelab/platform.git",
        "url: git@git.example.com:homelab/platform.git",
    );
    let out = strata(root, &["render"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ssh://git@git.example.com/homelab/platform.git"), "{err}");
    assert!(err.contains("environments/staging.yaml:"), "{err}");
}

/// Every Flux object of an environment's tree, by kind and name.
fn flux_objects(root: &Path, env: &str) -> BTreeMap<(String, String), J> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(root.join("rendered").join(env).join("flux")) {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if !e.file_type().is_file() || name == "kustomization.yaml" || !name.ends_with(".yaml") {
            continue;
        }
        let rel = e.path().strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if rel.contains("/bootstrap/") {
            continue;
        }
        let d = doc(root, &rel);
        let key = (
            d["kind"].as_str().unwrap().to_owned(),
            d["metadata"]["name"].as_str().unwrap().to_owned(),
        );
        out.insert(key, d);
    }
    out
}

#[test]
fn nothing_waits_on_a_suspended_object_and_manual_releases_are_applied_once() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    // argocd is `sync: manual`; make something require it too.
    edit(
        root,
        "gitops/platform/external-secrets/config.yaml",
        "requires:\n  - cert-manager",
        "requires:\n  - cert-manager\n  - argocd",
    );
    edit(root, "gitops/platform/argocd/config.yaml", "  - external-secrets\n", "");
    render(root, &["--env", "staging"]);
    let objects = flux_objects(root, "staging");
    // Walk every dependsOn: no Kustomization waited on is suspended, and no
    // object anywhere in the tree is suspended.
    for ((kind, name), o) in &objects {
        assert!(o["spec"]["suspend"].is_null(), "{kind}/{name} is suspended");
        for dep in o["spec"]["dependsOn"].as_array().into_iter().flatten() {
            let target = &objects[&("Kustomization".to_owned(), dep["name"].as_str().unwrap().to_owned())];
            assert!(
                target["spec"]["suspend"].is_null(),
                "{name} waits on a suspended {}",
                dep["name"]
            );
        }
    }
    let hr = &objects[&("HelmRelease".to_owned(), "argocd".to_owned())];
    assert_eq!(
        hr["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/ssa"],
        "IfNotPresent"
    );
    let auto = &objects[&("HelmRelease".to_owned(), "traefik".to_owned())];
    assert!(auto["metadata"]["annotations"].is_null());
    // Argo CD: a manual Application has no automated sync.
    let app = doc(root, "rendered/staging/argo/application-argocd.yaml");
    assert!(app["spec"]["syncPolicy"]["automated"].is_null());
}

#[test]
fn remediation_follows_the_tier_and_can_be_set() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    edit(
        root,
        "gitops/platform/traefik/config.yaml",
        "tier: addon",
        "tier: addon\nremediation:\n  install: retry\n  upgrade: uninstall\n  retries: 5",
    );
    render(root, &["--env", "staging", "--target", "flux"]);
    let hr = |c: &str| {
        doc(
            root,
            &format!("rendered/staging/flux/components/{c}/helmrelease-{c}.yaml"),
        )
    };
    // Core: retried, never uninstalled or rolled back.
    let cilium = hr("cilium");
    assert_eq!(cilium["spec"]["install"]["strategy"]["name"], "RetryOnFailure");
    assert_eq!(cilium["spec"]["upgrade"]["strategy"]["name"], "RetryOnFailure");
    assert!(cilium["spec"]["install"]["remediation"].is_null());
    // Addon: an install keeps retrying (it never stalls after a few
    // attempts), an upgrade rolls back.
    let cm = hr("cert-manager");
    assert_eq!(cm["spec"]["install"]["strategy"]["name"], "RetryOnFailure");
    assert!(cm["spec"]["install"]["remediation"].is_null());
    assert_eq!(cm["spec"]["upgrade"]["remediation"]["retries"], 3);
    assert_eq!(cm["spec"]["upgrade"]["remediation"]["strategy"], "rollback");
    // Set per component.
    let traefik = hr("traefik");
    assert_eq!(traefik["spec"]["install"]["strategy"]["name"], "RetryOnFailure");
    assert_eq!(
        traefik["spec"]["upgrade"]["remediation"],
        json!({"retries": 5, "strategy": "uninstall"})
    );
    assert_eq!(traefik["spec"]["driftDetection"]["mode"], "enabled");
    let repo = doc(
        root,
        "rendered/staging/flux/components/traefik/helmrepository-traefik.yaml",
    );
    assert_eq!(repo["spec"]["interval"], "1h");
}

#[test]
fn applications_retry_skip_dry_runs_for_missing_crds_and_diff_server_side_on_request() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    edit(
        root,
        "gitops/platform/cilium/config.yaml",
        "tier: core",
        "tier: core\ndiff: server-side",
    );
    edit(
        root,
        "gitops/platform/traefik/config.yaml",
        "tier: addon",
        "tier: addon\nretry:\n  limit: 3\n  backoff:\n    duration: 30s",
    );
    write(
        root,
        "strata.yaml",
        "platform: gitops/platform\nargo:\n  namespace: gitops\n  project: platform\nengines:\n  argo: \"3.2\"\n",
    );
    render(root, &["--env", "staging", "--target", "argo"]);
    let app = |c: &str| doc(root, &format!("rendered/staging/argo/application-{c}.yaml"));
    let cm = app("cert-manager");
    // No limit, each attempt on the newest revision (Argo CD 3.2+): Argo CD
    // never tries a failed revision again by itself.
    assert_eq!(
        cm["spec"]["syncPolicy"]["retry"],
        json!({"limit": -1, "refresh": true, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}})
    );
    let opts = cm["spec"]["syncPolicy"]["syncOptions"].as_array().unwrap();
    assert!(opts.contains(&json!("SkipDryRunOnMissingResource=true")), "{opts:?}");
    assert_eq!(cm["metadata"]["namespace"], "gitops");
    assert_eq!(cm["spec"]["project"], "platform");
    assert_eq!(
        app("traefik")["spec"]["syncPolicy"]["retry"],
        json!({"limit": 3, "refresh": true, "backoff": {"duration": "30s", "factor": 2, "maxDuration": "5m"}})
    );
    assert_eq!(
        app("cilium")["metadata"]["annotations"]["argocd.argoproj.io/compare-options"],
        "ServerSideDiff=true"
    );
    assert!(cm["metadata"]["annotations"]["argocd.argoproj.io/compare-options"].is_null());
}

#[test]
fn nulls_in_values_survive_the_merge_patch_argo_cd_applies() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    render(root, &["--env", "dev", "--target", "argo"]);
    let before = doc(root, "rendered/dev/argo/application-traefik.yaml");
    // A later change deletes a chart default with null.
    write(
        root,
        "gitops/platform/traefik/values-dev.yaml",
        &(std::fs::read_to_string(root.join("gitops/platform/traefik/values-dev.yaml")).unwrap()
            + "tolerations: null\n"),
    );
    render(root, &["--env", "dev", "--target", "argo"]);
    let after = doc(root, "rendered/dev/argo/application-traefik.yaml");
    // Argo CD updates the Application in the cluster with a JSON merge patch
    // (RFC 7386) from the desired object; apply it to the live one.
    let mut live = before.clone();
    json_patch::merge(&mut live, &after);
    let values = live["spec"]["source"]["helm"]["values"].as_str().unwrap();
    let parsed = strata::yaml::parse_plain_multi(&std::sync::Arc::from("values"), values).unwrap();
    let v = &parsed[0];
    assert!(
        v.get("tolerations").is_some_and(J::is_null),
        "the null was lost:\n{values}"
    );
    assert!(v["resources"].get("limits").is_some_and(J::is_null), "{values}");
    // The same patch drops a null written as an object: what valuesObject would lose.
    let mut object = json!({"spec": {"valuesObject": {"a": 1}}});
    json_patch::merge(
        &mut object,
        &json!({"spec": {"valuesObject": {"a": 1, "tolerations": null}}}),
    );
    assert!(object["spec"]["valuesObject"].get("tolerations").is_none());
}

#[test]
fn repository_urls_are_exact_and_the_oci_host_form_is_accepted() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    // The example writes cilium's repository with a trailing slash.
    render(root, &["--env", "staging"]);
    let app = doc(root, "rendered/staging/argo/application-cilium.yaml");
    assert_eq!(app["spec"]["source"]["repoURL"], "https://helm.cilium.io/");
    let repo = doc(
        root,
        "rendered/staging/flux/components/cilium/helmrepository-cilium.yaml",
    );
    assert_eq!(repo["spec"]["url"], "https://helm.cilium.io/");
    // OCI written as Argo CD writes it, without a scheme.
    edit(
        root,
        "gitops/platform/cert-manager/config.yaml",
        "repoURL: oci://quay.io/jetstack/charts",
        "repoURL: quay.io/jetstack/charts",
    );
    render(root, &["--env", "staging"]);
    let app = doc(root, "rendered/staging/argo/application-cert-manager.yaml");
    assert_eq!(app["spec"]["source"]["repoURL"], "quay.io/jetstack/charts");
    let oci = doc(
        root,
        "rendered/staging/flux/components/cert-manager/ocirepository-cert-manager.yaml",
    );
    assert_eq!(oci["spec"]["url"], "oci://quay.io/jetstack/charts/cert-manager");
}

#[test]
fn core_components_are_never_cascade_deleted() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    render(root, &["--env", "staging"]);
    let app = |c: &str| doc(root, &format!("rendered/staging/argo/application-{c}.yaml"));
    let ks = |c: &str| doc(root, &format!("rendered/staging/flux/kustomization-{c}.yaml"));
    for core in ["cilium", "coredns", "longhorn"] {
        assert!(app(core)["metadata"]["finalizers"].is_null(), "{core}");
        assert_eq!(ks(core)["spec"]["deletionPolicy"], "Orphan", "{core}");
    }
    for addon in ["traefik", "cert-manager"] {
        assert_eq!(
            app(addon)["metadata"]["finalizers"],
            json!(["resources-finalizer.argocd.argoproj.io"]),
            "{addon}"
        );
        assert!(ks(addon)["spec"]["deletionPolicy"].is_null(), "{addon}");
    }
}

#[test]
fn shared_namespaces_are_one_object_that_removing_a_component_cannot_delete() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    // traefik moves into cert-manager's namespace, which gets Pod Security labels.
    edit(
        root,
        "gitops/platform/traefik/config.yaml",
        "namespace: traefik",
        "namespace: cert-manager",
    );
    edit(
        root,
        "gitops/platform/cert-manager/config.yaml",
        "namespace: cert-manager",
        "namespace:\n  name: cert-manager\n  labels:\n    pod-security.kubernetes.io/enforce: baseline",
    );
    render(root, &["--env", "staging"]);
    let ns_files: Vec<String> = walkdir::WalkDir::new(root.join("rendered/staging/flux"))
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.path().strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .filter(|p| p.contains("namespace-cert-manager"))
        .collect();
    assert_eq!(
        ns_files,
        ["rendered/staging/flux/namespaces/namespace-cert-manager.yaml"]
    );
    let ns = doc(root, &ns_files[0]);
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "baseline"
    );
    assert_eq!(
        ns["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"],
        "disabled"
    );
    let nsks = doc(root, "rendered/staging/flux/kustomization-strata-namespaces.yaml");
    assert_eq!(nsks["spec"]["prune"], false);
    // Each component waits for its namespace.
    let ks = doc(root, "rendered/staging/flux/kustomization-traefik.yaml");
    assert_eq!(ks["spec"]["dependsOn"][0]["name"], "strata-namespaces");
    // Argo CD creates it with the labels.
    for c in ["traefik", "cert-manager"] {
        let app = doc(root, &format!("rendered/staging/argo/application-{c}.yaml"));
        assert_eq!(
            app["spec"]["syncPolicy"]["managedNamespaceMetadata"]["labels"]["pod-security.kubernetes.io/enforce"],
            "baseline"
        );
    }
    // Two components that disagree on a label are an error naming both.
    edit(
        root,
        "gitops/platform/traefik/config.yaml",
        "namespace: cert-manager",
        "namespace:\n  name: cert-manager\n  labels:\n    pod-security.kubernetes.io/enforce: privileged",
    );
    let out = strata(root, &["render"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("components `cert-manager` and `traefik` share namespace cert-manager"),
        "{err}"
    );
}

#[test]
fn each_environment_has_a_bootstrap_root_for_each_engine() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    render(root, &[]);
    for env in ["dev", "staging", "production"] {
        let ks = doc(
            root,
            &format!("rendered/{env}/flux/bootstrap/kustomization-platform.yaml"),
        );
        assert_eq!(ks["spec"]["path"], format!("./rendered/{env}/flux"));
        assert_eq!(ks["spec"]["sourceRef"]["name"], "platform");
        let repo = doc(
            root,
            &format!("rendered/{env}/flux/bootstrap/gitrepository-platform.yaml"),
        );
        assert_eq!(repo["kind"], "GitRepository");
        let app = doc(
            root,
            &format!("rendered/{env}/argo/bootstrap/application-platform.yaml"),
        );
        assert_eq!(app["spec"]["source"]["path"], format!("rendered/{env}/argo"));
        assert!(app["metadata"]["finalizers"].is_null());
        // The root is not part of the tree it syncs.
        let top = std::fs::read_to_string(root.join(format!("rendered/{env}/argo/kustomization.yaml"))).unwrap();
        assert!(!top.contains("bootstrap"), "{top}");
    }
}

/// A git repository with the platform in `platform/` below its top.
fn in_a_subfolder() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path().join("repo");
    let root = top.join("platform");
    common::copy_dir(&common::repo().join("fixtures/homelab"), &root);
    let _ = std::fs::remove_dir_all(root.join("rendered"));
    // Let git find the platform's place: no `git.path` in the environments.
    for env in ["dev", "staging", "production"] {
        edit(&root, &format!("environments/{env}.yaml"), "  path: .\n", "");
    }
    git(&top, &["init", "-q"]);
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-qm", "platform"]);
    (tmp, root)
}

#[test]
fn paths_start_at_the_git_top_and_follow_out() {
    let (_tmp, root) = in_a_subfolder();
    render(&root, &[]);
    let ks = doc(&root, "rendered/staging/flux/kustomization-traefik.yaml");
    assert_eq!(
        ks["spec"]["path"],
        "./platform/rendered/staging/flux/components/traefik"
    );
    let app = doc(&root, "rendered/staging/argo/application-longhorn-manifests.yaml");
    assert_eq!(
        app["spec"]["source"]["path"],
        "platform/rendered/staging/argo/components/longhorn"
    );
    // --out moves the tree, and the paths with it.
    let out = root.join("deploy");
    render(&root, &["--out", out.to_str().unwrap()]);
    let ks = doc(&root, "deploy/staging/flux/kustomization-traefik.yaml");
    assert_eq!(ks["spec"]["path"], "./platform/deploy/staging/flux/components/traefik");
    // git.path overrides what git says.
    edit(
        &root,
        STAGING,
        "  ref: {branch: main}",
        "  ref: {branch: main}\n  path: clusters/home",
    );
    render(&root, &["--env", "staging"]);
    let ks = doc(&root, "rendered/staging/flux/kustomization-traefik.yaml");
    assert_eq!(
        ks["spec"]["path"],
        "./clusters/home/rendered/staging/flux/components/traefik"
    );
}

/// Builds every folder a Flux Kustomization points at (from the git top),
/// and every Argo CD folder, with kubectl kustomize.
fn build_all(top: &Path, root: &Path) {
    let Some(kubectl) = kubectl() else { return };
    for env in ["dev", "staging", "production"] {
        let objects = flux_objects(root, env);
        let mut paths: Vec<String> = objects
            .values()
            .filter(|o| o["kind"] == "Kustomization")
            .map(|o| o["spec"]["path"].as_str().unwrap().trim_start_matches("./").to_owned())
            .collect();
        paths.push(
            doc(
                root,
                &format!("rendered/{env}/flux/bootstrap/kustomization-platform.yaml"),
            )["spec"]["path"]
                .as_str()
                .unwrap()
                .trim_start_matches("./")
                .to_owned(),
        );
        for p in paths {
            let dir = top.join(&p);
            assert!(
                dir.is_dir(),
                "{env}: a Kustomization points at {p}, which is not a folder"
            );
            let o = Command::new(&kubectl).arg("kustomize").arg(&dir).output().unwrap();
            assert!(
                o.status.success(),
                "kustomize {p}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

#[test]
fn every_folder_flux_follows_builds_from_the_git_top_in_a_subfolder_and_with_shared_namespaces() {
    let (tmp, root) = in_a_subfolder();
    edit(
        &root,
        "gitops/platform/traefik/config.yaml",
        "namespace: traefik",
        "namespace: cert-manager",
    );
    render(&root, &[]);
    build_all(&tmp.path().join("repo"), &root);
    // And the objects validate against the engines' CRD schemas.
    if let Some(crds) = common::crd_schemas() {
        let out = strata(&root, &["check", "--schemas", crds.to_str().unwrap()]);
        let err = stderr(&out);
        assert!(!err.contains("error[E0"), "{err}");
    }
}

#[test]
fn cluster_objects_only_where_cilium_can_announce_them() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    render(root, &["--env", "staging"]);
    assert!(
        root.join("rendered/staging/flux/cluster/ciliuml2announcementpolicy-all-nodes.yaml")
            .is_file()
    );
    let pool = doc(
        root,
        "rendered/staging/flux/cluster/ciliumloadbalancerippool-lb-pool.yaml",
    );
    assert_eq!(pool["apiVersion"], "cilium.io/v2");
    let cluster = doc(root, "rendered/staging/flux/kustomization-strata-cluster.yaml");
    assert_eq!(cluster["spec"]["dependsOn"], json!([{"name": "cilium"}]));
    // Under BGP: no L2 announcements, but BGP advertises the pool's addresses.
    let values = std::fs::read_to_string(root.join("gitops/platform/cilium/values.yaml")).unwrap();
    write(
        root,
        "gitops/platform/cilium/values.yaml",
        &(values.clone() + "bgpControlPlane:\n  enabled: true\n"),
    );
    render(root, &["--env", "staging"]);
    assert!(
        !root
            .join("rendered/staging/flux/cluster/ciliuml2announcementpolicy-all-nodes.yaml")
            .exists()
    );
    assert!(
        root.join("rendered/staging/flux/cluster/ciliumloadbalancerippool-lb-pool.yaml")
            .is_file()
    );
    assert!(
        root.join("rendered/staging/flux/kustomization-strata-cluster.yaml")
            .is_file()
    );
    // Without kube-proxy replacement L2 cannot work: a warning at the line.
    write(
        root,
        "gitops/platform/cilium/values.yaml",
        &values.replace("kubeProxyReplacement: true", "kubeProxyReplacement: false"),
    );
    let out = strata(root, &["render", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning[E018]") && err.contains("kube-proxy replacement"),
        "{err}"
    );
    assert!(!root.join("rendered/staging/flux/cluster").exists());
    // A pool of the user's that overlaps the generated one is an error naming both.
    write(root, "gitops/platform/cilium/values.yaml", &values);
    write(
        root,
        "gitops/platform/cilium/manifests/ciliumloadbalancerippool-extra.yaml",
        "apiVersion: cilium.io/v2\nkind: CiliumLoadBalancerIPPool\nmetadata:\n  name: extra\nspec:\n  blocks:\n    - cidr: 192.168.10.248/29\n",
    );
    let out = strata(root, &["render", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("CiliumLoadBalancerIPPool extra (192.168.10.248/29) overlaps"),
        "{err}"
    );
    assert!(err.contains("generated pool lb-pool"), "{err}");
}

#[test]
fn patches_adjust_what_strata_generates() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    edit(
        root,
        "gitops/platform/traefik/config.yaml",
        "tier: addon",
        "tier: addon\npatches:\n  - target: {kind: HelmRelease}\n    patch:\n      - {op: add, path: /spec/timeout, value: 15m}\n      - {op: replace, path: /spec/interval, value: 5m}",
    );
    let env = std::fs::read_to_string(root.join(STAGING)).unwrap();
    write(
        root,
        STAGING,
        &format!(
            "{env}patches:\n  - target: {{kind: Application, name: traefik}}\n    component: traefik\n    patch:\n      - {{op: replace, path: /spec/project, value: edge}}\n"
        ),
    );
    render(root, &["--env", "staging"]);
    let hr = doc(
        root,
        "rendered/staging/flux/components/traefik/helmrelease-traefik.yaml",
    );
    assert_eq!(hr["spec"]["timeout"], "15m");
    assert_eq!(hr["spec"]["interval"], "5m");
    // The values stay in their ConfigMap, untouched by a patch on the release.
    assert!(hr["spec"].get("values").is_none());
    let app = doc(root, "rendered/staging/argo/application-traefik.yaml");
    assert_eq!(app["spec"]["project"], "edge");
    let other = doc(root, "rendered/staging/argo/application-cert-manager.yaml");
    assert_eq!(other["spec"]["project"], "default");
    // A patch that cannot apply points at its operation.
    edit(
        root,
        "gitops/platform/traefik/config.yaml",
        "{op: add, path: /spec/timeout, value: 15m}\n      - {op: replace, path: /spec/interval, value: 5m}",
        "{op: remove, path: /spec/nothing}",
    );
    let out = strata(root, &["render"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[E017]"), "{err}");
    assert!(err.contains("gitops/platform/traefik/config.yaml:"), "{err}");
}

#[test]
fn argo_cd_assesses_child_applications_so_that_sync_waves_wait() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    render(root, &["--env", "staging"]);
    let values = |target: &str| -> J {
        let app = doc(root, &format!("rendered/staging/{target}/application-argocd.yaml"));
        let text = app["spec"]["source"]["helm"]["values"].as_str().unwrap().to_owned();
        strata::yaml::parse_plain_multi(&std::sync::Arc::from("values"), &text)
            .unwrap()
            .remove(0)
    };
    // The argo-cd component's values carry the health check of child
    // Applications (Argo CD has none since 1.8), as the lowest layer.
    let key = "resource.customizations.health.argoproj.io_Application";
    let lua = values("argo")["configs"]["cm"][key].as_str().unwrap().to_owned();
    assert!(lua.contains("obj.status") && lua.contains("Progressing"), "{lua}");
    // The layers keep what they set beside it.
    assert_eq!(values("argo")["configs"]["cm"]["admin.enabled"], true);
    // A layer may remove it (null deletes).
    let layer = "gitops/platform/argocd/values-staging.yaml";
    let text = std::fs::read_to_string(root.join(layer)).unwrap_or_default();
    write(root, layer, &format!("{text}configs:\n  cm:\n    {key}: null\n"));
    render(root, &["--env", "staging"]);
    assert!(values("argo")["configs"]["cm"][key].is_null());
    // Without Argo CD's tree there is no need for it.
    let env = std::fs::read_to_string(root.join(STAGING)).unwrap();
    assert!(!env.contains("targets:"), "{env}");
    write(root, STAGING, &format!("{env}targets: [flux]\n"));
    write(root, layer, &text);
    render(root, &["--env", "staging"]);
    let cm = std::fs::read_dir(root.join("rendered/staging/flux/components/argocd"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("configmap-argocd-values-")
        })
        .unwrap();
    let text = std::fs::read_to_string(cm).unwrap();
    assert!(!text.contains(key), "{text}");
}
