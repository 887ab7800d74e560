//! The SARIF 2.1.0 renderer, for GitHub code scanning and other SARIF
//! consumers: one run, strata as the tool with its rules' metadata, one
//! result per diagnostic with its file, line and column.

use serde_json::{Value as J, json};

use super::{Diagnostic, Severity};
use crate::yaml::Origin;

/// What SARIF says about a rule.
pub struct RuleMeta {
    pub id: &'static str,
    pub name: &'static str,
    pub summary: &'static str,
    /// Markdown documentation.
    pub help: &'static str,
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

fn location(o: &Origin, message: Option<&str>) -> J {
    let mut region = json!({"startLine": o.line.max(1), "startColumn": o.col.max(1)});
    if o.len > 0 {
        region["endLine"] = json!(o.line.max(1));
        region["endColumn"] = json!(o.col.max(1) + o.len);
    }
    let mut loc = json!({
        "physicalLocation": {
            "artifactLocation": {"uri": o.file.as_ref(), "uriBaseId": "%SRCROOT%"},
            "region": region,
        }
    });
    if let Some(m) = message {
        loc["message"] = json!({"text": m});
    }
    loc
}

/// Renders diagnostics as one SARIF log.
pub fn render_sarif(diags: &[Diagnostic], rules: &[RuleMeta], version: &str) -> String {
    let rule_objs: Vec<J> = rules
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.summary},
                "help": {"text": r.help, "markdown": r.help},
                "defaultConfiguration": {"level": "error"},
            })
        })
        .collect();
    let results: Vec<J> = diags
        .iter()
        .map(|d| {
            let mut text = d.message.clone();
            if let Some(env) = &d.env {
                text.push_str(&format!(" (environment {env})"));
            }
            for n in &d.notes {
                text.push_str(&format!("\nnote: {n}"));
            }
            if let Some(h) = &d.help {
                text.push_str(&format!("\nhelp: {h}"));
            }
            let mut r = json!({
                "ruleId": d.code,
                "level": level(d.severity),
                "message": {"text": text},
                "locations": [location(&d.origin, d.label.as_deref())],
            });
            if let Some(i) = rules.iter().position(|m| m.id == d.code) {
                r["ruleIndex"] = json!(i);
            }
            if !d.related.is_empty() {
                r["relatedLocations"] = J::Array(
                    d.related
                        .iter()
                        .enumerate()
                        .map(|(i, (o, l))| {
                            let mut loc = location(o, Some(l));
                            loc["id"] = json!(i + 1);
                            loc
                        })
                        .collect(),
                );
            }
            if let Some(env) = &d.env {
                r["properties"] = json!({"environment": env});
            }
            r
        })
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "strata",
                "version": version,
                "rules": rule_objs,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": "./"}},
            "results": results,
        }],
    });
    let mut s = serde_json::to_string_pretty(&log).unwrap_or_default();
    s.push('\n');
    s
}
