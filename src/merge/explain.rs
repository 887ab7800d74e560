//! Why a merged value is what it is: the final value at a path, each
//! layer's contribution lowest first (including deletions by `null`), and,
//! when no layer sets it, the chart's own default — from the chart's
//! values.yaml when strata has the chart, else from its profile. A path that
//! exists nowhere gets the nearest paths that do.
//!
//! Paths are written `a.b."c.d"[0].e`: keys separated by dots, a key that
//! holds dots (Helm values such as `configs.params."server.insecure"`, or an
//! annotation `"app.kubernetes.io/name"`) in double quotes, and list items
//! as `[N]`.

use std::fmt;

use serde_json::Value as J;

use crate::charts::ChartInfo;
use crate::load::{Component, Environment, Platform};
use crate::world::join;
use crate::yaml::{Node, Origin, Value};

/// Paths that show each form of the syntax, for help texts.
pub const PATH_EXAMPLES: &str = "deployment.replicas, configs.params.\"server.insecure\", tolerations[0].key";

/// One step of a values path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seg {
    /// A mapping key.
    Key(String),
    /// A list item, from 0.
    Index(usize),
}

/// A path into a component's values.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ValuesPath(pub Vec<Seg>);

/// Why a path could not be read, at a 1-based column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathError {
    pub column: usize,
    pub message: String,
}

impl ValuesPath {
    /// Reads `a.b."c.d"[0].e`. In a quoted key, `\"` and `\\` are the only
    /// escapes; an unquoted key is anything up to the next `.`, `[` or `]`.
    pub fn parse(text: &str) -> Result<ValuesPath, PathError> {
        let chars: Vec<char> = text.chars().collect();
        let err = |i: usize, message: &str| PathError {
            column: i + 1,
            message: message.to_owned(),
        };
        if chars.is_empty() {
            return Err(err(0, "the path is empty"));
        }
        let mut segs = Vec::new();
        let mut i = 0;
        let mut want_key = true;
        while want_key || i < chars.len() {
            if want_key {
                want_key = false;
                match chars.get(i) {
                    None => return Err(err(i, "the path ends with `.`: a key must follow it")),
                    Some('.') if i == 0 => return Err(err(i, "the path starts with `.`: start with a key")),
                    Some('.') => return Err(err(i, "two dots in a row: a key must come between them")),
                    Some('[') if i == 0 => {
                        return Err(err(
                            i,
                            "the path starts with a list index, but the values are a mapping: start with a key",
                        ));
                    }
                    Some('[') => {
                        return Err(err(
                            i,
                            "a key must follow `.`; a list index follows its key directly, as in tolerations[0]",
                        ));
                    }
                    Some(']') => return Err(err(i, "`]` without `[`")),
                    Some('"') => {
                        let mut key = String::new();
                        let mut j = i + 1;
                        loop {
                            match chars.get(j) {
                                None => return Err(err(i, "the quoted key is not closed: end it with `\"`")),
                                Some('"') => break,
                                Some('\\') => match chars.get(j + 1) {
                                    Some(&c @ ('"' | '\\')) => {
                                        key.push(c);
                                        j += 2;
                                    }
                                    Some(c) => {
                                        return Err(err(
                                            j,
                                            &format!(
                                                "unknown escape `\\{c}` in a quoted key: only `\\\"` and `\\\\` are escapes"
                                            ),
                                        ));
                                    }
                                    None => return Err(err(j, "the quoted key ends with `\\`")),
                                },
                                Some(&c) => {
                                    key.push(c);
                                    j += 1;
                                }
                            }
                        }
                        segs.push(Seg::Key(key));
                        i = j + 1;
                    }
                    Some(_) => {
                        let start = i;
                        while let Some(&c) = chars.get(i) {
                            match c {
                                '.' | '[' => break,
                                ']' => return Err(err(i, "`]` without `[`")),
                                '"' => {
                                    return Err(err(
                                        i,
                                        "a `\"` inside a key: quote the whole key, as in \"server.insecure\"",
                                    ));
                                }
                                _ => i += 1,
                            }
                        }
                        segs.push(Seg::Key(chars[start..i].iter().collect()));
                    }
                }
            } else {
                match chars[i] {
                    '.' => {
                        i += 1;
                        want_key = true;
                    }
                    '[' => {
                        let start = i + 1;
                        let mut j = start;
                        while chars.get(j).is_some_and(char::is_ascii_digit) {
                            j += 1;
                        }
                        if j == start {
                            return Err(err(j, "`[` must be followed by a list index, a number such as [0]"));
                        }
                        if chars.get(j) != Some(&']') {
                            return Err(err(j, "a list index is a number closed by `]`, as in [0]"));
                        }
                        let digits: String = chars[start..j].iter().collect();
                        let n = digits.parse().map_err(|_| err(start, "the list index is too large"))?;
                        segs.push(Seg::Index(n));
                        i = j + 1;
                    }
                    c => {
                        return Err(err(
                            i,
                            &format!("expected `.`, `[` or the end of the path after a key, found `{c}`"),
                        ));
                    }
                }
            }
        }
        Ok(ValuesPath(segs))
    }

    /// A path of plain keys, as profiles and [`Node::get_path`] write them.
    pub fn from_dotted(path: &str) -> ValuesPath {
        ValuesPath(
            path.split('.')
                .filter(|k| !k.is_empty())
                .map(|k| Seg::Key(k.to_owned()))
                .collect(),
        )
    }

    /// The dotted form profiles use: only for paths of keys without dots.
    pub fn dotted(&self) -> Option<String> {
        let keys: Option<Vec<&str>> = self
            .0
            .iter()
            .map(|s| match s {
                Seg::Key(k) if !k.contains('.') && !k.is_empty() => Some(k.as_str()),
                _ => None,
            })
            .collect();
        keys.map(|k| k.join("."))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The first `n` steps.
    pub fn prefix(&self, n: usize) -> ValuesPath {
        ValuesPath(self.0[..n.min(self.0.len())].to_vec())
    }

    /// This path followed by `segs`.
    pub fn then(&self, segs: &[Seg]) -> ValuesPath {
        let mut out = self.clone();
        out.0.extend_from_slice(segs);
        out
    }

    /// The last mapping key of the path.
    pub fn last_key(&self) -> Option<&str> {
        self.0.iter().rev().find_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        })
    }

    /// The node at the path.
    pub fn lookup<'n>(&self, node: &'n Node) -> Option<&'n Node> {
        self.0.iter().try_fold(node, |n, s| match (s, &n.value) {
            (Seg::Key(k), Value::Map(m)) => m.get(k).map(|e| &e.node),
            (Seg::Index(i), Value::Seq(items)) => items.get(*i),
            _ => None,
        })
    }

    /// The JSON value at the path.
    pub fn lookup_json<'j>(&self, value: &'j J) -> Option<&'j J> {
        self.0.iter().try_fold(value, |v, s| match s {
            Seg::Key(k) => v.as_object()?.get(k),
            Seg::Index(i) => v.as_array()?.get(*i),
        })
    }
}

/// Whether a key must be quoted to be read back as one key.
fn needs_quotes(key: &str) -> bool {
    key.is_empty() || key.contains(['.', '[', ']', '"'])
}

impl fmt::Display for ValuesPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, s) in self.0.iter().enumerate() {
            match s {
                Seg::Key(k) => {
                    if n > 0 {
                        f.write_str(".")?;
                    }
                    if needs_quotes(k) {
                        write!(f, "\"{}\"", k.replace('\\', "\\\\").replace('"', "\\\""))?;
                    } else {
                        f.write_str(k)?;
                    }
                }
                Seg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// What one layer does at the path.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The layer file does not exist for this component.
    Absent,
    /// The layer exists and says nothing at the path.
    NotSet,
    /// It sets a scalar or a list (which replaces what is below).
    Sets(Node),
    /// It sets a mapping, merged key by key with the layers below.
    Merges(Node),
    /// It sets the path to `null`, which deletes it and the chart's default.
    Deletes(Origin),
    /// It replaces a mapping above the path by a non-mapping, which deletes the path.
    DeletesParent(Origin),
    /// It sets a list the path goes into. Helm replaces lists as a whole, so
    /// this layer decides the item; `item` is what the list holds at the
    /// path, if anything.
    SetsList {
        list: ValuesPath,
        origin: Origin,
        len: usize,
        item: Option<Node>,
    },
    /// It sets what the path reads as a list to something else (`found`),
    /// which deletes the list.
    NotAList {
        list: ValuesPath,
        origin: Origin,
        found: &'static str,
    },
}

impl Step {
    /// Whether the layer says anything at the path.
    pub fn touches(&self) -> bool {
        !matches!(self, Step::Absent | Step::NotSet)
    }
}

#[derive(Clone, Debug)]
pub struct LayerStep {
    /// The layer file, relative to the repository root.
    pub file: String,
    pub step: Step,
}

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

#[derive(Clone, Debug)]
pub struct Explanation {
    pub path: ValuesPath,
    /// The merged value; `None` when no layer sets it (or it was deleted
    /// from above).
    pub value: Option<Node>,
    pub layers: Vec<LayerStep>,
    /// Looked up only when no layer sets the path.
    pub chart_default: Option<ChartDefault>,
    /// Set when the path exists in no layer and has no chart default.
    pub unknown: Option<Unknown>,
}

impl Explanation {
    /// The last layer that says anything at the path.
    pub fn deciding(&self) -> Option<&LayerStep> {
        self.layers.iter().rev().find(|l| l.step.touches())
    }
}

/// What one layer does at `path`.
pub fn step_at(layer: &Node, path: &ValuesPath) -> Step {
    let mut node = layer;
    // The first list the path goes into, and where it is in the path.
    let mut list: Option<(usize, &Node, usize)> = None;
    for (i, seg) in path.0.iter().enumerate() {
        let next = match (seg, &node.value) {
            (Seg::Key(k), Value::Map(m)) => m.get(k).map(|e| &e.node),
            (Seg::Index(n), Value::Seq(items)) => {
                if list.is_none() {
                    list = Some((i, node, items.len()));
                }
                items.get(*n)
            }
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => {
                if let Some((at, l, len)) = list {
                    return Step::SetsList {
                        list: path.prefix(at),
                        origin: l.origin.clone(),
                        len,
                        item: None,
                    };
                }
                return match (seg, &node.value) {
                    _ if i == 0 => Step::NotSet,
                    (Seg::Key(_), Value::Map(_)) => Step::NotSet,
                    (Seg::Key(_), _) => Step::DeletesParent(node.origin.clone()),
                    (Seg::Index(_), v) => Step::NotAList {
                        list: path.prefix(i),
                        origin: node.origin.clone(),
                        found: v.type_name(),
                    },
                };
            }
        }
    }
    if let Some((at, l, len)) = list {
        return Step::SetsList {
            list: path.prefix(at),
            origin: l.origin.clone(),
            len,
            item: Some(node.clone()),
        };
    }
    match &node.value {
        Value::Null => Step::Deletes(node.origin.clone()),
        Value::Map(_) => Step::Merges(node.clone()),
        _ => Step::Sets(node.clone()),
    }
}

/// Explains the value at `path` of a component in an environment.
pub fn explain(
    platform: &Platform,
    component: &Component,
    env: &Environment,
    path: &ValuesPath,
    known: &Knowledge<'_>,
) -> Explanation {
    let merged = super::merge_component(platform, component, env);
    let value = path.lookup(&merged.values).cloned();
    let default = default_at(known, path);
    let mut layers = Vec::new();
    // Whether the path has a value below the layer at hand: a layer that
    // replaces what is above it deletes something only then.
    let mut present = default.is_some();
    for file in platform.layer_files(env) {
        let full = join(&component.dir, &file);
        let mut step = match component.layers.get(&file) {
            Some(layer) => step_at(layer, path),
            None => Step::Absent,
        };
        match &step {
            Step::Sets(_) | Step::Merges(_) | Step::SetsList { item: Some(_), .. } => present = true,
            Step::DeletesParent(_) | Step::NotAList { .. } if !present => step = Step::NotSet,
            Step::Deletes(_) | Step::DeletesParent(_) | Step::NotAList { .. } | Step::SetsList { item: None, .. } => {
                present = false;
            }
            Step::Absent | Step::NotSet => {}
        }
        layers.push(LayerStep { file: full, step });
    }
    let set_by_any = layers.iter().any(|l| l.step.touches());
    let chart_default = if set_by_any { None } else { default };
    let unknown = (!set_by_any && chart_default.is_none()).then(|| {
        let mut tree = known_tree(known);
        union_into(&mut tree, &merged.values.to_json());
        leave(&tree, path, known.chart.is_some())
    });
    Explanation {
        path: path.clone(),
        value,
        layers,
        chart_default,
        unknown,
    }
}

/// The chart's default at a path: from its values.yaml when strata has the
/// chart, else from its profile.
fn default_at(known: &Knowledge<'_>, path: &ValuesPath) -> Option<ChartDefault> {
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
fn leave(tree: &J, path: &ValuesPath, chart_searched: bool) -> Unknown {
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
                for c in super::typos::near(k, &keys) {
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

    fn key(k: &str) -> Seg {
        Seg::Key(k.to_owned())
    }

    fn node(text: &str) -> Node {
        crate::yaml::parse(&Arc::from("v.yaml"), text).unwrap()
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
    fn paths_with_quoted_keys_and_list_items() {
        assert_eq!(
            parse("a.b.\"c.d\"[0].e").0,
            vec![key("a"), key("b"), key("c.d"), Seg::Index(0), key("e")]
        );
        assert_eq!(
            parse("metadata.annotations.\"app.kubernetes.io/name\"").0[2],
            key("app.kubernetes.io/name")
        );
        assert_eq!(parse("m[1][2]").0, vec![key("m"), Seg::Index(1), Seg::Index(2)]);
        assert_eq!(parse(r#""say \"hi\" \\ bye""#).0, vec![key(r#"say "hi" \ bye"#)]);
        assert_eq!(parse("\"\"").0, vec![key("")]);
        // Display quotes exactly the keys that need it, and reads back.
        for text in [
            "a.b.\"c.d\"[0].e",
            "x[3]",
            "\"a[b]\".c",
            r#""q\"\\".r"#,
            "plain.key-with_odd/chars",
        ] {
            let p = parse(text);
            assert_eq!(p.to_string(), text);
            assert_eq!(parse(&p.to_string()), p);
        }
        assert_eq!(parse("a.b").dotted().as_deref(), Some("a.b"));
        assert_eq!(parse("a.\"b.c\"").dotted(), None);
        assert_eq!(parse("a[0]").dotted(), None);
    }

    #[test]
    fn path_errors_name_the_column() {
        let col = |t: &str| ValuesPath::parse(t).unwrap_err().column;
        assert_eq!(col(""), 1);
        assert_eq!(col(".a"), 1);
        assert_eq!(col("a..b"), 3);
        assert_eq!(col("a."), 3);
        assert_eq!(col("[0]"), 1);
        assert_eq!(col("a[x]"), 3);
        assert_eq!(col("a[1"), 4);
        assert_eq!(col("a[]"), 3);
        assert_eq!(col("a.\"b"), 3);
        assert_eq!(col("a.\"b\"c"), 6);
        assert_eq!(col("a.\"b\\n\""), 5);
        assert_eq!(col("a\"b"), 2);
        assert_eq!(col("a]"), 2);
        assert_eq!(col("a.[0]"), 3);
        assert!(
            ValuesPath::parse("a.\"b\\x\"")
                .unwrap_err()
                .message
                .contains("unknown escape `\\x`")
        );
    }

    #[test]
    fn steps_into_lists_name_the_layer_that_set_the_list() {
        let layer = node("tolerations:\n  - key: a\n    effect: NoSchedule\n  - key: b\nm: {x: 1}\ngone: null\n");
        match step_at(&layer, &parse("tolerations[1].key")) {
            Step::SetsList {
                list,
                origin,
                len,
                item,
            } => {
                assert_eq!(list.to_string(), "tolerations");
                assert_eq!((origin.line, len), (2, 2));
                assert_eq!(item.unwrap().to_json(), serde_json::json!("b"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            step_at(&layer, &parse("tolerations[5]")),
            Step::SetsList { item: None, len: 2, .. }
        ));
        assert!(matches!(
            step_at(&layer, &parse("tolerations[1].value")),
            Step::SetsList { item: None, .. }
        ));
        assert!(matches!(
            step_at(&layer, &parse("m[0]")),
            Step::NotAList { found: "a mapping", .. }
        ));
        assert!(matches!(
            step_at(&layer, &parse("gone[0]")),
            Step::NotAList { found: "null", .. }
        ));
        assert!(matches!(step_at(&layer, &parse("m.x.y")), Step::DeletesParent(_)));
        assert!(matches!(step_at(&layer, &parse("m.z")), Step::NotSet));
        assert!(matches!(step_at(&layer, &parse("m")), Step::Merges(_)));
        assert!(matches!(step_at(&layer, &parse("gone")), Step::Deletes(_)));
        assert!(matches!(step_at(&node("{}\n"), &parse("a[0]")), Step::NotSet));
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
