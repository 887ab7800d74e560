//! The unified-diff hunks of one changed object, each changed line under
//! the merged values traced to the layer that set it, and every line that
//! still shows a secret hidden.

use std::collections::BTreeMap;
use std::sync::Arc;

use similar::ChangeTag;

use super::lines::line_ops;
use super::side::Entry;
use super::{COARSE_NOTE, CONTEXT, Hunk, Key, Line, MAX_TRACED_LINES, Op, REDACTED_LINE};
use crate::secrets::Secrets;
use crate::yaml::{self, Node, Origin, Value};

/// One segment of a path into an object.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// For each line of a canonical YAML text, the path of the value written on
/// it (or, for the lines of a block scalar, of the scalar they belong to).
/// A string at `values` (the object's merged values written as one YAML
/// text) gets each of its lines the path of the value it writes.
fn line_paths(text: &str, values: Option<&[&str]>) -> BTreeMap<u32, Vec<Seg>> {
    let mut out = BTreeMap::new();
    let Ok(node) = yaml::parse(&Arc::from("<rendered>"), text) else {
        return out;
    };
    fn walk(n: &Node, path: &mut Vec<Seg>, values: Option<&[&str]>, out: &mut BTreeMap<u32, Vec<Seg>>) {
        match &n.value {
            Value::Map(m) => {
                for (k, e) in m.iter() {
                    path.push(Seg::Key(k.clone()));
                    out.insert(e.key_origin.line, path.clone());
                    walk(&e.node, path, values, out);
                    path.pop();
                }
            }
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    out.insert(item.origin.line, path.clone());
                    walk(item, path, values, out);
                    path.pop();
                }
            }
            // Values written as one YAML string (Argo CD's, the Flux
            // values ConfigMap's) are a block scalar whose node starts at its
            // first content line: each of its lines gets the path of the
            // value it writes, under the string's own.
            Value::Str(s) if s.contains('\n') && values.is_some_and(|v| is_at(path, v)) => {
                for (line, inner) in line_paths(s, None) {
                    let mut full = path.clone();
                    full.extend(inner);
                    out.insert(n.origin.line + line - 1, full);
                }
            }
            _ => {
                out.insert(n.origin.line, path.clone());
            }
        }
    }
    walk(&node, &mut Vec::new(), values, &mut out);
    out
}

/// Whether a path is exactly `want`.
fn is_at(path: &[Seg], want: &[&str]) -> bool {
    path.len() == want.len() && path.iter().zip(want).all(|(s, w)| matches!(s, Seg::Key(k) if k == w))
}

/// Where the merged values sit in an object strata generates: an Argo CD
/// Application's `spec.source.helm.values`, the text of the ConfigMap that
/// carries them to Flux.
fn values_prefix(o: &crate::render::Object) -> Option<&'static [&'static str]> {
    if o.source != crate::render::Source::Generated {
        return None;
    }
    match o.kind() {
        "HelmRelease" => Some(&["spec", "values"]),
        "Application" => Some(&["spec", "source", "helm", "values"]),
        "ConfigMap" => Some(&["data", "values.yaml"]),
        _ => None,
    }
}

/// The values layer that set the value at `path` of an object, for a line
/// under the merged values (other lines come from the object's own input,
/// [`ObjectChange::origin`](super::ObjectChange::origin)).
fn provenance(entry: &Entry<'_>, path: Option<&Vec<Seg>>) -> Option<Origin> {
    let fallback = None;
    let (Some(path), Some(prefix), Some(merged)) = (path, values_prefix(entry.object), entry.merged) else {
        return fallback;
    };
    let under = path.len() >= prefix.len()
        && path
            .iter()
            .zip(prefix.iter())
            .all(|(s, p)| matches!(s, Seg::Key(k) if k == p));
    if !under {
        return fallback;
    }
    let rest = &path[prefix.len()..];
    if rest.is_empty() {
        return None;
    }
    let mut node = &merged.values;
    let mut origin = merged.values.origin.clone();
    for seg in rest {
        match (seg, &node.value) {
            (Seg::Key(k), Value::Map(m)) => match m.get(k) {
                Some(e) => {
                    origin = if e.node.as_map().is_some() {
                        e.key_origin.clone()
                    } else {
                        e.node.origin.clone()
                    };
                    node = &e.node;
                }
                None => break,
            },
            (Seg::Index(i), Value::Seq(items)) => match items.get(*i) {
                Some(item) => {
                    origin = item.origin.clone();
                    node = item;
                }
                None => break,
            },
            _ => break,
        }
    }
    Some(origin)
}

fn redact_line(text: &str, secrets: &Secrets) -> String {
    if secrets.text_holds(text) {
        // Keep the indentation, so the diff still reads as YAML.
        let indent = text.len() - text.trim_start().len();
        format!("{}{REDACTED_LINE}", &text[..indent])
    } else {
        text.to_owned()
    }
}

/// The unified-diff hunks between two objects, and notes on what the work
/// bounds left out (a stretch not compared line by line, lines not traced).
pub(super) fn hunks(
    key: &Key,
    base: Option<&Entry<'_>>,
    head: Option<&Entry<'_>>,
    secrets: &Secrets,
) -> (Vec<Hunk>, Vec<String>) {
    let old = base.map_or("", |e| e.shown(key).text.as_str());
    let new = head.map_or("", |e| e.shown(key).text.as_str());
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let (ops, coarse) = line_ops(&old_lines, &new_lines);
    // The path of each line, for provenance: only for an object that
    // carries merged values, only once a changed line needs it, and not
    // for an object too large to parse again at little cost.
    let traced = |e: Option<&Entry<'_>>, lines: usize| {
        e.is_some_and(|e| e.merged.is_some() && values_prefix(e.object).is_some()) && lines <= MAX_TRACED_LINES
    };
    let (trace_old, trace_new) = (traced(base, old_lines.len()), traced(head, new_lines.len()));
    let mut notes = Vec::new();
    if coarse {
        notes.push(COARSE_NOTE.to_owned());
    }
    let carries_values =
        |e: Option<&Entry<'_>>| e.is_some_and(|e| e.merged.is_some() && values_prefix(e.object).is_some());
    if (carries_values(base) && !trace_old) || (carries_values(head) && !trace_new) {
        notes.push(format!(
            "the changed values lines of this object are not traced to their layer: it has over {MAX_TRACED_LINES} lines"
        ));
    }
    let old_paths = std::cell::OnceCell::new();
    let new_paths = std::cell::OnceCell::new();
    let why = |entry: Option<&Entry<'_>>,
               paths: &std::cell::OnceCell<BTreeMap<u32, Vec<Seg>>>,
               text: &str,
               traced: bool,
               index: usize|
     -> Option<Origin> {
        let entry = entry.filter(|_| traced)?;
        let paths = paths.get_or_init(|| line_paths(text, values_prefix(entry.object)));
        let line = index as u32 + 1;
        let path = paths.range(..=line).next_back().map(|(_, p)| p);
        provenance(entry, path)
    };
    let mut out = Vec::new();
    for group in similar::group_diff_ops(ops, CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (old_range, new_range) = (
            first.old_range().start..last.old_range().end,
            first.new_range().start..last.new_range().end,
        );
        let mut lines = Vec::new();
        for op in &group {
            for change in op.iter_changes(old_lines.as_slice(), new_lines.as_slice()) {
                let text = change.value().trim_end_matches(['\n', '\r']);
                let (op, why) = match change.tag() {
                    ChangeTag::Equal => (Op::Context, None),
                    ChangeTag::Insert => (
                        Op::Added,
                        why(head, &new_paths, new, trace_new, change.new_index().unwrap_or(0)),
                    ),
                    ChangeTag::Delete => (
                        Op::Removed,
                        why(base, &old_paths, old, trace_old, change.old_index().unwrap_or(0)),
                    ),
                };
                lines.push(Line {
                    op,
                    text: redact_line(text, secrets),
                    why,
                });
            }
        }
        // `diff -u` numbers an empty range by the line before it.
        let start = |r: &std::ops::Range<usize>| if r.is_empty() { r.start } else { r.start + 1 };
        out.push(Hunk {
            old_start: start(&old_range),
            old_lines: old_range.len(),
            new_start: start(&new_range),
            new_lines: new_range.len(),
            lines,
        });
    }
    (out, notes)
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use serde_json::Value as J;

    use super::{Seg, hunks, line_paths};
    use crate::diff::side::{Entry, Shown};
    use crate::diff::{Key, Op};
    use crate::render::Object;
    use crate::secrets::Secrets;
    use crate::yaml::Origin;

    #[test]
    fn line_paths_follow_nesting_and_lists() {
        let text = "apiVersion: v1\nkind: X\nspec:\n  values:\n    a: 1\n    list:\n    - x\n    - name: y\n      v: 2\n    text: |\n      one\n      two\n";
        let p = line_paths(text, None);
        let at = |line: u32| p.range(..=line).next_back().map(|(_, s)| s.clone()).unwrap();
        let k = |s: &str| Seg::Key(s.into());
        assert_eq!(at(5), vec![k("spec"), k("values"), k("a")]);
        assert_eq!(at(7), vec![k("spec"), k("values"), k("list"), Seg::Index(0)]);
        assert_eq!(at(9), vec![k("spec"), k("values"), k("list"), Seg::Index(1), k("v")]);
        assert_eq!(at(12), vec![k("spec"), k("values"), k("text")]);
    }

    #[test]
    fn hunks_number_lines_like_diff_u() {
        let obj = Object {
            folder: String::new(),
            value: J::Null,
            origin: Origin::file_start("m.yaml"),
            component: None,
            source: crate::render::Source::Manifest,
            node: None,
            values: None,
        };
        let entry = |text: &str| Entry {
            object: &obj,
            merged: None,
            label: None,
            side: None,
            shown: OnceLock::from(Shown {
                text: text.to_owned(),
                hidden: Default::default(),
                path: None,
            }),
        };
        let key = Key {
            env: "e".into(),
            target: "flux".into(),
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: None,
            name: "m".into(),
        };
        let old: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l5\n", "L5\n");
        let (a, b) = (entry(&old), entry(&new));
        let (h, _) = hunks(&key, Some(&a), Some(&b), &Secrets::default());
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].header(), "@@ -2,7 +2,7 @@");
        let ops: Vec<Op> = h[0].lines.iter().map(|l| l.op).collect();
        assert_eq!(ops.iter().filter(|o| **o == Op::Context).count(), 6);
        assert_eq!(h[0].lines[3].text, "l5");
        assert_eq!(h[0].lines[3].op, Op::Removed);
        assert_eq!(h[0].lines[4].text, "L5");
        let (added, _) = hunks(&key, None, Some(&b), &Secrets::default());
        assert_eq!(added[0].header(), "@@ -0,0 +1,10 @@");
    }
}
