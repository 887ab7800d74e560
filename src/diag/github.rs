//! The GitHub Actions renderer: one workflow command per finding
//! (`::error file=…,line=…,col=…,title=…::message`), which GitHub shows as
//! an annotation on the pull request's changed lines. Files are named from
//! the top of the git checkout, as GitHub names them.
//!
//! GitHub keeps at most 10 error, 10 warning and 10 notice annotations of a
//! step (and 50 of a job) and drops the rest without a word, so the first
//! ten of each kind are printed and one notice says how many more there are.

use std::collections::BTreeMap;

use super::ci::{self, Checkout, Finding};
use super::{Diagnostic, Severity};

/// Annotations of one kind GitHub keeps per step.
pub const PER_STEP: usize = 10;

/// Escapes a command's message (data).
fn data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escapes a command property value.
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

fn command(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "notice",
    }
}

/// One finding as a workflow command. A finding in no file of the
/// repository (strata's own `<builtin>/…`) gets no `file=`, so GitHub shows
/// it with the run, and its place goes into the message.
fn annotation(f: &Finding<'_>, checkout: &Checkout) -> String {
    let d = f.diag;
    let o = &d.origin;
    let path = checkout.repo_path(&o.file);
    let mut props = Vec::new();
    if let Some(path) = &path {
        props.push(format!("file={}", property(path)));
        props.push(format!("line={}", o.line.max(1)));
        props.push(format!("col={}", o.col.max(1)));
        if o.len > 0 {
            props.push(format!("endLine={}", o.line.max(1)));
            props.push(format!("endColumn={}", o.col.max(1) + o.len));
        }
    }
    let title = match f.envs.as_slice() {
        [] => d.code.to_owned(),
        envs => format!("{} ({})", d.code, envs.join(", ")),
    };
    props.push(format!("title={}", property(&title)));
    let mut msg = d.message.clone();
    if path.is_none() {
        msg.push_str(&format!("\nat {o}"));
    }
    for n in &f.notes {
        msg.push_str(&format!("\nnote: {n}"));
    }
    if let Some(h) = &d.help {
        msg.push_str(&format!("\nhelp: {h}"));
    }
    format!("::{} {}::{}\n", command(f.severity), props.join(","), data(&msg))
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Renders diagnostics as GitHub workflow commands, one a line: the first
/// [`PER_STEP`] findings of each severity, then, when some were left out, a
/// notice that counts them.
pub fn render_github(diags: &[Diagnostic], checkout: &Checkout) -> String {
    let findings = ci::group(diags);
    let mut total: BTreeMap<Severity, usize> = BTreeMap::new();
    for f in &findings {
        *total.entry(f.severity).or_default() += 1;
    }
    let overflow = total.values().any(|n| *n > PER_STEP);
    // The summary is itself a notice, and takes one notice's place.
    let cap = |s: Severity| {
        if overflow && s == Severity::Note {
            PER_STEP - 1
        } else {
            PER_STEP
        }
    };

    let mut out = String::new();
    let mut shown: BTreeMap<Severity, usize> = BTreeMap::new();
    let mut left: BTreeMap<Severity, usize> = BTreeMap::new();
    for f in &findings {
        let n = shown.entry(f.severity).or_default();
        if *n < cap(f.severity) {
            *n += 1;
            out.push_str(&annotation(f, checkout));
        } else {
            *left.entry(f.severity).or_default() += 1;
        }
    }
    let hidden: usize = left.values().sum();
    if hidden > 0 {
        let kinds: Vec<String> = left.iter().map(|(s, n)| count(*n, &s.to_string())).collect();
        let more = if hidden == 1 {
            "1 more finding is".to_owned()
        } else {
            format!("{hidden} more findings are")
        };
        let msg = format!(
            "{more} not annotated ({}): GitHub shows at most {PER_STEP} error and {PER_STEP} warning annotations per step. `strata check` prints them all.",
            kinds.join(", "),
        );
        out.push_str(&format!("::notice title={}::{}\n", property("strata"), data(&msg)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::Origin;
    use std::path::Path;
    use std::sync::Arc;

    fn at_root(diags: &[Diagnostic]) -> Checkout {
        Checkout::new(Path::new("/r"), None, diags, |_| true)
    }

    #[test]
    fn commands_escape_their_properties_and_message() {
        let file: Arc<str> = Arc::from("a,b:c.yaml");
        let d = Diagnostic::error("NET001", Origin::new(&file, 3, 5, 5), "50% of it\nbroken")
            .with_help("fix it")
            .in_env("staging");
        let s = render_github(std::slice::from_ref(&d), &at_root(std::slice::from_ref(&d)));
        assert_eq!(
            s,
            "::error file=a%2Cb%3Ac.yaml,line=3,col=5,endLine=3,endColumn=10,title=NET001 (staging)::50%25 of it%0Abroken%0Ahelp: fix it\n"
        );
    }

    #[test]
    fn files_come_from_the_top_and_builtins_have_none() {
        let values: Arc<str> = Arc::from("values.yaml");
        let builtin: Arc<str> = Arc::from("<builtin>/templates/t.yaml.j2");
        let diags = [
            Diagnostic::warning("E011", Origin::new(&values, 2, 1, 0), "unused").in_env("dev"),
            Diagnostic::warning("E011", Origin::new(&values, 2, 1, 0), "unused").in_env("prod"),
            Diagnostic::error("E007", Origin::new(&builtin, 4, 2, 0), "failed"),
        ];
        let checkout = Checkout::new(Path::new("/r/my platform"), Some(Path::new("/r")), &diags, |_| true);
        let s = render_github(&diags, &checkout);
        assert_eq!(
            s,
            "::error title=E007::failed%0Aat <builtin>/templates/t.yaml.j2:4:2\n\
             ::warning file=my platform/values.yaml,line=2,col=1,title=E011 (dev%2C prod)::unused\n"
        );
    }

    #[test]
    fn at_most_ten_of_each_kind_then_a_summary() {
        let file: Arc<str> = Arc::from("v.yaml");
        let mut diags = Vec::new();
        for line in 1..=13 {
            diags.push(Diagnostic::error("HA001", Origin::new(&file, line, 1, 0), "e"));
        }
        for line in 1..=3 {
            diags.push(Diagnostic::warning("E011", Origin::new(&file, line, 1, 0), "w"));
        }
        for line in 1..=10 {
            let mut d = Diagnostic::warning("E010", Origin::new(&file, line, 1, 0), "n");
            d.severity = Severity::Note;
            diags.push(d);
        }
        let s = render_github(&diags, &at_root(&diags));
        let lines: Vec<&str> = s.lines().collect();
        let n = |p: &str| lines.iter().filter(|l| l.starts_with(p)).count();
        assert_eq!((n("::error "), n("::warning "), n("::notice ")), (10, 3, 10), "{s}");
        assert_eq!(
            *lines.last().unwrap(),
            "::notice title=strata::4 more findings are not annotated (3 errors, 1 note): GitHub shows at most 10 error and 10 warning annotations per step. `strata check` prints them all."
        );
        let few = &diags[..10];
        assert!(!render_github(few, &at_root(few)).contains("more finding"));
    }
}
