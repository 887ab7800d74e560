//! The GitHub Actions renderer: one workflow command per diagnostic
//! (`::error file=…,line=…,col=…,title=…::message`), which GitHub shows as
//! an annotation on the pull request's changed lines.

use super::{Diagnostic, Severity};

/// Escapes a command's message (data).
fn data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escapes a command property value.
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

/// Renders diagnostics as GitHub workflow commands, one a line.
pub fn render_github(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        let cmd = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        let o = &d.origin;
        let mut props = format!("file={},line={},col={}", property(&o.file), o.line.max(1), o.col.max(1));
        if o.len > 0 {
            props.push_str(&format!(
                ",endLine={},endColumn={}",
                o.line.max(1),
                o.col.max(1) + o.len
            ));
        }
        let title = match &d.env {
            Some(env) => format!("{} ({env})", d.code),
            None => d.code.to_owned(),
        };
        props.push_str(&format!(",title={}", property(&title)));
        let mut msg = d.message.clone();
        for n in &d.notes {
            msg.push_str(&format!("\nnote: {n}"));
        }
        if let Some(h) = &d.help {
            msg.push_str(&format!("\nhelp: {h}"));
        }
        out.push_str(&format!("::{cmd} {props}::{}\n", data(&msg)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn commands_escape_their_properties_and_message() {
        let file: Arc<str> = Arc::from("a,b:c.yaml");
        let d = Diagnostic::error("NET001", crate::yaml::Origin::new(&file, 3, 5, 5), "50% of it\nbroken")
            .with_help("fix it")
            .in_env("staging");
        let s = render_github(&[d]);
        assert_eq!(
            s,
            "::error file=a%2Cb%3Ac.yaml,line=3,col=5,endLine=3,endColumn=10,title=NET001 (staging)::50%25 of it%0Abroken%0Ahelp: fix it\n"
        );
    }
}
