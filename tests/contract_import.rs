//! `strata contract import`: `tofu output -json` in, the environment's
//! contract out, every sensitive output kept as its name, type and
//! `sensitive: true` without its value; and SEC002, which reports a
//! contract in the repository that holds such a value.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::*;
use serde_json::{Value, json};

/// A sensitive value of the outputs below: never written, never printed.
const SECRET: &str = "STRATA-IMPORT-SECRET-client-key-7f3a";

/// What `tofu output -json` prints for the homelab's staging stack: its
/// committed contract, with the values of the sensitive outputs.
fn tofu_output(root: &Path, env: &str) -> String {
    let text = std::fs::read_to_string(root.join(format!("contracts/{env}.json"))).unwrap();
    let mut c: Value = serde_json::from_str(&text).unwrap();
    for (name, record) in c.as_object_mut().unwrap() {
        if record["sensitive"] == true {
            record["value"] = json!(format!("-----BEGIN KEY-----\n{SECRET}-{name}\n-----END KEY-----\n"));
        }
    }
    // tofu prints each record as value, type, sensitive, in the order of
    // its own keys: the import sorts them.
    serde_json::to_string_pretty(&c).unwrap()
}

/// Runs strata with `input` on its standard input.
fn with_stdin(root: &Path, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--root")
        .arg(root)
        .args(["--color", "never"])
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn all(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

#[test]
fn import_writes_the_contract_without_sensitive_values_and_is_byte_stable() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let before = read(root, "contracts/staging.json");
    let input = tofu_output(root, "staging");
    assert!(input.contains(SECRET));
    std::fs::remove_file(root.join("contracts/staging.json")).unwrap();

    let out = with_stdin(root, &["contract", "import", "--env", "staging", "-"], &input);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    assert!(!all(&out).contains(SECRET), "{}", all(&out));
    assert!(
        stderr(&out).contains("wrote contracts/staging.json"),
        "{}",
        stderr(&out)
    );
    let written = read(root, "contracts/staging.json");
    assert!(!written.contains(SECRET), "{written}");
    // Name, type and `sensitive: true`: the fixture is such a file, byte for byte.
    assert_eq!(written, before);
    let c: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(c["client_key"], json!({"sensitive": true, "type": "string"}));
    assert_eq!(c["cluster_name"]["value"], json!("homelab-staging"));

    // Again, from a file: the same bytes, and nothing is written.
    write(root, "outputs.json", &input);
    let modified = std::fs::metadata(root.join("contracts/staging.json"))
        .unwrap()
        .modified()
        .unwrap();
    let out = strata(
        root,
        &[
            "contract",
            "import",
            "--env",
            "staging",
            &root.join("outputs.json").display().to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    assert!(stderr(&out).contains("up to date"), "{}", stderr(&out));
    assert_eq!(read(root, "contracts/staging.json"), before);
    let now = std::fs::metadata(root.join("contracts/staging.json"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(modified, now, "an unchanged contract was rewritten");

    // The platform reads it: the sensitive outputs are known, and no rule
    // or reference misses them.
    let out = strata(root, &["check", "--env", "staging", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
}

#[test]
fn without_env_the_only_environment_is_meant_else_it_is_asked_for() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let input = tofu_output(root, "dev");
    let before = read(root, "contracts/dev.json");
    let out = with_stdin(root, &["contract", "import", "-"], &input);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    let err = stderr(&out);
    assert!(
        err.contains("error[E031]") && err.contains("dev, production, staging"),
        "{err}"
    );
    assert_eq!(read(root, "contracts/dev.json"), before);

    for env in ["staging", "production"] {
        std::fs::remove_file(root.join(format!("environments/{env}.yaml"))).unwrap();
    }
    let out = with_stdin(root, &["contract", "import", "-"], &input);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    assert!(stderr(&out).contains("for environment dev"), "{}", stderr(&out));
    assert!(!all(&out).contains(SECRET));

    let out = with_stdin(root, &["contract", "import", "--env", "stagin", "-"], &input);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(stderr(&out).contains("no environment `stagin`"), "{}", stderr(&out));
}

#[test]
fn malformed_input_is_refused_at_its_line_and_column_and_nothing_is_written() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let before = read(root, "contracts/staging.json");
    let good = tofu_output(root, "staging");
    let cut = &good[..good.find(SECRET).unwrap() + 10];
    let dup = format!(
        "{{\n  \"substrate\": {{\"sensitive\": false, \"type\": \"string\", \"value\": \"talos\"}},\n  \"client_key\": {{\"sensitive\": true, \"value\": {{\"{SECRET}\": 1,\n    \"{SECRET}\": 2}}}}\n}}\n"
    );
    let cases: [(&str, String, &str); 5] = [
        ("cut short inside a secret", cut.to_owned(), "<stdin>:"),
        ("not an object", "[1, 2]".into(), "must be a JSON object"),
        ("a plain mapping", "{\"substrate\": \"talos\"}".into(), "<stdin>:1:2"),
        ("a key given twice", dup, "<stdin>:4:5"),
        ("not JSON at all", format!("value: {SECRET}\n"), "not JSON"),
    ];
    for (what, input, want) in cases {
        let out = with_stdin(root, &["contract", "import", "--env", "staging", "-"], &input);
        let text = all(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {text}");
        assert!(text.contains("error[E031]") && text.contains(want), "{what}: {text}");
        assert!(!text.contains(SECRET), "{what} printed the secret: {text}");
        assert!(!text.contains("panicked"), "{what}: {text}");
        assert_eq!(read(root, "contracts/staging.json"), before, "{what}");
    }
    // Another stack's outputs: refused, unless forced.
    let dev = tofu_output(root, "dev");
    let out = with_stdin(root, &["contract", "import", "--env", "staging", "-"], &dev);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(stderr(&out).contains("of a `kind` substrate"), "{}", stderr(&out));
    assert_eq!(read(root, "contracts/staging.json"), before);
}

#[test]
fn import_writes_only_the_environments_own_contract_inside_the_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("platform");
    std::fs::create_dir(&root).unwrap();
    copy_dir(&repo().join("fixtures/homelab"), &root);
    let input = tofu_output(&root, "staging");
    let env = read(&root, "environments/staging.yaml");
    let point = |to: &str| {
        write(
            &root,
            "environments/staging.yaml",
            &env.replace("contract: contracts/staging.json", &format!("contract: {to}")),
        )
    };
    let import = || with_stdin(&root, &["contract", "import", "--env", "staging", "-"], &input);

    // A path that leaves the repository.
    for to in ["../outside.json", "/tmp/strata-outside.json"] {
        point(to);
        let out = import();
        assert_eq!(out.status.code(), Some(2), "{to}: {}", all(&out));
        assert!(stderr(&out).contains("leaves the repository"), "{to}: {}", stderr(&out));
    }
    assert!(!tmp.path().join("outside.json").exists());

    // A folder on the way that is a link out of the repository.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("linked")).unwrap();
    point("linked/staging.json");
    let out = import();
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(stderr(&out).contains("`linked` is a symbolic link"), "{}", stderr(&out));
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());

    // A file there that is not a contract: kept, unless forced.
    point("docs/notes.json");
    write(&root, "docs/notes.json", "{\"owner\": \"platform team\"}\n");
    let out = import();
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(stderr(&out).contains("not a substrate contract"), "{}", stderr(&out));
    assert_eq!(read(&root, "docs/notes.json"), "{\"owner\": \"platform team\"}\n");
    let out = with_stdin(
        &root,
        &["contract", "import", "--env", "staging", "--force", "-"],
        &input,
    );
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    assert!(read(&root, "docs/notes.json").contains("\"substrate\""));

    // A new folder is made; a YAML path gets YAML, which the platform reads.
    point("contracts/new/staging.yaml");
    let out = import();
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    let yaml = read(&root, "contracts/new/staging.yaml");
    assert!(
        yaml.contains("client_key:\n  sensitive: true\n  type: string\n"),
        "{yaml}"
    );
    assert!(!yaml.contains(SECRET));
    let out = strata(&root, &["check", "--env", "staging"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
}

/// SEC002 reports each held value at its line and never shows it; a
/// contract git ignores (never committed) is not reported; import fixes it.
#[test]
fn a_contract_that_holds_a_sensitive_value_is_sec002_until_imported() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let input = tofu_output(root, "staging");
    write(root, "contracts/staging.json", &input);
    let key_line = input
        .lines()
        .position(|l| l.contains(&format!("{SECRET}-client_key")))
        .unwrap()
        + 1;
    for format in ["text", "json", "sarif", "github"] {
        let out = strata(root, &["check", "--env", "staging", "--format", format]);
        assert_eq!(out.status.code(), Some(1), "{format}: {}", all(&out));
        assert!(all(&out).contains("SEC002"), "{format}: {}", all(&out));
        assert!(
            !all(&out).contains(SECRET),
            "{format} printed the secret: {}",
            all(&out)
        );
    }
    let out = strata(root, &["check", "--env", "staging", "--format", "json"]);
    let found: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let sec002: Vec<(String, u64)> = found["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "SEC002")
        .map(|d| (d["file"].as_str().unwrap().to_owned(), d["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(sec002.len(), 3, "{sec002:?}");
    assert!(
        sec002.contains(&("contracts/staging.json".to_owned(), key_line as u64)),
        "{sec002:?} (the key's value is at line {key_line})"
    );
    let text = stderr(&strata(root, &["check", "--env", "staging"]));
    assert!(text.contains("strata contract import --env staging -"), "{text}");

    // Ignored by git, the file is never committed: no finding.
    git(root, &["init", "-q"]);
    write(root, ".gitignore", "contracts/staging.json\n");
    let out = strata(root, &["check", "--env", "staging"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));

    // Committed, then imported: fixed.
    std::fs::remove_file(root.join(".gitignore")).unwrap();
    assert_eq!(strata(root, &["check", "--env", "staging"]).status.code(), Some(1));
    let out = with_stdin(root, &["contract", "import", "--env", "staging", "-"], &input);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    let out = strata(root, &["check", "--env", "staging"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
}

/// A stack that prints no `substrate` output (one written before ADR 0032
/// asked for it): the contract takes the environment's, says so, and the
/// platform checks with it; with the output, the same bytes are written.
#[test]
fn outputs_without_a_substrate_take_the_environments() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let with = tofu_output(root, "staging");
    let mut without: Value = serde_json::from_str(&with).unwrap();
    without.as_object_mut().unwrap().remove("substrate");
    let without = serde_json::to_string_pretty(&without).unwrap();
    let out = with_stdin(root, &["contract", "import", "--env", "staging", "-"], &without);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    assert!(
        stderr(&out).contains(
            "the outputs have no `substrate`: the contract says `talos`, the substrate of environment staging"
        ),
        "{}",
        stderr(&out)
    );
    let written = read(root, "contracts/staging.json");
    let contract: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(contract["substrate"]["value"], "talos");
    assert!(!written.contains(SECRET));
    let out = with_stdin(root, &["contract", "import", "--env", "staging", "-"], &with);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    assert_eq!(
        read(root, "contracts/staging.json"),
        written,
        "the same contract either way"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--root")
        .arg(root)
        .args(["check", "--env", "staging"])
        .env("STRATA_TODAY", "2026-12-02")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(2), "{}", stderr(&out));
}
