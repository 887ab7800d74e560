//! The trees strata writes, applied to a real Kubernetes API server (etcd
//! and kube-apiserver v1.35.4, see tests/common/apiserver.rs): the example
//! homelab and a platform of our test charts, as Helm releases and
//! hydrated, for Flux and for Argo CD, each environment on a server of its
//! own — every object first with `kubectl apply --server-side
//! --dry-run=server`, then for real.
//!
//! And the inputs the server refuses: `strata check` refuses each of them
//! at the line that wrote it, and the server refuses the very object strata
//! would have written for it.

#[macro_use]
mod common;

use std::path::Path;

use common::apiserver::{ApiServer, Engine, chart_crds};
use common::charts::{self, platform, strata_with};
use common::standins::install_standins;
use common::{scratch, stderr, stdout, write};
use serde_json::Value as J;

const ENGINES: [Engine; 2] = [Engine::Flux, Engine::Argo];

fn render(root: &Path, helm: &Path, args: &[&str]) {
    let mut all = vec!["render"];
    all.extend_from_slice(args);
    let out = strata_with(root, Some(helm), &all);
    assert_eq!(out.status.code(), Some(0), "strata {all:?}:\n{}", stderr(&out));
}

/// Turns on hydrated output for every environment.
fn hydrate(root: &Path) {
    let text = std::fs::read_to_string(root.join("strata.yaml")).expect("strata.yaml");
    write(root, "strata.yaml", &format!("{text}\nhydrate: true\n"));
}

/// A server with the engines' CRDs, and Cilium's, which its operator
/// registers at run time (no tree holds them).
fn server(tools: &common::apiserver::Tools) -> ApiServer {
    let s = ApiServer::start(tools);
    for part in ["flux", "argo", "cilium"] {
        s.install_crds(part);
    }
    s
}

/// Applies both engines' trees of `env`: the Helm-release tree at
/// `release`, with the CRDs the charts install taken from the hydrated
/// render at `hydrated`, then the hydrated tree.
fn apply_both_modes(server: &ApiServer, release: &Path, hydrated: &Path, env: &str) {
    for engine in ENGINES {
        let crds = chart_crds(hydrated, env, engine);
        server
            .apply_tree(release, env, engine, &crds)
            .unwrap_or_else(|e| panic!("{env}, {} tree of Helm releases: {e}", engine.name()));
    }
    for engine in ENGINES {
        server
            .apply_tree(hydrated, env, engine, &[])
            .unwrap_or_else(|e| panic!("{env}, hydrated {} tree: {e}", engine.name()));
    }
}

/// The homelab of `env`, as Helm releases and hydrated from the stand-in
/// charts, applied to a server of its own.
fn homelab(env: &str) {
    let tools = need_apiserver!();
    let helm = need_helm!();
    let release = scratch("homelab");
    render(release.path(), &helm, &["--env", env]);
    let hydrated = scratch("homelab");
    install_standins(hydrated.path());
    hydrate(hydrated.path());
    render(hydrated.path(), &helm, &["--env", env]);
    let server = server(&tools);
    apply_both_modes(&server, release.path(), hydrated.path(), env);
    // Both modes and both engines reached the server.
    for kind in [
        "helmreleases.helm.toolkit.fluxcd.io",
        "applications.argoproj.io",
        "deployments.apps",
    ] {
        let out = server.kubectl(&["get", kind, "-A", "-o", "name"], None);
        let names = String::from_utf8_lossy(&out.stdout);
        assert!(names.lines().count() >= 5, "{env}: {kind}: {names}");
    }
}

#[test]
fn the_homelab_dev_tree_applies_to_a_real_api_server() {
    homelab("dev");
}

#[test]
fn the_homelab_staging_tree_applies_to_a_real_api_server() {
    homelab("staging");
}

#[test]
fn the_homelab_production_tree_applies_to_a_real_api_server() {
    homelab("production");
}

/// A platform of test charts from the repository: `gadget`, whose chart
/// ships a CRD and Helm hooks, and `web`, whose manifest is a custom
/// resource of that CRD.
fn chart_platform() -> tempfile::TempDir {
    let tmp = platform(&[
        ("gadget", "chart:\n  path: charts/gadget\n", "greeting: hi\n"),
        (
            "web",
            "chart:\n  path: charts/web\nrequires: [gadget]\n",
            "replicas: 2\n",
        ),
    ]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("gadget"), &root.join("charts/gadget"));
    common::copy_dir(&charts::chart_dir("web-1"), &root.join("charts/web"));
    write(
        root,
        "gitops/platform/web/manifests/gadget.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: front\nspec:\n  size: 1\n",
    );
    tmp
}

#[test]
fn a_platform_of_test_charts_applies_in_both_modes_for_both_engines() {
    let tools = need_apiserver!();
    let helm = need_helm!();
    let release = chart_platform();
    render(release.path(), &helm, &["--env", "dev"]);
    let hydrated = chart_platform();
    hydrate(hydrated.path());
    render(hydrated.path(), &helm, &["--env", "dev"]);
    assert!(
        !chart_crds(hydrated.path(), "dev", Engine::Flux).is_empty(),
        "the gadget chart's CRD is in the hydrated tree"
    );
    let server = server(&tools);
    apply_both_modes(&server, release.path(), hydrated.path(), "dev");
    // The custom resource reached the server with its CRD's schema.
    let out = server.kubectl(&["get", "gadgets.example.com", "-A", "-o", "name"], None);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("gadget.example.com/front"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An input strata used to accept and the API server refuses.
struct Refused {
    what: &'static str,
    /// Changes the homelab (environment dev) to hold the input.
    edit: fn(&Path),
    code: &'static str,
    /// Where `strata check` points: file and line.
    at: (&'static str, u64),
    /// The file of the rendered tree that holds the refused object.
    object: &'static str,
    /// What the server's refusal says.
    server_says: &'static str,
}

const TRAEFIK: &str = "gitops/platform/traefik/config.yaml";
const MANIFEST: &str = "gitops/platform/traefik/manifests/refused.yaml";

/// traefik's config.yaml with `namespace:` as a mapping of these labels
/// (line 3 holds the first label, line 4 the second).
fn traefik_namespace(root: &Path, labels: &str) {
    let text = std::fs::read_to_string(root.join(TRAEFIK)).expect("config.yaml");
    let rest = text.replace("component: traefik\nnamespace: traefik\n", "");
    write(
        root,
        TRAEFIK,
        &format!("component: traefik\nnamespace:\n  name: traefik\n  labels:\n{labels}{rest}"),
    );
}

fn refused_inputs() -> Vec<Refused> {
    vec![
        Refused {
            what: "a misspelt Pod Security level in a namespace's labels",
            edit: |root| traefik_namespace(root, "    pod-security.kubernetes.io/enforce: restricetd\n"),
            code: "E050",
            at: (TRAEFIK, 5),
            object: "rendered/dev/flux/namespaces/namespace-traefik.yaml",
            server_says: "pod-security.kubernetes.io/enforce",
        },
        Refused {
            what: "a label value past 63 characters in a namespace's labels",
            edit: |root| traefik_namespace(root, &format!("    team: {}\n", "t".repeat(64))),
            code: "E050",
            at: (TRAEFIK, 5),
            object: "rendered/dev/flux/namespaces/namespace-traefik.yaml",
            server_says: "must be no more than 63 bytes",
        },
        Refused {
            what: "a namespace label key that is no qualified name",
            edit: |root| traefik_namespace(root, "    team/owner/name: platform\n"),
            code: "E050",
            at: (TRAEFIK, 5),
            object: "rendered/dev/flux/namespaces/namespace-traefik.yaml",
            server_says: "a valid label key must consist of",
        },
        Refused {
            what: "a Pod Security version that is none",
            edit: |root| traefik_namespace(root, "    pod-security.kubernetes.io/warn-version: \"1.35\"\n"),
            code: "E050",
            at: (TRAEFIK, 5),
            object: "rendered/dev/flux/namespaces/namespace-traefik.yaml",
            server_says: "pod-security.kubernetes.io/warn-version",
        },
        Refused {
            what: "an annotation key with a space",
            edit: |root| {
                write(
                    root,
                    MANIFEST,
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n  namespace: traefik\n  annotations:\n    owner team: platform\ndata:\n  a: b\n",
                )
            },
            code: "E052",
            at: (MANIFEST, 7),
            object: "rendered/dev/flux/components/traefik/manifests/configmap-notes.yaml",
            server_says: "metadata.annotations: Invalid value",
        },
        Refused {
            what: "a patch on strata's own HelmRelease setting `interval: 15 minutes`",
            edit: |root| {
                let text = std::fs::read_to_string(root.join(TRAEFIK)).expect("config.yaml");
                write(
                    root,
                    TRAEFIK,
                    &format!(
                        "{text}patches:\n  - target: {{kind: HelmRelease}}\n    patch:\n      - op: replace\n        path: /spec/interval\n        value: 15 minutes\n"
                    ),
                );
            },
            code: "E051",
            at: (TRAEFIK, 17),
            object: "rendered/dev/flux/components/traefik/helmrelease-traefik.yaml",
            server_says: "spec.interval",
        },
        Refused {
            what: "a port 70000",
            edit: |root| {
                write(
                    root,
                    MANIFEST,
                    "apiVersion: v1\nkind: Service\nmetadata:\n  name: extra\n  namespace: traefik\nspec:\n  selector:\n    app: extra\n  ports:\n    - port: 70000\n",
                )
            },
            code: "E052",
            at: (MANIFEST, 10),
            object: "rendered/dev/flux/components/traefik/manifests/service-extra.yaml",
            server_says: "must be between 1 and 65535",
        },
        Refused {
            what: "a label value `front end`",
            edit: |root| {
                write(
                    root,
                    MANIFEST,
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tiers\n  namespace: traefik\n  labels:\n    tier: front end\ndata:\n  a: b\n",
                )
            },
            code: "E052",
            at: (MANIFEST, 7),
            object: "rendered/dev/flux/components/traefik/manifests/configmap-tiers.yaml",
            server_says: "metadata.labels: Invalid value",
        },
    ]
}

/// `strata check --env dev`: every finding as `CODE file:line`.
fn check(root: &Path) -> (Option<i32>, Vec<String>, String) {
    let out = common::strata(root, &["check", "--env", "dev", "--format", "json"]);
    let text = stdout(&out);
    let doc: J = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}\n{}", stderr(&out)));
    let found = doc["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            format!(
                "{} {}:{}",
                d["code"].as_str().unwrap_or(""),
                d["file"].as_str().unwrap_or(""),
                d["line"]
            )
        })
        .collect();
    (out.status.code(), found, text)
}

/// The files strata would write for environment dev, in memory.
fn files(root: &Path) -> std::collections::BTreeMap<String, String> {
    use strata::diag::Sources;
    let world = strata::world::FsWorld::new(root, "2026-12-02".to_owned()).expect("world");
    let opts = strata::pipeline::Options {
        env: Some("dev".into()),
        ..Default::default()
    };
    match strata::pipeline::compile(&world, &Sources::default(), &opts) {
        Ok(c) => c.files,
        Err(d) => panic!("did not compile: {d:?}"),
    }
}

#[test]
fn each_input_the_server_refuses_is_refused_by_check_at_its_line() {
    for case in refused_inputs() {
        let tmp = scratch("homelab");
        (case.edit)(tmp.path());
        let (code, found, text) = check(tmp.path());
        let want = format!("{} {}:{}", case.code, case.at.0, case.at.1);
        assert_eq!(code, Some(1), "{}: {text}", case.what);
        assert!(found.contains(&want), "{}: want {want} in {found:?}\n{text}", case.what);
    }
}

#[test]
fn the_api_server_refuses_the_object_strata_would_have_written_for_each_input() {
    let tools = need_apiserver!();
    let server = ApiServer::start(&tools);
    server.install_crds("flux");
    for case in refused_inputs() {
        let tmp = scratch("homelab");
        (case.edit)(tmp.path());
        let files = files(tmp.path());
        let key = files
            .keys()
            .find(|k| k.ends_with(case.object.trim_start_matches("rendered/")))
            .unwrap_or_else(|| panic!("{}: no {} among {:?}", case.what, case.object, files.keys()));
        let object: J = strata::yaml::parse_plain_multi(&std::sync::Arc::from("object"), &files[key])
            .expect("the written object")
            .remove(0);
        if let Some(ns) = object["metadata"]["namespace"].as_str() {
            server
                .apply(&[serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})])
                .expect("a plain namespace");
        }
        let refusal = server
            .apply(&[object])
            .expect_err(&format!("the server accepted {}", case.what));
        assert!(
            refusal.contains(case.server_says) && refusal.contains("--dry-run=server"),
            "{}: the server said\n{refusal}",
            case.what
        );
    }
}
