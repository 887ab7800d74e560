//! `strata import` on the layouts real GitOps repositories use, one small
//! repository of each shape under tests/import/: Flux's home-ops layout
//! (`kubernetes/flux/config/`), `clusters/<name>/`, an ExternalArtifact
//! made by an ArtifactGenerator; Argo CD's kustomize `helmCharts:`, an app
//! of apps kept as a chart, ApplicationSet parameters named like the git
//! generator's; SOPS-encrypted values; a path and a link out of the tree.
//! Their charts are our own (tests/charts), served from a chart repository
//! on 127.0.0.1 that each tree names as `http://charts.invalid`; the import
//! pulls them, renders every release and compares values and objects.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::charts::Repo;
use common::{copy_dir, repo, stderr};

/// The placeholder the trees name their chart repository by.
const CHARTS: &str = "http://charts.invalid";

/// A copy of `tests/import/<name>` in `<tmp>/src`, its chart repository
/// pointed at `url`.
fn staged(name: &str, url: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    copy_dir(&repo().join("tests/import").join(name), &src);
    for e in walkdir::WalkDir::new(&src) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let text = std::fs::read_to_string(e.path()).unwrap();
            if text.contains(CHARTS) {
                std::fs::write(e.path(), text.replace(CHARTS, url)).unwrap();
            }
        }
    }
    tmp
}

/// The PATH with kubectl on it (or `None`: the test then skips, or fails
/// in CI).
#[allow(clippy::disallowed_methods)]
fn path_with_kubectl() -> Option<String> {
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

/// Runs strata in `dir` with the given helm and PATH.
fn strata(dir: &Path, helm: &Path, path: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir)
        .args(["--color", "never"])
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env("PATH", path)
        .env("STRATA_HELM", helm)
        .env("STRATA_HELM_RENDERER", "off")
        .env_remove("STRATA_KUBECTL")
        .output()
        .expect("run strata")
}

/// Imports `<tmp>/src` into `<tmp>/platform`; the exit code and messages.
fn import(tmp: &Path, engine: &str, helm: &Path, path: &str, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["import", engine, "src", "--out", "platform"];
    args.extend(extra);
    let out = strata(tmp, helm, path, &args);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    (out.status.code(), err)
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every file of the written platform (its chart store left aside).
fn platform_files(root: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".strata")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect()
}

const EQUAL: &str = "every release renders, and its values and objects equal the source's";

#[test]
fn the_home_ops_layout_is_found_from_its_flux_config_folder() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("home-ops", &charts.url);
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(EQUAL), "{err}");
    let root = tmp.path().join("platform");
    // One environment, named after the repository the GitRepository reads,
    // which also gives git.url, its branch and its Secret.
    let env = read(&root, "environments/home-ops.yaml");
    assert!(
        env.contains(r#"url: "https://git.example.com/someone/home-ops.git""#),
        "{env}"
    );
    assert!(env.contains(r#"ref: {branch: "trunk"}"#), "{env}");
    assert!(env.contains(r#"secret: "home-ops-deploy-key""#), "{env}");
    // The cluster's variables substituted, and the Kustomizations' order kept.
    let web = read(&root, "gitops/platform/web/values.yaml");
    assert!(
        web.contains("domain: web.home.example.org") && web.contains("replicas: 2"),
        "{web}"
    );
    assert!(read(&root, "gitops/platform/web/config.yaml").contains("requires:\n- gadget\n"));
    // The charts were pulled and pinned; the platform renders as it is.
    assert!(read(&root, "strata.lock").contains("name: gadget"));
    let render = strata(&root, &helm, &path, &["render"]);
    assert_eq!(render.status.code(), Some(0), "{}", stderr(&render));
}

#[test]
fn a_flux_instance_names_the_root_and_its_repository() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("home-ops", &charts.url);
    // flux-operator in place of the GitRepository and Kustomization pair:
    // the FluxInstance's sync says where Flux starts and what it reads.
    let src = tmp.path().join("src");
    std::fs::remove_dir_all(src.join("kubernetes/flux/config")).unwrap();
    common::write(
        &src,
        "kubernetes/bootstrap/flux-instance.yaml",
        "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n  namespace: flux-system\nspec:\n  distribution:\n    version: 2.x\n    registry: ghcr.io/fluxcd\n  sync:\n    kind: GitRepository\n    url: https://git.example.com/someone/home-ops.git\n    ref: refs/heads/trunk\n    path: kubernetes/flux\n    pullSecret: home-ops-deploy-key\n",
    );
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(EQUAL), "{err}");
    let root = tmp.path().join("platform");
    let env = read(&root, "environments/home-ops.yaml");
    assert!(
        env.contains(r#"url: "https://git.example.com/someone/home-ops.git""#),
        "{env}"
    );
    assert!(env.contains(r#"ref: {branch: "trunk"}"#), "{env}");
    assert!(env.contains(r#"secret: "home-ops-deploy-key""#), "{env}");
    assert!(read(&root, "gitops/platform/web/values.yaml").contains("domain: web.home.example.org"));
}

#[test]
fn a_flux_instance_release_with_inline_values_names_the_root() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget", "widget"]);
    let tmp = staged("home-ops", &charts.url);
    // flux-operator installed by a HelmRelease of its flux-instance chart,
    // the sync written in the release's own values, as the cluster applies
    // it (no values file, no FluxInstance in the tree).
    let src = tmp.path().join("src");
    std::fs::remove_dir_all(src.join("kubernetes/flux/config")).unwrap();
    common::write(
        &src,
        "kubernetes/apps/flux-system/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./flux-instance/ks.yaml\n",
    );
    common::write(
        &src,
        "kubernetes/apps/flux-system/flux-instance/ks.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-instance\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: ./kubernetes/apps/flux-system/flux-instance/app\n  prune: true\n  targetNamespace: flux-system\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    );
    common::write(
        &src,
        "kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: flux-instance\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: widget\n      version: 0.1.0\n      sourceRef:\n        kind: HelmRepository\n        name: local-charts\n        namespace: flux-system\n  values:\n    instance:\n      components:\n        - source-controller\n      sync:\n        kind: GitRepository\n        url: https://git.example.com/someone/home-ops\n        ref: refs/heads/trunk\n        path: kubernetes/flux\n",
    );
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("in all 3 case(s)"), "{err}");
    let root = tmp.path().join("platform");
    let env = read(&root, "environments/home-ops.yaml");
    assert!(
        env.contains(r#"url: "https://git.example.com/someone/home-ops""#),
        "{env}"
    );
    assert!(env.contains(r#"ref: {branch: "trunk"}"#), "{env}");
    assert!(read(&root, "gitops/platform/web/values.yaml").contains("domain: web.home.example.org"));
    assert!(read(&root, "gitops/platform/flux-instance/values.yaml").contains("path: kubernetes/flux"));
}

#[test]
fn a_kustomizations_components_are_added_to_the_folder_it_builds() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("home-ops", &charts.url);
    // The Flux Kustomization of web names a kustomize component that
    // patches the release, and the folder's own patch sets what the
    // component's patch added: kustomize-controller appends the components
    // to the folder's kustomization, so both apply, in that order.
    let src = tmp.path().join("src");
    common::write(
        &src,
        "kubernetes/components/tier/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n  - target:\n      kind: HelmRelease\n    patch: |-\n      - op: add\n        path: /spec/values/podLabels/tier\n        value: edge\n",
    );
    let ks = read(&src, "kubernetes/apps/default/web/ks.yaml");
    common::write(
        &src,
        "kubernetes/apps/default/web/ks.yaml",
        &ks.replace(
            "  prune: true\n",
            "  prune: true\n  components:\n    - ../../../../components/tier\n",
        ),
    );
    common::write(
        &src,
        "kubernetes/apps/default/web/app/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./helmrelease.yaml\npatches:\n  - target:\n      kind: HelmRelease\n    patch: |-\n      - op: replace\n        path: /spec/values/podLabels/tier\n        value: front\n",
    );
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("components are not applied"), "{err}");
    let root = tmp.path().join("platform");
    assert!(read(&root, "gitops/platform/web/values.yaml").contains("tier: front"));
}

#[test]
fn a_variables_default_may_hold_another_variable() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("home-ops", &charts.url);
    // `${WEB_ZONE:-"zone-${WEB_REPLICAS}"}`: unset, so its default, which
    // is substituted too; the quotes make it a YAML string.
    let src = tmp.path().join("src");
    let hr = read(&src, "kubernetes/apps/default/web/app/helmrelease.yaml");
    common::write(
        &src,
        "kubernetes/apps/default/web/app/helmrelease.yaml",
        &hr.replace(
            "    podLabels:\n",
            "    podLabels:\n      zone: ${WEB_ZONE:-\"zone-${WEB_REPLICAS}\"}\n",
        ),
    );
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(0), "{err}");
    let web = read(&tmp.path().join("platform"), "gitops/platform/web/values.yaml");
    assert!(web.contains("zone: zone-2"), "{web}");
}

#[test]
fn a_root_that_another_roots_build_takes_is_part_of_its_environment() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("home-ops", &charts.url);
    // Half-way to flux-operator: a FluxInstance syncs a folder that the
    // old root, built without a kustomization, applies already.
    common::write(
        &tmp.path().join("src"),
        "kubernetes/bootstrap/flux-instance.yaml",
        "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n  namespace: flux-system\nspec:\n  sync:\n    kind: GitRepository\n    url: https://git.example.com/someone/home-ops.git\n    ref: refs/heads/trunk\n    path: kubernetes/flux/repositories\n",
    );
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("in all 2 case(s)"), "{err}");
    let envs: Vec<_> = std::fs::read_dir(tmp.path().join("platform/environments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(envs, ["home-ops.yaml"]);
}

#[test]
fn clusters_folders_are_environments_with_their_overlays() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("clusters", &charts.url);
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("in all 4 case(s)"), "{err}");
    let root = tmp.path().join("platform");
    let prod = read(&root, "gitops/platform/web/values-production.yaml");
    assert!(prod.contains("replicas: 3") && prod.contains("enabled: true"), "{prod}");
    assert!(read(&root, "gitops/platform/web/values-staging.yaml").contains("replicas: 1"));
    let env = read(&root, "environments/staging.yaml");
    assert!(
        env.contains(r#"url: "ssh://git@git.example.com/fleet/platform.git""#),
        "{env}"
    );
    assert!(env.contains("secret: \"flux-system\""), "{env}");
}

#[test]
fn what_flux_does_to_a_charts_objects_is_not_called_equal() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("clusters", &charts.url);
    let src = tmp.path().join("src");
    // Post-renderers change the objects helm-controller applies; skipping
    // CRDs leaves the chart's CRDs out of them.
    let web = src.join("apps/base/web/release.yaml");
    let text = std::fs::read_to_string(&web).unwrap();
    let post =
        "  postRenderers:\n    - kustomize:\n        images:\n          - name: web\n            newTag: \"2\"\n";
    std::fs::write(&web, format!("{text}{post}")).unwrap();
    let gadget = src.join("infrastructure/gadget.yaml");
    let text = std::fs::read_to_string(&gadget).unwrap();
    std::fs::write(&gadget, format!("{text}  install:\n    crds: Skip\n")).unwrap();
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(1), "{err}");
    for env in ["staging", "production"] {
        assert!(
            err.contains(&format!("error[E066]: component web in environment {env} cannot be proven equal: the engine gives it postRenderers (they change the objects its chart renders)")),
            "{err}"
        );
        assert!(
            err.contains(&format!(
                "error[E067]: component gadget in environment {env}: 2 object(s) differ from the engine's render"
            )),
            "{err}"
        );
    }
    assert!(
        err.contains("CustomResourceDefinition/gadgets.example.com: strata renders it, the engine does not"),
        "{err}"
    );
    assert!(
        err.contains("2 release(s) differ from the source's and 2 could not be proven"),
        "{err}"
    );
}

#[test]
fn a_helm_releases_values_files_leave_it_unproven() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("clusters", &charts.url);
    let gadget = tmp.path().join("src/infrastructure/gadget.yaml");
    let text = std::fs::read_to_string(&gadget).unwrap();
    let text = text.replace(
        "      version: 0.2.0\n",
        "      version: 0.2.0\n      valuesFiles: [values.yaml, values-big.yaml]\n",
    );
    std::fs::write(&gadget, text).unwrap();
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("error[E066]: component gadget in environment staging cannot be proven equal: the engine gives it the chart's valuesFiles"),
        "{err}"
    );
}

#[test]
fn offline_a_release_whose_chart_is_not_at_hand_is_not_called_equal() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("clusters", &charts.url);
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &["--offline"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("error[E066]: component web in environment production cannot be proven equal: its chart could not be rendered: not in strata.lock"),
        "{err}"
    );
    assert!(
        err.contains("0 release(s) differ from the source's and 4 could not be proven"),
        "{err}"
    );
    assert_eq!(charts.hits(), 0, "offline, nothing is fetched");
}

#[test]
fn a_chart_that_cannot_be_pulled_is_named_with_the_reason() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    // The repository serves web but not gadget: gadget's release says what
    // the pull met, not only that its chart is missing from strata.lock.
    let charts = Repo::serve(&["web-1"]);
    let tmp = staged("home-ops", &charts.url);
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "error[E066]: component gadget in environment home-ops cannot be proven equal: its chart could not be rendered: cannot pull gadget 0.2.0 from "
        ),
        "{err}"
    );
    assert!(err.contains("1 could not be proven"), "{err}");
    // A chart kept in the tree whose remote dependency cannot be fetched
    // says the same of the dependency.
    let tmp = staged("app-of-apps", CHARTS);
    common::write(
        &tmp.path().join("src"),
        "charts/shop/Chart.yaml",
        &format!(
            "apiVersion: v2\nname: shop\nversion: 0.1.0\ndependencies:\n  - name: common\n    version: 0.1.0\n    repository: file://../common\n  - name: absent\n    version: 1.0.0\n    repository: {}\n",
            charts.url
        ),
    );
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("its chart could not be rendered: cannot pull absent 1.0.0 from "),
        "{err}"
    );
    assert!(err.contains("(dependency of charts/shop)"), "{err}");
}

#[test]
fn an_external_artifact_is_laid_out_as_the_source_watcher_lays_it_out() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1"]);
    let tmp = staged("artifact", &charts.url);
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(EQUAL), "{err}");
    let root = tmp.path().join("platform");
    // Built from the artifact's layout (base/ beside staging/), with the
    // overlay's patch: the repository's own folders would not build.
    assert!(read(&root, "gitops/platform/web/values.yaml").contains("replicas: 2"));
    assert!(read(&root, "gitops/platform/web/config.yaml").contains("namespace: web"));
    // bootstrap writes the GitRepository: the tree has none to read git.url from.
    assert!(
        err.contains("environment staging: the tree holds no GitRepository that Flux syncs src/clusters/staging from"),
        "{err}"
    );
}

#[test]
fn a_flux_system_folder_anywhere_is_a_root() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1"]);
    let tmp = staged("artifact", &charts.url);
    // No clusters/: bootstrap's flux-system folder alone says where Flux
    // starts, and the folder above it names the environment.
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("fleet")).unwrap();
    std::fs::rename(src.join("clusters/staging"), src.join("fleet/staging")).unwrap();
    std::fs::remove_dir(src.join("clusters")).unwrap();
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("in all 1 case(s)"), "{err}");
    let root = tmp.path().join("platform");
    assert!(root.join("environments/staging.yaml").is_file());
    assert!(read(&root, "gitops/platform/web/values.yaml").contains("replicas: 2"));
}

#[test]
fn kustomize_helm_charts_become_components_with_their_release_names() {
    let helm = need_helm!();
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("helm-charts", &charts.url);
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(EQUAL), "{err}");
    let root = tmp.path().join("platform");
    // valuesFile, valuesInline over it (a null clears a key), then
    // additionalValuesFiles; the release name names the component.
    let web = read(&root, "gitops/platform/frontend/values.yaml");
    for want in ["replicas: 3", "tier: front", "team: web", "tag: \"1.28\""] {
        assert!(web.contains(want), "{want}: {web}");
    }
    assert!(!web.contains("LoadBalancer"), "{web}");
    let config = read(&root, "gitops/platform/frontend/config.yaml");
    assert!(
        config.contains("name: web") && config.contains("namespace: web"),
        "{config}"
    );
    // valuesMerge: merge keeps the file's value over the inline one.
    let gadget = read(&root, "gitops/platform/gadget/values.yaml");
    assert!(
        gadget.contains("replicas: 1") && gadget.contains("greeting: from argo"),
        "{gadget}"
    );
    assert!(
        err.contains("also has resources; only its helmCharts are imported"),
        "{err}"
    );
}

#[test]
fn a_chart_whose_crds_kustomize_leaves_out_renders_other_objects() {
    let helm = need_helm!();
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("helm-charts", &charts.url);
    let k = tmp.path().join("src/apps/gadget/kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    std::fs::write(&k, text.replace("includeCRDs: true", "includeCRDs: false")).unwrap();
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "error[E067]: component gadget in environment in-cluster: 2 object(s) differ from the engine's render"
        ),
        "{err}"
    );
    assert!(
        err.contains("CustomResourceDefinition/gadgets.example.com: strata renders it, the engine does not"),
        "{err}"
    );
}

#[test]
fn a_kustomization_that_patches_a_charts_objects_is_not_called_equal() {
    let helm = need_helm!();
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("helm-charts", &charts.url);
    let k = tmp.path().join("src/apps/gadget/kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    std::fs::write(&k, format!("{text}commonLabels:\n  team: tools\n")).unwrap();
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("error[E066]: component gadget in environment in-cluster cannot be proven equal: the engine gives it the commonLabels of src/apps/gadget/kustomization.yaml (they change the objects its chart renders)"),
        "{err}"
    );
    // The other release, under a kustomization that only adds objects, is equal.
    assert!(!err.contains("component frontend in environment"), "{err}");
}

#[test]
fn a_helm_source_that_skips_crds_renders_other_objects() {
    let helm = need_helm!();
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("helm-charts", &charts.url);
    let app = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: lab-gadget\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: {}\n    chart: gadget\n    targetRevision: 0.2.0\n    helm:\n      skipCrds: true\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: lab\n",
        charts.url
    );
    common::write(&tmp.path().join("src"), "argocd/lab-gadget.yaml", &app);
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("error[E067]: component lab-gadget in environment in-cluster: "),
        "{err}"
    );
    assert!(
        err.contains("CustomResourceDefinition/gadgets.example.com: strata renders it, the engine does not"),
        "{err}"
    );
}

#[test]
fn an_app_of_apps_chart_is_rendered_and_its_applications_imported() {
    let helm = need_helm!();
    let tmp = staged("app-of-apps", CHARTS);
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(EQUAL), "{err}");
    let root = tmp.path().join("platform");
    // The chart's values gave the Application its value files (one beside
    // the chart, one from the repository's top) and parameter.
    let shop = read(&root, "gitops/platform/shop/values.yaml");
    for want in ["color: green", "replicas: 3", "tier: lab"] {
        assert!(shop.contains(want), "{want}: {shop}");
    }
    // The file:// dependency came with the chart, into its charts/.
    assert!(root.join("charts/shop/charts/common/templates/_labels.tpl").is_file());
    // A plugin's source is listed, never imported as a chart.
    assert!(
        err.contains(
            "warning[E033]: Application lab.render-me: its source is rendered by the config management plugin custom-renderer"
        ),
        "{err}"
    );
    assert!(!root.join("gitops/platform/lab-render-me").exists());
    assert!(!root.join("charts/render-me").exists());
    let render = strata(&root, &helm, "/usr/bin:/bin", &["--inflate", "helm", "render"]);
    assert_eq!(render.status.code(), Some(0), "{}", stderr(&render));
}

#[test]
fn an_umbrella_chart_taking_argocd_apps_is_rendered_for_its_applications() {
    let helm = need_helm!();
    let tmp = staged("argocd-apps", CHARTS);
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(EQUAL), "{err}");
    // The root ApplicationSet exists only as values of the dependency; its
    // git generator finds apps/web, a chart of the tree, released as a
    // component named after the ApplicationSet.
    let root = tmp.path().join("platform");
    let config = read(&root, "gitops/platform/root/config.yaml");
    assert!(
        config.contains("path: charts/root") && config.contains("namespace: web"),
        "{config}"
    );
    assert!(read(&root, "charts/root/values.yaml").contains("greeting: hello"));
    // Without the dependency at hand, helm cannot render the chart: the
    // import says so, and that nothing else makes a release.
    let tmp = staged("argocd-apps", CHARTS);
    std::fs::remove_dir_all(tmp.path().join("src/platform/argocd/charts")).unwrap();
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("platform/argocd is a chart that makes Applications, and it cannot be rendered: "),
        "{err}"
    );
    assert!(err.contains("argocd-apps"), "{err}");
    assert!(
        err.contains("no Helm release in any Application or ApplicationSet"),
        "{err}"
    );
}

#[test]
fn a_file_dependency_out_of_the_tree_is_refused() {
    let helm = need_helm!();
    let tmp = staged("app-of-apps", CHARTS);
    // The library chart lies beside the tree, not in it.
    let src = tmp.path().join("src");
    std::fs::rename(src.join("charts/common"), tmp.path().join("common")).unwrap();
    let chart = src.join("charts/shop/Chart.yaml");
    let text = std::fs::read_to_string(&chart).unwrap();
    std::fs::write(&chart, text.replace("file://../common", "file://../../../common")).unwrap();
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("error[E065]: lab.shop: the chart in charts/shop: dependency common at file://../../../common is outside the imported tree; nothing is imported"),
        "{err}"
    );
    assert!(!tmp.path().join("platform").exists(), "nothing is written");
}

#[test]
fn applicationset_parameters_are_named_as_argo_cd_names_them() {
    let helm = need_helm!();
    let tmp = staged("appset-path", CHARTS);
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(EQUAL), "{err}");
    let root = tmp.path().join("platform");
    // A list element's `path` key is a parameter like any other.
    assert!(read(&root, "gitops/platform/web/values-production.yaml").contains("replicas: 3"));
    assert!(read(&root, "gitops/platform/web/values-staging.yaml").contains("cluster: staging"));
    // The git generator's path.basename and path[1], in both syntaxes;
    // the excluded folder is not generated in the second.
    for (component, value) in [
        ("api", "component: api"),
        ("worker", "component: worker"),
        ("go-api", "component: api"),
    ] {
        let v = read(&root, &format!("gitops/platform/{component}/values.yaml"));
        assert!(v.contains(value), "{component}: {v}");
    }
    assert!(!root.join("gitops/platform/go-worker").exists());
    assert!(read(&root, "gitops/platform/api/config.yaml").contains("namespace: api"));
}

#[test]
fn a_template_patch_leaves_the_applications_it_patches_unproven() {
    let helm = need_helm!();
    let tmp = staged("appset-path", CHARTS);
    let web = tmp.path().join("src/argocd/web.yaml");
    let text = std::fs::read_to_string(&web).unwrap();
    let patch = "  templatePatch: |\n    spec:\n      source:\n        helm:\n          valuesObject:\n            replicas: 5\n";
    std::fs::write(&web, format!("{text}{patch}")).unwrap();
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("warning[E033]: ApplicationSet web: its templatePatch is not applied"),
        "{err}"
    );
    for env in ["staging", "production"] {
        assert!(
            err.contains(&format!("error[E066]: component web in environment {env} cannot be proven equal: the engine gives it what the templatePatch of ApplicationSet web sets")),
            "{err}"
        );
    }
    // The other ApplicationSets are equal.
    assert!(
        err.contains("0 release(s) differ from the source's and 2 could not be proven"),
        "{err}"
    );
}

#[test]
fn sops_encrypted_values_are_named_never_written_and_fail_the_import() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let tmp = staged("sops", CHARTS);
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(1), "{err}");
    for named in [
        "warning[E033]: src/clusters/home/cluster-secrets.sops.yaml holds Secret cluster-secrets encrypted with SOPS",
        "warning[E033]: src/apps/gadget/values.sops.yaml holds ConfigMap gadget-values encrypted with SOPS",
        "warning[E033]: web/gadget in environment home: the values at password are encrypted with SOPS; they are not written",
        "error[E066]: component web in environment home cannot be proven equal: the engine gives it variable ${SECRET_DOMAIN} from the SOPS-encrypted Secret cluster-secrets",
        "error[E066]: component gadget in environment home cannot be proven equal: the engine gives it values from ConfigMap web/gadget-values (is encrypted with SOPS); SOPS-encrypted values at password",
    ] {
        assert!(err.contains(named), "{named}: {err}");
    }
    assert!(
        !err.contains("component plain in environment home cannot be proven"),
        "{err}"
    );
    assert!(
        err.contains("0 release(s) differ from the source's and 2 could not be proven"),
        "{err}"
    );
    // No ciphertext, and no SOPS block, in any file written.
    let root = tmp.path().join("platform");
    for f in platform_files(&root) {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("ENC[") && !text.contains("AES256_GCM") && !text.contains("lastmodified"),
            "{}: {text}",
            f.display()
        );
    }
    // The variable the Secret would give stays as it is written.
    assert!(read(&root, "gitops/platform/web/values.yaml").contains("host: web.${SECRET_DOMAIN}"));
    let env = read(&root, "environments/home.yaml");
    assert!(env.contains(r#"ref: {tag: "v1.4.0"}"#), "{env}");
}

#[test]
fn a_kustomization_path_out_of_the_tree_is_refused() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let tmp = staged("outside", CHARTS);
    // What the path names exists, with a release in it.
    common::write(
        tmp.path(),
        "outside/release.yaml",
        &read(&tmp.path().join("src"), "apps/web/release.yaml").replace("name: web", "name: intruder"),
    );
    common::write(tmp.path(), "outside/kustomization.yaml", "resources: [release.yaml]\n");
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("error[E065]: src/apps/web/kustomization.yaml: resources entry ../../../outside is outside the imported tree; nothing is imported"),
        "{err}"
    );
    assert!(err.contains("--> src/apps/web/kustomization.yaml:7:5"), "{err}");
    assert!(!tmp.path().join("platform").exists(), "nothing is written");
}

#[test]
fn an_absolute_path_in_a_kustomization_is_refused() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let tmp = staged("outside", CHARTS);
    // kustomize would read the file as it is: a release from elsewhere.
    let elsewhere = tmp.path().join("outside/release.yaml");
    common::write(
        tmp.path(),
        "outside/release.yaml",
        &read(&tmp.path().join("src"), "apps/web/release.yaml").replace("name: web", "name: intruder"),
    );
    let k = tmp.path().join("src/apps/web/kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    std::fs::write(&k, text.replace("../../../outside", &elsewhere.display().to_string())).unwrap();
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "error[E065]: src/apps/web/kustomization.yaml: resources entry {} is outside the imported tree; nothing is imported",
            elsewhere.display()
        )),
        "{err}"
    );
    assert!(!err.contains("intruder"), "{err}");
    assert!(!tmp.path().join("platform").exists(), "nothing is written");
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_out_of_the_tree_is_refused() {
    let helm = need_helm!();
    let tmp = staged("helm-charts", CHARTS);
    common::write(tmp.path(), "elsewhere/values.yaml", "replicas: 9\n");
    let link = tmp.path().join("src/apps/web/values/values.yaml");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("elsewhere/values.yaml"), &link).unwrap();
    let (code, err) = import(tmp.path(), "argo", &helm, "/usr/bin:/bin", &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("error[E065]: src/apps/web/values/values.yaml is a symbolic link to"),
        "{err}"
    );
    assert!(!tmp.path().join("platform").exists(), "nothing is written");
}

/// Sets the version the home-ops tree's web release asks for.
fn web_version(tmp: &Path, version: &str) {
    let file = tmp.join("src/kubernetes/apps/default/web/app/helmrelease.yaml");
    let text = read(tmp, "src/kubernetes/apps/default/web/app/helmrelease.yaml");
    std::fs::write(file, text.replace("version: 1.0.0", &format!("version: \"{version}\""))).unwrap();
}

#[test]
fn a_version_range_is_pinned_to_the_newest_version_the_repository_serves() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "web-2", "gadget"]);
    let tmp = staged("home-ops", &charts.url);
    web_version(tmp.path(), ">=1.0.0");
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(0), "{err}");
    // Said once, with the version written; the reader's own note that the
    // version is a range is not said beside it.
    assert_eq!(err.matches("chart web >=1.0.0 is pinned to 2.0.0").count(), 1, "{err}");
    assert!(!err.contains("is not one version"), "{err}");
    let config = read(&tmp.path().join("platform"), "gitops/platform/web/config.yaml");
    assert!(config.contains("version: \"2.0.0\""), "{config}");
}

#[test]
fn a_range_that_cannot_be_pinned_is_said_once_and_not_pulled() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("home-ops", &charts.url);
    web_version(tmp.path(), "9.x");
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.matches("chart web 9.x cannot be pinned: ").count(), 1, "{err}");
    assert!(err.contains("lists no version of web in 9.x"), "{err}");
    assert!(!err.contains("is not one version"), "{err}");
    // No failed pull of it (E013): the verdict says why the release is not
    // proven, and what to write.
    assert!(!err.contains("cannot pull web"), "{err}");
    assert!(
        err.contains("component web in environment home-ops cannot be proven equal: its chart could not be rendered: its version `9.x` is a range the import could not pin"),
        "{err}"
    );
    assert!(
        err.contains("help: write the version the cluster runs in config.yaml"),
        "{err}"
    );
}

#[test]
fn offline_a_range_is_said_once_to_be_written_as_it_is() {
    let helm = need_helm!();
    let Some(path) = path_with_kubectl() else { return };
    let charts = Repo::serve(&["web-1", "gadget"]);
    let tmp = staged("home-ops", &charts.url);
    web_version(tmp.path(), ">=1.0.0");
    let (code, err) = import(tmp.path(), "flux", &helm, &path, &["--offline"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        err.matches("chart version `>=1.0.0` is not one version; it is written as it is")
            .count(),
        1,
        "{err}"
    );
    assert!(!err.contains("cannot be pinned"), "{err}");
    assert_eq!(charts.hits(), 0, "offline, nothing is fetched");
    let config = read(&tmp.path().join("platform"), "gitops/platform/web/config.yaml");
    assert!(config.contains("version: \">=1.0.0\""), "{config}");
}
