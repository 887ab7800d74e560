//! Transitions that keep what runs: a hydrated Flux tree runs Helm hooks in
//! Helm's order and leaves out those of no install or upgrade; a component
//! that switches between a Helm release and hydrated objects is handed
//! over, in both engines and both ways, so that nothing is uninstalled;
//! `sync: manual` on Flux keeps the values its unchanged HelmRelease reads.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::charts::{self, platform, strata_with};
use common::{git, kubectl, stderr, stdout, write};
use serde_json::Value as J;

fn docs(path: &Path) -> Vec<J> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    strata::yaml::parse_plain_multi(&std::sync::Arc::from("doc"), &text).unwrap()
}

fn doc(root: &Path, rel: &str) -> J {
    docs(&root.join(rel)).remove(0)
}

/// The objects of a folder's files (not the kustomization), by `Kind/name`.
fn folder(root: &Path, rel: &str) -> Vec<(String, J)> {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(root.join(rel)) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => return Vec::new(),
    };
    paths.retain(|p| p.is_file() && p.file_name().is_some_and(|n| n != "kustomization.yaml"));
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        for d in docs(&p) {
            let id = format!(
                "{}/{}",
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap()
            );
            out.push((id, d));
        }
    }
    out
}

fn ids(objects: &[(String, J)]) -> Vec<&str> {
    let mut v: Vec<&str> = objects.iter().map(|(i, _)| i.as_str()).collect();
    v.sort();
    v
}

fn run(root: &Path, helm: &Path, args: &[&str]) -> String {
    let out = strata_with(root, Some(helm), args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "strata {args:?}: {err}");
    err
}

fn render(root: &Path, helm: &Path, env: &str) -> String {
    run(root, helm, &["--inflate", "helm", "render", "--env", env])
}

fn append(root: &Path, rel: &str, extra: &str) {
    let text = std::fs::read_to_string(root.join(rel)).unwrap_or_default();
    write(root, rel, &format!("{text}{extra}"));
}

fn replace(root: &Path, rel: &str, from: &str, to: &str) {
    let text = std::fs::read_to_string(root.join(rel)).unwrap();
    assert!(text.contains(from), "{rel} has no `{from}`");
    write(root, rel, &text.replacen(from, to, 1));
}

/// A platform of one component, `hooked`, from the chart of that name in
/// the repository, with one manifest of its own.
fn hooked(helm: &Path, hydrate: bool) -> tempfile::TempDir {
    hooked_all(helm, &[("hooked", "")], hydrate)
}

/// A platform of components of the `hooked` chart, each with its extra
/// `config.yaml` lines and one manifest of its own.
fn hooked_all(helm: &Path, components: &[(&str, &str)], hydrate: bool) -> tempfile::TempDir {
    let configs: Vec<(&str, String)> = components
        .iter()
        .map(|(name, extra)| (*name, format!("chart:\n  path: charts/hooked\n{extra}")))
        .collect();
    let specs: Vec<(&str, &str, &str)> = configs
        .iter()
        .map(|(name, config)| (*name, config.as_str(), "image:\n  tag: \"1.0.0\"\n"))
        .collect();
    let tmp = platform(&specs);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("hooked"), &root.join("charts/hooked"));
    for (name, _) in components {
        write(
            root,
            &format!("gitops/platform/{name}/manifests/route.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-route\ndata:\n  host: {name}.example.com\n"
            ),
        );
    }
    if hydrate {
        append(root, "strata.yaml", "hydrate: true\n");
    }
    run(root, helm, &["charts", "pull"]);
    tmp
}

fn kustomize_builds(root: &Path, dir: &str) {
    let Some(kubectl) = kubectl() else { return };
    for entry in walkdir::WalkDir::new(root.join(dir)).into_iter().filter_map(Result::ok) {
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

const FLUX: &str = "rendered/staging/flux";
const ARGO: &str = "rendered/staging/argo";

#[test]
fn a_hydrated_flux_tree_runs_hooks_in_helms_order_and_leaves_out_delete_rollback_and_test_hooks() {
    let helm = need_helm!();
    let tmp = hooked(&helm, true);
    let root = tmp.path();
    let err = render(root, &helm, "staging");

    // The component's own folder: no hook of any phase.
    let main = folder(root, &format!("{FLUX}/components/hooked"));
    assert_eq!(ids(&main), ["ConfigMap/hooked-route", "Deployment/hooked"]);
    // Pre-install hooks (with the ServiceAccount they run as) before it,
    // post-install hooks after it, each by a Kustomization of its own.
    let pre = folder(root, &format!("{FLUX}/components/hooked/pre-hooks"));
    assert_eq!(ids(&pre), ["Job/hooked-migrate", "ServiceAccount/hooked-hooks"]);
    let post = folder(root, &format!("{FLUX}/components/hooked/post-hooks"));
    assert_eq!(ids(&post), ["Job/hooked-register"]);
    let deps = |name: &str| -> Vec<String> {
        doc(root, &format!("{FLUX}/kustomization-{name}.yaml"))["spec"]["dependsOn"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(
        deps("hooked").contains(&"hooked-pre-hooks".to_owned()),
        "{:?}",
        deps("hooked")
    );
    assert_eq!(deps("hooked-post-hooks"), ["hooked"]);
    let pre_ks = doc(root, &format!("{FLUX}/kustomization-hooked-pre-hooks.yaml"));
    assert_eq!(
        pre_ks["spec"]["path"],
        "./rendered/staging/flux/components/hooked/pre-hooks"
    );
    assert_eq!(pre_ks["spec"]["wait"], true);
    // The uninstall Job (pre-delete), the rollback and post-delete hooks
    // are nowhere in the Flux tree, and a note names each.
    let all = std::fs::read_dir(root.join(FLUX)).unwrap().count();
    assert!(all > 0);
    for gone in ["hooked-uninstall", "hooked-before-rollback", "hooked-farewell"] {
        for entry in walkdir::WalkDir::new(root.join(FLUX))
            .into_iter()
            .filter_map(Result::ok)
        {
            if entry.file_type().is_file() {
                let text = std::fs::read_to_string(entry.path()).unwrap();
                assert!(!text.contains(gone), "{gone} in {}", entry.path().display());
            }
        }
        assert!(err.contains(gone), "{err}");
    }
    assert!(err.contains("note[E059]") && err.contains("[pre-delete]"), "{err}");
    assert!(
        err.contains("note[E025]") && err.contains("Kustomization hooked-pre-hooks"),
        "{err}"
    );
    // Argo CD runs every hook itself: they stay in its folder, annotated.
    let argo = folder(root, &format!("{ARGO}/components/hooked"));
    assert!(ids(&argo).contains(&"Job/hooked-uninstall"), "{:?}", ids(&argo));
    kustomize_builds(root, "rendered/staging");
}

/// The objects of the Flux tree that carry the hand-over annotation.
fn handed_over(root: &Path, target_dir: &str) -> Vec<(String, J)> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(root.join(target_dir))
        .into_iter()
        .filter_map(Result::ok)
    {
        if entry.file_type().is_file() && entry.file_name() != "kustomization.yaml" {
            for d in docs(entry.path()) {
                if d["metadata"]["annotations"].get("strata.dev/hand-over").is_some() {
                    let id = format!(
                        "{}/{}",
                        d["kind"].as_str().unwrap(),
                        d["metadata"]["name"].as_str().unwrap()
                    );
                    out.push((id, d));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn a_release_switched_to_hydrated_is_handed_over_without_an_uninstall() {
    let helm = need_helm!();
    let tmp = hooked(&helm, false);
    let root = tmp.path();
    render(root, &helm, "staging");
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "release"]);

    // Switch the environment to hydrated objects.
    append(root, "strata.yaml", "hydrate: true\n");
    let err = render(root, &helm, "staging");
    assert!(err.contains("warning[E058]"), "{err}");
    // Flux: the HelmRelease stays, suspended (helm-controller uninstalls
    // nothing for a suspended release it deletes) and never pruned, and the
    // manifests' Kustomization stays, suspended, deleting nothing.
    let flux = handed_over(root, FLUX);
    assert_eq!(ids(&flux), ["HelmRelease/hooked", "Kustomization/hooked-manifests"]);
    let hr = &flux[0].1;
    assert_eq!(hr["spec"]["suspend"], true, "{hr}");
    assert_eq!(
        hr["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"],
        "disabled"
    );
    assert!(
        root.join(format!("{FLUX}/components/hooked/helmrelease-hooked.yaml"))
            .exists()
    );
    let km = &flux[1].1;
    assert_eq!(km["spec"]["suspend"], true);
    assert_eq!(km["spec"]["deletionPolicy"], "Orphan");
    // Beside them, the hydrated objects.
    let main = folder(root, &format!("{FLUX}/components/hooked"));
    assert!(ids(&main).contains(&"Deployment/hooked"), "{:?}", ids(&main));
    // Argo CD: the manifests' Application stays, without the finalizer
    // that would cascade into the manifests, and without automated sync.
    let argo = handed_over(root, ARGO);
    assert_eq!(ids(&argo), ["Application/hooked-manifests"]);
    let app = &argo[0].1;
    assert!(app["metadata"].get("finalizers").is_none(), "{app}");
    assert!(app["spec"]["syncPolicy"].get("automated").is_none(), "{app}");
    kustomize_builds(root, "rendered/staging");

    // Rendering again changes nothing: the hand-over holds.
    let out = strata_with(
        root,
        Some(&helm),
        &["--inflate", "helm", "render", "--check", "--env", "staging"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // The diff says what the hand-over does.
    let out = strata_with(
        root,
        Some(&helm),
        &["--inflate", "helm", "diff", "--base", "HEAD", "--env", "staging"],
    );
    let diff = stdout(&out);
    assert!(
        diff.contains("hooked switches from a Helm release to hydrated objects"),
        "{diff}{}",
        stderr(&out)
    );

    // Once the component changes again the hand-over leaves the tree.
    replace(root, "gitops/platform/hooked/values.yaml", "1.0.0", "1.0.1");
    let err = render(root, &helm, "staging");
    assert!(handed_over(root, FLUX).is_empty() && handed_over(root, ARGO).is_empty());
    assert!(
        !root
            .join(format!("{FLUX}/components/hooked/helmrelease-hooked.yaml"))
            .exists()
    );
    assert!(err.contains("note[E058]") && err.contains("is over"), "{err}");
    assert!(err.contains("kubectl -n hooked delete helmrelease hooked"), "{err}");
}

#[test]
fn hydrated_objects_switched_to_a_release_stay_until_helm_controller_owns_them() {
    let helm = need_helm!();
    let tmp = hooked(&helm, true);
    let root = tmp.path();
    render(root, &helm, "staging");
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &text.replace("hydrate: true\n", ""));
    let err = render(root, &helm, "staging");
    assert!(err.contains("warning[E058]"), "{err}");

    // Flux: the release, and the objects the Kustomization applied, kept
    // with prune disabled; the manifest, now `hooked-manifests`' own, is
    // not patched back by the component's Kustomization.
    let dir = format!("{FLUX}/components/hooked");
    let kept = folder(root, &dir);
    let names = ids(&kept);
    assert!(
        names.contains(&"HelmRelease/hooked") && names.contains(&"Deployment/hooked"),
        "{names:?}"
    );
    let of = |id: &str| &kept.iter().find(|(i, _)| i == id).unwrap().1;
    let deploy = of("Deployment/hooked");
    assert_eq!(
        deploy["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"],
        "disabled"
    );
    assert!(
        deploy["metadata"]["annotations"]
            .get("kustomize.toolkit.fluxcd.io/ssa")
            .is_none()
    );
    let route = of("ConfigMap/hooked-route");
    assert_eq!(
        route["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/ssa"],
        "IfNotPresent"
    );
    assert!(of("HelmRelease/hooked")["spec"].get("suspend").is_none());
    let manifests = folder(root, &format!("{dir}/manifests"));
    assert_eq!(ids(&manifests), ["ConfigMap/hooked-route"]);
    // Argo CD: the component's Application prunes nothing until
    // `hooked-manifests` holds the manifests.
    let app = doc(root, &format!("{ARGO}/application-hooked.yaml"));
    assert_eq!(app["spec"]["syncPolicy"]["automated"]["prune"], false, "{app}");
    assert!(app["metadata"]["annotations"].get("strata.dev/hand-over").is_some());
    kustomize_builds(root, "rendered/staging");

    let out = strata_with(
        root,
        Some(&helm),
        &["--inflate", "helm", "render", "--check", "--env", "staging"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // A change of the component ends it: a plain release tree.
    replace(root, "gitops/platform/hooked/values.yaml", "1.0.0", "1.0.1");
    render(root, &helm, "staging");
    assert!(handed_over(root, FLUX).is_empty() && handed_over(root, ARGO).is_empty());
    assert!(!ids(&folder(root, &dir)).contains(&"Deployment/hooked"));
    let app = doc(root, &format!("{ARGO}/application-hooked.yaml"));
    assert_eq!(app["spec"]["syncPolicy"]["automated"]["prune"], true, "{app}");
}

#[test]
fn components_switching_in_one_render_are_each_handed_over_and_a_steady_release_is_not() {
    let helm = need_helm!();
    let components = [("hooked", ""), ("second", ""), ("steady", "hydrate: false\n")];
    let tmp = hooked_all(&helm, &components, true);
    let root = tmp.path();
    render(root, &helm, "staging");
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "hydrated"]);
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &text.replace("hydrate: true\n", ""));
    let err = render(root, &helm, "staging");
    assert_eq!(err.matches("warning[E058]").count(), 4, "{err}");

    // Flux: each switching component keeps what its Kustomization applied,
    // in its own folder; the release that was one before keeps nothing.
    let flux = handed_over(root, FLUX);
    assert_eq!(
        ids(&flux),
        [
            "ConfigMap/hooked-route",
            "ConfigMap/second-route",
            "Deployment/hooked",
            "Deployment/second"
        ]
    );
    for c in ["hooked", "second"] {
        let kept = folder(root, &format!("{FLUX}/components/{c}"));
        let deploy = &kept.iter().find(|(i, _)| *i == format!("Deployment/{c}")).unwrap().1;
        assert_eq!(
            deploy["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"], "disabled",
            "{c}"
        );
    }
    let steady = folder(root, &format!("{FLUX}/components/steady"));
    assert!(ids(&steady).contains(&"HelmRelease/steady"), "{:?}", ids(&steady));
    // Argo CD: both Applications prune nothing until their manifests'
    // Applications hold the manifests; the steady one prunes as before.
    let argo = handed_over(root, ARGO);
    assert_eq!(ids(&argo), ["Application/hooked", "Application/second"]);
    let app = doc(root, &format!("{ARGO}/application-steady.yaml"));
    assert_eq!(app["spec"]["syncPolicy"]["automated"]["prune"], true, "{app}");
    kustomize_builds(root, "rendered/staging");

    // The diff explains each hand-over, and no other.
    let out = strata_with(
        root,
        Some(&helm),
        &["--inflate", "helm", "diff", "--base", "HEAD", "--env", "staging"],
    );
    let diff = stdout(&out);
    for c in ["hooked", "second"] {
        assert!(
            diff.contains(&format!("{c} switches from hydrated objects to a Helm release")),
            "{c}: {diff}{}",
            stderr(&out)
        );
    }
    assert!(!diff.contains("steady switches"), "{diff}");
}

/// The values checker built from Flux's own code (`tests/flux-values`):
/// `STRATA_TEST_FLUX_VALUES`, else `flux-values` on the PATH; missing, the
/// test skips with a note, and fails in CI.
#[allow(clippy::disallowed_methods)]
fn flux_values() -> Option<PathBuf> {
    let found = std::env::var_os("STRATA_TEST_FLUX_VALUES")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("flux-values"))
                    .find(|p| p.is_file())
            })
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("flux-values is required in CI: .ci/run builds it from tests/flux-values");
        }
        common::skipped("flux-values is not built (see tests/flux-values)");
    }
    found
}

/// What kustomize-controller leaves of a component folder's objects when
/// the tree moves from `before` to `after`: every object of `after`, and
/// those of `before` that are gone from `after` only where the live object
/// says `kustomize.toolkit.fluxcd.io/prune: disabled` (kustomize-controller
/// `deleteObjects`, fluxcd/pkg `ssa/manager_delete.go`). An object with
/// `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent` that exists stays as it
/// was (fluxcd/pkg `ssa/manager_apply.go`).
fn applied(before: &[(String, J)], after: &[(String, J)]) -> Vec<J> {
    let mut live = Vec::new();
    for (id, new) in after {
        let old = before.iter().find(|(i, _)| i == id).map(|(_, o)| o);
        let once = new["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/ssa"] == "IfNotPresent";
        live.push(match (old, once) {
            (Some(old), true) => old.clone(),
            _ => new.clone(),
        });
    }
    for (id, old) in before {
        let kept = old["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"] == "disabled";
        if kept && !after.iter().any(|(i, _)| i == id) {
            live.push(old.clone());
        }
    }
    live
}

#[test]
fn a_manual_flux_release_keeps_the_values_its_unchanged_helmrelease_reads() {
    let helm = need_helm!();
    let Some(checker) = flux_values() else { return };
    let tmp = hooked(&helm, false);
    let root = tmp.path();
    replace(
        root,
        "gitops/platform/hooked/config.yaml",
        "sync: automated",
        "sync: manual",
    );
    render(root, &helm, "staging");
    let dir = format!("{FLUX}/components/hooked");
    let before = folder(root, &dir);
    // New values: a new ConfigMap, and a HelmRelease naming it, which Flux
    // does not apply over the one it created (`ssa: IfNotPresent`).
    replace(root, "gitops/platform/hooked/values.yaml", "1.0.0", "2.0.0");
    render(root, &helm, "staging");
    let after = folder(root, &dir);
    assert_ne!(ids(&before), ids(&after), "the values ConfigMap is renamed");
    let live = applied(&before, &after);
    let cluster = tempfile::tempdir().unwrap();
    for (n, o) in live.iter().enumerate() {
        if ["HelmRelease", "ConfigMap"].contains(&o["kind"].as_str().unwrap()) {
            std::fs::write(
                cluster.path().join(format!("{n}.yaml")),
                serde_json::to_string(o).unwrap(),
            )
            .unwrap();
        }
    }
    // helm-controller's own merge, on what the cluster holds: the release
    // as first created, and the values it names.
    let out = Command::new(&checker).arg(cluster.path()).output().unwrap();
    assert!(
        out.status.success(),
        "helm-controller refuses the values: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let values: J = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(values["image"]["tag"], "1.0.0", "{values}");
}

/// Argo CD's way of running a Lua health check (`tests/argo-health`):
/// `STRATA_TEST_ARGO_HEALTH`, else `argo-health` on the PATH; missing, the
/// test skips with a note, and fails in CI.
#[allow(clippy::disallowed_methods)]
fn argo_health() -> Option<PathBuf> {
    let found = std::env::var_os("STRATA_TEST_ARGO_HEALTH")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("argo-health"))
                    .find(|p| p.is_file())
            })
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("argo-health is required in CI: .ci/run builds it from tests/argo-health");
        }
        common::skipped("argo-health is not built (see tests/argo-health)");
    }
    found
}

#[test]
fn a_manual_argo_cd_application_never_holds_the_roots_sync_waves() {
    let Some(checker) = argo_health() else { return };
    let tmp = common::scratch("homelab");
    let root = tmp.path();
    let out = common::strata(root, &["render", "--env", "staging", "--target", "argo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The health check strata gives the argo-cd component, from the values
    // written into its Application.
    let argocd = doc(root, &format!("{ARGO}/application-argocd.yaml"));
    let values = argocd["spec"]["source"]["helm"]["values"].as_str().unwrap();
    let values = &strata::yaml::parse_plain_multi(&std::sync::Arc::from("values"), values).unwrap()[0];
    let lua = values["configs"]["cm"]["resource.customizations.health.argoproj.io_Application"]
        .as_str()
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let script = work.path().join("health.lua");
    std::fs::write(&script, lua).unwrap();
    let health = |app: &J| -> J {
        let obj = work.path().join("app.json");
        std::fs::write(&obj, serde_json::to_string(app).unwrap()).unwrap();
        let out = Command::new(&checker).arg(&script).arg(&obj).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // argocd syncs by hand (`sync: manual`): never synced, it reports no
    // health of its own, and a wave waiting for it would wait for ever.
    assert!(argocd["spec"]["syncPolicy"].get("automated").is_none());
    assert_eq!(health(&argocd)["status"], "Healthy");
    // An automated Application is waited for until it reports its health,
    // and then as it reports it.
    let mut traefik = doc(root, &format!("{ARGO}/application-traefik.yaml"));
    assert_eq!(health(&traefik)["status"], "Progressing");
    traefik["status"] = serde_json::json!({"health": {"status": "Degraded", "message": "crash loop"}});
    assert_eq!(
        health(&traefik),
        serde_json::json!({"status": "Degraded", "message": "crash loop"})
    );
    traefik["status"]["health"]["status"] = "Healthy".into();
    assert_eq!(health(&traefik)["status"], "Healthy");
}
