//! From a path in a JSON document back to the line a user wrote. Inputs and
//! plain manifests are spanned trees, so a path walks straight to its node.
//! A templated manifest's output has no spans of its own: there the value is
//! looked up in the component's merged values (whose every node carries the
//! layer line that set it), preferring values the template refers to.

use serde_json::Value as J;

use super::message::{Problem, Seg};
use crate::yaml::{Node, Origin, Value};

/// The deepest node along `path`, the origin of the key that leads to it
/// (if any), and how many segments were followed.
pub fn walk<'a>(root: &'a Node, path: &[Seg]) -> (&'a Node, Option<&'a Origin>, usize) {
    let mut node = root;
    let mut key = None;
    for (depth, seg) in path.iter().enumerate() {
        let next = match (seg, &node.value) {
            (Seg::Key(k), Value::Map(m)) => m.get(k).map(|e| (&e.node, Some(&e.key_origin))),
            (Seg::Index(i), Value::Seq(items)) => items.get(*i).map(|n| (n, None)),
            _ => None,
        };
        match next {
            Some((n, k)) => {
                node = n;
                key = k;
            }
            None => return (node, key, depth),
        }
    }
    (node, key, path.len())
}

/// Where in a spanned tree a problem is: the unknown key itself, the key of
/// the mapping that lacks a field, or the offending value.
pub fn origin_in(root: &Node, p: &Problem) -> Origin {
    let (node, key, depth) = walk(root, &p.path);
    if depth == p.path.len() {
        if let Some(k) = &p.key
            && let Some(e) = node.as_map().and_then(|m| m.get(k))
        {
            return e.key_origin.clone();
        }
        if p.missing.is_some()
            && let Some(k) = key
        {
            return k.clone();
        }
    }
    node.origin.clone()
}

/// Whether a spanned node holds exactly this JSON value.
fn same(node: &Node, v: &J) -> bool {
    match (&node.value, v) {
        (Value::Null, J::Null) => true,
        (Value::Bool(a), J::Bool(b)) => a == b,
        (Value::Int(a), J::Number(n)) => n.as_i64() == Some(*a),
        (Value::UInt(a), J::Number(n)) => n.as_u64() == Some(*a),
        (Value::Float(a), J::Number(n)) => n.as_f64() == Some(*a),
        (Value::Str(a), J::String(b)) => a == b,
        (Value::Seq(a), J::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)),
        (Value::Map(a), J::Object(b)) => {
            a.len() == b.len() && b.iter().all(|(k, y)| a.get(k).is_some_and(|e| same(&e.node, y)))
        }
        _ => false,
    }
}

/// How many trailing keys two paths share.
fn shared_suffix(a: &[String], b: &[Seg]) -> usize {
    a.iter()
        .rev()
        .zip(b.iter().rev().filter_map(|s| match s {
            Seg::Key(k) => Some(k),
            Seg::Index(_) => None,
        }))
        .take_while(|(x, y)| x == y)
        .count()
}

struct Candidate<'a> {
    /// Origin to report: the value, or the key of an entry.
    origin: &'a Origin,
    /// Keys from the root of the values to the node.
    keys: Vec<String>,
}

fn collect<'a>(
    node: &'a Node,
    keys: &mut Vec<String>,
    test: &dyn Fn(&'a Node) -> Option<&'a Origin>,
    out: &mut Vec<Candidate<'a>>,
) {
    if out.len() > 10_000 {
        return;
    }
    if let Some(origin) = test(node) {
        out.push(Candidate {
            origin,
            keys: keys.clone(),
        });
    }
    match &node.value {
        Value::Map(m) => {
            for (k, e) in m.iter() {
                keys.push(k.clone());
                collect(&e.node, keys, test, out);
                keys.pop();
            }
        }
        Value::Seq(items) => items.iter().for_each(|n| collect(n, keys, test, out)),
        _ => {}
    }
}

/// Finds where in `values` the offending part of a templated object came
/// from. `instance` is the object's value at the problem's path; `template`
/// is the template's text, to prefer values it refers to as `<root><path>`
/// (`values.app.replicas`).
pub fn in_values<'a>(values: &'a Node, p: &Problem, instance: &J, template: &str, root: &str) -> Option<&'a Origin> {
    let mut found = Vec::new();
    let mut keys = Vec::new();
    // For an unknown field, look for the entry (same key, same value); else
    // for the value itself.
    let mut hint: Vec<Seg> = p.path.clone();
    match &p.key {
        Some(key) => {
            let v = instance.get(key)?;
            hint.push(Seg::Key(key.clone()));
            let test = |n: &'a Node| -> Option<&'a Origin> {
                let e = n.as_map()?.get(key)?;
                same(&e.node, v).then_some(&e.key_origin)
            };
            collect(values, &mut keys, &test, &mut found);
            // The candidate's keys end at the mapping; add the key itself.
            for c in &mut found {
                c.keys.push(key.clone());
            }
        }
        None => {
            let trivial = matches!(instance, J::Bool(_) | J::Null) || instance.as_str().is_some_and(|s| s.len() < 2);
            let test = |n: &'a Node| -> Option<&'a Origin> { same(n, instance).then_some(&n.origin) };
            collect(values, &mut keys, &test, &mut found);
            if trivial && found.len() > 1 {
                found.retain(|c| shared_suffix(&c.keys, &hint) > 0);
            }
        }
    }
    let referenced = |keys: &[String]| {
        (1..=keys.len()).any(|n| {
            let dotted = keys[..n].join(".");
            template.contains(&format!("{root}{dotted}"))
        })
    };
    found
        .iter()
        .enumerate()
        .map(|(i, c)| ((referenced(&c.keys), shared_suffix(&c.keys, &hint), usize::MAX - i), c))
        .filter(|((r, s, _), _)| *r || *s > 0)
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, c)| c.origin)
}

/// The line of a template that writes the last key of the problem's path
/// (`  replicas: {{ … }}`), when the value cannot be traced further.
pub fn in_template(file: &std::sync::Arc<str>, text: &str, p: &Problem) -> Option<Origin> {
    let key = p.key.clone().or_else(|| {
        p.path.iter().rev().find_map(|s| match s {
            Seg::Key(k) => Some(k.clone()),
            Seg::Index(_) => None,
        })
    })?;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start().trim_start_matches("- ").trim_start();
        if let Some(rest) = trimmed.strip_prefix(key.as_str())
            && rest.starts_with(':')
        {
            let col = line.len() - trimmed.len() + 1;
            return Some(Origin::new(file, i as u32 + 1, col as u32, key.chars().count() as u32));
        }
    }
    None
}

/// The first key named `key` anywhere in `root`, in document order.
pub fn find_key<'a>(root: &'a Node, key: &str) -> Option<&'a Origin> {
    match &root.value {
        Value::Map(m) => {
            if let Some(e) = m.get(key) {
                return Some(&e.key_origin);
            }
            m.values().find_map(|e| find_key(&e.node, key))
        }
        Value::Seq(items) => items.iter().find_map(|n| find_key(n, key)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn problem(path: &[&str], key: Option<&str>) -> Problem {
        Problem {
            path: path.iter().map(|s| Seg::Key((*s).to_owned())).collect(),
            key: key.map(str::to_owned),
            missing: None,
            message: String::new(),
            label: String::new(),
            help: None,
        }
    }

    #[test]
    fn walks_to_keys_and_values() {
        let n = crate::yaml::parse(&Arc::from("v.yaml"), "a:\n  b: 1\n  replica: 2\n").unwrap();
        let o = origin_in(&n, &problem(&["a", "b"], None));
        assert_eq!((o.line, o.col), (2, 6));
        let o = origin_in(&n, &problem(&["a"], Some("replica")));
        assert_eq!((o.line, o.col), (3, 3));
    }

    #[test]
    fn values_referenced_by_the_template_win() {
        let n = crate::yaml::parse(&Arc::from("v.yaml"), "other:\n  size: three\napp:\n  size: three\n").unwrap();
        let p = problem(&["spec", "replicas"], None);
        let o = in_values(
            &n,
            &p,
            &J::String("three".into()),
            "replicas: {{ values.app.size }}",
            "values.",
        )
        .unwrap();
        assert_eq!(o.line, 4);
        // Without a reference or a shared key, nothing is claimed.
        assert!(in_values(&n, &p, &J::String("three".into()), "replicas: 3", "values.").is_none());
    }
}
