//! The diff as text for a terminal, as Markdown for a pull-request comment
//! (with a size budget), and as JSON. These build strings; the CLI prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::json;

use super::{Diff, Finding, Hunk, Line, ObjectChange, Op, Status};

/// GitHub's limit on the body of a comment.
pub const DEFAULT_MAX_BYTES: usize = 65_000;

/// The first line of the Markdown, so that a CI job can find and update its
/// own comment.
pub const MARKER: &str = "<!-- strata-diff -->";

/// What the diff was taken against, for headings.
#[derive(Clone, Debug)]
pub struct Against {
    pub revision: String,
    pub commit: String,
}

impl Against {
    fn short(&self) -> &str {
        &self.commit[..self.commit.len().min(12)]
    }
}

fn sign(op: Op) -> char {
    match op {
        Op::Context => ' ',
        Op::Added => '+',
        Op::Removed => '-',
    }
}

fn status_sign(s: Status) -> char {
    match s {
        Status::Added => '+',
        Status::Changed => '~',
        Status::Removed => '-',
    }
}

fn why_suffix(line: &Line, why: bool) -> String {
    match (&line.why, why, line.op) {
        (Some(o), true, Op::Added | Op::Removed) => format!("    # {}:{}", o.file, o.line),
        _ => String::new(),
    }
}

fn finding_line(f: &Finding) -> String {
    let env = f.env.as_deref().map(|e| format!(" ({e})")).unwrap_or_default();
    format!(
        "{}[{}]{env}: {} at {}:{}",
        f.severity, f.code, f.message, f.origin.file, f.origin.line
    )
}

fn write_hunk(out: &mut String, h: &Hunk, why: bool, color: bool) {
    let (cyan, red, green, reset) = if color {
        ("\x1b[36m", "\x1b[31m", "\x1b[32m", "\x1b[0m")
    } else {
        ("", "", "", "")
    };
    let _ = writeln!(out, "{cyan}{}{reset}", h.header());
    for l in &h.lines {
        let c = match l.op {
            Op::Context => "",
            Op::Added => green,
            Op::Removed => red,
        };
        let r = if c.is_empty() { "" } else { reset };
        let _ = writeln!(out, "{c}{}{}{r}{}", sign(l.op), l.text, why_suffix(l, why));
    }
}

/// The diff for a terminal: findings, then each object, then the summary.
pub fn text(diff: &Diff, against: &Against, why: bool, color: bool) -> String {
    let mut out = String::new();
    if diff.is_empty() {
        return out;
    }
    let bold = |s: &str| {
        if color {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    };
    for n in &diff.notes {
        let _ = writeln!(out, "note: {n}");
    }
    for f in &diff.introduced {
        let _ = writeln!(out, "introduced {}", finding_line(f));
    }
    for f in &diff.fixed {
        let _ = writeln!(out, "fixed {}", finding_line(f));
    }
    if !diff.introduced.is_empty() || !diff.fixed.is_empty() {
        out.push('\n');
    }
    out.push_str(&super::bump::show::text(&diff.bumps));
    for o in &diff.objects {
        let head = format!(
            "{} {} {} ({})",
            status_sign(o.status),
            o.key.unit(),
            o.key.display(),
            o.path()
        );
        let _ = writeln!(out, "{}", bold(&head));
        if why {
            let _ = writeln!(out, "  from {}:{}", o.origin.file, o.origin.line);
        }
        if let (Some(a), Some(b)) = (&o.base_path, &o.head_path)
            && a != b
        {
            let _ = writeln!(out, "  moved from {a}");
        }
        for n in &o.notes {
            let _ = writeln!(out, "  {n}");
        }
        for h in &o.hunks {
            write_hunk(&mut out, h, why, color);
        }
        out.push('\n');
    }
    let t = diff.totals();
    let _ = writeln!(
        out,
        "{} added, {} changed, {} removed against {} ({})",
        t.added,
        t.changed,
        t.removed,
        against.revision,
        against.short()
    );
    out
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Inline code that survives backticks in the text.
fn code(s: &str) -> String {
    let s = s.replace('\n', " ");
    let run = longest_backtick_run(&s);
    let ticks = "`".repeat(run + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

fn longest_backtick_run(s: &str) -> usize {
    let (mut best, mut cur) = (0, 0);
    for c in s.chars() {
        if c == '`' {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

fn counts_text(objs: &[&ObjectChange]) -> String {
    let mut parts = Vec::new();
    for s in [Status::Added, Status::Changed, Status::Removed] {
        let n = objs.iter().filter(|o| o.status == s).count();
        if n > 0 {
            parts.push(format!("{n} {}", s.name()));
        }
    }
    parts.join(", ")
}

/// The body of one object in Markdown; `with_diff: false` leaves the diff out.
fn md_object(o: &ObjectChange, why: bool, with_diff: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "**{} {}** {} in {}: {}",
        status_sign(o.status),
        o.status.name(),
        code(&o.key.display()),
        code(&o.key.unit()),
        code(o.path())
    );
    if why {
        let _ = writeln!(out, "\nfrom {}", code(&format!("{}:{}", o.origin.file, o.origin.line)));
    }
    if let (Some(a), Some(b)) = (&o.base_path, &o.head_path)
        && a != b
    {
        let _ = writeln!(out, "\nmoved from {}", code(a));
    }
    for n in &o.notes {
        let _ = writeln!(out, "\n- {}", escape_md(n));
    }
    if with_diff && !o.hunks.is_empty() {
        let mut body = String::new();
        for h in &o.hunks {
            write_hunk(&mut body, h, why, false);
        }
        let fence = "`".repeat(longest_backtick_run(&body).max(2) + 1);
        let _ = write!(out, "\n{fence}diff\n{body}{fence}\n");
    } else if !o.hunks.is_empty() {
        let lines: usize = o.hunks.iter().map(|h| h.lines.len()).sum();
        let _ = writeln!(out, "\n_diff of {lines} lines left out to fit the comment_");
    }
    out.push('\n');
    out
}

fn escape_md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '<' | '>' | '[' | ']' | '|' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn md_group(name: &str, objs: &[&ObjectChange], why: bool, with_diff: bool) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<details>\n<summary><b>{}</b>: {}</summary>\n\n",
        escape_html(name),
        counts_text(objs)
    );
    for o in objs {
        out.push_str(&md_object(o, why, with_diff));
    }
    out.push_str("</details>\n\n");
    out
}

/// The name a group of objects is shown under.
fn group_name(o: &ObjectChange) -> String {
    o.component
        .clone()
        .unwrap_or_else(|| "platform (not owned by a component)".into())
}

/// The diff as a pull-request comment of at most `max_bytes` bytes: the
/// findings the change introduces or fixes, a summary table, and one
/// collapsible section per component. What does not fit is left out, and a
/// last line says what.
pub fn markdown(diff: &Diff, against: &Against, why: bool, max_bytes: usize) -> String {
    let mut head = String::new();
    let _ = writeln!(head, "{MARKER}");
    let _ = writeln!(
        head,
        "### strata diff against {} ({})\n",
        code(&against.revision),
        code(against.short())
    );
    if diff.is_empty() {
        head.push_str("No change to the rendered tree.\n");
        return clip(head, max_bytes);
    }
    for n in &diff.notes {
        let _ = writeln!(head, "> note: {n}\n");
    }
    if !diff.introduced.is_empty() || !diff.fixed.is_empty() {
        head.push_str("**Invariant findings**\n\n");
        for f in &diff.introduced {
            let _ = writeln!(head, "- :x: introduced: {}", md_finding(f));
        }
        for f in &diff.fixed {
            let _ = writeln!(head, "- :white_check_mark: fixed: {}", md_finding(f));
        }
        head.push('\n');
    }
    head.push_str(&super::bump::show::markdown(&diff.bumps, max_bytes / 4));
    head.push_str("| environment | target | added | changed | removed |\n|---|---|---:|---:|---:|\n");
    for ((env, target), c) in &diff.summary {
        let _ = writeln!(
            head,
            "| {} | {} | {} | {} | {} |",
            escape_md(env),
            escape_md(target),
            c.added,
            c.changed,
            c.removed
        );
    }
    head.push('\n');

    let mut groups: BTreeMap<(bool, String), Vec<&ObjectChange>> = BTreeMap::new();
    for o in &diff.objects {
        groups
            .entry((o.component.is_none(), group_name(o)))
            .or_default()
            .push(o);
    }
    // Room for the closing line that says what was left out.
    const RESERVE: usize = 700;
    let mut out = head;
    let mut left_out: Vec<(String, usize)> = Vec::new();
    let mut shortened = 0;
    for ((_, name), objs) in &groups {
        if !left_out.is_empty() {
            left_out.push((name.clone(), objs.len()));
            continue;
        }
        let full = md_group(name, objs, why, true);
        if out.len() + full.len() + RESERVE <= max_bytes {
            out.push_str(&full);
            continue;
        }
        let short = md_group(name, objs, why, false);
        if out.len() + short.len() + RESERVE <= max_bytes {
            out.push_str(&short);
            shortened += 1;
            continue;
        }
        left_out.push((name.clone(), objs.len()));
    }
    if shortened > 0 || !left_out.is_empty() {
        out.push_str(&cut_note(max_bytes, shortened, &left_out, against));
    }
    clip(out, max_bytes)
}

/// The closing line of a comment that was cut: what was shortened or left
/// out, and the command that shows everything.
fn cut_note(max_bytes: usize, shortened: usize, left_out: &[(String, usize)], against: &Against) -> String {
    let mut note = String::from("---\n:warning: This comment is cut to stay under ");
    let _ = write!(note, "{max_bytes} characters:");
    if shortened > 0 {
        let _ = write!(note, " the diffs of {shortened} component(s) are left out;");
    }
    if !left_out.is_empty() {
        let objects: usize = left_out.iter().map(|(_, n)| n).sum();
        let mut names: Vec<String> = Vec::new();
        let mut len = 0;
        for (n, _) in left_out {
            if len + n.len() > 300 {
                names.push(format!("and {} more", left_out.len() - names.len()));
                break;
            }
            len += n.len() + 2;
            names.push(escape_md(n));
        }
        let _ = write!(
            note,
            " {} component(s) with {objects} changed object(s) are left out ({});",
            left_out.len(),
            names.join(", ")
        );
    }
    let _ = writeln!(
        note,
        " run {} for the whole diff.",
        code(&format!("strata diff --base {}", against.revision))
    );
    note
}

fn md_finding(f: &Finding) -> String {
    let env = f.env.as_deref().map(|e| format!(" in {}", code(e))).unwrap_or_default();
    format!(
        "**{}**{env}: {} ({})",
        escape_md(&f.code),
        escape_md(&f.message),
        code(&format!("{}:{}", f.origin.file, f.origin.line))
    )
}

/// A last resort when even the summary does not fit: cut at a character
/// boundary and say so.
fn clip(mut s: String, max_bytes: usize) -> String {
    if s.len() <= max_bytes {
        return s;
    }
    const TAIL: &str = "\n\n:warning: cut to fit the size limit\n";
    let mut end = max_bytes.saturating_sub(TAIL.len());
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    if max_bytes >= TAIL.len() {
        s.push_str(TAIL);
    }
    s
}

fn json_finding(f: &Finding) -> serde_json::Value {
    json!({
        "code": f.code,
        "severity": f.severity,
        "environment": f.env,
        "message": f.message,
        "file": &*f.origin.file,
        "line": f.origin.line,
        "column": f.origin.col,
    })
}

fn json_line(l: &Line) -> serde_json::Value {
    let op = match l.op {
        Op::Context => "context",
        Op::Added => "added",
        Op::Removed => "removed",
    };
    let source = match (&l.why, l.op) {
        (Some(o), Op::Added | Op::Removed) => json!({"file": &*o.file, "line": o.line, "column": o.col}),
        _ => serde_json::Value::Null,
    };
    json!({"op": op, "text": l.text, "source": source})
}

/// The diff as one JSON document with a stable structure.
pub fn json(diff: &Diff, against: &Against) -> String {
    let t = diff.totals();
    let value = json!({
        "base": {"revision": against.revision, "commit": against.commit},
        "changed": !diff.is_empty(),
        "totals": {"added": t.added, "changed": t.changed, "removed": t.removed},
        "summary": diff.summary.iter().map(|((env, target), c)| json!({
            "environment": env, "target": target,
            "added": c.added, "changed": c.changed, "removed": c.removed,
        })).collect::<Vec<_>>(),
        "notes": diff.notes,
        "chart_bumps": super::bump::show::json(&diff.bumps),
        "findings": {
            "introduced": diff.introduced.iter().map(json_finding).collect::<Vec<_>>(),
            "fixed": diff.fixed.iter().map(json_finding).collect::<Vec<_>>(),
        },
        "objects": diff.objects.iter().map(|o| json!({
            "status": o.status.name(),
            "environment": o.key.env,
            "target": o.key.target,
            "apiVersion": o.key.api_version,
            "kind": o.key.kind,
            "namespace": o.key.namespace,
            "name": o.key.name,
            "component": o.component,
            "path": o.head_path,
            "base_path": o.base_path,
            "source": {"file": &*o.origin.file, "line": o.origin.line},
            "notes": o.notes,
            "hunks": o.hunks.iter().map(|h| json!({
                "old_start": h.old_start, "old_lines": h.old_lines,
                "new_start": h.new_start, "new_lines": h.new_lines,
                "lines": h.lines.iter().map(json_line).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    let mut s = serde_json::to_string_pretty(&value).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Severity;
    use crate::diff::{Counts, Key};
    use crate::yaml::Origin;

    fn change(component: &str, name: &str, lines: usize) -> ObjectChange {
        ObjectChange {
            key: Key {
                env: "staging".into(),
                target: "flux".into(),
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("ns".into()),
                name: name.into(),
            },
            status: Status::Changed,
            component: Some(component.into()),
            base_path: Some(format!("rendered/staging/flux/{name}.yaml")),
            head_path: Some(format!("rendered/staging/flux/{name}.yaml")),
            origin: Origin::new("gitops/platform/a/config.yaml", 1, 1, 0),
            hunks: vec![Hunk {
                old_start: 1,
                old_lines: lines,
                new_start: 1,
                new_lines: lines,
                lines: (0..lines)
                    .map(|i| Line {
                        op: if i % 2 == 0 { Op::Removed } else { Op::Added },
                        text: format!("  key{i}: value number {i} with ``` in it"),
                        why: Some(Origin::new("gitops/platform/a/values.yaml", i as u32 + 1, 3, 1)),
                    })
                    .collect(),
            }],
            notes: Vec::new(),
        }
    }

    fn sample(n: usize, lines: usize) -> Diff {
        let objects: Vec<ObjectChange> = (0..n).map(|i| change(&format!("comp{i:03}"), "cm", lines)).collect();
        let mut summary = BTreeMap::new();
        summary.insert(
            ("staging".into(), "flux".into()),
            Counts {
                added: 0,
                changed: n,
                removed: 0,
            },
        );
        Diff {
            objects,
            summary,
            introduced: vec![Finding {
                code: "HA001".into(),
                severity: Severity::Error,
                env: Some("staging".into()),
                message: "traefik runs one replica".into(),
                origin: Origin::new("gitops/platform/traefik/values.yaml", 7, 3, 1),
            }],
            fixed: Vec::new(),
            notes: Vec::new(),
            bumps: Vec::new(),
        }
    }

    fn against() -> Against {
        Against {
            revision: "origin/main".into(),
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
        }
    }

    #[test]
    fn markdown_has_findings_table_and_details() {
        let md = markdown(&sample(2, 4), &against(), true, DEFAULT_MAX_BYTES);
        assert!(md.starts_with(MARKER));
        let findings = md.find("introduced: **HA001**").unwrap();
        let table = md.find("| staging | flux | 0 | 2 | 0 |").unwrap();
        let details = md.find("<summary><b>comp000</b>: 1 changed</summary>").unwrap();
        assert!(findings < table && table < details, "{md}");
        // The fence is longer than any backtick run inside.
        assert!(md.contains("````diff\n"), "{md}");
        assert!(md.contains("    # gitops/platform/a/values.yaml:2"), "{md}");
        assert!(!md.contains("cut to stay under"));
    }

    #[test]
    fn markdown_keeps_to_its_budget_and_says_what_is_left_out() {
        let d = sample(200, 40);
        for budget in [4_000, 20_000, DEFAULT_MAX_BYTES] {
            let md = markdown(&d, &against(), false, budget);
            assert!(md.len() <= budget, "{} > {budget}", md.len());
            assert!(md.contains("| staging | flux | 0 | 200 | 0 |"));
            assert!(md.contains("are left out"), "{md}");
            assert!(md.contains("`strata diff --base origin/main`"));
            // Every section that was opened is closed.
            assert_eq!(md.matches("<details>").count(), md.matches("</details>").count());
        }
        // A single object whose diff alone is over budget is listed without it.
        let big = sample(1, 2_000);
        let md = markdown(&big, &against(), false, 10_000);
        assert!(md.len() <= 10_000);
        assert!(
            md.contains("<b>comp000</b>") && md.contains("left out to fit the comment"),
            "{md}"
        );
    }

    #[test]
    fn empty_diff_says_so_in_every_format() {
        let d = Diff::default();
        assert!(text(&d, &against(), false, false).is_empty());
        assert!(markdown(&d, &against(), false, DEFAULT_MAX_BYTES).contains("No change"));
        let j: serde_json::Value = serde_json::from_str(&json(&d, &against())).unwrap();
        assert_eq!(j["changed"], json!(false));
        assert_eq!(j["objects"], json!([]));
    }
}
