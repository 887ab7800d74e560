//! No sensitive contract output reaches anything strata writes or prints,
//! whatever form it takes (SEC001's promise). Sentinels are planted in the
//! contracts of three environments — `tofu output -json` and the plain
//! form — and copied into values and manifests, raw and encoded. Every
//! output file of `strata render`, the standard output and error of
//! `render` and `check` (every `--format`), of `explain` and of `diff`
//! (every `--format`) is then searched for each sentinel in each of its
//! forms ([`forms`]).

mod common;

use std::path::Path;
use std::process::Output;

use common::*;
use serde_json::{Value, json};

// Contract sentinels: none may appear anywhere.

/// staging (tofu): control characters, a tab, quotes, a backslash and the
/// characters Go's JSON encoder escapes.
const CTRL: &str = "ctl-S3NT\t\"q\"\\b<&>\u{1b}-end";
/// staging (tofu): one line of a multi-line key.
const PEM_LINE: &str = "STRATASENTINELpemLINE0123456789abcdefABCDEFxyz";
/// production (tofu): a long text with spaces, which YAML folds over lines.
const LONG: &str =
    "sentinel phrase which folds over several lines when written narrow alpha bravo charlie delta echo foxtrot golf";
/// production (tofu, `map(string)`): a key and a leaf of a sensitive mapping.
const MAP_KEY: &str = "SENTINEL-map-key-prod-7Hq";
const MAP_LEAF: &str = "SENTINEL-map-leaf-prod-Kw2";
/// production (tofu, a number).
const NUMBER: &str = "918273645";
/// dev (plain form).
const PLAIN: &str = "SENTINEL-plain-dev-token-Xy9";
/// dev (plain form): too short to search for inside text; found where a
/// whole value equals it.
const SHORT: &str = "Zq7";

fn pem() -> String {
    format!(
        "-----BEGIN PRIVATE KEY-----\n{PEM_LINE}\nAAAAsecondLINEofKEYmaterial9876543210zz\n-----END PRIVATE KEY-----\n"
    )
}

fn contract_sentinels() -> Vec<String> {
    [CTRL, &pem(), LONG, MAP_KEY, MAP_LEAF, NUMBER, PLAIN, SHORT]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

// The data of Secret-shaped content (not contract outputs): a diff and
// `explain` never show it.
const EXTRA: [&str; 2] = ["SENTINEL-extraobjects-pass-v1", "SENTINEL-extraobjects-pass-v2"];
const EXTRA_TEXT: [&str; 2] = ["SENTINEL-extratext-pass-v1", "SENTINEL-extratext-pass-v2"];
const APPLIED: [&str; 2] = ["SENTINEL-last-applied-pass-v1", "SENTINEL-last-applied-pass-v2"];

// ---------------------------------------------------------------------------
// The forms of a sentinel, written once.

const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn b64(bytes: &[u8], table: &[u8; 64], pad: bool) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(table[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
        if pad {
            out.push_str(&"=".repeat(3 - chunk.len()));
        }
    }
    out
}

fn json_inner(s: &str) -> String {
    let j = serde_json::to_string(s).unwrap();
    j[1..j.len() - 1].to_owned()
}

/// As Go's encoding/json writes it (Helm's `toJson`, kubectl's annotations).
fn go_json_inner(s: &str) -> String {
    json_inner(s)
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The inside of a YAML double-quoted scalar.
fn yaml_double_inner(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '"' => "\\\"".to_owned(),
            '\\' => "\\\\".to_owned(),
            '\t' => "\\t".to_owned(),
            '\n' => "\\n".to_owned(),
            '\u{1b}' => "\\e".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

/// A long text folded at spaces into lines of at most 40 characters, as a
/// YAML folded scalar holds it.
fn folded(s: &str) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in s.split(' ') {
        let last = lines.last_mut().unwrap();
        if !last.is_empty() && last.len() + word.len() + 1 > 40 {
            lines.push(word.to_owned());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// Every form in which a sentinel could be printed: raw, JSON-escaped
/// (serde's and Go's), YAML double- and single-quoted, base64 and base64url
/// — of the whole value and of each line of a multi-line one — and each
/// line of a long one folded. A sentinel under six characters is looked
/// for raw only: its encodings are short enough to occur by chance.
fn forms(s: &str) -> Vec<String> {
    let mut parts = vec![s.to_owned()];
    if s.contains('\n') {
        parts.extend(
            s.lines()
                .map(str::trim)
                .filter(|l| l.len() >= 16 && !l.starts_with("-----"))
                .map(str::to_owned),
        );
    }
    let mut out = Vec::new();
    for p in &parts {
        out.push(p.clone());
        if p.chars().count() < 6 {
            continue;
        }
        out.extend([
            json_inner(p),
            go_json_inner(p),
            yaml_double_inner(p),
            p.replace('\'', "''"),
            b64(p.as_bytes(), STD, true),
            b64(p.as_bytes(), URL, false),
        ]);
    }
    if s.len() > 60 && !s.contains('\n') {
        out.extend(folded(s));
    }
    out.sort();
    out.dedup();
    out
}

/// Fails if `text` holds any form of any of `sentinels`.
fn assert_clean(what: &str, text: &str, sentinels: &[String]) {
    for s in sentinels {
        for f in forms(s) {
            assert!(!text.contains(&f), "{what} shows {f:?}, a form of a sentinel:\n{text}");
        }
    }
}

fn all_output(o: &Output) -> String {
    format!("{}\n{}", stdout(o), stderr(o))
}

/// Every file under `rendered/`, as one text.
fn rendered_files(root: &Path) -> String {
    snapshot_tree(&root.join("rendered"))
        .into_iter()
        .map(|(path, bytes)| format!("== {path}\n{}\n", String::from_utf8_lossy(&bytes)))
        .collect()
}

// ---------------------------------------------------------------------------
// The platform.

const TRAEFIK: &str = "gitops/platform/traefik";

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

fn append(root: &Path, rel: &str, text: &str) {
    let old = read(root, rel);
    write(root, rel, &format!("{old}\n{text}"));
}

/// Adds the sentinels to the three contracts: staging and production in
/// the tofu form, dev rewritten in the plain form.
fn plant_contracts(root: &Path) {
    let tofu = |env: &str, add: Value| {
        let rel = format!("contracts/{env}.json");
        let mut c: Value = serde_json::from_str(&read(root, &rel)).unwrap();
        for (k, v) in add.as_object().unwrap() {
            c[k] = v.clone();
        }
        write(root, &rel, &serde_json::to_string_pretty(&c).unwrap());
    };
    tofu(
        "staging",
        json!({
            "db_password": {"sensitive": true, "type": "string", "value": CTRL},
            "tls_key": {"sensitive": true, "type": "string", "value": pem()},
        }),
    );
    tofu(
        "production",
        json!({
            "recovery_phrase": {"sensitive": true, "type": "string", "value": LONG},
            "db": {"sensitive": true, "type": ["map", "string"], "value": {MAP_KEY: MAP_LEAF}},
            "port_secret": {"sensitive": true, "type": "number", "value": NUMBER.parse::<u64>().unwrap()},
        }),
    );
    // dev: a plain mapping; sensitive outputs are `{value, sensitive: true}`.
    let old: Value = serde_json::from_str(&read(root, "contracts/dev.json")).unwrap();
    let mut plain = serde_json::Map::new();
    for (k, rec) in old.as_object().unwrap() {
        if rec["sensitive"] == true {
            plain.insert(k.clone(), json!({"value": rec["value"], "sensitive": true}));
        } else {
            plain.insert(k.clone(), rec["value"].clone());
        }
    }
    plain.insert("api_token".into(), json!({"value": PLAIN, "sensitive": true}));
    plain.insert(
        "pin".into(),
        json!({"value": SHORT, "sensitive": true, "type": "string"}),
    );
    write(
        root,
        "contracts/dev.json",
        &serde_json::to_string_pretty(&plain).unwrap(),
    );
}

/// The staging values that copy each contract sentinel, in several forms.
fn leaky_values() -> String {
    let fold: Vec<String> = folded(LONG).iter().map(|l| format!("    {l}")).collect();
    format!(
        "leak:\n  ctrl: \"{}\"\n  pem: |\n    {PEM_LINE}\n  folded: >-\n{}\n  other_env: {MAP_LEAF}\n  {MAP_KEY}: key-holds-it\n  port: {NUMBER}\n  pin: {SHORT}\n  plain: {PLAIN}\n",
        yaml_double_inner(CTRL),
        fold.join("\n")
    )
}

/// A ConfigMap and a Secret that carry sentinels JSON-escaped (serde's and
/// Go's) and base64-encoded.
fn leaky_manifests(root: &Path) -> Vec<String> {
    let go = serde_json::to_string(&json!({"data": {"k": CTRL}}))
        .unwrap()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    let config = serde_json::to_string(&json!({"password": CTRL})).unwrap();
    let b64_plain = b64(PLAIN.as_bytes(), STD, true);
    let b64url_inside = b64(format!("user:{MAP_LEAF}").as_bytes(), URL, false);
    write(
        root,
        &format!("{TRAEFIK}/manifests/configmap-leaky.yaml"),
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leaky\n  namespace: traefik\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{go}'\ndata:\n  config.json: '{config}'\n  b64: {b64_plain}\n  b64url: {b64url_inside}\n"
        ),
    );
    let b64_long = b64(LONG.as_bytes(), STD, true);
    write(
        root,
        &format!("{TRAEFIK}/manifests/secret-leaky.yaml"),
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: leaky\n  namespace: traefik\ndata:\n  phrase: {b64_long}\n"
        ),
    );
    vec![go, config, b64_plain, b64url_inside, b64_long]
}

/// Copies every contract sentinel into values and manifests; returns the
/// encoded texts planted, which must not be printed either.
fn plant_leaks(root: &Path) -> Vec<String> {
    append(root, &format!("{TRAEFIK}/values-staging.yaml"), &leaky_values());
    append(
        root,
        &format!("{TRAEFIK}/values.yaml"),
        &format!("other_env_base: {MAP_LEAF}\n"),
    );
    leaky_manifests(root)
}

/// Helm values that embed a Secret, as an object and as text, and a Secret
/// manifest whose last-applied-configuration annotation repeats its data.
fn plant_secret_shapes(root: &Path, v: usize) {
    let values = format!("{TRAEFIK}/values-staging.yaml");
    let text = read(root, &values);
    if text.contains("extraObjects:") {
        let text = text.replace(EXTRA[0], EXTRA[v]).replace(EXTRA_TEXT[0], EXTRA_TEXT[v]);
        write(root, &values, &text);
    } else {
        append(
            root,
            &values,
            &format!(
                "extraObjects:\n  - apiVersion: v1\n    kind: Secret\n    metadata: {{name: extra, namespace: traefik}}\n    stringData:\n      password: {}\nextraManifest: |\n  apiVersion: v1\n  kind: Secret\n  metadata:\n    name: extra-text\n  stringData:\n    password: {}\n",
                EXTRA[v], EXTRA_TEXT[v]
            ),
        );
    }
    let applied = serde_json::to_string(&json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "applied", "namespace": "traefik"},
        "stringData": {"password": APPLIED[v]},
    }))
    .unwrap();
    write(
        root,
        &format!("{TRAEFIK}/manifests/secret-applied.yaml"),
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\n  namespace: traefik\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{applied}'\nstringData:\n  password: {}\n",
            APPLIED[v]
        ),
    );
}

fn shape_sentinels() -> Vec<String> {
    EXTRA
        .iter()
        .chain(&EXTRA_TEXT)
        .chain(&APPLIED)
        .map(|s| s.to_string())
        .collect()
}

/// The 1-based line of `file` that holds `needle`.
fn line_of(root: &Path, file: &str, needle: &str) -> u64 {
    let text = read(root, file);
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not in {file}")) as u64
        + 1
}

// ---------------------------------------------------------------------------
// The tests.

/// A platform that copies every sentinel: render refuses with SEC001 at
/// each copy, writes nothing, and neither it nor `check`, in any format,
/// prints a sentinel.
#[test]
fn render_and_check_never_print_a_secret_in_any_format() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    plant_contracts(root);
    let mut forbidden = contract_sentinels();
    forbidden.extend(plant_leaks(root));

    let out = strata(root, &["render"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!root.join("rendered").exists(), "render wrote a tree");
    assert_clean("render", &all_output(&out), &forbidden);
    assert!(stderr(&out).contains("<sensitive value redacted>"), "{}", stderr(&out));

    for format in ["text", "json", "sarif", "github"] {
        let out = strata(root, &["check", "--format", format]);
        assert_eq!(out.status.code(), Some(1), "{format}: {}", stderr(&out));
        assert_clean(&format!("check --format {format}"), &all_output(&out), &forbidden);
    }

    // Every copy is found, in staging, whichever environment's secret it is.
    let j: Value = serde_json::from_str(&stdout(&strata(root, &["check", "--format", "json"]))).unwrap();
    let found: Vec<(String, u64)> = j["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "SEC001" && format!("{}{}", d["environment"], d["environments"]).contains("staging"))
        .map(|d| (d["file"].as_str().unwrap().to_owned(), d["line"].as_u64().unwrap()))
        .collect();
    let values = format!("{TRAEFIK}/values-staging.yaml");
    let mut want: Vec<(String, u64)> = [
        "ctrl:",
        PEM_LINE,
        "sentinel phrase",
        "other_env:",
        MAP_KEY,
        "port:",
        "pin:",
        "plain:",
    ]
    .iter()
    .map(|n| (values.clone(), line_of(root, &values, n)))
    .collect();
    want.push((
        format!("{TRAEFIK}/values.yaml"),
        line_of(root, &format!("{TRAEFIK}/values.yaml"), "other_env_base"),
    ));
    for (file, needle) in [
        ("configmap-leaky.yaml", "last-applied"),
        ("secret-leaky.yaml", "phrase:"),
    ] {
        let f = format!("{TRAEFIK}/manifests/{file}");
        want.push((f.clone(), line_of(root, &f, needle)));
    }
    for w in &want {
        assert!(found.contains(w), "no SEC001 at {w:?}; found {found:?}");
    }
    // The other copies in the ConfigMap are in the same object: one finding.
}

/// Input errors of every stage quote values and show lines: a schema error
/// (whose message quotes the value, cut short when long), a template error
/// on a line holding a secret, and a YAML syntax error on one.
#[test]
fn input_errors_never_print_a_secret() {
    type Edit = fn(&Path);
    let cases: [(&str, Edit); 3] = [
        ("a values schema error", |root| {
            append(root, &format!("{TRAEFIK}/values-staging.yaml"), &leaky_values());
            let int = json!({"type": "integer"});
            let schema = json!({"type": "object", "properties": {"leak": {"type": "object", "properties": {
                "ctrl": int, "pem": int, "folded": int, "plain": int, "pin": int, "port": {"type": "string"},
            }}}});
            write(root, &format!("{TRAEFIK}/values.schema.json"), &schema.to_string());
        }),
        ("a template error", |root| {
            write(
                root,
                &format!("{TRAEFIK}/manifests/configmap-tpl.yaml.j2"),
                &format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tpl\n  namespace: traefik\ndata:\n  token: \"{PLAIN}-{{{{ no_such_variable }}}}\"\n"
                ),
            );
        }),
        ("a YAML syntax error", |root| {
            append(
                root,
                &format!("{TRAEFIK}/values.yaml"),
                &format!("broken: \"{MAP_LEAF}\" trailing: [\n"),
            );
        }),
    ];
    for (what, edit) in cases {
        let tmp = scratch("homelab");
        let root = tmp.path();
        plant_contracts(root);
        edit(root);
        let out = strata(root, &["render"]);
        assert_eq!(out.status.code(), Some(2), "{what}: {}", all_output(&out));
        assert!(!root.join("rendered").exists());
        assert_clean(&format!("render with {what}"), &all_output(&out), &contract_sentinels());
        // The error is still there, at its file.
        assert!(stderr(&out).contains(TRAEFIK), "{what}: {}", stderr(&out));
        for format in ["text", "json", "sarif", "github"] {
            let out = strata(root, &["check", "--format", format]);
            assert_eq!(out.status.code(), Some(2), "{what}, {format}: {}", all_output(&out));
            assert_clean(
                &format!("check --format {format} with {what}"),
                &all_output(&out),
                &contract_sentinels(),
            );
        }
    }
}

/// `diff` in every format, from a clean base to a head that copies every
/// sentinel and changes Secret data held in Helm values, in values text and
/// in a last-applied-configuration annotation.
#[test]
fn diff_never_prints_a_secret_or_secret_data_in_any_format() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    plant_contracts(root);
    plant_secret_shapes(root, 0);
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let mut forbidden = contract_sentinels();
    forbidden.extend(plant_leaks(root));
    plant_secret_shapes(root, 1);
    forbidden.extend(shape_sentinels());
    for format in ["text", "markdown", "json"] {
        let out = strata(root, &["diff", "--base", "HEAD", "--why", "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        let all = all_output(&out);
        assert_clean(&format!("diff --format {format}"), &all, &forbidden);
        // What changed is named, not shown: the Secret, its annotation, the
        // object in the HelmRelease's values and in the Application's
        // values text, and the manifest held as text, each. The leaky
        // values still show, redacted.
        let named = all.matches("password: changed (value not shown)").count();
        assert!(named >= 5, "{format} names {named} changes:\n{all}");
        assert!(all.contains("<sensitive value redacted>"), "{format}:\n{all}");
        assert!(all.contains("key-holds-it"), "{format}:\n{all}");
    }
}

/// `explain` prints values: those holding a secret of any environment, and
/// Helm values embedding a Secret, are shown redacted.
#[test]
fn explain_never_prints_a_secret() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    plant_contracts(root);
    let mut forbidden = contract_sentinels();
    forbidden.extend(plant_leaks(root));
    plant_secret_shapes(root, 0);
    forbidden.extend(shape_sentinels());
    for (env, path) in [
        ("staging", "leak"),
        ("staging", "leak.pin"),
        ("staging", "leak.folded"),
        ("staging", "extraObjects"),
        ("staging", "extraManifest"),
        ("dev", "other_env_base"),
        ("staging", "leak.no_such_key"),
    ] {
        let out = strata(root, &["explain", "--env", env, "traefik", path]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{path}: {}", all_output(&out));
        assert_clean(&format!("explain {path} in {env}"), &all_output(&out), &forbidden);
    }
    let out = strata(root, &["explain", "--env", "staging", "traefik", "leak"]);
    assert!(stdout(&out).contains("key-holds-it"), "{}", stdout(&out));
}

/// A plain-form contract marks an output sensitive with
/// `{value, sensitive: true}`: no template sees it, a template that names it
/// is an error naming it, and the rendered tree never holds it.
#[test]
fn a_plain_contracts_sensitive_output_is_not_rendered() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    plant_contracts(root);
    // Contracts that hold values, as `tofu output -json > FILE` writes them
    // in a CI job, which git ignores there: not committed, no SEC002.
    git(root, &["init", "-q"]);
    write(root, ".gitignore", "contracts/\n");
    let manifest = format!("{TRAEFIK}/manifests/configmap-contract.yaml.j2");
    write(
        root,
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: contract\n  namespace: traefik\ndata:\n  contract.json: '{{ contract | tojson }}'\n",
    );
    let out = strata(root, &["render", "--env", "dev"]);
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    let files = rendered_files(root);
    assert!(
        files.contains("strata-dev"),
        "the contract's ordinary outputs are rendered"
    );
    assert!(!files.contains("api_token") && !files.contains("\"pin\""), "{files}");
    assert_clean("the rendered tree", &files, &contract_sentinels());
    assert_clean("render", &all_output(&out), &contract_sentinels());

    write(
        root,
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: contract\n  namespace: traefik\ndata:\n  token: \"{{ contract.api_token }}\"\n",
    );
    let out = strata(root, &["render", "--env", "dev"]);
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert!(
        stderr(&out).contains("sensitive contract output `api_token`"),
        "{}",
        stderr(&out)
    );
    assert_clean("render", &all_output(&out), &contract_sentinels());
}

/// SEC001 is not the substrate's to turn off nor a waiver's to silence: a
/// repository's substrate type that does not list it, and a waiver of it,
/// still leave the leak refused, and the waiver is an error.
#[test]
fn no_substrate_type_or_waiver_turns_sec001_off() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    plant_contracts(root);
    append(
        root,
        &format!("{TRAEFIK}/values-staging.yaml"),
        &format!("copied: {PLAIN}\n"),
    );
    let talos = std::fs::read_to_string(repo().join("substrates/talos.yaml")).unwrap();
    let rules = talos.lines().find(|l| l.starts_with("rules:")).unwrap();
    write(root, "substrates/talos.yaml", &talos.replace(rules, "rules: [TOPO001]"));
    append(
        root,
        "environments/staging.yaml",
        "waivers:\n  - rule: SEC001\n    component: traefik\n    reason: the copy is known and accepted\n    expires: 2027-12-31\n",
    );
    let out = strata(root, &["render", "--env", "staging"]);
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    assert!(!root.join("rendered").exists());
    let err = stderr(&out);
    assert!(err.contains("error[SEC001]"), "{err}");
    assert!(err.contains("SEC001 cannot be waived"), "{err}");
    assert_clean("render", &all_output(&out), &contract_sentinels());
}
