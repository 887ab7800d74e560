//! The review summary as text, as Markdown for a pull-request comment and
//! as JSON, each change once with the environments it reaches.

use std::fmt::Write as _;

use serde_json::{Value as J, json};

use super::fold::{Folded, envs_text, fold};
use super::images::split;
use super::{Danger, ImageChange, Release, Review};

fn dangers(r: &Review) -> Vec<Folded<'_, Danger>> {
    fold(
        &r.dangers,
        |d| d.env.as_str(),
        |d| {
            (
                d.code,
                d.component.clone(),
                d.object.clone(),
                d.message.clone(),
                d.help.clone(),
            )
        },
    )
}

fn images(r: &Review) -> Vec<Folded<'_, ImageChange>> {
    fold(
        &r.images,
        |i| i.env.as_str(),
        |i| (i.from.clone(), i.to.clone(), i.places.clone()),
    )
}

fn releases(r: &Review) -> Vec<Folded<'_, Release>> {
    let mut folded = fold(
        &r.releases,
        |x| x.env.as_str(),
        |x| {
            (
                x.component.clone(),
                x.chart.clone(),
                x.from.clone(),
                x.to.clone(),
                (x.rendered, x.folded, x.added, x.changed, x.removed),
                x.restarts.clone(),
                x.notes.clone(),
                // What reads the same folds: the audit's findings hold
                // values, which have no order of their own.
                x.audit.as_ref().map(|a| format!("{a:?}")),
            )
        },
    );
    // By component, then the environments each entry names.
    folded.sort_by(|a, b| (&a.item.component, &a.envs).cmp(&(&b.item.component, &b.envs)));
    folded
}

/// ` (pinned at file:line)` when the release's bump was audited.
fn pinned(x: &Release, code: &dyn Fn(&str) -> String) -> String {
    x.audit
        .as_ref()
        .map(|a| format!(" (pinned at {})", code(&crate::diff::bump::show::pinned_at(&a.origin))))
        .unwrap_or_default()
}

/// `nginx 1.27 → 1.28`, `added nginx:1.27`, `removed nginx:1.27`.
fn image_line(i: &ImageChange) -> String {
    match (&i.from, &i.to) {
        (Some(a), Some(b)) => {
            let ((ra, ta), (rb, tb)) = (split(a), split(b));
            if ra == rb && !ta.is_empty() && !tb.is_empty() {
                format!("{ra} {ta} → {tb}")
            } else {
                format!("{a} → {b}")
            }
        }
        (None, Some(b)) => format!("added {b}"),
        (Some(a), None) => format!("removed {a}"),
        (None, None) => String::new(),
    }
}

/// What a release's chart does to its objects: `chart web 1.0.0 → 1.0.1:
/// relabelled 12 objects; 1 changed, 1 added`.
pub fn release_line(x: &Release) -> String {
    let mut line = match (&x.from, &x.to) {
        (Some(a), Some(b)) if a != b => format!("chart {} {a} → {b}", x.chart),
        _ => format!("chart {} {}", x.chart, x.to.as_deref().unwrap_or("")),
    };
    if x.bumped() && !x.rendered {
        line.push_str(": not rendered on both sides, so its effect on the objects is not shown");
        return line;
    }
    let mut parts = Vec::new();
    if x.folded > 0 {
        let what = if x.bumped() {
            "relabelled"
        } else {
            "changed only the checksum annotations of"
        };
        parts.push(format!("{what} {} object{}", x.folded, plural(x.folded)));
    }
    let more: Vec<String> = [(x.changed, "changed"), (x.added, "added"), (x.removed, "removed")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect();
    if !more.is_empty() {
        parts.push(more.join(", "));
    }
    if parts.is_empty() && x.bumped() {
        parts.push("no rendered object changed".to_owned());
    }
    if !parts.is_empty() {
        line.push_str(": ");
        line.push_str(&parts.join("; "));
    }
    line
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The review for a terminal; empty when there is nothing to say.
pub fn text(r: &Review, env_count: usize) -> String {
    let mut out = String::new();
    for d in dangers(r) {
        let _ = writeln!(
            out,
            "warning[{}] ({}): {}",
            d.item.code,
            envs_text(&d.envs, env_count),
            d.item.message
        );
        for h in &d.item.help {
            let mut lines = h.lines();
            if let Some(first) = lines.next() {
                let _ = writeln!(out, "  = {first}");
            }
            for l in lines {
                let _ = writeln!(out, "      {l}");
            }
        }
    }
    for i in images(r) {
        let _ = writeln!(
            out,
            "image {} ({}): {}",
            image_line(i.item),
            envs_text(&i.envs, env_count),
            i.item.places.join(", ")
        );
    }
    for x in releases(r) {
        let _ = writeln!(
            out,
            "release {} ({}): {}{}",
            x.item.component,
            envs_text(&x.envs, env_count),
            release_line(x.item),
            pinned(x.item, &|s| s.to_owned())
        );
        if !x.item.restarts.is_empty() {
            let _ = writeln!(out, "  restarts {}", x.item.restarts.join(", "));
        }
        for n in &x.item.notes {
            let _ = writeln!(out, "  {n}");
        }
        if let Some(a) = &x.item.audit {
            crate::diff::bump::show::outcome_text(&mut out, &a.outcome, &a.old_version, "  ");
        }
    }
    out
}

/// The review for a pull-request comment: what needs care, images, chart
/// bumps. `code` and `escape` are the comment's own inline-code and
/// escaping; `detail`: each finding of a bump's audit, else their counts.
pub fn markdown(
    r: &Review,
    (env_count, detail): (usize, bool),
    code: &dyn Fn(&str) -> String,
    escape: &dyn Fn(&str) -> String,
) -> String {
    let mut out = String::new();
    if r.is_empty() {
        return out;
    }
    let envs = |e: &[&str]| {
        let names: Vec<String> = e.iter().map(|x| code(x)).collect();
        if e.len() > 1 && e.len() == env_count {
            format!("every environment ({})", names.join(", "))
        } else {
            names.join(", ")
        }
    };
    let ds = dangers(r);
    if !ds.is_empty() {
        out.push_str("**Needs care**\n\n");
        for d in ds {
            let _ = writeln!(
                out,
                "- :warning: **{}** in {}: {}",
                d.item.code,
                envs(&d.envs),
                prose(&d.item.message, escape)
            );
            for h in &d.item.help {
                match h.split_once('\n') {
                    Some((first, rest)) => {
                        let fence = "`".repeat(longest_run(rest).max(2) + 1);
                        let _ = writeln!(out, "  - {}\n\n    {fence}yaml", prose(first, escape));
                        for l in rest.lines() {
                            let _ = writeln!(out, "    {l}");
                        }
                        let _ = writeln!(out, "    {fence}");
                    }
                    None => {
                        let _ = writeln!(out, "  - {}", prose(h, escape));
                    }
                }
            }
        }
        out.push('\n');
    }
    let is = images(r);
    if !is.is_empty() {
        out.push_str("**Images**\n\n| image | where | environments |\n|---|---|---|\n");
        for i in is {
            let places: Vec<String> = i.item.places.iter().map(|p| escape(p)).collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                code(&image_line(i.item)),
                places.join("<br>"),
                envs(&i.envs)
            );
        }
        out.push('\n');
    }
    let rs = releases(r);
    if !rs.is_empty() {
        out.push_str("**Charts**\n\n");
        for x in rs {
            let _ = writeln!(
                out,
                "- {} in {}: {}{}",
                code(&x.item.component),
                envs(&x.envs),
                escape(&release_line(x.item)),
                pinned(x.item, code)
            );
            if !x.item.restarts.is_empty() {
                let w: Vec<String> = x.item.restarts.iter().map(|p| escape(p)).collect();
                let _ = writeln!(out, "  - restarts {}", w.join(", "));
            }
            for n in &x.item.notes {
                let _ = writeln!(out, "  - {}", prose(n, escape));
            }
            if let Some(a) = &x.item.audit {
                crate::diff::bump::show::outcome_markdown(&mut out, &a.outcome, &a.old_version, detail);
            }
        }
        out.push('\n');
    }
    out
}

/// Text for Markdown: each `code span` of it kept as written, the rest
/// escaped; all of it escaped when its backticks do not pair up.
fn prose(s: &str, escape: &dyn Fn(&str) -> String) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return escape(s);
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| if i % 2 == 1 { format!("`{p}`") } else { escape(p) })
        .collect()
}

fn longest_run(s: &str) -> usize {
    let (mut best, mut cur) = (0, 0);
    for c in s.chars() {
        cur = if c == '`' { cur + 1 } else { 0 };
        best = best.max(cur);
    }
    best
}

/// The review as JSON: `images`, `dangers` and `releases`, each entry with
/// its `environments`.
pub fn json(r: &Review) -> J {
    json!({
        "dangers": dangers(r).iter().map(|d| json!({
            "code": d.item.code,
            "name": super::lints::find(d.item.code).map(|l| l.name),
            "environments": d.envs,
            "component": d.item.component,
            "object": d.item.object,
            "message": d.item.message,
            "help": d.item.help,
            "file": &*d.item.origin.file,
            "line": d.item.origin.line,
        })).collect::<Vec<_>>(),
        "images": images(r).iter().map(|i| json!({
            "status": i.item.status(),
            "from": i.item.from,
            "to": i.item.to,
            "where": i.item.places,
            "environments": i.envs,
        })).collect::<Vec<_>>(),
        "releases": releases(r).iter().map(|x| json!({
            "component": x.item.component,
            "chart": x.item.chart,
            "from": x.item.from,
            "to": x.item.to,
            "bumped": x.item.bumped(),
            "rendered": x.item.rendered,
            "relabelled": x.item.folded,
            "added": x.item.added,
            "changed": x.item.changed,
            "removed": x.item.removed,
            "restarts": x.item.restarts,
            "notes": x.item.notes,
            "summary": release_line(x.item),
            "environments": x.envs,
        })).collect::<Vec<_>>(),
    })
}
