//! The rules, end to end: every registered rule is documented, fires on its
//! `fixtures/rules/<CODE>/fail` platform (snapshot `<CODE>_fail`) and stays
//! quiet on `pass`; waivers; and the two example platforms.

mod common;

use std::path::{Path, PathBuf};

use strata::diag::{self, Diagnostic, Severity, Sources};
use strata::invariants::registry::{DOC_SECTIONS, RULES};
use strata::pipeline::{self, Options};
use strata::world::FsWorld;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn check(dir: &Path, env: Option<&str>, today: &str) -> (Vec<Diagnostic>, Sources) {
    check_with(dir, env, today, None)
}

fn check_with(
    dir: &Path,
    env: Option<&str>,
    today: &str,
    admission: Option<strata::admission::Settings>,
) -> (Vec<Diagnostic>, Sources) {
    let world = FsWorld::new(dir, today.to_owned()).unwrap();
    let sources = Sources::default();
    let opts = Options {
        env: env.map(str::to_owned),
        target: None,
        admission,
        ..Default::default()
    };
    let mut diags = match pipeline::compile(&world, &sources, &opts) {
        Ok(c) => c.findings,
        Err(d) => panic!(
            "{} did not compile:\n{}",
            dir.display(),
            diag::render_text(&d, &sources, false)
        ),
    };
    // Notes (such as "objects were not validated against schemas") are not rule findings.
    diags.retain(|d| d.severity != Severity::Note);
    diag::normalize(&mut diags);
    (diags, sources)
}

#[test]
fn every_rule_is_documented_with_every_section() {
    for r in RULES {
        for section in DOC_SECTIONS {
            assert!(
                r.doc.contains(section),
                "{} lacks `{section}` in its documentation",
                r.code
            );
        }
        assert!(
            r.name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{}: `{}` is not kebab-case",
            r.code,
            r.name
        );
        assert!(!r.summary.is_empty());
    }
    let mut codes: Vec<&str> = RULES.iter().map(|r| r.code).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), RULES.len(), "a code is registered twice");
}

#[test]
fn every_rule_fires_on_its_fail_fixture_and_passes_its_pass_fixture() {
    let home = tempfile::tempdir().unwrap();
    // The admission rules are judged by programs built from admission/.
    let admission = common::admission::settings(home.path());
    for r in RULES {
        let base = root().join("fixtures/rules").join(r.code);
        assert!(base.join("pass").is_dir(), "{} has no pass fixture", r.code);
        assert!(base.join("fail").is_dir(), "{} has no fail fixture", r.code);
        let settings = match (r.check.is_none(), &admission) {
            (false, _) => None,
            (true, Some(s)) => Some(s.clone()),
            (true, None) => continue,
        };
        let check = |dir: &Path, env, today| check_with(dir, env, today, settings.clone());

        let (pass, sources) = check(&base.join("pass"), None, "2026-10-01");
        assert!(
            pass.is_empty(),
            "{}/pass is not clean:\n{}",
            r.code,
            diag::render_text(&pass, &sources, false)
        );

        let (fail, sources) = check(&base.join("fail"), None, "2026-10-01");
        assert!(!fail.is_empty(), "{}/fail reports nothing", r.code);
        assert!(
            fail.iter().all(|d| d.code == r.code && d.severity == Severity::Error),
            "{}/fail reports something else:\n{}",
            r.code,
            diag::render_text(&fail, &sources, false)
        );
        let text = diag::render_text(&fail, &sources, false);
        insta::with_settings!({prepend_module_to_snapshot => false, snapshot_path => "snapshots"}, {
            insta::assert_snapshot!(format!("{}_fail", r.code), text);
        });
        assert!(
            root().join(format!("tests/snapshots/{}_fail.snap", r.code)).is_file(),
            "{} has no snapshot tests/snapshots/{}_fail.snap",
            r.code,
            r.code
        );
    }
}

/// Rules that read what charts render, each with fixtures whose charts are
/// rendered by helm: `fixtures/rules-inflated/<CODE>/{pass,fail}`.
const READ_CHARTS: &[&str] = &["HA001", "HA002", "HA003", "NET001", "CAP001", "STO001"];

/// Compiles a copy of `dir` (its `.strata/` store and caches go there) with
/// every chart rendered by helm.
fn check_rendered(dir: &Path, helm: &Path) -> (Vec<Diagnostic>, Sources) {
    let tmp = copy(dir);
    let world = FsWorld::new(tmp.path(), "2026-10-01".to_owned()).unwrap();
    let sources = Sources::default();
    let opts = Options {
        inflate: strata::inflate::Settings {
            mode: Some(strata::inflate::Mode::Helm),
            helm: Some(helm.to_path_buf()),
            state_root: Some(tmp.path().to_path_buf()),
            user_helm_config: None,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut diags = match pipeline::compile(&world, &sources, &opts) {
        Ok(c) => c.findings,
        Err(d) => panic!(
            "{} did not compile:\n{}",
            dir.display(),
            diag::render_text(&d, &sources, false)
        ),
    };
    diags.retain(|d| d.severity != Severity::Note);
    diag::normalize(&mut diags);
    (diags, sources)
}

#[test]
fn every_rule_that_reads_charts_fires_on_rendered_charts() {
    let Some(helm) = common::charts::helm() else { return };
    let listed: Vec<String> = std::fs::read_dir(root().join("fixtures/rules-inflated"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for code in READ_CHARTS {
        assert!(
            listed.iter().any(|l| l == code),
            "{code} has no fixtures/rules-inflated/{code}"
        );
        let base = root().join("fixtures/rules-inflated").join(code);
        let (pass, sources) = check_rendered(&base.join("pass"), &helm);
        assert!(
            pass.is_empty(),
            "{code}/pass (rendered) is not clean:\n{}",
            diag::render_text(&pass, &sources, false)
        );
        let (fail, sources) = check_rendered(&base.join("fail"), &helm);
        assert!(!fail.is_empty(), "{code}/fail (rendered) reports nothing");
        let text = diag::render_text(&fail, &sources, false);
        assert!(
            fail.iter().all(|d| d.code == *code && d.severity == Severity::Error),
            "{code}/fail (rendered) reports something else:\n{text}"
        );
        insta::with_settings!({prepend_module_to_snapshot => false, snapshot_path => "snapshots"}, {
            insta::assert_snapshot!(format!("{code}_inflated_fail"), text);
        });
    }
}

#[test]
fn no_finding_carries_a_secret() {
    let (fail, sources) = check(&root().join("fixtures/rules/SEC001/fail"), None, "2026-10-01");
    let text = diag::render_text(&fail, &sources, false) + &diag::render_json(&fail);
    assert!(!text.contains("STRATA-TEST-SECRET"), "{text}");
}

/// The staging of ADR 007's "Implementation status": exactly its problems,
/// each at the file and line that causes it.
#[test]
fn adr_007_staging_today_reports_exactly_the_adr_problems() {
    let (diags, _) = check(
        &root().join("fixtures/adr-007-staging-today"),
        Some("staging"),
        "2026-10-01",
    );
    let mut got: Vec<String> = diags
        .iter()
        .map(|d| format!("{} {}:{}", d.code, d.origin.file, d.origin.line))
        .collect();
    got.sort();
    let gp = "gitops/platform";
    let mut want: Vec<String> = [
        "TOPO001 contracts/staging.json:111".to_owned(),
        "TOPO002 contracts/staging.json:115".to_owned(),
        format!("NET002 {gp}/cilium/manifests/ciliuml2announcementpolicy-ingress-address.yaml:14"),
        format!("NET001 {gp}/traefik/values.yaml:78"),
        format!("STO001 {gp}/longhorn/values-substrate-talos.yaml:13"),
        format!("STO001 {gp}/longhorn/values-substrate-talos.yaml:16"),
        format!("HA001 {gp}/traefik/config.yaml:6"),
        format!("HA001 {gp}/coredns/config.yaml:6"),
        format!("HA001 {gp}/cert-manager/config.yaml:6"),
        // controller, webhook, cert-controller
        format!("HA001 {gp}/external-secrets/config.yaml:6"),
        format!("HA001 {gp}/external-secrets/config.yaml:6"),
        format!("HA001 {gp}/external-secrets/config.yaml:6"),
        format!("HA002 {gp}/cilium/config.yaml:6"),
        format!("HA002 {gp}/traefik/config.yaml:6"),
        format!("HA002 {gp}/coredns/config.yaml:6"),
        format!("HA002 {gp}/cert-manager/config.yaml:6"),
        format!("HA002 {gp}/external-secrets/config.yaml:6"),
        format!("HA002 {gp}/external-secrets/config.yaml:6"),
        format!("HA002 {gp}/external-secrets/config.yaml:6"),
    ]
    .into_iter()
    .collect();
    want.sort();
    assert_eq!(got, want);
    assert!(diags.iter().all(|d| d.severity == Severity::Error));
}

#[test]
fn homelab_staging_and_production_pass_clean() {
    for env in ["staging", "production", "dev"] {
        let (diags, sources) = check(&root().join("fixtures/homelab"), Some(env), "2026-10-01");
        assert!(
            diags.is_empty(),
            "homelab {env}:\n{}",
            diag::render_text(&diags, &sources, false)
        );
    }
}

/// Copies a fixture into a temporary folder, so a test can change it.
fn copy(from: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in walkdir_files(from) {
        let rel = entry.strip_prefix(from).unwrap();
        let to = dir.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
    dir
}

fn walkdir_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walkdir_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn with_waiver(waiver: &str) -> tempfile::TempDir {
    let dir = copy(&root().join("fixtures/rules/HA001/fail"));
    let env = dir.path().join("environments/staging.yaml");
    let mut text = std::fs::read_to_string(&env).unwrap();
    text.push_str("waivers:\n");
    text.push_str(waiver);
    std::fs::write(&env, text).unwrap();
    dir
}

#[test]
fn a_live_waiver_silences_its_finding() {
    let dir = with_waiver(
        "  - rule: HA001\n    component: coredns\n    reason: one replica until the third host arrives\n    expires: 2027-01-31\n",
    );
    let (diags, _) = check(dir.path(), None, "2026-10-01");
    assert!(diags.is_empty(), "{diags:?}");
    // The same waiver by object id.
    let dir = with_waiver(
        "  - rule: HA001\n    object: Deployment/kube-system/coredns\n    reason: a reason long enough\n    expires: 2027-01-31\n",
    );
    let (diags, _) = check(dir.path(), None, "2026-10-01");
    assert!(diags.is_empty(), "{diags:?}");
}

#[test]
fn an_expired_waiver_is_an_error_at_its_date_and_silences_nothing() {
    let dir = with_waiver(
        "  - rule: HA001\n    component: coredns\n    reason: one replica until the third host arrives\n    expires: 2026-09-30\n",
    );
    let (diags, _) = check(dir.path(), None, "2026-10-01");
    let codes: Vec<(&str, u32)> = diags.iter().map(|d| (d.code, d.origin.line)).collect();
    assert!(codes.contains(&("HA001", 6)), "{codes:?}");
    let e = diags.iter().find(|d| d.code == "E011").expect("an E011");
    assert_eq!(e.severity, Severity::Error);
    assert!(e.origin.file.ends_with("environments/staging.yaml"));
    assert_eq!(e.origin.line, 11, "points at `expires`");
}

#[test]
fn an_unused_waiver_is_a_warning() {
    let dir = with_waiver(
        "  - rule: HA001\n    component: traefik\n    reason: a reason long enough\n    expires: 2027-01-31\n",
    );
    let (diags, _) = check(dir.path(), None, "2026-10-01");
    let w = diags.iter().find(|d| d.code == "E011").expect("an E011");
    assert_eq!(w.severity, Severity::Warning);
    assert!(diags.iter().any(|d| d.code == "HA001"));
}

#[test]
fn single_topology_turns_the_ha_rules_off() {
    let dir = copy(&root().join("fixtures/rules/HA001/fail"));
    let env = dir.path().join("environments/staging.yaml");
    let text = std::fs::read_to_string(&env)
        .unwrap()
        .replace("topology: ha", "topology: single");
    std::fs::write(&env, text).unwrap();
    let (diags, _) = check(dir.path(), None, "2026-10-01");
    assert!(diags.is_empty(), "{diags:?}");
}

fn strata(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .env("STRATA_TODAY", "2026-10-01")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_exit_codes_and_formats() {
    let today = root().join("fixtures/adr-007-staging-today");
    let today = today.to_str().unwrap();
    let (code, _, _) = strata(&["check", "--root", today, "--env", "staging"]);
    assert_eq!(code, 1);
    let homelab = root().join("fixtures/homelab");
    let (code, _, _) = strata(&["check", "--root", homelab.to_str().unwrap()]);
    assert_eq!(code, 0);

    let (_, sarif, _) = strata(&["check", "--root", today, "--format", "sarif"]);
    let log: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    // Every rule is described (the input-error codes too: tests/ci_output.rs).
    let ids: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(RULES.iter().all(|r| ids.contains(&r.code)), "{ids:?}");
    let net = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "NET001")
        .unwrap();
    let loc = &net["locations"][0]["physicalLocation"];
    // From the top of the git checkout: this repository's, or the fixture itself outside one.
    let uri = loc["artifactLocation"]["uri"].as_str().unwrap();
    assert!(
        ["", "fixtures/adr-007-staging-today/"]
            .iter()
            .any(|top| uri == format!("{top}gitops/platform/traefik/values.yaml")),
        "{uri}"
    );
    assert_eq!(loc["region"]["startLine"], 78);

    let (_, gh, _) = strata(&["check", "--root", today, "--format", "github"]);
    // GitHub shows ten errors a step: the first ten, in file order, are annotated.
    assert!(
        gh.lines()
            .any(|l| l.starts_with("::error file=") && l.contains("contracts/staging.json,line=111,col=14,")),
        "{gh}"
    );

    let (code, list, _) = strata(&["rule"]);
    assert_eq!(code, 0);
    let (rules, codes) = list.split_once("\n\n").expect("rules, then the codes");
    assert_eq!(rules.lines().count(), RULES.len());
    assert!(codes.lines().any(|l| l.starts_with("E021 ")), "{list}");
    let (code, doc, _) = strata(&["rule", "E023"]);
    assert_eq!(code, 0);
    assert!(
        doc.contains("objects-not-validated") && doc.contains("schemas: []"),
        "{doc}"
    );
    let (code, doc, _) = strata(&["rule", "NET001"]);
    assert_eq!(code, 0);
    assert!(doc.contains("## Why is this bad?"));
    let (code, _, err) = strata(&["rule", "NET01"]);
    assert_eq!(code, 2);
    assert!(err.contains("did you mean `NET001`?"), "{err}");
}

/// The ADR 007 controllers a platform does not run are named in one note
/// per environment, not one note each on every run.
#[test]
fn controllers_no_component_deploys_are_one_note_per_environment() {
    let dir = root().join("fixtures/rules/HA001/pass");
    let world = FsWorld::new(&dir, "2026-10-01".to_owned()).unwrap();
    let sources = Sources::default();
    let compiled = pipeline::compile(&world, &sources, &Options::default()).unwrap();
    let notes: Vec<&Diagnostic> = compiled
        .findings
        .iter()
        .filter(|d| d.code == "HA001" && d.severity == Severity::Note)
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    let m = &notes[0].message;
    assert!(m.starts_with("no component of environment staging deploys 8 of the controllers ADR 007 names: Cilium operator, Longhorn CSI attacher"), "{m}");
    assert!(m.contains("External Secrets") && !m.contains("CoreDNS"), "{m}");
    assert!(notes[0].origin.file.ends_with("environments/staging.yaml"));
}

/// HA003's help keeps the kind of spread the values chose: a required
/// anti-affinity on the wrong key is fixed with a required one.
#[test]
fn ha003_help_keeps_a_required_anti_affinity() {
    let dir = copy(&root().join("fixtures/rules/HA003/fail"));
    let values = dir.path().join("gitops/platform/coredns/values.yaml");
    let mut text = std::fs::read_to_string(&values).unwrap();
    text.push_str(
        "affinity:\n  podAntiAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      - topologyKey: topology.kubernetes.io/region\n",
    );
    std::fs::write(&values, text).unwrap();
    let (diags, sources) = check(dir.path(), None, "2026-10-01");
    let text = diag::render_text(&diags, &sources, false);
    assert_eq!(diags.len(), 1, "{text}");
    let help = diags[0].help.as_deref().unwrap();
    assert!(
        help.contains("requiredDuringSchedulingIgnoredDuringExecution:\n")
            && help.contains("- topologyKey: kubernetes.io/hostname")
            && !help.contains("preferred"),
        "{text}"
    );
}

/// HA003's help never has the spread select a label that carries the
/// chart's or the software's version: the selector would stop matching
/// the pods during every rolling update.
#[test]
fn ha003_help_selects_no_label_that_carries_a_version() {
    let Some(helm) = common::charts::helm() else { return };
    let dir = copy(&root().join("fixtures/rules-inflated/HA003/fail"));
    let values = dir.path().join("gitops/platform/dns/values.yaml");
    let mut text = std::fs::read_to_string(&values).unwrap();
    text.push_str(
        "podLabels:\n  helm.sh/chart: web-1.0.0\n  app.kubernetes.io/version: \"1.12.3\"\n  build: dns-1.12.3\n  tier: frontend\n",
    );
    std::fs::write(&values, text).unwrap();
    let (diags, sources) = check_rendered(dir.path(), &helm);
    let text = diag::render_text(&diags, &sources, false);
    assert_eq!(diags.len(), 1, "{text}");
    let help = diags[0].help.as_deref().unwrap();
    assert!(
        help.contains("tier: frontend") && help.contains("app.kubernetes.io/name: web"),
        "{text}"
    );
    for label in ["helm.sh/chart", "app.kubernetes.io/version", "build"] {
        assert!(!help.contains(label), "{label} in:\n{text}");
    }
    assert!(help.contains("leaves out labels that carry a version"), "{text}");
}
