//! The JSON renderer: one object per diagnostic, stable field names.

use serde::Serialize;

use super::{Diagnostic, Severity};

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
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: &'a Vec<String>,
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
    let items: Vec<JsonDiagnostic<'_>> = diags
        .iter()
        .map(|d| JsonDiagnostic {
            code: d.code,
            severity: d.severity,
            message: &d.message,
            file: &d.origin.file,
            line: d.origin.line,
            column: d.origin.col,
            environment: d.env.as_deref(),
            label: d.label.as_deref(),
            notes: &d.notes,
            help: d.help.as_deref(),
            related: d
                .related
                .iter()
                .map(|(o, l)| Related {
                    file: &o.file,
                    line: o.line,
                    column: o.col,
                    label: l,
                })
                .collect(),
        })
        .collect();
    let doc = serde_json::json!({ "diagnostics": items });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
