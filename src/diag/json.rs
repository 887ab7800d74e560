//! The JSON renderer: one object per finding, stable field names. A finding
//! that several environments show is one object whose `environments` lists
//! them all; `environment` (the first of them) stays for older readers.
//! Files are relative to the strata root.

use serde::Serialize;

use super::{Diagnostic, Severity, ci};

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'a str,
    severity: Severity,
    message: &'a str,
    file: &'a str,
    line: u32,
    column: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    environment: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    environments: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    help: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related: Vec<Related<'a>>,
}

#[derive(Serialize)]
struct Related<'a> {
    file: &'a str,
    line: u32,
    column: u32,
    label: &'a str,
}

/// Renders diagnostics as a JSON document `{"diagnostics": [...]}`.
pub fn render_json(diags: &[Diagnostic]) -> String {
    let items: Vec<JsonDiagnostic<'_>> = ci::group(diags)
        .into_iter()
        .map(|f| {
            let d = f.diag;
            JsonDiagnostic {
                code: d.code,
                severity: f.severity,
                message: &d.message,
                file: &d.origin.file,
                line: d.origin.line,
                column: d.origin.col,
                environment: f.envs.first().copied(),
                environments: f.envs,
                label: d.label.as_deref(),
                notes: f.notes,
                help: d.help.as_deref(),
                related: f
                    .related
                    .iter()
                    .map(|(o, l)| Related {
                        file: &o.file,
                        line: o.line,
                        column: o.col,
                        label: l,
                    })
                    .collect(),
            }
        })
        .collect();
    let doc = serde_json::json!({ "diagnostics": items });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
