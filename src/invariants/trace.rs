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
//!    as a note.

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
                path,
                value: value.clone(),
                set: false,
                origin: version_origin(component),
                node: None,
                traced: true,
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
    }
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
