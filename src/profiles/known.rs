//! What strata knows of a chart's values besides a component's layers: the
//! chart's own defaults (from its values.yaml, with subcharts under their
//! keys) when strata has the chart, else the paths its profile names. Read by
//! `strata explain` and by the check for likely typos in values layers.

use serde_json::Value as J;

use crate::charts::ChartInfo;
use crate::yaml::path::{Seg, ValuesPath};
use crate::yaml::{Node, Value};

/// Where a chart default was read.
#[derive(Clone, Debug, PartialEq)]
pub enum DefaultFrom {
    /// The chart's own values.yaml; `location` says where strata read the chart.
    Chart {
        name: String,
        version: String,
        location: String,
    },
    /// A chart profile, which describes a range of chart versions.
    Profile { file: String, versions: String },
}

/// The chart's default at the path.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartDefault {
    pub from: DefaultFrom,
    pub value: J,
}

/// The chart as strata has it, for its defaults.
#[derive(Clone, Debug)]
pub struct KnownChart {
    pub name: String,
    pub version: String,
    /// Where strata read it: `.strata/charts`, or a local chart's folder.
    pub location: String,
    /// Its defaults, with subcharts' under their keys (see [`chart_defaults`]).
    pub defaults: J,
}

/// A chart profile's document, file and version range.
#[derive(Clone, Copy, Debug)]
pub struct ProfileDoc<'a> {
    pub node: &'a Node,
    pub file: &'a str,
    pub versions: &'a str,
}

/// What strata knows of a component's chart besides the layers.
#[derive(Clone, Debug, Default)]
pub struct Knowledge<'a> {
    pub chart: Option<KnownChart>,
    pub profile: Option<ProfileDoc<'a>>,
}

/// A path that no layer sets and no chart default has: where it leaves
/// the known values, and the nearest paths that exist.
#[derive(Clone, Debug, PartialEq)]
pub struct Unknown {
    /// The longest prefix that exists.
    pub known: ValuesPath,
    /// Existing paths near the one asked for, nearest first.
    pub suggestions: Vec<ValuesPath>,
    /// The keys at the place the path leaves the known values.
    pub keys: Vec<String>,
    /// What is at `known` when it is not a mapping (`a list of 2 items`, `a string`).
    pub found: Option<String>,
    /// The chart's values.yaml was among what was searched (else only the
    /// layers and the profile's paths).
    pub chart_searched: bool,
}

/// The chart's default at a path: from its values.yaml when strata has the
/// chart, else from its profile.
pub fn default_at(known: &Knowledge<'_>, path: &ValuesPath) -> Option<ChartDefault> {
    if let Some(c) = &known.chart {
        return path.lookup_json(&c.defaults).map(|v| ChartDefault {
            from: DefaultFrom::Chart {
                name: c.name.clone(),
                version: c.version.clone(),
                location: c.location.clone(),
            },
            value: v.clone(),
        });
    }
    let p = known.profile?;
    let dotted = path.dotted()?;
    find_default(p.node, &dotted).map(|d| ChartDefault {
        from: DefaultFrom::Profile {
            file: p.file.to_owned(),
            versions: p.versions.to_owned(),
        },
        value: d.to_json(),
    })
}

/// Every key strata knows the chart to have, as a tree: the chart's
/// defaults, else the paths its profile names (with their defaults).
pub fn known_tree(known: &Knowledge<'_>) -> J {
    if let Some(c) = &known.chart {
        return c.defaults.clone();
    }
    known
        .profile
        .map_or_else(|| J::Object(Default::default()), |p| profile_tree(p.node))
}

/// The values paths a profile names, with their defaults, as a tree.
pub fn profile_tree(profile: &Node) -> J {
    let mut refs = Vec::new();
    value_refs(profile, &mut refs);
    let mut tree = J::Object(Default::default());
    for (path, default) in refs {
        let keys: Vec<&str> = path.split('.').filter(|k| !k.is_empty()).collect();
        insert(&mut tree, &keys, default);
    }
    tree
}

/// Puts `default` at `keys` of a tree, unless something is there already.
fn insert(tree: &mut J, keys: &[&str], default: &Node) {
    let (Some((first, rest)), Some(m)) = (keys.split_first(), tree.as_object_mut()) else {
        return;
    };
    if rest.is_empty() {
        m.entry((*first).to_owned()).or_insert_with(|| default.to_json());
        return;
    }
    let child = m
        .entry((*first).to_owned())
        .or_insert_with(|| J::Object(Default::default()));
    if !child.is_object() {
        *child = J::Object(Default::default());
    }
    insert(child, rest, default);
}

/// Every value reference `{path: ..., default: ...}` of a profile.
fn value_refs<'a>(node: &'a Node, out: &mut Vec<(&'a str, &'a Node)>) {
    match &node.value {
        Value::Map(m) => {
            if let (Some(p), Some(d)) = (m.get("path").and_then(|e| e.node.as_str()), m.get("default")) {
                out.push((p, &d.node));
            }
            for e in m.values() {
                value_refs(&e.node, out);
            }
        }
        Value::Seq(items) => {
            for i in items {
                value_refs(i, out);
            }
        }
        _ => {}
    }
}

/// The chart's defaults as Helm sees them: its values.yaml, with each
/// bundled subchart's defaults under the subchart's key (its alias, or its
/// name), overridden by what the parent's values.yaml sets there.
pub fn chart_defaults(info: &ChartInfo) -> J {
    let mut own = info.values().clone();
    let Some(map) = own.as_object_mut() else {
        return own;
    };
    let mut subs: Vec<(String, &ChartInfo)> = info
        .dependencies
        .iter()
        .filter_map(|d| info.subchart(d.values_key()).map(|s| (d.values_key().to_owned(), s)))
        .collect();
    for (name, sub) in &info.subcharts {
        if !info.dependencies.iter().any(|d| &d.name == name) {
            subs.push((name.clone(), sub));
        }
    }
    for (key, sub) in subs {
        let mut d = chart_defaults(sub);
        if let Some(over) = map.get(&key) {
            coalesce(&mut d, over);
        }
        map.insert(key, d);
    }
    own
}

/// Helm's coalescing of two default trees: mappings key by key, the rest replaced.
fn coalesce(base: &mut J, over: &J) {
    match (base, over) {
        (J::Object(b), J::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(x) => coalesce(x, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Adds the keys of `more` to `tree`: mappings are merged; where one side
/// is a mapping and the other is not, the mapping stays (it has keys).
pub fn union_into(tree: &mut J, more: &J) {
    match (tree, more) {
        (J::Object(t), J::Object(m)) => {
            for (k, v) in m {
                match t.get_mut(k) {
                    Some(x) => union_into(x, v),
                    None => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (t, m) if m.is_object() || !t.is_object() => *t = m.clone(),
        _ => {}
    }
}

/// Where `path` leaves `tree`, and the nearest paths that exist.
pub fn leave(tree: &J, path: &ValuesPath, chart_searched: bool) -> Unknown {
    let mut node = tree;
    for (i, seg) in path.0.iter().enumerate() {
        let here = path.prefix(i);
        let rest = &path.0[i + 1..];
        match (seg, node) {
            (Seg::Key(k), J::Object(m)) => {
                if let Some(n) = m.get(k) {
                    node = n;
                    continue;
                }
                let mut suggestions = Vec::new();
                // A key that holds dots, written as several keys.
                for j in (i + 1..path.len()).rev() {
                    let keys: Option<Vec<&str>> = path.0[i..=j]
                        .iter()
                        .map(|s| match s {
                            Seg::Key(k) => Some(k.as_str()),
                            Seg::Index(_) => None,
                        })
                        .collect();
                    if let Some(keys) = keys {
                        let joined = keys.join(".");
                        if m.contains_key(&joined) {
                            suggestions.push(here.then(&[Seg::Key(joined)]).then(&path.0[j + 1..]));
                        }
                    }
                }
                let keys: Vec<&str> = m.keys().map(String::as_str).collect();
                for c in crate::load::decode::near(k, &keys) {
                    let at = here.then(&[Seg::Key(c.to_owned())]);
                    let whole = at.then(rest);
                    suggestions.push(if whole.lookup_json(tree).is_some() { whole } else { at });
                }
                suggestions.dedup();
                suggestions.truncate(3);
                return Unknown {
                    known: here,
                    suggestions,
                    keys: keys.iter().map(|k| (*k).to_owned()).collect(),
                    found: None,
                    chart_searched,
                };
            }
            (Seg::Index(n), J::Array(items)) => {
                if let Some(x) = items.get(*n) {
                    node = x;
                    continue;
                }
                let suggestions = match items.len() {
                    0 => Vec::new(),
                    len => vec![here.then(&[Seg::Index(len - 1)])],
                };
                return Unknown {
                    known: here,
                    suggestions,
                    keys: Vec::new(),
                    found: Some(items_text(items.len())),
                    chart_searched,
                };
            }
            (_, other) => {
                return Unknown {
                    known: here,
                    suggestions: Vec::new(),
                    keys: Vec::new(),
                    found: Some(match other {
                        J::Array(a) => items_text(a.len()),
                        J::Object(_) => "a mapping".to_owned(),
                        J::Null => "null".to_owned(),
                        J::Bool(_) => "a boolean".to_owned(),
                        J::Number(_) => "a number".to_owned(),
                        J::String(_) => "a string".to_owned(),
                    }),
                    chart_searched,
                };
            }
        }
    }
    Unknown {
        known: path.clone(),
        suggestions: Vec::new(),
        keys: Vec::new(),
        found: None,
        chart_searched,
    }
}

fn items_text(n: usize) -> String {
    match n {
        1 => "a list of 1 item".to_owned(),
        n => format!("a list of {n} items"),
    }
}

/// The `default` of the first value reference `{path: <path>, default: ...}` in a profile.
fn find_default<'a>(node: &'a Node, path: &str) -> Option<&'a Node> {
    match &node.value {
        Value::Map(m) => {
            if m.get("path").and_then(|e| e.node.as_str()) == Some(path)
                && let Some(d) = m.get("default")
            {
                return Some(&d.node);
            }
            m.values().find_map(|e| find_default(&e.node, path))
        }
        Value::Seq(items) => items.iter().find_map(|i| find_default(i, path)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn parse(text: &str) -> ValuesPath {
        ValuesPath::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    #[test]
    fn finds_value_references_at_any_depth() {
        let p = crate::yaml::parse(
            &Arc::from("p.yaml"),
            "workloads:\n  - id: a\n    replicas: {path: deployment.replicas, default: 1}\n    pdb:\n      enabled: {path: pdb.enabled, default: false}\n",
        )
        .unwrap();
        assert_eq!(
            find_default(&p, "pdb.enabled").unwrap().to_json(),
            serde_json::json!(false)
        );
        assert_eq!(
            find_default(&p, "deployment.replicas").unwrap().to_json(),
            serde_json::json!(1)
        );
        assert!(find_default(&p, "deployment").is_none());
        assert_eq!(
            profile_tree(&p),
            serde_json::json!({"deployment": {"replicas": 1}, "pdb": {"enabled": false}})
        );
    }

    #[test]
    fn unknown_paths_get_the_nearest_existing_ones() {
        let tree = serde_json::json!({
            "deployment": {"replicas": 1, "enabled": true},
            "configs": {"params": {"server.insecure": false}},
            "args": ["--a", "--b"],
        });
        let u = leave(&tree, &parse("deploymnt.replicas"), true);
        assert_eq!(u.known, ValuesPath::default());
        assert_eq!(u.suggestions, vec![parse("deployment.replicas")]);
        let u = leave(&tree, &parse("deployment.replcas"), true);
        assert_eq!(u.suggestions, vec![parse("deployment.replicas")]);
        let u = leave(&tree, &parse("configs.params.server.insecure"), true);
        assert_eq!(u.suggestions, vec![parse("configs.params.\"server.insecure\"")]);
        let u = leave(&tree, &parse("args[7]"), true);
        assert_eq!(u.found.as_deref(), Some("a list of 2 items"));
        assert_eq!(u.suggestions, vec![parse("args[1]")]);
        let u = leave(&tree, &parse("deployment.replicas.x"), true);
        assert_eq!(u.found.as_deref(), Some("a number"));
        let u = leave(&tree, &parse("zzz"), true);
        assert!(u.suggestions.is_empty());
        assert_eq!(u.keys, vec!["args", "configs", "deployment"]);
    }

    #[test]
    fn chart_defaults_put_subcharts_under_their_keys() {
        let files = |chart: &str, values: &str| -> Vec<(String, Vec<u8>)> {
            vec![
                ("Chart.yaml".into(), chart.as_bytes().to_vec()),
                ("values.yaml".into(), values.as_bytes().to_vec()),
            ]
        };
        let mut all = files(
            "apiVersion: v2\nname: site\nversion: 1.0.0\ndependencies:\n  - name: web\n    version: 1.0.0\n    repository: file://../web\n    alias: front\n",
            "front:\n  replicas: 3\nown: 1\n",
        );
        for (p, b) in files(
            "apiVersion: v2\nname: web\nversion: 1.0.0\n",
            "replicas: 1\nimage: {tag: x}\n",
        ) {
            all.push((format!("charts/web/{p}"), b));
        }
        let info = crate::charts::archive::from_files(&all, 0).unwrap();
        assert_eq!(
            chart_defaults(&info),
            serde_json::json!({"front": {"replicas": 3, "image": {"tag": "x"}}, "own": 1})
        );
    }
}
