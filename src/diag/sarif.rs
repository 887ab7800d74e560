//! The SARIF 2.1.0 renderer, for GitHub code scanning and other SARIF
//! consumers: one run, strata as the tool with the metadata of every code it
//! reports, one result per finding (however many environments show it) with
//! its file from the top of the git checkout, line, column and a fingerprint
//! that survives moved lines.

use std::collections::BTreeMap;

use serde_json::{Value as J, json};

use super::ci::{self, Checkout, Finding};
use super::{Diagnostic, Severity};
use crate::yaml::Origin;

/// What SARIF says about a rule or an input-error code.
#[derive(Clone, Copy, Debug)]
pub struct RuleMeta {
    pub id: &'static str,
    pub name: &'static str,
    pub summary: &'static str,
    /// Markdown documentation.
    pub help: &'static str,
}

/// The `partialFingerprints` key; the version changes when the hash does.
pub const FINGERPRINT_KEY: &str = "strataFindingHash/v1";

/// The base every `uri` is relative to: the top of the git checkout.
const SRCROOT: &str = "%SRCROOT%";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

fn region(o: &Origin) -> J {
    let mut region = json!({"startLine": o.line.max(1), "startColumn": o.col.max(1)});
    if o.len > 0 {
        region["endLine"] = json!(o.line.max(1));
        region["endColumn"] = json!(o.col.max(1) + o.len);
    }
    region
}

/// A place in a repository file.
fn physical(path: &str, region: Option<J>) -> J {
    let mut loc = json!({"artifactLocation": {"uri": ci::encode_path(path), "uriBaseId": SRCROOT}});
    if let Some(r) = region {
        loc["region"] = r;
    }
    json!({ "physicalLocation": loc })
}

/// The primary location of a finding. A finding in one of strata's own
/// files (`<builtin>/…`) names it as a logical location; since GitHub
/// rejects a whole SARIF file when a result has no physical location, it is
/// anchored to the first related place in the repository, else to the
/// strata root's `strata.yaml`.
fn primary(f: &Finding<'_>, checkout: &Checkout) -> J {
    let o = &f.diag.origin;
    let mut loc = match checkout.repo_path(&o.file) {
        Some(path) => physical(&path, Some(region(o))),
        None => {
            let anchor = f
                .related
                .iter()
                .find_map(|(r, _)| Some((checkout.repo_path(&r.file)?, region(r))))
                .or_else(|| Some((checkout.project_file()?, json!({"startLine": 1}))));
            let mut loc = match anchor {
                Some((path, r)) => physical(&path, Some(r)),
                None => json!({}),
            };
            loc["logicalLocations"] = json!([{
                "name": o.file.as_ref(),
                "fullyQualifiedName": o.to_string(),
                "kind": "resource",
            }]);
            loc
        }
    };
    if let Some(label) = f.diag.label.as_deref().filter(|l| !l.is_empty()) {
        loc["message"] = json!({ "text": label });
    }
    loc
}

fn message(f: &Finding<'_>, checkout: &Checkout) -> String {
    let d = f.diag;
    let mut text = format!("{}{}", d.message, f.env_suffix());
    if checkout.repo_path(&d.origin.file).is_none() {
        text.push_str(&format!("\nat {}", d.origin));
    }
    for (o, label) in &f.related {
        if checkout.repo_path(&o.file).is_none() {
            text.push_str(&format!("\nsee {o}: {label}"));
        }
    }
    for n in &f.notes {
        text.push_str(&format!("\nnote: {n}"));
    }
    if let Some(h) = &d.help {
        text.push_str(&format!("\nhelp: {h}"));
    }
    text
}

fn descriptor(r: &RuleMeta) -> J {
    json!({
        "id": r.id,
        "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.summary},
        "help": {"text": r.help, "markdown": r.help},
        "defaultConfiguration": {"level": "error"},
    })
}

/// Renders diagnostics as one SARIF log. `rules` describes the codes; a
/// code they lack still gets a (bare) descriptor, so that every `ruleId`
/// has one and every `ruleIndex` points at it.
pub fn render_sarif(diags: &[Diagnostic], rules: &[RuleMeta], version: &str, checkout: &Checkout) -> String {
    let findings = ci::group(diags);
    let mut descriptors: Vec<J> = rules.iter().map(descriptor).collect();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, r) in rules.iter().enumerate() {
        index.entry(r.id).or_insert(i);
    }
    for f in &findings {
        let code = f.diag.code;
        if !index.contains_key(code) {
            index.insert(code, descriptors.len());
            descriptors.push(json!({"id": code, "shortDescription": {"text": code}}));
        }
    }

    // Findings whose fingerprints agree (the same problem at several lines
    // of one file) are told apart by their rank, as GitHub's own
    // `primaryLocationLineHash` does.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let results: Vec<J> = findings
        .iter()
        .map(|f| {
            let d = f.diag;
            let path = checkout.repo_path(&d.origin.file);
            let hash = ci::fingerprint(d.code, path.as_deref().unwrap_or(&d.origin.file), &d.message);
            let rank = seen.entry(hash.clone()).or_insert(0);
            *rank += 1;
            let mut r = json!({
                "ruleId": d.code,
                "ruleIndex": index[d.code],
                "level": level(f.severity),
                "message": {"text": message(f, checkout)},
                "locations": [primary(f, checkout)],
                "partialFingerprints": {FINGERPRINT_KEY: format!("{hash}:{rank}")},
            });
            let related: Vec<J> = f
                .related
                .iter()
                .filter_map(|(o, label)| Some((checkout.repo_path(&o.file)?, o, label)))
                .enumerate()
                .map(|(i, (path, o, label))| {
                    let mut loc = physical(&path, Some(region(o)));
                    loc["id"] = json!(i + 1);
                    loc["message"] = json!({ "text": label });
                    loc
                })
                .collect();
            if !related.is_empty() {
                r["relatedLocations"] = J::Array(related);
            }
            if !f.envs.is_empty() {
                r["properties"] = json!({"environments": f.envs});
            }
            r
        })
        .collect();

    let mut srcroot = json!({"description": {"text": "The top of the git checkout that holds the platform (the strata root when it is in none)"}});
    if let Some(uri) = checkout.base_uri() {
        srcroot["uri"] = json!(uri);
    }
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "strata",
                "version": version,
                "rules": descriptors,
            }},
            "originalUriBaseIds": {SRCROOT: srcroot},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    let mut s = serde_json::to_string_pretty(&log).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::sync::Arc;

    fn meta(id: &'static str) -> RuleMeta {
        RuleMeta {
            id,
            name: "n",
            summary: "s",
            help: "h",
        }
    }

    #[test]
    fn every_result_has_a_rule_and_a_place_in_the_repository() {
        let values: Arc<str> = Arc::from("values.yaml");
        let builtin: Arc<str> = Arc::from("<builtin>/templates/t.yaml.j2");
        let diags = vec![
            Diagnostic::error("NET001", Origin::new(&values, 3, 5, 5), "Local").in_env("staging"),
            Diagnostic::error("NET001", Origin::new(&values, 3, 5, 5), "Local").in_env("dev"),
            Diagnostic::error("E007", Origin::new(&builtin, 2, 1, 0), "template failed")
                .with_related(Origin::new(&values, 9, 1, 0), "this value"),
        ];
        let checkout = Checkout::new(Path::new("/r/p"), Some(Path::new("/r")), &diags, |_| true);
        let log: J = serde_json::from_str(&render_sarif(&diags, &[meta("NET001")], "1", &checkout)).unwrap();
        let run = &log["runs"][0];
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), 2, "{results:#?}");
        for r in results {
            assert_eq!(rules[r["ruleIndex"].as_u64().unwrap() as usize]["id"], r["ruleId"]);
            let key = r["partialFingerprints"][FINGERPRINT_KEY].as_str().unwrap();
            assert!(key.ends_with(":1"), "{key}");
        }
        let e007 = &results[0];
        assert_eq!(e007["ruleId"], "E007");
        let loc = &e007["locations"][0];
        assert_eq!(loc["physicalLocation"]["artifactLocation"]["uri"], "p/values.yaml");
        assert_eq!(
            loc["logicalLocations"][0]["fullyQualifiedName"],
            "<builtin>/templates/t.yaml.j2:2:1"
        );
        assert!(
            e007["message"]["text"]
                .as_str()
                .unwrap()
                .contains("at <builtin>/templates/t.yaml.j2:2:1")
        );
        let net = &results[1];
        assert_eq!(net["properties"]["environments"], json!(["dev", "staging"]));
        assert_eq!(net["message"]["text"], "Local (environments dev, staging)");
        assert_eq!(run["originalUriBaseIds"][SRCROOT]["uri"], "file:///r/");
    }
}
