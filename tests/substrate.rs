//! What the substrate stack applies before any engine runs,
//! `rendered/<env>/substrate/`: a Talos machine-configuration patch with
//! the CNI's objects inline, or a kind cluster configuration, following the
//! platform's CNI, kube-proxy replacement and CoreDNS, and accepted by the
//! substrates' own code (`tests/substrate-check`, built from Talos's
//! machinery and kind's config packages by `.ci/run`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::charts::{self, platform, strata_with};
use common::{stderr, write};
use serde_json::Value as J;

/// The substrate checker: `STRATA_TEST_SUBSTRATE_CHECK`, else
/// `substrate-check` on the PATH. Missing, a test skips with a note, and
/// fails in CI.
#[allow(clippy::disallowed_methods)]
fn substrate_check() -> Option<PathBuf> {
    let found = std::env::var_os("STRATA_TEST_SUBSTRATE_CHECK")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("substrate-check"))
                    .find(|p| p.is_file())
            })
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("substrate-check is required in CI: .ci/run builds it from tests/substrate-check");
        }
        eprintln!("note: skipping the substrates' own checks: build tests/substrate-check (see its README)");
    }
    found
}

/// Runs the substrates' own checks on every substrate file of a tree.
fn accepted_by_the_substrates(root: &Path) {
    let Some(check) = substrate_check() else { return };
    let mut seen = 0;
    for entry in walkdir::WalkDir::new(root.join("rendered"))
        .into_iter()
        .filter_map(Result::ok)
    {
        let sub = match entry.file_name().to_str() {
            Some("talos-patch.yaml") => "talos-patch",
            Some("kind-config.yaml") => "kind-config",
            _ => continue,
        };
        let out = Command::new(&check).arg(sub).arg(entry.path()).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}{}",
            entry.path().display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        seen += 1;
    }
    assert!(seen > 0, "no substrate file under {}", root.display());
}

fn doc(root: &Path, rel: &str) -> J {
    let text = std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    strata::yaml::parse_plain_multi(&std::sync::Arc::from(rel), &text)
        .unwrap()
        .remove(0)
}

fn inline(patch: &J) -> Vec<J> {
    let text = patch["cluster"]["inlineManifests"][0]["contents"].as_str().unwrap();
    strata::yaml::parse_plain_multi(&std::sync::Arc::from("contents"), text).unwrap()
}

const COREDNS: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: coredns\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {k8s-app: kube-dns}\n  template:\n    metadata:\n      labels: {k8s-app: kube-dns}\n    spec:\n      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            - topologyKey: kubernetes.io/hostname\n              labelSelector:\n                matchLabels: {k8s-app: kube-dns}\n      containers:\n        - name: coredns\n          image: registry.k8s.io/coredns/coredns:v1.12.0\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: coredns\nspec:\n  maxUnavailable: 1\n  selector:\n    matchLabels: {k8s-app: kube-dns}\n";

/// A platform whose CNI is the test chart cni-mini (named cilium) and whose
/// `dns` component, without a chart, runs CoreDNS.
fn cni_platform(values: &str) -> tempfile::TempDir {
    let tmp = platform(&[("cilium", "chart:\n  path: charts/cilium\n", values)]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("cni-mini"), &root.join("charts/cilium"));
    write(
        root,
        "gitops/platform/dns/config.yaml",
        "component: dns\nnamespace: dns\ntier: core\n",
    );
    write(root, "gitops/platform/dns/manifests/coredns.yaml", COREDNS);
    tmp
}

#[test]
fn the_substrate_files_follow_the_platform_and_pass_the_substrates_own_checks() {
    let Some(helm) = charts::helm() else { return };
    let tmp = cni_platform(&format!(
        "kubeProxyReplacement: true\nk8sServiceHost: 192.168.10.10\n{HUBBLE_IN_CLUSTER}"
    ));
    let root = tmp.path();
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Talos: no CNI of its own, no kube-proxy, no CoreDNS of its own, and
    // the CNI's objects, rendered with the environment's values.
    let patch = doc(root, "rendered/staging/substrate/talos-patch.yaml");
    assert_eq!(patch["cluster"]["network"]["cni"]["name"], "none");
    assert_eq!(patch["cluster"]["proxy"]["disabled"], true);
    assert_eq!(patch["cluster"]["coreDNS"]["disabled"], true);
    assert_eq!(patch["cluster"]["inlineManifests"][0]["name"], "cilium");
    let objects = inline(&patch);
    let kinds: Vec<&str> = objects.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ServiceAccount", "ConfigMap", "DaemonSet"]);
    for o in &objects {
        // The engine's Helm release adopts what Talos created.
        assert_eq!(o["metadata"]["labels"]["app.kubernetes.io/managed-by"], "Helm", "{o}");
        assert_eq!(o["metadata"]["annotations"]["meta.helm.sh/release-name"], "cilium");
        assert_eq!(o["metadata"]["annotations"]["meta.helm.sh/release-namespace"], "cilium");
        assert_eq!(o["metadata"]["namespace"], "cilium");
    }
    assert_eq!(objects[1]["data"]["k8s-service-host"], "192.168.10.10");
    // kind: no default CNI, no kube-proxy.
    let kind = doc(root, "rendered/dev/substrate/kind-config.yaml");
    assert_eq!(kind["apiVersion"], "kind.x-k8s.io/v1alpha4");
    assert_eq!(kind["networking"]["disableDefaultCNI"], true);
    assert_eq!(kind["networking"]["kubeProxyMode"], "none");
    // kind: the CNI's objects, applied before the engine, as one List.
    let cni = doc(root, "rendered/dev/substrate/cni.yaml");
    assert_eq!((&cni["apiVersion"], &cni["kind"]), (&J::from("v1"), &J::from("List")));
    let kinds: Vec<&str> = cni["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["ServiceAccount", "ConfigMap", "DaemonSet"]);
    assert_eq!(
        cni["items"][2]["metadata"]["annotations"]["meta.helm.sh/release-name"],
        "cilium"
    );
    accepted_by_the_substrates(root);

    // The CNI's values change: so do the patch and the kind configuration.
    // The substrate stack applies the new patch and prints what it runs
    // now: kube-proxy and its own CoreDNS (SUB001 holds them together).
    write(
        root,
        "gitops/platform/cilium/values.yaml",
        &format!("kubeProxyReplacement: false\n{HUBBLE_IN_CLUSTER}"),
    );
    std::fs::remove_dir_all(root.join("gitops/platform/dns")).unwrap();
    for env in ["staging", "production"] {
        let path = root.join(format!("contracts/{env}.json"));
        let mut contract: J = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (output, value) in [
            ("cni", J::from("none")),
            ("kube_proxy", J::Bool(true)),
            ("coredns", J::Bool(true)),
        ] {
            contract[output] = serde_json::json!({"sensitive": false, "type": "string", "value": value});
        }
        std::fs::write(&path, serde_json::to_string_pretty(&contract).unwrap()).unwrap();
    }
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let patch = doc(root, "rendered/staging/substrate/talos-patch.yaml");
    assert!(patch["cluster"].get("proxy").is_none(), "{patch}");
    assert!(patch["cluster"].get("coreDNS").is_none(), "{patch}");
    assert_eq!(inline(&patch)[1]["data"]["kube-proxy-replacement"], "false");
    let kind = doc(root, "rendered/dev/substrate/kind-config.yaml");
    assert!(kind["networking"].get("kubeProxyMode").is_none(), "{kind}");
    accepted_by_the_substrates(root);

    // Hydrated, the engine applies the objects as they are: no Helm
    // ownership to hand over.
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(root, "strata.yaml", &format!("{text}hydrate: true\n"));
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "staging"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let patch = doc(root, "rendered/staging/substrate/talos-patch.yaml");
    assert!(
        inline(&patch)
            .iter()
            .all(|o| o["metadata"].get("annotations").is_none()),
        "{patch}"
    );
}

/// Hubble's certificates made in the cluster: the CNI renders no Secret.
const HUBBLE_IN_CLUSTER: &str = "hubble:\n  tls:\n    auto:\n      method: cronJob\n";

/// A CoreDNS of one replica beside the CNI: HA001 fires on it wherever
/// the rules run.
fn with_one_coredns(root: &Path) {
    write(
        root,
        "gitops/platform/dns/manifests/coredns.yaml",
        &COREDNS.replace("replicas: 2", "replicas: 1"),
    );
}

#[test]
fn a_secret_the_cni_renders_is_a_finding_and_every_other_check_runs() {
    let Some(helm) = charts::helm() else { return };
    // Cilium's chart defaults: Hubble's certificates rendered as a Secret.
    let tmp = cni_platform("");
    let root = tmp.path();
    with_one_coredns(root);
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "a finding, not an input error: {err}");
    assert!(err.contains("error[E040]"), "{err}");
    assert!(err.contains("Secret/cilium/hubble-server-certs"), "{err}");
    assert!(err.contains("cilium/templates/hubble-certs.yaml"), "{err}");
    assert!(err.contains("hubble.tls.auto.method: cronJob"), "{err}");
    assert!(err.contains("bootstrap: external"), "{err}");
    assert!(err.contains("error[HA001]"), "the rules ran too: {err}");
    assert!(!root.join("rendered").exists(), "nothing is written");
    // kind's cni.yaml is held to the same.
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check", "--env", "dev"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error[E040]"), "{err}");
}

#[test]
fn a_cni_installed_outside_strata_leaves_the_substrate_files_without_it_and_every_rule_runs() {
    let Some(helm) = charts::helm() else { return };
    // Talos + Cilium on the chart's default Hubble settings.
    let tmp = cni_platform("kubeProxyReplacement: true\n");
    let root = tmp.path();
    let text = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(
        root,
        "strata.yaml",
        &format!("{text}cni: {{component: cilium, bootstrap: external}}\n"),
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("E040") && !err.contains("E041"), "{err}");
    // Every rule runs: one CoreDNS replica is named.
    with_one_coredns(root);
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error[HA001]") && !err.contains("E040"), "{err}");
    write(root, "gitops/platform/dns/manifests/coredns.yaml", COREDNS);
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The cluster still starts without a CNI of its own, and without
    // kube-proxy; nothing of the CNI is in the substrate files.
    let patch = doc(root, "rendered/staging/substrate/talos-patch.yaml");
    assert_eq!(patch["cluster"]["network"]["cni"]["name"], "none");
    assert_eq!(patch["cluster"]["proxy"]["disabled"], true);
    assert!(patch["cluster"].get("inlineManifests").is_none(), "{patch}");
    let kind = doc(root, "rendered/dev/substrate/kind-config.yaml");
    assert_eq!(kind["networking"]["disableDefaultCNI"], true);
    assert!(!root.join("rendered/dev/substrate/cni.yaml").exists());
    accepted_by_the_substrates(root);

    // The other form, a name, is strata's bootstrap as before.
    write(
        root,
        "strata.yaml",
        &format!("{text}cni: {{component: cilium, bootstrap: strata}}\n"),
    );
    let out = strata_with(root, Some(&helm), &["--inflate", "helm", "check"]);
    assert!(stderr(&out).contains("error[E040]"), "{}", stderr(&out));
    // A key `cni` does not know is refused at its line.
    write(
        root,
        "strata.yaml",
        &format!("{text}cni: {{component: cilium, bootstrap: elsewhere}}\n"),
    );
    let out = strata_with(root, Some(&helm), &["check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// Key material is judged by what an object holds, not by its kind: a
/// ConfigMap with a private key, generated by the chart or given in the
/// values, is refused too, and the key is never printed.
#[test]
fn a_private_key_the_cni_writes_into_a_configmap_is_refused_whatever_its_kind() {
    let Some(helm) = charts::helm() else { return };
    let given = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----";
    for (values, shows) in [
        ("relay:\n  ca: generate\n".to_owned(), "generates values at random"),
        (
            format!(
                "relay:\n  ca: given\n  key: {}\n",
                serde_json::to_string(given).unwrap()
            ),
            "holds a PEM private key at data.ca\\.key",
        ),
    ] {
        let tmp = cni_platform(&values);
        let root = tmp.path();
        let out = strata_with(root, Some(&helm), &["--inflate", "helm", "render", "--env", "staging"]);
        let err = stderr(&out);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("error[E040]"), "{err}");
        assert!(err.contains(shows), "{err}");
        assert!(!err.contains("MC4CAQAwBQYDK2VwBCIEIJ"), "the key is printed:\n{err}");
        assert!(
            !root.join("rendered/staging/substrate/talos-patch.yaml").exists(),
            "nothing is written"
        );
    }
}

#[test]
fn the_example_platforms_substrate_files_pass_the_substrates_own_checks() {
    // Without helm: the patch has no inline manifests, kind gets no
    // cni.yaml, and each is said once.
    let tmp = common::scratch("homelab");
    let root = tmp.path();
    let out = strata_with(root, None, &["render"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // Once for the Talos patch, once for kind's cni.yaml, whatever the
    // number of environments.
    assert_eq!(err.matches("note[E041]").count(), 2, "{err}");
    assert!(err.contains("note[E041]: no cni.yaml is written"), "{err}");
    assert!(!root.join("rendered/dev/substrate/cni.yaml").exists());
    for env in ["staging", "production"] {
        let patch = doc(root, &format!("rendered/{env}/substrate/talos-patch.yaml"));
        assert_eq!(patch["cluster"]["network"]["cni"]["name"], "none");
        assert!(patch["cluster"].get("inlineManifests").is_none());
    }
    accepted_by_the_substrates(root);
    // A render for one engine leaves the substrate's files alone.
    let before = std::fs::read(root.join("rendered/staging/substrate/talos-patch.yaml")).unwrap();
    let out = strata_with(root, None, &["render", "--env", "staging", "--target", "flux"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(root.join("rendered/staging/substrate/talos-patch.yaml")).unwrap(),
        before
    );
}
