//! Fitting the platforms users already have: environments that choose their
//! components, tier rules, contracts without ADR 007's outputs, nodes with
//! only the labels the kubelet adds, and a render that leaves git clean.

mod common;

use std::path::Path;

use common::{scratch, stderr, stdout, strata, write};

fn json(out: &std::process::Output) -> Vec<serde_json::Value> {
    serde_json::from_str::<serde_json::Value>(&stdout(out))
        .unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn codes(out: &std::process::Output) -> Vec<String> {
    let mut c: Vec<String> = json(out)
        .iter()
        .filter(|d| d["severity"] != "note")
        .map(|d| format!("{} {}", d["code"].as_str().unwrap(), d["file"].as_str().unwrap_or("")))
        .collect();
    c.sort();
    c
}

#[test]
fn an_environment_that_takes_the_core_tier_owns_exactly_those_components() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let env = std::fs::read_to_string(root.join("environments/dev.yaml")).unwrap();
    write(
        root,
        "environments/dev.yaml",
        &format!("{env}components:\n  include: [\"tier:core\"]\n"),
    );
    let out = strata(root, &["render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let apps: Vec<String> = std::fs::read_dir(root.join("rendered/dev/argo"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("application-") && !n.ends_with("-manifests.yaml"))
        .collect();
    let mut apps = apps;
    apps.sort();
    assert_eq!(
        apps,
        [
            "application-cilium.yaml",
            "application-coredns.yaml",
            "application-longhorn.yaml",
            "application-strata-cluster.yaml"
        ]
        .iter()
        .filter(|a| root.join("rendered/dev/argo").join(a).exists())
        .map(|a| (*a).to_owned())
        .collect::<Vec<_>>()
    );
    assert!(!root.join("rendered/dev/flux/components/traefik").exists());
    assert!(root.join("rendered/staging/flux/components/traefik").exists());
    // A second render removes nothing of staging and keeps dev exactly so.
    let out = strata(root, &["render", "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn leaving_out_what_an_included_component_requires_is_an_error_naming_both() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let env = std::fs::read_to_string(root.join("environments/dev.yaml")).unwrap();
    write(
        root,
        "environments/dev.yaml",
        &format!("{env}components:\n  include: [traefik, cilium]\n"),
    );
    let out = strata(root, &["render"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("environment dev takes `traefik`, which requires `cert-manager`"),
        "{err}"
    );
    assert!(err.contains("include `cert-manager` in environment dev"), "{err}");
    assert!(err.contains("gitops/platform/traefik/config.yaml"), "{err}");
    // An unknown name in the list gets a suggestion.
    write(
        root,
        "environments/dev.yaml",
        &format!("{env}components:\n  exclude: [trafik]\n"),
    );
    let err = stderr(&strata(root, &["render"]));
    assert!(err.contains("did you mean `traefik`?"), "{err}");
}

/// A contract as `strata contract import` writes a real substrate stack's
/// outputs: the five shared outputs and credentials (without their
/// values), none of ADR 007's.
fn real_stack_contract(root: &Path) {
    write(
        root,
        "contracts/staging.json",
        r#"{
  "substrate": {"sensitive": false, "type": "string", "value": "talos"},
  "cluster_name": {"sensitive": false, "type": "string", "value": "staging"},
  "endpoint": {"sensitive": false, "type": "string", "value": "https://192.168.10.10:6443"},
  "internal_endpoint": {"sensitive": false, "type": "string", "value": "https://192.168.10.10:6443"},
  "kubeconfig_path": {"sensitive": false, "type": "string", "value": "/home/op/.kube/staging"},
  "cluster_ca_certificate": {"sensitive": true, "type": "string"},
  "client_certificate": {"sensitive": true, "type": "string"},
  "client_key": {"sensitive": true, "type": "string"}
}
"#,
    );
}

#[test]
fn a_real_stacks_contract_is_accepted_and_ha_asks_for_the_missing_outputs() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    real_stack_contract(root);
    let out = strata(root, &["check", "--env", "staging", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let found = json(&out);
    let missing: Vec<String> = found
        .iter()
        .filter(|d| d["message"].as_str().unwrap_or("").contains("the contract has no"))
        .map(|d| format!("{} {}", d["code"].as_str().unwrap(), d["file"].as_str().unwrap()))
        .collect();
    for code in [
        "TOPO001", "TOPO002", "TOPO003", "TOPO004", "TOPO005", "CAP001", "STO001",
    ] {
        assert!(
            missing
                .iter()
                .any(|m| m.starts_with(code) && m.ends_with("contracts/staging.json")),
            "{code} does not name a missing output: {missing:?}"
        );
    }
    // One finding per rule and output, never a flood.
    let topo001 = missing.iter().filter(|m| m.starts_with("TOPO001")).count();
    assert_eq!(topo001, 1);
    // On `topology: single` the ADR 007 rules are off, and the contract is fine.
    let env = std::fs::read_to_string(root.join("environments/staging.yaml")).unwrap();
    write(
        root,
        "environments/staging.yaml",
        &env.replace("topology: ha", "topology: single"),
    );
    let out = strata(root, &["check", "--env", "staging", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(codes(&out).iter().all(|c| !c.starts_with("TOPO")), "{:?}", codes(&out));
}

#[test]
fn a_waiver_names_a_missing_output() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    real_stack_contract(root);
    let env = std::fs::read_to_string(root.join("environments/staging.yaml")).unwrap();
    write(
        root,
        "environments/staging.yaml",
        &format!(
            "{env}waivers:\n  - rule: TOPO005\n    object: contract/api_vip\n    reason: the VIP comes with the next stack release\n    expires: 2027-06-30\n"
        ),
    );
    let out = strata(root, &["check", "--env", "staging", "--format", "json"]);
    assert!(
        !codes(&out).iter().any(|c| c.starts_with("TOPO005")),
        "{:?}",
        codes(&out)
    );
}

#[test]
fn nodes_carry_the_labels_the_kubelet_sets() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    // Nodes labelled only with their host, and an L2 policy selecting Linux
    // nodes: the kubelet's own labels make it select all of them.
    let contract = std::fs::read_to_string(root.join("contracts/staging.json")).unwrap();
    let mut c: serde_json::Value = serde_json::from_str(&contract).unwrap();
    for n in c["nodes"]["value"].as_array_mut().unwrap() {
        let host = n["host"].clone();
        n["labels"] = serde_json::json!({"topology.kubernetes.io/zone": host});
    }
    write(
        root,
        "contracts/staging.json",
        &serde_json::to_string_pretty(&c).unwrap(),
    );
    write(
        root,
        "gitops/platform/cilium/manifests/ciliuml2announcementpolicy-linux.yaml",
        "apiVersion: cilium.io/v2alpha1\nkind: CiliumL2AnnouncementPolicy\nmetadata:\n  name: linux\nspec:\n  loadBalancerIPs: true\n  nodeSelector:\n    matchLabels:\n      kubernetes.io/os: linux\n",
    );
    let out = strata(root, &["check", "--env", "staging", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", codes(&out));
    // A selector on a label no node has still misses them all.
    write(
        root,
        "gitops/platform/cilium/manifests/ciliuml2announcementpolicy-linux.yaml",
        "apiVersion: cilium.io/v2alpha1\nkind: CiliumL2AnnouncementPolicy\nmetadata:\n  name: linux\nspec:\n  loadBalancerIPs: true\n  nodeSelector:\n    matchLabels:\n      kubernetes.io/os: windows\n",
    );
    let out = strata(root, &["check", "--env", "staging", "--format", "json"]);
    assert!(codes(&out).iter().any(|c| c.starts_with("NET002")), "{:?}", codes(&out));
}

#[test]
fn a_core_component_requiring_an_addon_is_a_finding_at_the_requirement() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let config = std::fs::read_to_string(root.join("gitops/platform/coredns/config.yaml")).unwrap();
    write(
        root,
        "gitops/platform/coredns/config.yaml",
        &config.replace("requires:\n  - cilium", "requires:\n  - cilium\n  - traefik"),
    );
    let out = strata(root, &["check", "--env", "dev", "--format", "json"]);
    let found = json(&out);
    let tier = found
        .iter()
        .find(|d| d["code"] == "TIER001")
        .unwrap_or_else(|| panic!("{found:?}"));
    assert_eq!(tier["file"], "gitops/platform/coredns/config.yaml");
    assert!(
        tier["message"]
            .as_str()
            .unwrap()
            .contains("requires `traefik`, an addon")
    );
    assert_eq!(out.status.code(), Some(1));
}
