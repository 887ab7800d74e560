//! What ships beside the binary: the JSON Schemas `strata schemas export`
//! writes (every one, valid, resolving each other from the folder they are
//! in), the GitHub Action, the release and example workflows and the
//! pre-commit hooks (each parses, and says what it must: --locked builds,
//! the helm install, the cache key), and the licence texts.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use common::{repo, stderr};

fn export(dir: &Path) -> std::process::Output {
    // No repository is needed: run it from a folder that is none.
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir.parent().unwrap())
        .args(["--color", "never", "schemas", "export"])
        .arg(dir)
        .output()
        .unwrap()
}

fn json_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

#[test]
fn schemas_export_writes_every_schema_and_each_is_a_valid_json_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("editor-schemas");
    let out = export(&dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shipped = json_files(&repo().join("schemas"));
    assert_eq!(json_files(&dir), shipped, "every schema of schemas/ is exported");
    for file in &shipped {
        let written = std::fs::read(dir.join(file)).unwrap();
        assert_eq!(
            written,
            std::fs::read(repo().join("schemas").join(file)).unwrap(),
            "{file}"
        );
        let schema: Value = serde_json::from_slice(&written).unwrap();
        if let Err(e) = jsonschema::meta::validate(&schema) {
            panic!("{file} is not a valid JSON Schema: {e}");
        }
        // The id is the file itself, wherever the folder is.
        assert_eq!(schema["$id"], json!(file), "{file}");
    }
    // Read from the exported folder by its own URL, a contract schema finds
    // its sibling through its relative `$ref`.
    let base = format!("file://{}/", dir.display());
    let mut resources = Vec::new();
    for file in &shipped {
        let v: Value = serde_json::from_slice(&std::fs::read(dir.join(file)).unwrap()).unwrap();
        resources.push((format!("{base}{file}"), jsonschema::Resource::from_contents(v)));
    }
    let registry = jsonschema::Registry::new()
        .extend(resources)
        .unwrap()
        .prepare()
        .unwrap();
    let kind: Value = serde_json::from_slice(&std::fs::read(dir.join("contract-kind.schema.json")).unwrap()).unwrap();
    let validator = jsonschema::options()
        .with_registry(&registry)
        .with_base_uri(format!("{base}contract-kind.schema.json"))
        .build(&kind)
        .unwrap();
    let good = json!({"substrate": "kind", "cluster_name": "dev", "endpoint": "https://127.0.0.1:6443",
                      "internal_endpoint": "https://dev-control-plane:6443"});
    assert!(validator.is_valid(&good));
    // cluster_name is required by the shared schema, reached through the $ref.
    let errors: Vec<String> = validator
        .iter_errors(&json!({"substrate": "kind", "endpoint": "https://x", "internal_endpoint": "https://y"}))
        .map(|e| e.to_string())
        .collect();
    assert!(errors.iter().any(|e| e.contains("cluster_name")), "{errors:?}");
}

#[test]
fn schemas_export_replaces_its_own_schemas_and_no_other_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    assert!(export(&dir).status.success());
    // Its own, even an older copy, is replaced.
    std::fs::write(dir.join("config.schema.json"), r#"{"$id": "config.schema.json"}"#).unwrap();
    assert!(export(&dir).status.success());
    let back = std::fs::read(dir.join("config.schema.json")).unwrap();
    assert_eq!(back, std::fs::read(repo().join("schemas/config.schema.json")).unwrap());
    // Someone else's file of that name is not.
    std::fs::write(dir.join("strata.schema.json"), "mine").unwrap();
    let out = export(&dir);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing was written"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(dir.join("strata.schema.json")).unwrap(), "mine");
}

fn yaml(rel: &str) -> Value {
    let text = std::fs::read_to_string(repo().join(rel)).unwrap();
    let node = strata::yaml::parse(&std::sync::Arc::from(rel), &text)
        .unwrap_or_else(|e| panic!("{rel} does not parse: {} at {}", e.message, e.origin));
    node.to_json()
}

fn text(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap()
}

#[test]
fn the_action_is_a_composite_whose_inputs_are_documented_and_used() {
    let action = yaml("action.yml");
    assert_eq!(action["runs"]["using"], json!("composite"));
    let inputs = action["inputs"].as_object().unwrap();
    let body = text("action.yml");
    for (name, input) in inputs {
        assert!(
            input["description"].as_str().is_some_and(|d| d.len() > 20),
            "input {name}"
        );
        assert!(body.contains(&format!("inputs.{name}")), "input {name} is never used");
    }
    for step in action["runs"]["steps"].as_array().unwrap() {
        if step.get("run").is_some() {
            // A composite action's run steps must name their shell.
            assert_eq!(step["shell"], json!("bash"), "{step}");
        } else {
            assert!(step["uses"].as_str().is_some_and(|u| u.contains('@')), "{step}");
        }
    }
    assert!(body.contains(r#"cargo install --locked --path "$GITHUB_ACTION_PATH""#));
    assert!(body.contains("go install \"helm.sh/helm/v4/cmd/helm@${HELM_VERSION}\""));
    assert!(body.contains("hashFiles(format('{0}/strata.lock', inputs.root))"));
}

#[test]
fn the_release_workflow_builds_locked_binaries_for_linux_and_macos() {
    let wf = yaml(".github/workflows/release.yml");
    assert_eq!(wf["on"]["push"]["tags"], json!(["v*"]));
    let targets: Vec<&str> = wf["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["target"].as_str().unwrap())
        .collect();
    assert_eq!(
        targets,
        [
            "x86_64-unknown-linux-gnu",
            "aarch64-unknown-linux-gnu",
            "x86_64-apple-darwin",
            "aarch64-apple-darwin"
        ]
    );
    let steps = wf["jobs"]["build"]["steps"].as_array().unwrap();
    assert!(steps.iter().any(|s| {
        s["run"]
            .as_str()
            .is_some_and(|r| r.contains("cargo build --release --locked --target"))
    }));
    // What a release archive holds is in the repository.
    for f in ["README.md", "CHANGELOG.md", "LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(repo().join(f).is_file(), "{f}");
        assert!(text(".github/workflows/release.yml").contains(f), "{f}");
    }
}

#[test]
fn the_example_workflow_installs_helm_caches_by_the_lock_and_posts_the_diff() {
    let wf = yaml("docs/ci/github-actions.yml");
    let steps = wf["jobs"]["strata"]["steps"].as_array().unwrap();
    let runs: String = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    assert!(runs.contains("cargo build --release --locked"));
    assert!(runs.contains("go install \"helm.sh/helm/v4/cmd/helm@${HELM_VERSION}\""));
    assert_eq!(wf["env"]["HELM_VERSION"], json!("v4.3.2"));
    assert!(runs.contains("strata charts pull"));
    assert!(runs.contains("--format markdown"));
    let cache = steps
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/cache@")))
        .expect("a cache step");
    assert!(
        cache["with"]["key"].as_str().unwrap().contains("strata.lock"),
        "{cache}"
    );
    assert!(cache["with"]["path"].as_str().unwrap().ends_with(".strata"), "{cache}");
    assert!(steps.iter().any(|s| {
        s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/github-script@"))
    }));
}

#[test]
fn the_pre_commit_hooks_run_a_locked_build_of_this_repository() {
    let hooks = yaml(".pre-commit-hooks.yaml");
    let docs = text("docs/ci.md");
    for hook in hooks.as_array().unwrap() {
        let id = hook["id"].as_str().unwrap();
        let entry = hook["entry"].as_str().unwrap();
        let program = entry.split_whitespace().next().unwrap();
        match hook["language"].as_str().unwrap() {
            // pre-commit runs a script hook's entry from the hook repository.
            "script" => {
                let script = repo().join(program);
                assert!(script.is_file(), "{id}: {program}");
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
                    assert!(mode & 0o111 != 0, "{program} is not executable");
                }
                assert!(text(program).contains("cargo build --release --locked"));
            }
            "system" => assert_eq!(program, "strata", "{id}"),
            other => panic!("{id}: language {other} (rust installs without --locked)"),
        }
        assert_eq!(hook["pass_filenames"], json!(false), "{id}");
        assert!(docs.contains(&format!("`{id}`")), "docs/ci.md does not name {id}");
    }
    let check = Command::new("sh")
        .arg("-n")
        .arg(repo().join("hooks/strata"))
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
}

#[test]
fn the_licence_files_are_the_ones_cargo_toml_names() {
    let cargo = text("Cargo.toml");
    assert!(cargo.contains(r#"license = "MIT OR Apache-2.0""#));
    assert!(text("LICENSE-MIT").starts_with("MIT License\n"));
    assert!(text("LICENSE-APACHE").contains("Apache License\n                           Version 2.0, January 2004"));
    assert!(text("CHANGELOG.md").contains("\n## [Unreleased]\n"));
}
