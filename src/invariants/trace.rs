//! From a field of an object a chart rendered back to the values line that
//! decided it, so that a finding about what will run still points at the
//! line to change. In order:
//!
//! 1. the chart profile's path for the field (with the values prefix of a
//!    wrapper chart's subchart: its alias, or its name), when the profile
//!    describes the workload: the layer line that sets it, or the chart's
//!    own default when that is what was rendered;
//! 2. else the one leaf of the merged values (under that prefix) with the
//!    field's key and the rendered value;
//! 3. else the chart's `version:` pin in `config.yaml`, with the template
//!    as a note, and where the field is: a rule about to report it asks
//!    [`probe`] (through [`Ctx::located`](super::Ctx::located)), which
//!    renders the chart again with each candidate value replaced by a
//!    marker, as `strata explain` does, and names the one the field takes.
//!
//! A chart default is pointed at in the chart's own values.yaml when the
//! chart lives in the repository, else at its pin.

use serde_json::Value as J;

use super::facts::{Val, show_json};
use crate::charts::ChartInfo;
use crate::load::Component;
use crate::profiles::version_origin;
use crate::yaml::{Node, Value};

/// The values prefix of the subchart a template belongs to:
/// `site/charts/frontend/templates/x.yaml` → `["frontend"]`.
pub fn subchart_prefix(template: &str) -> Vec<String> {
    let parts: Vec<&str> = template.split('/').collect();
    let mut out = Vec::new();
    let mut i = 1;
    while i + 1 < parts.len() && parts[i] == "charts" {
        out.push(parts[i + 1].to_owned());
        i += 2;
    }
    out
}

/// The chart (or subchart) a template belongs to.
pub fn chart_of<'c>(info: Option<&'c ChartInfo>, prefix: &[String]) -> Option<&'c ChartInfo> {
    prefix.iter().try_fold(info?, |c, key| c.subchart(key))
}

/// Loose equality of a rendered value and a values node: charts quote and
/// convert (`"2"` renders from `2`).
fn same(node: &Node, rendered: &J) -> bool {
    same_value(&node.to_json(), rendered)
}

/// Loose equality of a values value and a rendered one (see [`same`]).
pub fn same_value(v: &J, rendered: &J) -> bool {
    if v == rendered {
        return true;
    }
    let text = |j: &J| match j {
        J::String(s) => Some(s.clone()),
        J::Number(n) => Some(n.to_string()),
        J::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    matches!((text(v), text(rendered)), (Some(a), Some(b)) if a == b)
}

fn leaves<'n>(node: &'n Node, path: &mut Vec<String>, key: &str, value: &J, out: &mut Vec<(String, &'n Node)>) {
    if let Value::Map(m) = &node.value {
        for (k, e) in m.iter() {
            path.push(k.clone());
            if k == key && same(&e.node, value) {
                out.push((path.join("."), &e.node));
            }
            leaves(&e.node, path, key, value, out);
            path.pop();
        }
    }
}

/// The merged values node at a dotted path.
fn at<'n>(merged: &'n Node, path: &str) -> Option<&'n Node> {
    merged.get_path(path)
}

/// What decided `field` (a dotted path in the object, such as
/// `spec.replicas`) of an object rendered by `template`, whose value is
/// `value`. `hint` is the profile's values path for it, without the
/// subchart prefix.
pub fn trace(
    component: &Component,
    merged: Option<&Node>,
    chart: Option<&ChartInfo>,
    template: &str,
    field: &str,
    value: &J,
    hint: Option<&str>,
) -> Val {
    let prefix = subchart_prefix(template);
    let full = |p: &str| {
        let mut parts = prefix.clone();
        parts.push(p.to_owned());
        parts.join(".")
    };
    if let Some(h) = hint {
        let path = full(h);
        if let Some(n) = merged.and_then(|m| at(m, &path)) {
            return Val {
                path,
                value: value.clone(),
                set: true,
                origin: n.origin.clone(),
                node: Some(n.clone()),
                note: None,
                traced: true,
                at: None,
            };
        }
        let default = chart_of(chart, &prefix).and_then(|c| c.default_at(h));
        // The chart's default is not what was rendered: the template took
        // the value from elsewhere, such as the `global.nodeSelector` that
        // Longhorn falls back to; look for it in the values below.
        let elsewhere = default.is_some_and(|d| !d.is_null() && !same_value(d, value));
        let shown = default.map_or_else(String::new, |d| {
            format!(" (`{h}: {}` in its values.yaml)", show_json(d))
        });
        if !elsewhere {
            return Val {
                note: Some(format!(
                    "no layer of {} sets `{path}`, so the chart's default{shown} renders `{field}: {}` ({template})",
                    component.name,
                    show_json(value)
                )),
                origin: if prefix.is_empty() {
                    crate::profiles::default_origin(component, chart, h)
                } else {
                    version_origin(component)
                },
                path,
                value: value.clone(),
                set: false,
                node: None,
                traced: true,
                at: None,
            };
        }
    }
    let key = field.rsplit('.').next().unwrap_or(field);
    if let Some(m) = merged {
        let root = if prefix.is_empty() {
            Some(m)
        } else {
            at(m, &prefix.join("."))
        };
        if let Some(root) = root {
            let mut found = Vec::new();
            let mut path = prefix.clone();
            leaves(root, &mut path, key, value, &mut found);
            if let [(p, n)] = found.as_slice() {
                return Val {
                    path: p.clone(),
                    value: value.clone(),
                    set: true,
                    origin: n.origin.clone(),
                    node: Some((*n).clone()),
                    note: None,
                    traced: true,
                    at: None,
                };
            }
        }
    }
    Val {
        path: field.to_owned(),
        value: value.clone(),
        set: false,
        origin: version_origin(component),
        node: None,
        note: Some(format!(
            "the chart renders `{field}: {}` ({template}); no values line of {} sets it",
            show_json(value),
            component.name
        )),
        traced: false,
        at: None,
    }
}

/// Most values a probe replaces at once.
const MAX_CANDIDATES: usize = 48;

/// The values line (or chart default) that decides the field `at` of an
/// object `component`'s chart renders, whose value is `value`: each leaf of
/// the merged values, and each chart default no layer overrides, that
/// loosely equals it gets a marker of its own (a number for a number, a
/// text for a text), the chart is rendered again, and the marker the field
/// then holds names it. `None` when the chart refuses the markers, no
/// candidate is found, or the field takes none of them.
pub fn probe(
    rerender: &dyn crate::inflate::Rerender,
    r: &crate::render::EnvRender,
    component: &Component,
    merged: Option<&Node>,
    chart: Option<&ChartInfo>,
    at: &super::facts::FieldAt,
    value: &J,
) -> Option<Val> {
    if !matches!(value, J::String(_) | J::Number(_)) {
        return None;
    }
    let values = merged.map_or_else(|| J::Object(Default::default()), Node::to_json);
    let mut candidates: Vec<(Vec<String>, J)> = Vec::new();
    json_leaves(&values, &mut Vec::new(), value, &mut candidates);
    let set = candidates.len();
    if let Some(info) = chart {
        let mut defaults = Vec::new();
        json_leaves(info.values(), &mut Vec::new(), value, &mut defaults);
        defaults.retain(|(p, _)| lookup(&values, p).is_none());
        candidates.extend(defaults);
    }
    candidates.truncate(MAX_CANDIDATES);
    if candidates.is_empty() {
        return None;
    }
    let plain = rerender.rerender(r, &component.name, &values)?;
    let text = serde_json::to_string(&plain).unwrap_or_default();
    let mut numbers = (48611_i64..).step_by(7).filter(|n| !text.contains(&n.to_string()));
    let mut texts = (0..)
        .map(|i| format!("strataprobe{i}x"))
        .filter(|t| !text.contains(t.as_str()));
    let mut probed = values.clone();
    let mut markers = Vec::with_capacity(candidates.len());
    for (path, v) in &candidates {
        let marker = match v {
            J::Number(_) => J::from(numbers.next()?),
            _ => J::from(texts.next()?),
        };
        put(&mut probed, path, marker.clone());
        markers.push(marker);
    }
    let out = rerender.rerender(r, &component.name, &probed)?;
    let object = out.iter().find(|o| {
        o["kind"].as_str() == Some(at.kind.as_str()) && o["metadata"]["name"].as_str() == Some(at.name.as_str())
    })?;
    let field = lookup(object, &at.field.split('.').map(str::to_owned).collect::<Vec<_>>())?;
    let hit = markers.iter().position(|m| match (m, field) {
        (J::Number(a), J::Number(b)) => a == b,
        (J::Number(a), J::String(b)) => *b == a.to_string(),
        (J::String(a), J::String(b)) => b.contains(a.as_str()),
        _ => false,
    })?;
    let (path, _) = &candidates[hit];
    let dotted = path.join(".");
    if hit < set {
        let node = merged.and_then(|m| m.get_path(&dotted))?;
        return Some(Val {
            path: dotted,
            value: value.clone(),
            set: true,
            origin: node.origin.clone(),
            node: Some(node.clone()),
            note: None,
            traced: true,
            at: None,
        });
    }
    Some(Val {
        note: Some(format!(
            "no layer of {} sets `{dotted}`, so the chart's default renders `{}: {}`",
            component.name,
            at.field,
            show_json(value)
        )),
        origin: crate::profiles::default_origin(component, chart, &dotted),
        path: dotted,
        value: value.clone(),
        set: false,
        node: None,
        traced: true,
        at: None,
    })
}

/// The leaves of `v` (through mappings; keys without dots, which a dotted
/// path could not name) that loosely equal `want`.
fn json_leaves(v: &J, path: &mut Vec<String>, want: &J, out: &mut Vec<(Vec<String>, J)>) {
    match v {
        J::Object(m) => {
            for (k, child) in m {
                if k.contains('.') {
                    continue;
                }
                path.push(k.clone());
                json_leaves(child, path, want, out);
                path.pop();
            }
        }
        J::String(_) | J::Number(_) if !path.is_empty() && same_value(v, want) => {
            out.push((path.clone(), v.clone()));
        }
        _ => {}
    }
}

fn lookup<'j>(v: &'j J, path: &[String]) -> Option<&'j J> {
    path.iter().try_fold(v, |v, k| v.as_object()?.get(k))
}

/// `v` with `new` at `path`, creating mappings on the way.
fn put(v: &mut J, path: &[String], new: J) {
    let mut at = v;
    for k in path {
        if !at.is_object() {
            *at = J::Object(Default::default());
        }
        let Some(m) = at.as_object_mut() else { return };
        at = m.entry(k.clone()).or_insert(J::Null);
    }
    *at = new;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subchart_prefixes() {
        assert_eq!(subchart_prefix("site/templates/a.yaml"), Vec::<String>::new());
        assert_eq!(
            subchart_prefix("site/charts/frontend/templates/a.yaml"),
            vec!["frontend"]
        );
        assert_eq!(subchart_prefix("a/charts/b/charts/c/templates/x.yaml"), vec!["b", "c"]);
    }
}
