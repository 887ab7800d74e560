//! End-to-end tests of `strata render` on the example platform: the tree
//! builds with kustomize, carries the Helm merge of the layers, is
//! deterministic, and is written safely.

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;

use common::*;
use serde_json::Value as J;

const ENVS: [&str; 3] = ["dev", "staging", "production"];
const TARGETS: [&str; 2] = ["flux", "argo"];

/// The values of an Argo CD Application: its `helm.values` YAML string, read
/// as Helm reads it.
fn argo_values(app: &J) -> J {
    let text = app["spec"]["source"]["helm"]["values"].as_str().unwrap_or("");
    parse_docs("helm.values", text).into_iter().next().unwrap_or(J::Null)
}

/// The values a HelmRelease takes from the ConfigMap its `valuesFrom`
/// names, found among `docs` (the release's folder, as kustomize builds it).
fn flux_values(release: &J, docs: &[J]) -> J {
    let from = &release["spec"]["valuesFrom"];
    assert_eq!(from.as_array().map(Vec::len), Some(1), "{release}");
    assert_eq!(from[0]["kind"], "ConfigMap");
    let name = &from[0]["name"];
    let cm = docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == *name)
        .unwrap_or_else(|| panic!("no ConfigMap {name} beside the release"));
    assert_eq!(cm["metadata"]["namespace"], release["metadata"]["namespace"]);
    let text = cm["data"]["values.yaml"].as_str().unwrap_or("");
    parse_docs("values.yaml", text).into_iter().next().unwrap_or(J::Null)
}

fn parse_docs(name: &str, text: &str) -> Vec<J> {
    strata::yaml::parse_multi(&Arc::from(name), text)
        .unwrap_or_else(|e| panic!("{name}: {e:?}"))
        .iter()
        .map(|n| n.to_json())
        .collect()
}

/// Helm's merge of several values files, written independently of strata's.
fn helm_merge(base: &mut J, over: &J) {
    match (base, over) {
        (J::Object(b), J::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => helm_merge(existing, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

fn expected_values(root: &std::path::Path, component: &str, env: &str, substrate: &str) -> J {
    let dir = root.join("gitops/platform").join(component);
    let mut merged = J::Object(Default::default());
    // strata's own lowest layer for Argo CD (the health of child
    // Applications), in the example's environments, which all target Argo CD.
    let config = std::fs::read_to_string(dir.join("config.yaml")).unwrap_or_default();
    if config.contains("name: argo-cd") {
        let text =
            std::fs::read_to_string(common::repo().join("templates/argo/application-health.values.yaml")).unwrap();
        helm_merge(&mut merged, &parse_docs("health", &text)[0]);
    }
    for file in [
        "values.yaml".to_owned(),
        format!("values-{env}.yaml"),
        format!("values-substrate-{substrate}.yaml"),
    ] {
        let p = dir.join(&file);
        if let Ok(text) = std::fs::read_to_string(&p) {
            let docs = parse_docs(&file, &text);
            if let Some(doc) = docs.first() {
                helm_merge(&mut merged, doc);
            }
        }
    }
    merged
}

#[test]
fn example_renders_builds_with_kustomize_and_carries_the_merged_values() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let out = strata(root, &["render"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let substrates = BTreeMap::from([("dev", "kind"), ("staging", "talos"), ("production", "talos")]);
    let components: Vec<String> = std::fs::read_dir(root.join("gitops/platform"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for env in ENVS {
        for target in TARGETS {
            let dir = root.join("rendered").join(env).join(target);
            assert!(dir.join("kustomization.yaml").is_file(), "{env}/{target}");
            // Every folder has a kustomization.yaml listing exactly its files.
            for entry in walkdir::WalkDir::new(&dir) {
                let entry = entry.unwrap();
                if !entry.file_type().is_dir() {
                    continue;
                }
                let k = std::fs::read_to_string(entry.path().join("kustomization.yaml")).unwrap();
                let listed: Vec<String> = parse_docs("k", &k)[0]["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect();
                let only_dirs = std::fs::read_dir(entry.path())
                    .unwrap()
                    .map(|e| e.unwrap())
                    .all(|e| e.file_type().unwrap().is_dir() || e.file_name() == "kustomization.yaml");
                let mut files: Vec<String> = std::fs::read_dir(entry.path())
                    .unwrap()
                    .map(|e| e.unwrap())
                    .filter(|e| e.file_type().unwrap().is_file() != only_dirs)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n != "kustomization.yaml")
                    .collect();
                files.sort();
                assert_eq!(listed, files, "{}", entry.path().display());
            }
            let mut built = Vec::new();
            if let Some(kubectl) = kubectl() {
                for entry in walkdir::WalkDir::new(&dir).into_iter().filter_map(Result::ok) {
                    if entry.file_type().is_dir() {
                        let o = Command::new(&kubectl)
                            .arg("kustomize")
                            .arg(entry.path())
                            .output()
                            .unwrap();
                        assert!(
                            o.status.success(),
                            "kustomize build {}: {}",
                            entry.path().display(),
                            String::from_utf8_lossy(&o.stderr)
                        );
                        built.extend(parse_docs("kustomize", &String::from_utf8_lossy(&o.stdout)));
                    }
                }
            } else {
                for entry in walkdir::WalkDir::new(&dir).into_iter().filter_map(Result::ok) {
                    if entry.file_type().is_file() && entry.file_name() != "kustomization.yaml" {
                        built.extend(parse_docs("f", &std::fs::read_to_string(entry.path()).unwrap()));
                    }
                }
            }
            // The values each release carries are the Helm merge of its layers,
            // as read back by kustomize.
            for c in &components {
                let want = expected_values(root, c, env, substrates[env]);
                let got = built
                    .iter()
                    .find(|o| {
                        (o["kind"] == "HelmRelease" || o["kind"] == "Application")
                            && o["metadata"]["name"] == c.as_str()
                    })
                    .unwrap_or_else(|| panic!("no release for {c} in {env}/{target}"));
                let values = if target == "flux" {
                    flux_values(got, &built)
                } else {
                    argo_values(got)
                };
                assert_eq!(values, want, "{c} in {env}/{target}");
            }
        }
    }
}

#[test]
fn yaml_1_1_lookalike_strings_survive_kustomize() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let tricky = [
        "on",
        "no",
        "y",
        "0755",
        "1_000",
        "2024-01-01",
        "off",
        "yes",
        "~",
        "null",
        "1e3",
        "0x1F",
        "12:30",
        ".inf",
    ];
    let mut values = String::from("strings:\n");
    for (i, s) in tricky.iter().enumerate() {
        values.push_str(&format!("  k{i}: {}\n", serde_json::to_string(s).unwrap()));
    }
    values.push_str("multiline: \"first line\\n  indented second\\nthird  \\n\"\n");
    write(root, "gitops/platform/coredns/values-staging.yaml", &values);
    let out = strata(root, &["render", "--env", "staging"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let Some(kubectl) = kubectl() else { return };
    for target in TARGETS {
        let dir = root.join("rendered/staging").join(target);
        let dir = if target == "flux" {
            dir.join("components/coredns")
        } else {
            dir
        };
        let o = Command::new(&kubectl).arg("kustomize").arg(&dir).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let docs = parse_docs("out", &String::from_utf8_lossy(&o.stdout));
        let release = docs
            .iter()
            .find(|d| (d["kind"] == "HelmRelease" || d["kind"] == "Application") && d["metadata"]["name"] == "coredns")
            .unwrap();
        let v = if target == "flux" {
            flux_values(release, &docs)
        } else {
            argo_values(release)
        };
        for (i, s) in tricky.iter().enumerate() {
            assert_eq!(v["strings"][format!("k{i}")], J::String((*s).into()), "{s} in {target}");
        }
        assert_eq!(
            v["multiline"],
            J::String("first line\n  indented second\nthird  \n".into())
        );
    }
}

#[test]
fn renders_are_byte_identical_across_runs_and_thread_counts() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let mut trees = Vec::new();
    for jobs in ["1", "2", "1", "4"] {
        let _ = std::fs::remove_dir_all(root.join("rendered"));
        let out = strata(root, &["--jobs", jobs, "render"]);
        assert!(out.status.success(), "{}", stderr(&out));
        trees.push(snapshot_tree(&root.join("rendered")));
    }
    assert!(!trees[0].is_empty());
    for t in &trees[1..] {
        assert_eq!(t, &trees[0]);
    }
    // A second render over an up-to-date tree changes nothing.
    let out = strata(root, &["render"]);
    assert!(stderr(&out).contains("up to date"), "{}", stderr(&out));
    assert_eq!(snapshot_tree(&root.join("rendered")), trees[0]);
    let out = strata(root, &["render", "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn input_order_does_not_change_the_output() {
    // The same platform written with keys and files in another order.
    let a = scratch("homelab");
    let b = scratch("homelab");
    let values = b.path().join("gitops/platform/traefik/values.yaml");
    let text = std::fs::read_to_string(&values).unwrap();
    // Reverse the order of the top-level blocks of the values file.
    let mut blocks: Vec<String> = Vec::new();
    for line in text.lines() {
        if !line.starts_with(' ') && !line.starts_with('#') && !line.is_empty() || blocks.is_empty() {
            blocks.push(String::new());
        }
        let last = blocks.last_mut().unwrap();
        last.push_str(line);
        last.push('\n');
    }
    blocks.reverse();
    std::fs::write(&values, blocks.concat()).unwrap();
    for t in [&a, &b] {
        let o = strata(t.path(), &["render"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(
        snapshot_tree(&a.path().join("rendered")),
        snapshot_tree(&b.path().join("rendered"))
    );
}

#[test]
fn a_failing_render_leaves_the_previous_tree_whole() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    assert!(strata(root, &["render"]).status.success());
    let before = snapshot_tree(&root.join("rendered"));
    write(
        root,
        "gitops/platform/traefik/values-staging.yaml",
        "service: {type: [unclosed\n",
    );
    let out = strata(root, &["render"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(snapshot_tree(&root.join("rendered")), before);
}

#[test]
fn a_hand_edited_file_survives_a_plain_render() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    assert!(strata(root, &["render"]).status.success());
    let edited = root.join("rendered/staging/flux/components/traefik/helmrelease-traefik.yaml");
    let mut text = std::fs::read_to_string(&edited).unwrap();
    text.push_str("# a hand edit\n");
    std::fs::write(&edited, &text).unwrap();
    // A change that rewrites the edited file.
    write(
        root,
        "gitops/platform/traefik/values-staging.yaml",
        "logs:\n  general:\n    level: DEBUG\n",
    );
    let before = snapshot_tree(&root.join("rendered"));
    let out = strata(root, &["render"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("helmrelease-traefik.yaml"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), text);
    assert_eq!(snapshot_tree(&root.join("rendered")), before);
    // With --force it is overwritten.
    let out = strata(root, &["render", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!std::fs::read_to_string(&edited).unwrap().contains("a hand edit"));
}

#[test]
fn strata_removes_only_what_it_wrote() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    assert!(strata(root, &["render"]).status.success());
    write(root, "rendered/README.md", "notes of my own\n");
    // Remove a component: its files go, the user's file stays.
    std::fs::remove_dir_all(root.join("gitops/platform/argocd")).unwrap();
    let out = strata(root, &["render"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!root.join("rendered/staging/flux/components/argocd").exists());
    assert!(!root.join("rendered/staging/argo/application-argocd.yaml").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("rendered/README.md")).unwrap(),
        "notes of my own\n"
    );
}

#[test]
fn a_removed_environment_or_target_leaves_the_tree() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    assert!(strata(root, &["render"]).status.success());
    // A render of one environment keeps the others.
    assert!(strata(root, &["render", "--env", "dev"]).status.success());
    assert!(root.join("rendered/staging/flux/kustomization.yaml").is_file());
    std::fs::remove_file(root.join("environments/dev.yaml")).unwrap();
    let p = root.join("environments/staging.yaml");
    let s = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, format!("{s}targets: [flux]\n")).unwrap();
    let out = strata(root, &["render"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!root.join("rendered/dev").exists());
    assert!(!root.join("rendered/staging/argo").exists());
    assert!(root.join("rendered/staging/flux/kustomization.yaml").is_file());
    assert_eq!(strata(root, &["render", "--check"]).status.code(), Some(0));
}

#[test]
fn render_check_lists_stale_files() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    assert!(strata(root, &["render"]).status.success());
    write(
        root,
        "gitops/platform/traefik/values-staging.yaml",
        "logs:\n  general:\n    level: DEBUG\n",
    );
    let before = snapshot_tree(&root.join("rendered"));
    let out = strata(root, &["render", "--check"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("rendered/staging/flux/components/traefik/helmrelease-traefik.yaml"),
        "{err}"
    );
    assert!(err.contains("rendered/staging/argo/application-traefik.yaml"), "{err}");
    assert!(err.contains("strata render"), "{err}");
    assert_eq!(snapshot_tree(&root.join("rendered")), before, "--check writes nothing");
}

#[test]
fn sensitive_outputs_never_reach_output_or_messages() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    // The fixture's contracts keep no sensitive value; this one holds them,
    // as `tofu output -json > FILE` writes it in a CI job, and git ignores
    // it there (so it is no SEC002 finding).
    let path = root.join("contracts/staging.json");
    let mut contract: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for (name, record) in contract.as_object_mut().unwrap() {
        if record["sensitive"] == true {
            record["value"] = format!("-----BEGIN KEY-----\nSTRATA-TEST-SECRET-{name}\n-----END KEY-----\n").into();
        }
    }
    write(
        root,
        "contracts/staging.json",
        &serde_json::to_string_pretty(&contract).unwrap(),
    );
    git(root, &["init", "-q"]);
    write(root, ".gitignore", "contracts/staging.json\n");
    let mut printed = String::new();
    for args in [
        vec!["render"],
        vec!["render", "--check"],
        vec!["check"],
        vec!["check", "--format", "json"],
    ] {
        let o = strata(root, &args);
        printed.push_str(&stdout(&o));
        printed.push_str(&stderr(&o));
    }
    // A template that refers to a sensitive output is an error naming it.
    write(
        root,
        "gitops/platform/traefik/manifests/configmap-leak.yaml.j2",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  key: \"{{ contract.client_key }}\"\n",
    );
    let o = strata(root, &["render"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("client_key") && err.contains("sensitive"), "{err}");
    assert!(err.contains("configmap-leak.yaml.j2:6:"), "{err}");
    printed.push_str(&err);
    assert!(!printed.contains("STRATA-TEST-SECRET"), "a secret was printed");
    for (path, bytes) in snapshot_tree(&root.join("rendered")) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains("STRATA-TEST-SECRET"),
            "secret in {path}"
        );
    }
}

#[test]
fn discovery_walks_up_and_the_root_file_redirects() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(root.join("gitops/platform/traefik"))
        .args(["--color", "never", "render", "--env", "dev"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(root.join("rendered/dev/flux/kustomization.yaml").is_file());
    // This repository's own root renders the example.
    let o = strata(&repo(), &["render", "--check"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the committed example tree is stale: {}",
        stderr(&o)
    );
}

#[test]
fn a_one_line_strata_yaml_is_enough() {
    let tmp = scratch("homelab");
    let text = std::fs::read_to_string(tmp.path().join("strata.yaml")).unwrap();
    // `decisions:` (the rollout gates `strata gates` computes) is not layout.
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("decisions:"))
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    assert_eq!(lines, vec!["platform: gitops/platform"]);
}

#[test]
fn a_repository_template_overrides_the_built_in_one() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let builtin = std::fs::read_to_string(repo().join("templates/flux/namespace.yaml.j2")).unwrap();
    let custom = builtin.replace(
        "  labels: {{ namespace.labels | tojson }}",
        "  labels:\n    team: platform",
    );
    assert_ne!(custom, builtin);
    write(root, "templates/flux/namespace.yaml.j2", &custom);
    let out = strata(root, &["render", "--env", "staging", "--target", "flux"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ns = std::fs::read_to_string(root.join("rendered/staging/flux/namespaces/namespace-traefik.yaml")).unwrap();
    assert!(ns.contains("team: platform"), "{ns}");
    // --target flux wrote no argo tree.
    assert!(!root.join("rendered/staging/argo").exists());
}

#[test]
fn a_local_chart_is_sourced_from_the_git_repository() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    write(
        root,
        "gitops/platform/hello/config.yaml",
        "component: hello\nnamespace: hello\nchart:\n  path: charts/hello\nsync: automated\ntier: addon\nrequires: [traefik]\n",
    );
    write(root, "gitops/platform/hello/values.yaml", "greeting: hi\n");
    let out = strata(root, &["render", "--env", "staging"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hr = parse_docs(
        "hr",
        &std::fs::read_to_string(root.join("rendered/staging/flux/components/hello/helmrelease-hello.yaml")).unwrap(),
    );
    let chart = &hr[0]["spec"]["chart"]["spec"];
    assert_eq!(chart["chart"], "./charts/hello");
    assert_eq!(chart["sourceRef"]["kind"], "GitRepository");
    let folder = root.join("rendered/staging/flux/components/hello");
    let docs: Vec<J> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "kustomization.yaml") && p.is_file())
        .flat_map(|p| parse_docs("doc", &std::fs::read_to_string(p).unwrap()))
        .collect();
    assert_eq!(flux_values(&hr[0], &docs)["greeting"], "hi");
    assert!(
        !root
            .join("rendered/staging/flux/components/hello/helmrepository-hello.yaml")
            .exists()
    );
    let app = parse_docs(
        "app",
        &std::fs::read_to_string(root.join("rendered/staging/argo/application-hello.yaml")).unwrap(),
    );
    let source = &app[0]["spec"]["source"];
    assert_eq!(source["path"], "charts/hello");
    assert_eq!(source["repoURL"], "https://git.example.com/homelab/platform.git");
    assert_eq!(argo_values(&app[0])["greeting"], "hi");
    // traefik is at depth 2 (cilium <- cert-manager <- traefik), so hello is
    // at 3: two waves a level, its release's manifests between.
    assert_eq!(app[0]["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"], "6");
    let ks = parse_docs(
        "ks",
        &std::fs::read_to_string(root.join("rendered/staging/flux/kustomization-hello.yaml")).unwrap(),
    );
    // Its namespace first, then what it requires, and that one's manifests.
    assert_eq!(
        ks[0]["spec"]["dependsOn"],
        serde_json::json!([{"name": "strata-namespaces"}, {"name": "traefik"}, {"name": "traefik-manifests"}])
    );
    assert_eq!(ks[0]["spec"]["path"], "./rendered/staging/flux/components/hello");
}

/// The process leaves its memory to the kernel at exit: mimalloc's exit
/// hook, which would purge every page one `madvise` at a time, returns at
/// once. mimalloc says "process done" at the end of that hook when asked
/// to be verbose.
#[test]
fn the_exit_leaves_the_heap_to_the_kernel() {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--version")
        .env("MIMALLOC_VERBOSE", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // The verbose messages do reach stderr: the option list at the start.
    assert!(err.contains("option 'destroy_on_exit'"), "{err}");
    assert!(!err.contains("process done"), "{err}");
}

#[test]
fn an_environment_s_mirror_rewrites_the_chart_urls_written_for_it_alone() {
    // An air-gapped production pulls charts from its own mirror: the URL in
    // its HelmRepository and Applications is the mirror's (the longest
    // prefix wins), and the other environments keep the upstream.
    let tmp = scratch("homelab");
    let env = tmp.path().join("environments/production.yaml");
    let mut text = std::fs::read_to_string(&env).unwrap();
    text.push_str(
        "charts:\n  mirrors:\n    https://traefik.github.io/: https://charts.mirror.example.org/all/\n    https://traefik.github.io/charts: https://charts.mirror.example.org/traefik\n",
    );
    std::fs::write(&env, text).unwrap();
    let out = strata(tmp.path(), &["render"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let read = |rel: &str| std::fs::read_to_string(tmp.path().join("rendered").join(rel)).unwrap();
    let url = |rel: &str| -> J {
        let docs = parse_docs(rel, &read(rel));
        docs[0].clone()
    };
    let mirror = "https://charts.mirror.example.org/traefik";
    let upstream = "https://traefik.github.io/charts";
    assert_eq!(
        url("production/flux/components/traefik/helmrepository-traefik.yaml")["spec"]["url"],
        mirror
    );
    assert_eq!(
        url("production/argo/application-traefik.yaml")["spec"]["source"]["repoURL"],
        mirror
    );
    for env in ["dev", "staging"] {
        assert_eq!(
            url(&format!("{env}/flux/components/traefik/helmrepository-traefik.yaml"))["spec"]["url"],
            upstream
        );
        assert_eq!(
            url(&format!("{env}/argo/application-traefik.yaml"))["spec"]["source"]["repoURL"],
            upstream
        );
    }
    // A mirror that is no URL is refused at its line.
    let mut text = std::fs::read_to_string(&env).unwrap();
    text = text.replace("https://charts.mirror.example.org/traefik", "not a url");
    std::fs::write(&env, text).unwrap();
    let out = strata(tmp.path(), &["render"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("environments/production.yaml:"),
        "{}",
        stderr(&out)
    );
}
