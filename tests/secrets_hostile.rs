//! Hostile sensitive values: texts a YAML writer folds over lines or holds
//! in a literal block, and random texts of every length with spaces,
//! quotes, line breaks and non-ASCII characters, planted as sensitive
//! contract outputs (in the plain YAML form and in `tofu output -json`)
//! and copied into values. No output of `check` (every format), `diff`
//! (every format) or `explain` may show one, in any form a printer gives
//! it, nor any piece a printer may cut it into
//! ([`strata::secrets::pieces`]).

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// What stands in for a secret.
const MARK: &str = "<sensitive value redacted>";

/// The longest a hostile case may take.
const BUDGET: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------
// A deterministic generator of texts (splitmix64): the same seed, the same
// texts, on every machine.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick(&mut self, from: &[char]) -> char {
        from[self.below(from.len())]
    }

    fn char(&mut self, breaks: bool) -> char {
        const WORD: &[char] = &[
            'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'm', 'n', 'p', 'q', 'r', 's', 't', 'u', 'v', 'w',
            'x', 'y', 'z', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'J', 'K', 'L', 'M', 'N', 'P', 'Q', 'R', 'S', 'T',
            'U', 'V', 'W', 'X', 'Y', 'Z', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
        ];
        const UNICODE: &[char] = &['é', 'ß', 'Ж', 'ø', 'ñ', '日', '本', '語', '🙂', '∑'];
        const MARKS: &[char] = &[
            '-', '_', ':', '#', '/', '\\', '{', '}', '[', ']', ',', '&', '*', '!', '%', '@', '`', '|', '>', '<', '=',
            '?', '+', '.',
        ];
        match self.below(100) {
            0..=61 => self.pick(WORD),
            62..=73 => ' ',
            74..=76 => '"',
            77..=78 => '\'',
            79..=83 if breaks => '\n',
            79..=83 => ' ',
            84..=91 => self.pick(UNICODE),
            _ => self.pick(MARKS),
        }
    }

    /// A text of `len` characters that is not all whitespace (which holds
    /// no secret); one in three has no line break.
    fn secret(&mut self, len: usize) -> String {
        let breaks = self.below(3) > 0;
        loop {
            let s: String = (0..len).map(|_| self.char(breaks)).collect();
            if !s.trim().is_empty() {
                return s;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Writing a text as a YAML scalar, in the style asked for where the text
// allows it.

#[derive(Clone, Copy, Debug)]
enum Style {
    /// `>-`, broken at single spaces.
    Folded,
    /// `|`, with an indentation indicator and the chomping the text needs.
    Literal,
    /// JSON's string, which YAML reads as a double-quoted scalar.
    Quoted,
}

fn foldable(s: &str) -> bool {
    s.contains(' ') && !s.contains(['\n', '\t']) && !s.starts_with(' ') && !s.ends_with(' ') && !s.contains("  ")
}

/// `key: <text>` (and the lines of a block) for a mapping at `indent`.
fn scalar(key: &str, text: &str, indent: usize, style: Style, rng: &mut Rng) -> String {
    let pad = " ".repeat(indent);
    let body = " ".repeat(indent + 2);
    match style {
        Style::Folded if foldable(text) => {
            let mut lines = vec![String::new()];
            for (i, word) in text.split(' ').enumerate() {
                let last = lines.last_mut().unwrap();
                if i > 0 && rng.below(3) == 0 {
                    lines.push(word.to_owned());
                } else {
                    if i > 0 {
                        last.push(' ');
                    }
                    last.push_str(word);
                }
            }
            let lines: Vec<String> = lines.iter().map(|l| format!("{body}{l}\n")).collect();
            format!("{pad}{key}: >-\n{}", lines.concat())
        }
        Style::Literal if text.contains('\n') => {
            let content = text.trim_end_matches('\n');
            let chomp = match text.len() - content.len() {
                0 => "-",
                1 => "",
                _ => "+",
            };
            let mut out = format!("{pad}{key}: |2{chomp}\n");
            for line in content.split('\n') {
                if !line.is_empty() {
                    out.push_str(&body);
                    out.push_str(line);
                }
                out.push('\n');
            }
            for _ in 1..(text.len() - content.len()) {
                out.push('\n');
            }
            out
        }
        _ => format!("{pad}{key}: {}\n", serde_json::to_string(text).unwrap()),
    }
}

/// Checks that `yaml` reads back as `want` at `path` with strata's reader.
fn reads_back(yaml: &str, path: &[&str], want: &[(String, String)]) {
    let node = strata::yaml::parse(&Arc::from("generated.yaml"), yaml)
        .unwrap_or_else(|e| panic!("the generated YAML does not parse: {e:?}\n{yaml}"));
    let mut v = node.to_json();
    for p in path {
        v = v[*p].clone();
    }
    for (key, text) in want {
        assert_eq!(
            v[key].as_str(),
            Some(text.as_str()),
            "{key} does not read back:\n{yaml}"
        );
    }
}

// ---------------------------------------------------------------------------
// The forms a leak could take.

const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn b64(bytes: &[u8], table: &[u8; 64]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(table[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn json_inner(s: &str) -> String {
    let j = serde_json::to_string(s).unwrap();
    j[1..j.len() - 1].to_owned()
}

/// Every form of a secret of six characters or more that must not be
/// printed: raw and trimmed, JSON-escaped (serde's and Go's), YAML single-
/// quoted, base64 and base64url, and its pieces.
fn forms(secret: &str) -> Vec<String> {
    let mut out = Vec::new();
    for s in [secret, secret.trim()] {
        let go = json_inner(s)
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026");
        out.extend([
            s.to_owned(),
            json_inner(s),
            go,
            s.replace('\'', "''"),
            b64(s.as_bytes(), STD),
            b64(s.as_bytes(), URL),
        ]);
    }
    out.extend(strata::secrets::pieces(secret));
    out.retain(|f| f.chars().count() >= 6);
    out.sort();
    out.dedup();
    out
}

/// One planted secret: the values key that copies it, and its text.
struct Planted {
    key: String,
    text: String,
}

/// Fails if `text` shows a planted secret: any form of one of six
/// characters or more anywhere; a shorter one where its key is printed.
fn assert_clean(what: &str, text: &str, planted: &[Planted]) {
    for p in planted {
        let secret = p.text.trim();
        if secret.chars().count() >= 6 {
            for f in forms(&p.text) {
                assert!(
                    !text.contains(&f),
                    "{what} shows {f:?}, a form of the secret {:?} (copied at {}):\n{text}",
                    p.text,
                    p.key
                );
            }
            continue;
        }
        for line in text.lines() {
            let Some((_, tail)) = line.split_once(&format!("{}:", p.key)) else {
                continue;
            };
            let tail = tail.replace(MARK, "");
            let harmless = secret.chars().all(|c| " :\"',\\".contains(c));
            assert!(
                harmless || (!tail.contains(secret) && !tail.contains(&json_inner(secret))),
                "{what} shows the short secret {secret:?} at {}: {line}",
                p.key
            );
        }
    }
}

/// Runs strata on `root`; returns its output and the processor time it
/// took (the wall time where `/proc` cannot tell): a busy machine stretches
/// the wall time of a run, not the work it does.
fn timed(root: &Path, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--root")
        .arg(root)
        .args(["--color", "never"])
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run strata");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).expect("read");
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    // Once it has exited, and before it is reaped, the kernel still tells
    // its user and system time (in ticks of 1/100 s) in /proc/<pid>/stat.
    let stat = format!("/proc/{}/stat", child.id());
    let mut cpu = None;
    while let Ok(text) = std::fs::read_to_string(&stat) {
        let fields: Vec<&str> = text
            .rsplit_once(')')
            .map_or("", |(_, f)| f)
            .split_whitespace()
            .collect();
        if fields.first() == Some(&"Z") {
            let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
            cpu = Some(Duration::from_millis((ticks(11) + ticks(12)) * 10));
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = child.wait().expect("wait");
    let output = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (output, cpu.unwrap_or_else(|| started.elapsed()))
}

fn all_output(o: &Output) -> String {
    format!("{}\n{}", stdout(o), stderr(o))
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

// ---------------------------------------------------------------------------
// The platform: dev's contract in the plain YAML form, production's in
// `tofu output -json`; every secret copied into traefik's base values.

const VALUES: &str = "gitops/platform/traefik/values.yaml";

/// The dev contract as plain YAML, its sensitive outputs `texts` in the
/// styles given; the environment pointed at it.
fn plant_plain_contract(root: &Path, texts: &[(String, String)], rng: &mut Rng) {
    let old: Value = serde_json::from_str(&read(root, "contracts/dev.json")).unwrap();
    let mut yaml = String::from("# dev's outputs, written by hand in the plain form\n");
    for (k, rec) in old.as_object().unwrap() {
        if rec["sensitive"] == true {
            yaml.push_str(&format!("{k}: {{sensitive: true, type: string}}\n"));
        } else {
            yaml.push_str(&format!("{k}: {}\n", rec["value"]));
        }
    }
    for (i, (name, text)) in texts.iter().enumerate() {
        let style = [Style::Folded, Style::Literal, Style::Quoted][i % 3];
        yaml.push_str(&format!("{name}:\n  sensitive: true\n  type: string\n"));
        yaml.push_str(&scalar("value", text, 2, style, rng));
    }
    for (name, text) in texts {
        reads_back(&yaml, &[name.as_str()], &[("value".to_owned(), text.clone())]);
    }
    std::fs::remove_file(root.join("contracts/dev.json")).unwrap();
    write(root, "contracts/dev.yaml", &yaml);
    let env = read(root, "environments/dev.yaml").replace("contracts/dev.json", "contracts/dev.yaml");
    write(root, "environments/dev.yaml", &env);
}

/// Production's contract with sensitive outputs `texts` added, as tofu prints it.
fn plant_tofu_contract(root: &Path, texts: &[(String, String)]) {
    let rel = "contracts/production.json";
    let mut c: Value = serde_json::from_str(&read(root, rel)).unwrap();
    for (name, text) in texts {
        c[name] = json!({"sensitive": true, "type": "string", "value": text});
    }
    write(root, rel, &serde_json::to_string_pretty(&c).unwrap());
}

/// The values that copy every secret: whole, in each style, and (from six
/// characters) inside a longer text.
fn leaks(planted: &[Planted], rng: &mut Rng) -> String {
    let mut yaml = String::from("leak:\n");
    for (i, p) in planted.iter().enumerate() {
        let style = [Style::Literal, Style::Quoted, Style::Folded][i % 3];
        yaml.push_str(&scalar(&p.key, &p.text, 2, style, rng));
        if p.text.trim().chars().count() >= 6 {
            let inside = format!("before {} after", p.text);
            yaml.push_str(&scalar(&format!("{}_inside", p.key), &inside, 2, Style::Quoted, rng));
        }
    }
    let want: Vec<(String, String)> = planted.iter().map(|p| (p.key.clone(), p.text.clone())).collect();
    reads_back(&yaml, &["leak"], &want);
    yaml
}

/// Plants `n` random secrets drawn from `seed`, half in each contract;
/// commits the platform, then copies them into values. Returns them.
/// Secrets are `shortest` characters long or longer: a set with secrets
/// too short to search for makes strata parse every structured text for
/// them, a set without does not, and both must hide every secret.
fn random_platform(root: &Path, seed: u64, n: usize, shortest: usize) -> Vec<Planted> {
    let mut rng = Rng(seed);
    let mut planted = Vec::new();
    let (mut plain, mut tofu) = (Vec::new(), Vec::new());
    for i in 0..n {
        // Every length from the shortest to six, then any up to 200.
        let len = if i + shortest <= 6 {
            i + shortest
        } else {
            shortest + rng.below(201 - shortest)
        };
        let text = rng.secret(len);
        let name = format!("secret_{i:02}");
        if i % 2 == 0 {
            plain.push((name, text.clone()));
        } else {
            tofu.push((name, text.clone()));
        }
        planted.push(Planted {
            key: format!("k{i:02}"),
            text,
        });
    }
    plant_plain_contract(root, &plain, &mut rng);
    plant_tofu_contract(root, &tofu);
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let values = read(root, VALUES);
    write(root, VALUES, &format!("{values}\n{}", leaks(&planted, &mut rng)));
    planted
}

/// Every output format of check, diff and explain on the platform.
fn every_output(root: &Path) -> Vec<(String, Output)> {
    let mut runs: Vec<(String, Vec<&str>)> = Vec::new();
    for f in ["text", "json", "sarif", "github"] {
        runs.push((
            format!("check --format {f}"),
            vec!["check", "--env", "dev", "--format", f],
        ));
    }
    for f in ["text", "markdown", "json"] {
        runs.push((
            format!("diff --format {f}"),
            vec!["diff", "--base", "HEAD", "--env", "dev", "--why", "--format", f],
        ));
    }
    for env in ["dev", "production"] {
        runs.push((
            format!("explain in {env}"),
            vec!["explain", "--env", env, "traefik", "leak"],
        ));
    }
    runs.into_iter()
        .map(|(what, args)| {
            let (out, spent) = timed(root, &args);
            assert!(spent < BUDGET, "{what} took {spent:?}");
            (what, out)
        })
        .collect()
}

fn random_secrets_are_never_printed(seed: u64, shortest: usize) {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let planted = random_platform(root, seed, 30, shortest);
    for (what, out) in every_output(root) {
        assert!(!stderr(&out).contains("panicked"), "{what}: {}", stderr(&out));
        assert!(matches!(out.status.code(), Some(0 | 1)), "{what}: {}", all_output(&out));
        assert_clean(&what, &all_output(&out), &planted);
    }
    // The leaks were seen, and shown redacted.
    let diff = stdout(&strata(root, &["diff", "--base", "HEAD"]));
    assert!(diff.contains(MARK), "{diff}");
}

/// Secrets of one character to 200.
#[test]
fn random_secrets_of_any_length_are_never_printed() {
    random_secrets_are_never_printed(0x5eed_0001, 1);
}

/// Secrets of six characters to 200: no secret is too short to search for.
#[test]
fn random_searchable_secrets_are_never_printed() {
    random_secrets_are_never_printed(0x5eed_0002, 6);
}

// ---------------------------------------------------------------------------
// Credentials in URLs: a chart repository's, a mirror's, the git remote's,
// a value's and the proxies'. Random passwords, percent-encoded into each
// URL, are never printed, in any form, by any command.

/// A text percent-encoded as URL user information is written: every byte
/// but the unreserved ones escaped.
fn userinfo_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Plants `n` random passwords (from `seed`), each in a URL of another
/// place; returns them as written and as meant.
fn plant_url_credentials(root: &Path, seed: u64) -> Vec<Planted> {
    let mut rng = Rng(seed);
    let texts: Vec<String> = (0..5)
        .map(|_| {
            let len = 8 + rng.below(48);
            rng.secret(len)
        })
        .collect();
    let enc: Vec<String> = texts.iter().map(|t| userinfo_escape(t)).collect();
    // A chart repository and a mirror with credentials.
    let config = "gitops/platform/traefik/config.yaml";
    let text = read(root, config).replace(
        "repoURL: https://traefik.github.io/charts",
        &format!("repoURL: https://robot:{}@traefik.github.io/charts", enc[0]),
    );
    write(root, config, &text);
    let project = read(root, "strata.yaml");
    write(
        root,
        "strata.yaml",
        &format!(
            "{project}\ncharts:\n  mirrors:\n    https://charts.jetstack.io: https://mirror:{}@charts.mirror.example/jetstack\n",
            enc[1]
        ),
    );
    // The git remote an environment's engine reads, a token as the user.
    let env = read(root, "environments/dev.yaml").replace(
        "url: https://git.example.com/homelab/platform.git",
        &format!("url: https://{}@git.example.com/homelab/platform.git", enc[2]),
    );
    write(root, "environments/dev.yaml", &env);
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    // A value that holds a database URL, changed after the base.
    let values = read(root, VALUES);
    write(
        root,
        VALUES,
        &format!(
            "{values}\nleak:\n  db: \"postgres://app:{}@db.example:5432/app\"\n",
            enc[3]
        ),
    );
    texts
        .iter()
        .zip(&enc)
        .enumerate()
        .flat_map(|(i, (t, e))| {
            [
                Planted {
                    key: format!("url{i}"),
                    text: t.clone(),
                },
                Planted {
                    key: format!("url{i}"),
                    text: e.clone(),
                },
            ]
        })
        .collect()
}

/// `charts pull` with proxies that carry a credential: one strata cannot
/// use (an unsupported scheme), one it can that refuses the connection.
fn pulls_through_proxies(root: &Path, password: &str) -> Vec<(String, Output)> {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut out = Vec::new();
    for (var, value) in [
        ("https_proxy", format!("gopher://alice:{password}@proxy.example:70")),
        ("HTTPS_PROXY", format!("http://alice:{password}@127.0.0.1:{closed}")),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("--root")
            .arg(root)
            .args(["--color", "never", "--verbose", "charts", "pull"])
            .env("STRATA_TODAY", "2026-12-02")
            .env("PATH", common::charts::path_without_helm())
            .env_remove("STRATA_HELM")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env("NO_PROXY", "")
            .env(var, &value)
            .output()
            .expect("run strata");
        out.push((format!("charts pull with {var}"), o));
    }
    out
}

fn random_url_credentials_are_never_printed(seed: u64) {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let planted = plant_url_credentials(root, seed);
    // The fifth password stands in the proxies.
    let proxy = &planted[9].text;
    let mut runs = every_output(root);
    runs.extend(pulls_through_proxies(root, proxy));
    for (what, args) in [
        ("render", vec!["render", "--env", "dev"]),
        ("check --verbose", vec!["--verbose", "check"]),
    ] {
        runs.push((what.to_owned(), timed(root, &args).0));
    }
    for (what, out) in &runs {
        let all = all_output(out);
        assert!(!all.contains("panicked"), "{what}: {all}");
        assert_clean(what, &all, &planted);
    }
    // The URLs are still named, their credentials hidden.
    let diff = all_output(&strata(root, &["diff", "--base", "HEAD", "--env", "dev"]));
    assert!(diff.contains("postgres://<credentials>@db.example:5432/app"), "{diff}");
    let pull = all_output(&runs[runs.len() - 3].1);
    assert!(pull.contains("127.0.0.1") && pull.contains("(HTTPS_PROXY)"), "{pull}");
}

/// Random passwords with spaces, quotes, line breaks and non-ASCII
/// characters, percent-encoded into URLs everywhere strata reads one.
#[test]
fn random_url_credentials_are_never_printed_by_any_command() {
    random_url_credentials_are_never_printed(0x5eed_0045);
    random_url_credentials_are_never_printed(0x5eed_0046);
}

/// A passphrase that YAML folds (`>-`) and a key of short lines in a
/// literal block (`|`), sensitive outputs of a contract written in YAML
/// and copied into values: the diff writes the values folded at 80
/// columns, and neither is shown in any format.
#[test]
fn a_folded_or_literal_sensitive_output_is_never_shown_by_diff() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let phrase =
        "correct horse battery staple riding the long road home to the mountain cabin by the lake under the stars";
    let lines = "short line a1\nshort line b2\nshort line c3\n";
    let mut rng = Rng(7);
    plant_plain_contract(
        root,
        &[
            ("passphrase".to_owned(), phrase.to_owned()),
            ("recovery".to_owned(), lines.to_owned()),
        ],
        &mut rng,
    );
    let contract = read(root, "contracts/dev.yaml");
    assert!(
        contract.contains("value: >-") && contract.contains("value: |2\n"),
        "{contract}"
    );
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let values = read(root, VALUES);
    write(
        root,
        VALUES,
        &format!(
            "{values}\nleak:\n  phrase: {phrase}\n  lines: {}\n",
            serde_json::to_string(lines).unwrap()
        ),
    );
    let planted = [
        Planted {
            key: "phrase".into(),
            text: phrase.into(),
        },
        Planted {
            key: "lines".into(),
            text: lines.into(),
        },
    ];
    for format in ["text", "markdown", "json"] {
        let (out, spent) = timed(root, &["diff", "--base", "HEAD", "--env", "dev", "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        assert!(spent < BUDGET, "{format} took {spent:?}");
        let all = all_output(&out);
        assert_clean(&format!("diff --format {format}"), &all, &planted);
        for piece in ["the lake under the stars", "short line b2"] {
            assert!(!all.contains(piece), "{format} shows {piece:?}:\n{all}");
        }
        assert!(all.contains(MARK), "{format}:\n{all}");
    }
}

// ---------------------------------------------------------------------------
// A Secret's data where its release writes it again.

/// The password and token of the Secret below, at the base and at the head.
const PASSWORDS: [&str; 2] = ["first-db-password-Qx71", "second-db-password-Wv42"];
const TOKENS: [&str; 2] = ["first-api-token-Lm08", "second-api-token-Pz93"];

fn b64_std(s: &str) -> String {
    let mut t = b64(s.as_bytes(), STD);
    while !t.len().is_multiple_of(4) {
        t.push('=');
    }
    t
}

/// A Secret whose password stands in its own annotation too, and a
/// ConfigMap of the same component with the password in a URL and the
/// token (decoded) in an annotation.
fn release_objects(v: usize) -> (String, String) {
    let (password, token) = (PASSWORDS[v], TOKENS[v]);
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: traefik\n  annotations:\n    example.com/source: \"{password}\"\ntype: Opaque\nstringData:\n  password: \"{password}\"\ndata:\n  token: {}\n",
        b64_std(token)
    );
    let config = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db-settings\n  namespace: traefik\n  annotations:\n    example.com/token: \"{token}\"\ndata:\n  url: \"postgres://app:{password}@db.traefik:5432/app\"\n"
    );
    (secret, config)
}

/// Fails if `text` shows a password or token of either side, in any form.
fn assert_no_release_data(what: &str, text: &str) {
    for s in PASSWORDS.iter().chain(&TOKENS) {
        for f in forms(s) {
            assert!(!text.contains(&f), "{what} shows {f:?} (a form of {s:?}):\n{text}");
        }
    }
}

/// Manifests of one component: the diff hides the Secret's data in the
/// Secret's annotation and in the other object, in every format.
#[test]
fn a_secrets_data_is_hidden_wherever_its_component_writes_it() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let write_both = |v: usize| {
        let (secret, config) = release_objects(v);
        write(root, "gitops/platform/traefik/manifests/secret-db.yaml", &secret);
        write(
            root,
            "gitops/platform/traefik/manifests/configmap-db-settings.yaml",
            &config,
        );
    };
    write_both(0);
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    write_both(1);
    for format in ["text", "markdown", "json"] {
        let (out, spent) = timed(
            root,
            &["diff", "--base", "HEAD", "--env", "dev", "--why", "--format", format],
        );
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        assert!(spent < BUDGET, "{format} took {spent:?}");
        let all = all_output(&out);
        assert_no_release_data(&format!("diff --format {format}"), &all);
        // The changes are still there, named.
        assert!(
            all.contains("stringData.password: changed (value not shown)"),
            "{format}:\n{all}"
        );
        assert!(all.contains("db-settings"), "{format}:\n{all}");
    }
}

/// The same from a chart helm renders: a Secret and a ConfigMap that
/// repeat the password and token the values give, which the component's
/// values (in the HelmRelease and the Application) hold too.
#[test]
fn a_chart_secrets_data_is_hidden_in_every_object_of_its_release() {
    let Some(helm) = common::charts::helm() else { return };
    let values = |v: usize| format!("password: \"{}\"\ntoken: \"{}\"\n", PASSWORDS[v], TOKENS[v]);
    let tmp = common::charts::platform(&[("vault", "chart:\n  path: charts/vault\n", &values(0))]);
    let root = tmp.path();
    write(
        root,
        "charts/vault/Chart.yaml",
        "apiVersion: v2\nname: vault\ndescription: A chart that repeats its Secret's data\nversion: 0.1.0\n",
    );
    write(
        root,
        "charts/vault/templates/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-db\n  annotations:\n    example.com/source: {{ .Values.password | quote }}\ntype: Opaque\nstringData:\n  password: {{ .Values.password | quote }}\ndata:\n  token: {{ .Values.token | b64enc | quote }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\n  annotations:\n    example.com/token: {{ .Values.token | quote }}\ndata:\n  url: \"postgres://app:{{ .Values.password }}@db:5432/app\"\n",
    );
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    write(root, "gitops/platform/vault/values.yaml", &values(1));
    for format in ["text", "markdown", "json"] {
        let out = common::charts::strata_with(
            root,
            Some(&helm),
            &["diff", "--base", "HEAD", "--env", "dev", "--format", format],
        );
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        let all = all_output(&out);
        assert_no_release_data(&format!("diff --format {format}"), &all);
        assert!(
            all.contains("vault-settings"),
            "{format}: the chart's objects are compared\n{all}"
        );
        assert!(all.contains("changed (value not shown)"), "{format}:\n{all}");
    }
}
