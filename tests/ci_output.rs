//! The formats CI reads, end to end on the real binary: SARIF and GitHub
//! annotations name files from the top of the git checkout when the
//! platform lives in a subfolder, SARIF validates against the SARIF 2.1.0
//! schema, fingerprints survive moved lines, URIs are percent-encoded, a
//! finding shared by environments is reported once, every code is a rule,
//! and GitHub's annotation limits are kept.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{copy_dir, repo, stderr, stdout};
use serde_json::Value;

/// The environment variable naming the SARIF 2.1.0 JSON Schema file.
const SCHEMA_VAR: &str = "STRATA_TEST_SARIF_SCHEMA";
const FINGERPRINT: &str = "strataFindingHash/v1";

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=strata test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
}

/// A git repository whose platform, a copy of `fixtures/<fixture>`, lives
/// in the subfolder `sub`; `edit` changes the copy before the commit.
struct Checkout {
    _tmp: tempfile::TempDir,
    /// The top of the work tree (canonical).
    top: PathBuf,
    sub: String,
}

impl Checkout {
    fn new(fixture: &str, sub: &str, edit: impl FnOnce(&Path)) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = tmp.path().canonicalize().expect("canonical");
        let platform = top.join(sub);
        copy_dir(&repo().join("fixtures").join(fixture), &platform);
        let _ = std::fs::remove_dir_all(platform.join("rendered"));
        edit(&platform);
        git(&top, &["init", "-q", "-b", "main"]);
        git(&top, &["add", "-A"]);
        git(&top, &["commit", "-q", "-m", "platform"]);
        Checkout {
            _tmp: tmp,
            top,
            sub: sub.to_owned(),
        }
    }

    fn platform(&self) -> PathBuf {
        self.top.join(&self.sub)
    }

    /// `strata --root <sub> check --format <format>`, run from the top.
    fn check(&self, format: &str) -> Output {
        run(&self.top, &["--root", &self.sub, "check", "--format", format])
    }

    /// Every file git tracks, by its path from the top.
    fn tracked(&self) -> BTreeSet<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.top)
            .args(["ls-files", "-z"])
            .output()
            .expect("git ls-files");
        out.stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8(p.to_vec()).expect("UTF-8 path"))
            .collect()
    }
}

fn run(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(cwd)
        .args(["--color", "never"])
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env_remove("NO_COLOR")
        .output()
        .expect("run strata")
}

fn sarif(out: &Output) -> Value {
    assert!(!stderr(out).contains("panicked"), "{}", stderr(out));
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", stdout(out)))
}

fn results(log: &Value) -> &Vec<Value> {
    log["runs"][0]["results"].as_array().expect("results")
}

/// Every `artifactLocation.uri` of the log's results.
fn uris(log: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for r in results(log) {
        for key in ["locations", "relatedLocations"] {
            for loc in r[key].as_array().into_iter().flatten() {
                let art = &loc["physicalLocation"]["artifactLocation"];
                if let Some(uri) = art["uri"].as_str() {
                    assert_eq!(art["uriBaseId"], "%SRCROOT%", "{loc}");
                    out.push(uri.to_owned());
                }
            }
        }
    }
    out
}

/// Decodes `%XX` escapes, checking that nothing that RFC 3986 wants encoded
/// in a path was left bare.
fn decode(uri: &str) -> String {
    let bytes = uri.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).expect("escape");
            out.push(u8::from_str_radix(hex, 16).expect("hex escape"));
            i += 3;
        } else {
            assert!(
                b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=@".contains(&b),
                "`{}` is not encoded in {uri}",
                char::from(b)
            );
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).expect("UTF-8 after decoding")
}

fn result_by<'a>(log: &'a Value, rule: &str, uri_suffix: &str) -> Vec<&'a Value> {
    results(log)
        .iter()
        .filter(|r| {
            r["ruleId"] == rule
                && r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                    .as_str()
                    .is_some_and(|u| u.ends_with(uri_suffix))
        })
        .collect()
}

/// The SARIF 2.1.0 schema, compiled offline with format assertion on. CI
/// must have it; a local run without it says so and skips.
#[allow(clippy::disallowed_methods)]
fn sarif_schema() -> Option<jsonschema::Validator> {
    let how = format!(
        "`npm install --prefix target/ci-npm --no-save @microsoft/jest-sarif@1.0.0-beta.0` ships the SARIF 2.1.0 \
         schema; set {SCHEMA_VAR}=$PWD/target/ci-npm/node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json \
         (.ci/run does both)"
    );
    let path = std::env::var_os(SCHEMA_VAR).map(PathBuf::from);
    let Some(path) = path.filter(|p| p.is_file()) else {
        if std::env::var_os("CI").is_some() {
            panic!(
                "{SCHEMA_VAR} names no file, and CI validates SARIF against the published SARIF 2.1.0 schema: {how}"
            );
        }
        common::skipped(&format!(
            "{SCHEMA_VAR} is not set; SARIF is not validated against its schema. {how}"
        ));
        return None;
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    mend_language_pattern(&mut schema);
    assert!(
        schema["title"]
            .as_str()
            .is_some_and(|t| t.contains("SARIF") && t.contains("2.1.0")),
        "{} is not the SARIF 2.1.0 schema",
        path.display()
    );
    Some(
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap_or_else(|e| panic!("{} does not compile: {e}", path.display())),
    )
}

/// The published schema's pattern for `language` (of a run and of a tool
/// component) has a stray `]`, which an ECMA-262 regex in unicode mode
/// rejects, so the schema would not compile. Only that pattern is mended
/// (strata writes no `language`); the rest is checked as published.
fn mend_language_pattern(schema: &mut Value) {
    const BROKEN: &str = "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$";
    match schema {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key == "pattern" && *v == BROKEN {
                    *v = Value::from("^[a-zA-Z]{2}(-[a-zA-Z]{2})?$");
                } else {
                    mend_language_pattern(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mend_language_pattern),
        _ => {}
    }
}

/// Checks `log` against the SARIF 2.1.0 schema (when there is one), and
/// every URI in it as RFC 3986 wants: the published schema is draft-04,
/// which knows no `uri-reference` format, so the URIs are checked with
/// draft-07's `uri-reference` and `uri` formats.
fn assert_valid_sarif(log: &Value) {
    let format = |f: &str| {
        jsonschema::options()
            .should_validate_formats(true)
            .build(&serde_json::json!({"$schema": "http://json-schema.org/draft-07/schema#", "format": f}))
            .expect("a format schema")
    };
    let (reference, absolute) = (format("uri-reference"), format("uri"));
    for uri in uris(log) {
        assert!(
            reference.is_valid(&Value::from(uri.as_str())),
            "not a URI reference: {uri}"
        );
    }
    assert!(
        !reference.is_valid(&Value::from("a b/c d.yaml")),
        "the format is asserted"
    );
    let base = &log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"];
    assert!(absolute.is_valid(base), "not an absolute URI: {base}");

    let Some(validator) = sarif_schema() else {
        return;
    };
    let errors: Vec<String> = validator
        .iter_errors(log)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the SARIF log breaks the schema:\n{}",
        errors.join("\n")
    );
    // The schema bites: a level it does not know is refused.
    if !results(log).is_empty() {
        let mut bad = log.clone();
        bad["runs"][0]["results"][0]["level"] = "fatal".into();
        assert!(!validator.is_valid(&bad));
    }
}

#[test]
fn sarif_of_a_platform_in_a_subfolder_names_repository_files() {
    let repo = Checkout::new("adr-007-staging-today", "platform", |_| {});
    let out = repo.check("sarif");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let log = sarif(&out);
    assert_valid_sarif(&log);

    let tracked = repo.tracked();
    let uris = uris(&log);
    assert!(
        uris.len() >= results(&log).len(),
        "every result has a physical location"
    );
    for uri in &uris {
        assert!(uri.starts_with("platform/"), "{uri}");
        let path = decode(uri);
        assert!(tracked.contains(&path), "{path} is no file of the repository");
    }
    let net = result_by(&log, "NET001", "/traefik/values.yaml");
    assert_eq!(net.len(), 1, "{net:#?}");
    let loc = &net[0]["locations"][0]["physicalLocation"];
    assert_eq!(
        loc["artifactLocation"]["uri"],
        "platform/gitops/platform/traefik/values.yaml"
    );
    assert_eq!(loc["region"]["startLine"], 78);

    // %SRCROOT% is the top of the checkout, whichever folder strata runs in.
    let top = format!("file://{}/", repo.top.display());
    assert_eq!(log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"], top.as_str());
    let from_inside = run(&repo.platform().join("gitops"), &["check", "--format", "sarif"]);
    assert_eq!(stdout(&from_inside), stdout(&out));

    // GitHub annotations name the same files.
    let gh = stdout(&repo.check("github"));
    for line in gh.lines().filter(|l| l.contains(" file=")) {
        assert!(line.contains(" file=platform/"), "{line}");
    }
    assert!(
        gh.lines()
            .any(|l| l.starts_with("::error file=platform/contracts/staging.json,line=111,col=14,")),
        "{gh}"
    );
}

#[test]
fn outside_git_or_without_git_paths_stay_relative_to_the_root() {
    let tmp = common::scratch("adr-007-staging-today");
    let root = tmp.path().canonicalize().unwrap();
    let empty = tempfile::tempdir().unwrap();
    for path_var in [None, Some(empty.path())] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.current_dir(&root)
            .args(["--color", "never", "check", "--format", "sarif"])
            .env("STRATA_TODAY", "2026-12-02")
            // git must not find a repository above the temporary folder.
            .env("GIT_CEILING_DIRECTORIES", root.parent().unwrap());
        if let Some(p) = path_var {
            cmd.env("PATH", p);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(!err.contains("fatal") && !err.contains("not a git repository"), "{err}");
        let log = sarif(&out);
        for uri in uris(&log) {
            assert!(root.join(decode(&uri)).is_file(), "{uri}");
        }
        let base = &log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"];
        assert_eq!(*base, format!("file://{}/", root.display()).as_str());
        assert_valid_sarif(&log);
    }
}

#[test]
fn fingerprints_survive_a_moved_line() {
    let repo = Checkout::new("adr-007-staging-today", "platform", |_| {});
    let before = sarif(&repo.check("sarif"));
    let values = repo.platform().join("gitops/platform/traefik/values.yaml");
    let text = std::fs::read_to_string(&values).unwrap();
    std::fs::write(&values, format!("# a new first line\n{text}")).unwrap();
    let after = sarif(&repo.check("sarif"));

    let line = |log: &Value| {
        result_by(log, "NET001", "/traefik/values.yaml")[0]["locations"][0]["physicalLocation"]["region"]["startLine"]
            .clone()
    };
    assert_eq!((line(&before), line(&after)), (78.into(), 79.into()));
    let prints = |log: &Value| -> Vec<String> {
        results(log)
            .iter()
            .map(|r| {
                let fp = r["partialFingerprints"][FINGERPRINT].as_str().expect("a fingerprint");
                assert!(!fp.is_empty());
                fp.to_owned()
            })
            .collect()
    };
    assert_eq!(prints(&before), prints(&after));
    let unique: BTreeSet<String> = prints(&before).into_iter().collect();
    assert_eq!(
        unique.len(),
        results(&before).len(),
        "fingerprints are unique within a run"
    );

    // A different file is a different finding.
    let other = Checkout::new("adr-007-staging-today", "elsewhere", |_| {});
    let moved = sarif(&other.check("sarif"));
    assert!(prints(&moved).iter().all(|p| !unique.contains(p)));
}

#[test]
fn uris_are_percent_encoded() {
    // A platform folder with a space, and a manifest whose name has a
    // space, non-ASCII letters, `#` and `%`.
    let name = "l2 ännouncement #1 100%.yaml";
    let repo = Checkout::new("adr-007-staging-today", "my platform", |p| {
        let manifests = p.join("gitops/platform/cilium/manifests");
        std::fs::rename(
            manifests.join("ciliuml2announcementpolicy-ingress-address.yaml"),
            manifests.join(name),
        )
        .unwrap();
    });
    let out = repo.check("sarif");
    let log = sarif(&out);
    assert_valid_sarif(&log);
    let net = results(&log)
        .iter()
        .find(|r| r["ruleId"] == "NET002")
        .unwrap_or_else(|| panic!("a NET002 finding: {}", stdout(&out)));
    let uri = net["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        .as_str()
        .unwrap();
    assert_eq!(
        uri,
        "my%20platform/gitops/platform/cilium/manifests/l2%20%C3%A4nnouncement%20%231%20100%25.yaml"
    );
    let tracked = repo.tracked();
    for uri in uris(&log) {
        assert!(tracked.contains(&decode(&uri)), "{uri}");
    }

    // GitHub takes the path as it is, with `%` escaped as in every property.
    let gh = stdout(&repo.check("github"));
    assert!(
        gh.contains("file=my platform/gitops/platform/cilium/manifests/l2 ännouncement #1 100%25.yaml,line=14,"),
        "{gh}"
    );
}

#[test]
fn a_finding_in_several_environments_is_reported_once() {
    // prod is staging again: every finding of staging's shared files shows in both.
    let repo = Checkout::new("adr-007-staging-today", "platform", |p| {
        std::fs::copy(p.join("environments/staging.yaml"), p.join("environments/prod.yaml")).unwrap();
    });
    let log = sarif(&repo.check("sarif"));
    assert_valid_sarif(&log);
    let ha = result_by(&log, "HA001", "/cert-manager/config.yaml");
    assert_eq!(ha.len(), 1, "{ha:#?}");
    assert_eq!(
        ha[0]["properties"]["environments"],
        serde_json::json!(["prod", "staging"])
    );
    let text = ha[0]["message"]["text"].as_str().unwrap();
    assert!(text.contains("(environments prod, staging)"), "{text}");
    let mut seen = BTreeSet::new();
    for r in results(&log) {
        let loc = &r["locations"][0]["physicalLocation"];
        let key = (
            r["ruleId"].to_string(),
            loc["artifactLocation"]["uri"].to_string(),
            loc["region"].to_string(),
            text_without_envs(r["message"]["text"].as_str().unwrap()),
        );
        assert!(seen.insert(key.clone()), "reported twice: {key:?}");
    }

    let json: Value = serde_json::from_str(&stdout(&repo.check("json"))).unwrap();
    let cert: Vec<&Value> = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "HA001" && d["file"] == "gitops/platform/cert-manager/config.yaml")
        .collect();
    assert_eq!(cert.len(), 1, "{cert:#?}");
    assert_eq!(cert[0]["environments"], serde_json::json!(["prod", "staging"]));
    assert_eq!(cert[0]["environment"], "prod", "the old key names the first");

    let gh = stdout(&repo.check("github"));
    let cert = gh
        .lines()
        .filter(|l| l.contains("file=platform/gitops/platform/cert-manager/config.yaml,") && l.contains("HA001"))
        .collect::<Vec<_>>();
    assert_eq!(cert.len(), 1, "{gh}");
    assert!(cert[0].contains("title=HA001 (prod%2C staging)::"), "{}", cert[0]);
}

fn text_without_envs(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    first.split(" (environment").next().unwrap_or(first).to_owned()
}

/// The input-error codes of `diag::codes`, read from the source so that a
/// new code cannot be added without its metadata.
fn input_error_codes() -> Vec<String> {
    let src = std::fs::read_to_string(repo().join("src/diag/mod.rs")).unwrap();
    let module = src.split("pub mod codes").nth(1).expect("a codes module");
    let module = &module[..module.find("\n}").expect("its end")];
    let codes: Vec<String> = module
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        .filter_map(|l| l.split('"').nth(1))
        .map(str::to_owned)
        .collect();
    assert!(codes.len() >= 11, "{codes:?}");
    codes
}

#[test]
fn every_code_is_a_rule_with_metadata() {
    // An input error (exit 2): E002 from a broken YAML file.
    let repo = Checkout::new("adr-007-staging-today", "platform", |p| {
        std::fs::write(p.join("gitops/platform/traefik/values-staging.yaml"), "a: [1,\n").unwrap();
    });
    let out = repo.check("sarif");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let broken = sarif(&out);
    assert_valid_sarif(&broken);
    let fine = sarif(&Checkout::new("adr-007-staging-today", "platform", |_| {}).check("sarif"));

    for log in [&broken, &fine] {
        let rules = log["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
        let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
        for code in input_error_codes() {
            let rule = rules
                .iter()
                .find(|r| r["id"] == code.as_str())
                .unwrap_or_else(|| panic!("{code} is not among the rules {ids:?}"));
            for field in [&rule["name"], &rule["shortDescription"]["text"], &rule["help"]["text"]] {
                assert!(field.as_str().is_some_and(|s| !s.is_empty()), "{code}: {rule}");
            }
        }
        for rule in strata::invariants::registry::RULES {
            assert!(ids.contains(&rule.code), "{}", rule.code);
        }
        let unique: BTreeSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len(), "rule ids are unique: {ids:?}");
        for r in results(log) {
            let i = r["ruleIndex"].as_u64().expect("a ruleIndex") as usize;
            assert_eq!(rules[i]["id"], r["ruleId"], "{r}");
        }
    }
    let e002 = results(&broken)
        .iter()
        .find(|r| r["ruleId"] == "E002")
        .expect("an E002 result");
    assert_eq!(
        e002["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "platform/gitops/platform/traefik/values-staging.yaml"
    );
}

#[test]
fn github_annotations_keep_to_ten_of_a_kind_and_count_the_rest() {
    let repo = Checkout::new("adr-007-staging-today", "platform", |_| {});
    let log = sarif(&repo.check("sarif"));
    let count = |level: &str| results(&log).iter().filter(|r| r["level"] == level).count();
    let (errors, warnings, notes) = (count("error"), count("warning"), count("note"));
    assert!(errors > 10, "the fixture has more than ten errors: {errors}");

    let gh = stdout(&repo.check("github"));
    let lines: Vec<&str> = gh.lines().collect();
    let n = |p: &str| lines.iter().filter(|l| l.starts_with(p)).count();
    assert_eq!(n("::error "), 10, "{gh}");
    assert_eq!(n("::warning "), warnings.min(10), "{gh}");
    // The notes that fit, and the summary, itself a notice.
    assert_eq!(n("::notice "), notes.min(9) + 1, "{gh}");
    let hidden = errors - 10 + warnings.saturating_sub(10) + notes.saturating_sub(9);
    let last = lines.last().unwrap();
    assert!(
        last.starts_with(&format!(
            "::notice title=strata::{hidden} more findings are not annotated ("
        )),
        "{last}"
    );
    assert!(last.contains("`strata check` prints them all"), "{last}");
    assert!(!last.contains("file="), "{last}");

    // Every annotation is one line, each a distinct finding.
    let unique: BTreeSet<&&str> = lines.iter().collect();
    assert_eq!(unique.len(), lines.len(), "{gh}");
}
