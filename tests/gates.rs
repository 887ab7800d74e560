//! `strata gates`, end to end with the real binary: the rollout status of
//! the decision records in the example platforms, `--check` and `--write`
//! on records that disagree (CRLF ones too), the host-failure check on
//! passing and failing contracts, measured usage, and input errors.

mod common;

use std::path::Path;

use common::{scratch, stderr, stdout, strata, write};

fn gates(root: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["gates"];
    all.extend_from_slice(args);
    let out = strata(root, &all);
    let (o, e) = (stdout(&out), stderr(&out));
    assert!(!e.contains("panicked"), "{e}");
    (out.status.code().unwrap_or(-1), o, e)
}

const RECORD: &str = "docs/decisions/007-talos-production-topology.md";

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

/// The report's lines about the gate whose text starts with `start`.
fn gate_block(report: &str, start: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in report.lines() {
        if line.starts_with("  [") {
            inside = line[6..].starts_with(start);
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(!out.is_empty(), "no gate `{start}` in:\n{report}");
    out
}

/// Adds a node to the staging contract of a scratch homelab.
fn add_staging_node(root: &Path, name: &str, host: &str, address: &str, role: &str) {
    let path = root.join("contracts/staging.json");
    let mut c: serde_json::Value = serde_json::from_str(&read(root, "contracts/staging.json")).unwrap();
    let nodes = c["nodes"]["value"].as_array_mut().unwrap();
    nodes.push(serde_json::json!({
        "address": address,
        "cpu": 2,
        "host": host,
        "labels": {
            "kubernetes.io/hostname": name,
            format!("node-role.kubernetes.io/{role}"): "",
            "topology.kubernetes.io/zone": host
        },
        "memory_mib": 6144,
        "name": name,
        "roles": [role]
    }));
    std::fs::write(path, serde_json::to_string_pretty(&c).unwrap()).unwrap();
}

#[test]
fn adr_007_staging_today_computes_0_of_5_from_its_implementation_status() {
    let root = common::repo().join("fixtures/adr-007-staging-today");
    let (code, out, err) = gates(&root, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("{RECORD}: Rollout: 0 of 5 gates\n")), "{out}");
    assert_eq!(out.matches("  [ ] ").count(), 5, "{out}");
    // The record's implementation status, fact by fact, at file:line.
    let topology = gate_block(&out, "Staging runs three control-plane nodes");
    assert!(
        topology.contains("contracts/staging.json:111:14: TOPO001 (staging)")
            && topology.contains("one control-plane node (talos-test-cp-01), 1 other node"),
        "one control plane and one worker:\n{topology}"
    );
    let ingress = gate_block(&out, "The L2 policy selects all three nodes");
    assert!(
        ingress.contains(
            "gitops/platform/cilium/manifests/ciliuml2announcementpolicy-ingress-address.yaml:14:31: NET002 (staging)"
        ) && ingress.contains("`kubernetes.io/hostname=talos-test-worker-01` excludes talos-test-cp-01"),
        "the policy selects only talos-test-worker-01:\n{ingress}"
    );
    assert!(
        ingress.contains("gitops/platform/traefik/values.yaml:78:28: NET001 (staging)")
            && ingress.contains("Local in the shared gitops/platform/traefik/values.yaml"),
        "the shared Traefik values say Local:\n{ingress}"
    );
    let failure = gate_block(&out, "On staging, a host failure");
    for line in [13, 16] {
        assert!(
            failure.contains(&format!(
                "gitops/platform/longhorn/values-substrate-talos.yaml:{line}:37: STO001 (staging)"
            )),
            "Longhorn only on workers (line {line}):\n{failure}"
        );
    }
    assert!(
        failure.contains("host-failure (staging): host pve-01 down (talos-test-cp-01): etcd loses quorum"),
        "{failure}"
    );
    assert!(
        failure
            .contains("host pve-01 down (talos-test-cp-01): the API VIP 192.168.10.10 has no control-plane node left"),
        "{failure}"
    );
    assert!(
        failure.contains("host pve-02 down (talos-test-worker-01): Traefik (component traefik) keeps no replica"),
        "{failure}"
    );
    let production = gate_block(&out, "Production runs on three hosts");
    assert!(
        production.contains("there is no environment production"),
        "{production}"
    );
    assert!(production.contains("not measured"), "{production}");
    // The shipped record agrees.
    let (code, _, err) = gates(&root, &["--check"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn homelab_computes_its_own_gates_and_its_record_agrees() {
    let root = common::repo().join("fixtures/homelab");
    let (code, out, err) = gates(&root, &["--check"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("{RECORD}: Rollout: 5 of 6 gates\n")), "{out}");
    let measured = gate_block(&out, "Production runs on three hosts");
    assert!(measured.starts_with("  [x]"), "{measured}");
    assert!(
        measured.contains("measured usage of production (2026-11-27)"),
        "{measured}"
    );
    let staging = gate_block(&out, "Staging's capacity margin is measured too.");
    assert!(staging.starts_with("  [ ]"), "{staging}");
    assert!(
        staging.contains("measured (staging): not measured: there is no measurements/staging.yaml"),
        "{staging}"
    );
    // `*` judges the rules where they run: not on dev, where topology: single turns them off.
    let l2 = gate_block(&out, "The L2 policy");
    assert!(l2.contains("NET001 on production, staging"), "{l2}");
}

#[test]
fn check_fails_on_a_disagreeing_record_and_write_changes_only_boxes_and_count() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    // A CRLF record that claims too much and too little.
    let good = read(root, RECORD);
    let bad = good
        .replace("Rollout: 5 of 6 gates", "Rollout: 6 of 6 gates")
        .replace(
            "- [x] Staging runs three control-plane nodes on three hosts.",
            "- [ ] Staging runs three control-plane nodes on three hosts.",
        )
        .replace("- [ ] Staging's capacity", "- [X] Staging's capacity")
        .replace('\n', "\r\n");
    write(root, RECORD, &bad);
    let (code, _, err) = gates(root, &["--check"]);
    assert_eq!(code, 1, "{err}");
    for line in [4, 23, 28] {
        assert!(err.contains(&format!("{RECORD}:{line}: ")), "line {line}:\n{err}");
    }
    assert!(
        err.contains("says `Rollout: 6 of 6 gates`, but 5 of 6 gates are done"),
        "{err}"
    );
    assert!(err.contains("strata gates --write"), "{err}");
    assert_eq!(read(root, RECORD), bad, "--check wrote something");

    let (code, _, err) = gates(root, &["--write"]);
    assert_eq!(code, 0, "{err}");
    let after = read(root, RECORD);
    assert!(!after.replace("\r\n", "").contains('\n'), "a line lost its CR");
    let before: Vec<&str> = bad.split("\r\n").collect();
    let lines: Vec<&str> = after.split("\r\n").collect();
    assert_eq!(before.len(), lines.len());
    for (i, (b, a)) in before.iter().zip(&lines).enumerate() {
        match i + 1 {
            4 => assert_eq!(*a, "- Rollout: 5 of 6 gates"),
            23 => assert_eq!(*a, "- [x] Staging runs three control-plane nodes on three hosts."),
            28 => assert_eq!(*a, "- [ ] Staging's capacity margin is measured too."),
            n => assert_eq!(a, b, "line {n} changed"),
        }
    }
    assert_eq!(after, good.replace('\n', "\r\n"));
    assert!(
        std::fs::read_dir(root.join("docs/decisions")).unwrap().count() == 1,
        "a temporary file was left behind"
    );
    let (code, _, err) = gates(root, &["--check"]);
    assert_eq!(code, 0, "{err}");
    // A record that agrees is left as it is.
    let (code, _, _) = gates(root, &["--write"]);
    assert_eq!(code, 0);
    assert_eq!(read(root, RECORD), after);
}

#[test]
fn host_failure_passes_on_three_hosts_and_fails_with_two_nodes_on_one() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let (_, out, _) = gates(root, &[]);
    let gate = "On staging, a host failure";
    assert!(gate_block(&out, gate).starts_with("  [x]"), "{out}");

    // Four nodes on three hosts: pve-01 runs a control-plane node and a worker.
    add_staging_node(root, "talos-stg-worker-01", "pve-01", "192.168.10.21", "worker");
    let check = strata(root, &["check", "--env", "staging"]);
    assert_eq!(check.status.code(), Some(0), "every rule passes:\n{}", stderr(&check));
    let (code, out, err) = gates(root, &[]);
    assert_eq!(code, 0, "{err}");
    let block = gate_block(&out, gate);
    assert!(block.starts_with("  [ ]"), "{block}");
    // The chart's required anti-affinity on the hostname lets both operator
    // replicas land on the two nodes of pve-01.
    assert!(
        block.contains(
            "host-failure (staging): host pve-01 down (talos-stg-cp-01, talos-stg-worker-01): Cilium operator (component cilium) keeps no replica: its 2 replicas are spread only by a required anti-affinity on kubernetes.io/hostname, so all may run on talos-stg-cp-01, talos-stg-worker-01"
        ),
        "{block}"
    );
    assert!(!block.contains("host pve-02 down"), "{block}");
    assert!(!block.contains("etcd"), "{block}");
    let (code, _, _) = gates(root, &["--check"]);
    assert_eq!(code, 1, "the record still says the gate is done");
}

#[test]
fn host_failure_names_the_lost_address_and_the_requests_that_do_not_fit() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    // The generated L2 policy, overridden to select one node.
    let builtin =
        std::fs::read_to_string(common::repo().join("templates/cluster/ciliuml2announcementpolicy.yaml.j2")).unwrap();
    let one = builtin.replace(
        "  loadBalancerIPs: true",
        "  loadBalancerIPs: true\n  nodeSelector:\n    matchLabels:\n      kubernetes.io/hostname: talos-stg-cp-02",
    );
    assert_ne!(one, builtin);
    write(root, "templates/cluster/ciliuml2announcementpolicy.yaml.j2", &one);
    // And nodes too small to take a lost host's pods.
    let contract = read(root, "contracts/staging.json").replace("\"memory_mib\": 6144", "\"memory_mib\": 1200");
    write(root, "contracts/staging.json", &contract);
    let (code, out, err) = gates(root, &[]);
    assert_eq!(code, 0, "{err}");
    let block = gate_block(&out, "On staging, a host failure");
    assert!(
        block.contains(
            "host pve-02 down (talos-stg-cp-02): Service traefik/traefik loses its address: CiliumL2AnnouncementPolicy all-nodes selects only talos-stg-cp-02"
        ),
        "{block}"
    );
    assert!(
        !block.contains("host pve-01 down (talos-stg-cp-01): Service"),
        "{block}"
    );
    assert!(
        block.contains("host pve-01 down (talos-stg-cp-01): the other nodes cannot hold every pod's requests"),
        "{block}"
    );
}

#[test]
fn measured_gates_need_the_file_every_node_and_the_margin() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let gate = "Production runs on three hosts";
    let file = "measurements/production.yaml";
    let good = read(root, file);

    // Unmeasured.
    std::fs::remove_file(root.join(file)).unwrap();
    let (code, out, _) = gates(root, &[]);
    assert_eq!(code, 0);
    let block = gate_block(&out, gate);
    assert!(block.starts_with("  [ ]"), "{block}");
    assert!(
        block.contains("measured (production): not measured: there is no measurements/production.yaml"),
        "{block}"
    );

    // A node left out.
    write(
        root,
        file,
        &good.replace("  talos-prod-cp-03: {cpu: \"1.35\", memory: 9.2Gi}\n", ""),
    );
    let (_, out, _) = gates(root, &[]);
    let block = gate_block(&out, gate);
    assert!(block.contains("not measured: talos-prod-cp-03"), "{block}");

    // Measured, but the other two nodes are too busy to take pve-03's load
    // and keep a third free (each may use 5461m / 21845 MiB of 8 cores / 32 GiB).
    write(
        root,
        file,
        &good
            .replace("{cpu: 1210m, memory: 8912Mi}", "{cpu: 1210m, memory: 19000Mi}")
            .replace("{cpu: \"1.35\", memory: 9.2Gi}", "{cpu: \"1.35\", memory: 19000Mi}"),
    );
    let (_, out, _) = gates(root, &[]);
    let block = gate_block(&out, gate);
    assert!(block.starts_with("  [ ]"), "{block}");
    assert!(
        block.contains(&format!("{file}:9:3: measured (production): host pve-03 down (talos-prod-cp-01): the measured load (2026-11-27) does not leave 1/3 of every other node free")),
        "{block}"
    );
    assert!(block.contains("does not fit in the"), "{block}");

    // Measured and with room: done.
    write(root, file, &good);
    let (_, out, _) = gates(root, &[]);
    assert!(gate_block(&out, gate).starts_with("  [x]"), "{out}");

    // A measurement that is not a quantity is an input error at its line.
    write(root, file, &good.replace("cpu: 1450m", "cpu: lots"));
    let (code, _, err) = gates(root, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{file}:9:")), "{err}");
}

#[test]
fn a_waived_finding_still_holds_its_gate_open() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let values = "gitops/platform/traefik/values-staging.yaml";
    let text = read(root, values) + "deployment:\n  replicas: 1\n";
    write(root, values, &text);
    let env = read(root, "environments/staging.yaml")
        + "waivers:\n  - rule: HA001\n    component: traefik\n    reason: one replica while the second host is rebuilt\n    expires: 2027-01-31\n";
    write(root, "environments/staging.yaml", &env);
    let check = strata(root, &["check", "--env", "staging"]);
    assert!(!stderr(&check).contains("error[HA001]"), "{}", stderr(&check));
    let (_, out, _) = gates(root, &[]);
    let block = gate_block(&out, "The controllers above run two replicas");
    assert!(block.starts_with("  [ ]"), "{block}");
    assert!(
        block.contains(&format!("{values}:"))
            && block.contains("HA001 (staging): Traefik (component traefik) runs 1 replica"),
        "{block}"
    );
    assert!(
        block.contains("waived until 2027-01-31 at environments/staging.yaml:"),
        "{block}"
    );
}

#[test]
fn a_gate_missing_from_its_record_is_an_input_error_with_the_nearest_line() {
    let tmp = scratch("adr-007-staging-today");
    let root = tmp.path();
    let config = read(root, "strata.yaml").replace(
        "gate: Staging runs three control-plane nodes on three hosts.",
        "gate: Staging runs 3 control plane nodes on three hosts",
    );
    write(root, "strata.yaml", &config);
    let (code, out, err) = gates(root, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains(&format!(
            "the gate `Staging runs 3 control plane nodes on three hosts` is not a task-list line of {RECORD}"
        )),
        "{err}"
    );
    assert!(err.contains("--> strata.yaml:"), "{err}");
    assert!(
        err.contains(&format!(
            "did you mean `Staging runs three control-plane nodes on three hosts.` ({RECORD}:97)?"
        )),
        "{err}"
    );
    let (code, _, _) = gates(root, &["--check"]);
    assert_eq!(code, 2);
}

#[test]
fn other_input_errors_exit_2() {
    let tmp = scratch("adr-007-staging-today");
    let root = tmp.path();
    let config = read(root, "strata.yaml");
    // An unknown rule, with the nearest code.
    write(
        root,
        "strata.yaml",
        &config.replace("rules: [TOPO001, TOPO002]", "rules: [TOPO001, TOP002]"),
    );
    let (code, _, err) = gates(root, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`TOP002` is not a rule") && err.contains("did you mean `TOPO002`?"),
        "{err}"
    );
    // A record without its count line.
    write(root, "strata.yaml", &config);
    let record = read(root, RECORD).replace("- Rollout: 0 of 5 gates\n", "");
    write(root, RECORD, &record);
    let (code, _, err) = gates(root, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("has no line `Rollout: N of M gates`"), "{err}");
    // A record that is not there.
    std::fs::remove_file(root.join(RECORD)).unwrap();
    let (code, _, err) = gates(root, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("cannot read the record {RECORD}")), "{err}");
    // A gate with nothing to judge it by.
    write(
        root,
        "strata.yaml",
        "platform: gitops/platform\ndecisions:\n  - record: r.md\n    gates:\n      - gate: x\n        envs: [staging]\n",
    );
    let (code, _, err) = gates(root, &[]);
    assert_eq!(code, 2, "{err}");
}
