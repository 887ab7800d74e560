//! Chart bumps as text, Markdown and JSON. Text and Markdown show a bump
//! that reads the same in several environments once, naming them; JSON
//! keeps one entry per environment.

use std::fmt::Write as _;

use serde_json::{Value as J, json};

use super::{Bump, ChangedDefault, Findings, Outcome, Stale};
use crate::yaml::Origin;

/// The longest value shown inline; a longer one is cut.
const MAX_VALUE_CHARS: usize = 120;
/// The most changed defaults a bump lists in Markdown; JSON has them all.
const MD_DEFAULTS: usize = 25;

/// Bumps that read the same, with the environments they are in.
fn folded(bumps: &[Bump]) -> Vec<(Vec<&str>, &Bump)> {
    let mut out: Vec<(Vec<&str>, &Bump)> = Vec::new();
    for b in bumps {
        let same = |o: &Bump| {
            (
                &o.component,
                &o.chart,
                &o.old_version,
                &o.new_version,
                &o.origin,
                &o.outcome,
            ) == (
                &b.component,
                &b.chart,
                &b.old_version,
                &b.new_version,
                &b.origin,
                &b.outcome,
            )
        };
        match out.iter_mut().find(|(_, o)| same(o)) {
            Some((envs, _)) => envs.push(&b.env),
            None => out.push((vec![&b.env], b)),
        }
    }
    out.sort_by(|a, b| (&a.1.component, &a.0).cmp(&(&b.1.component, &b.0)));
    out
}

fn at(o: &Origin) -> String {
    format!("{}:{}", o.file, o.line)
}

/// A value on one line: JSON, cut past [`MAX_VALUE_CHARS`].
fn value(v: Option<&J>) -> String {
    let Some(v) = v else { return "(unset)".into() };
    let s = serde_json::to_string(v).unwrap_or_default();
    if s.chars().count() <= MAX_VALUE_CHARS {
        return s;
    }
    let cut: String = s.chars().take(MAX_VALUE_CHARS).collect();
    format!("{cut}…")
}

fn stale_text(s: &Stale, old_version: &str) -> String {
    let mut line = format!(
        "override no longer read: {} at {} ({old_version} read it at {}",
        s.path,
        at(&s.origin),
        s.old_read
    );
    if let Some(h) = &s.hint {
        let _ = write!(line, "; perhaps now {h}");
    }
    line.push(')');
    line
}

/// The bumps for a terminal; empty when there are none.
pub fn text(bumps: &[Bump]) -> String {
    let mut out = String::new();
    if bumps.is_empty() {
        return out;
    }
    out.push_str("chart bumps:\n");
    for (envs, b) in folded(bumps) {
        let _ = write!(
            out,
            "~ {} in {}: chart {} {} -> {} ({})",
            b.component,
            envs.join(", "),
            b.chart,
            b.old_version,
            b.new_version,
            at(&b.origin)
        );
        match &b.outcome {
            Outcome::Unavailable { reason, help, .. } => {
                let _ = writeln!(out, ": not compared: {reason}\n    help: {help}");
            }
            Outcome::Compared(f) => {
                out.push('\n');
                findings_text(&mut out, f, &b.old_version);
            }
        }
    }
    out.push('\n');
    out
}

fn findings_text(out: &mut String, f: &Findings, old_version: &str) {
    if f.stale.is_empty() && f.defaults.is_empty() {
        out.push_str("    no override goes unread, and no default changed under keys it leaves unset\n");
    }
    for s in &f.stale {
        let _ = writeln!(out, "    {}", stale_text(s, old_version));
        for o in &s.also {
            let _ = writeln!(out, "      also set at {}", at(o));
        }
    }
    for d in &f.defaults {
        let _ = writeln!(
            out,
            "    default changed: {} {} -> {}",
            d.path,
            value(d.old.as_ref()),
            value(d.new.as_ref())
        );
    }
    for n in &f.notes {
        let _ = writeln!(out, "    note: {n}");
    }
}

/// Inline code that survives backticks in the text.
fn code(s: &str) -> String {
    let s = s.replace('\n', " ");
    let mut run = 0;
    let mut best = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        best = best.max(run);
    }
    let ticks = "`".repeat(best + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
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

/// The bumps for a pull-request comment, in at most about `budget` bytes:
/// past it, each bump is one line with its counts. Empty when there are none.
pub fn markdown(bumps: &[Bump], budget: usize) -> String {
    if bumps.is_empty() {
        return String::new();
    }
    let full = md(bumps, true);
    if full.len() <= budget {
        return full;
    }
    md(bumps, false)
}

fn md(bumps: &[Bump], detail: bool) -> String {
    let mut out = String::from("**Chart bumps**\n\n");
    for (envs, b) in folded(bumps) {
        let envs: Vec<String> = envs.iter().map(|e| code(e)).collect();
        let _ = write!(
            out,
            "- **{}** in {}: chart {} {} → {}",
            escape_md(&b.component),
            envs.join(", "),
            code(&b.chart),
            code(&b.old_version),
            code(&b.new_version)
        );
        match &b.outcome {
            Outcome::Unavailable { reason, help, .. } => {
                let _ = writeln!(out, ": not compared: {} ({})", escape_md(reason), escape_md(help));
            }
            Outcome::Compared(f) if !detail => {
                let _ = writeln!(
                    out,
                    ": {} override(s) no longer read, {} default(s) changed",
                    f.stale.len(),
                    f.defaults.len()
                );
            }
            Outcome::Compared(f) => {
                out.push('\n');
                findings_md(&mut out, f, &b.old_version);
            }
        }
    }
    out.push('\n');
    out
}

fn findings_md(out: &mut String, f: &Findings, old_version: &str) {
    if f.stale.is_empty() && f.defaults.is_empty() {
        out.push_str("  - no override goes unread, and no default changed under keys it leaves unset\n");
    }
    for s in &f.stale {
        let mut set_at = vec![code(&at(&s.origin))];
        set_at.extend(s.also.iter().map(|o| code(&at(o))));
        let _ = write!(
            out,
            "  - :warning: override {} is no longer read (set at {}); {} read it at {}",
            code(&s.path),
            set_at.join(", "),
            escape_md(old_version),
            code(&s.old_read)
        );
        if let Some(h) = &s.hint {
            let _ = write!(out, "; perhaps now {}", code(h));
        }
        out.push('\n');
    }
    for d in f.defaults.iter().take(MD_DEFAULTS) {
        let _ = writeln!(out, "  - {}", md_default(d));
    }
    if f.defaults.len() > MD_DEFAULTS {
        let _ = writeln!(
            out,
            "  - and {} more changed default(s) (`strata diff --format json` lists them all)",
            f.defaults.len() - MD_DEFAULTS
        );
    }
    for n in &f.notes {
        let _ = writeln!(out, "  - note: {}", escape_md(n));
    }
}

fn md_default(d: &ChangedDefault) -> String {
    format!(
        "default {}: {} → {}",
        code(&d.path),
        code(&value(d.old.as_ref())),
        code(&value(d.new.as_ref()))
    )
}

fn origin_json(o: &Origin) -> J {
    json!({"file": &*o.file, "line": o.line, "column": o.col})
}

/// The bumps as JSON, one entry per environment and release.
pub fn json(bumps: &[Bump]) -> J {
    J::Array(
        bumps
            .iter()
            .map(|b| {
                let mut v = json!({
                    "environment": b.env,
                    "component": b.component,
                    "chart": b.chart,
                    "old_version": b.old_version,
                    "new_version": b.new_version,
                    "source": origin_json(&b.origin),
                });
                match &b.outcome {
                    Outcome::Compared(f) => {
                        v["compared"] = json!(true);
                        v["stale_overrides"] = f.stale.iter().map(stale_json).collect();
                        v["changed_defaults"] = f.defaults.iter().map(default_json).collect();
                        v["notes"] = json!(f.notes);
                    }
                    Outcome::Unavailable { base, reason, help } => {
                        v["compared"] = json!(false);
                        v["unavailable"] = json!({
                            "side": if *base { "base" } else { "head" },
                            "reason": reason,
                            "help": help,
                        });
                    }
                }
                v
            })
            .collect(),
    )
}

fn stale_json(s: &Stale) -> J {
    let mut v = origin_json(&s.origin);
    v["path"] = json!(s.path);
    v["also"] = s.also.iter().map(origin_json).collect();
    v["old_read"] = json!(s.old_read);
    v["hint"] = json!(s.hint);
    v
}

fn default_json(d: &ChangedDefault) -> J {
    let mut v = json!({"path": d.path});
    if let Some(o) = &d.old {
        v["old"] = o.clone();
    }
    if let Some(n) = &d.new {
        v["new"] = n.clone();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bump(env: &str, stale: bool) -> Bump {
        Bump {
            env: env.into(),
            component: "web".into(),
            chart: "web".into(),
            old_version: "1.0.0".into(),
            new_version: "2.0.0".into(),
            origin: Origin::new("gitops/platform/web/config.yaml", 9, 12, 5),
            outcome: Outcome::Compared(Findings {
                stale: if stale {
                    vec![Stale {
                        path: "replicaCount".into(),
                        origin: Origin::new("gitops/platform/web/values.yaml", 1, 1, 12),
                        also: vec![Origin::new("gitops/platform/web/values-dev.yaml", 2, 1, 12)],
                        old_read: "web/templates/deployment.yaml:9".into(),
                        hint: Some("replicas".into()),
                    }]
                } else {
                    Vec::new()
                },
                defaults: vec![ChangedDefault {
                    path: "image.tag".into(),
                    old: Some(json!("1.27")),
                    new: None,
                }],
                notes: Vec::new(),
            }),
        }
    }

    #[test]
    fn the_same_bump_in_several_environments_shows_once() {
        let bumps = [bump("dev", true), bump("production", false), bump("staging", true)];
        let t = text(&bumps);
        assert!(
            t.contains("~ web in dev, staging: chart web 1.0.0 -> 2.0.0 (gitops/platform/web/config.yaml:9)"),
            "{t}"
        );
        assert!(t.contains("~ web in production:"), "{t}");
        assert!(t.contains("override no longer read: replicaCount at gitops/platform/web/values.yaml:1 (1.0.0 read it at web/templates/deployment.yaml:9; perhaps now replicas)"), "{t}");
        assert!(
            t.contains("      also set at gitops/platform/web/values-dev.yaml:2"),
            "{t}"
        );
        assert!(t.contains("default changed: image.tag \"1.27\" -> (unset)"), "{t}");
        let md = markdown(&bumps, 10_000);
        assert!(
            md.contains("- **web** in `dev`, `staging`: chart `web` `1.0.0` → `2.0.0`"),
            "{md}"
        );
        assert!(md.contains("override `replicaCount` is no longer read (set at `gitops/platform/web/values.yaml:1`, `gitops/platform/web/values-dev.yaml:2`)"), "{md}");
        let short = markdown(&bumps, 100);
        assert!(
            short.contains("1 override(s) no longer read, 1 default(s) changed"),
            "{short}"
        );
        let j = json(&bumps);
        assert_eq!(j.as_array().unwrap().len(), 3);
        assert_eq!(j[0]["stale_overrides"][0]["line"], 1);
        assert_eq!(j[0]["changed_defaults"][0], json!({"path": "image.tag", "old": "1.27"}));
        assert!(text(&[]).is_empty() && markdown(&[], 100).is_empty());
    }
}
