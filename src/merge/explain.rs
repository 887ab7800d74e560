//! Why a merged value is what it is: the final value at a path, each
//! layer's contribution lowest first (including deletions by `null`), and,
//! when no layer sets it, the chart's own default from its profile.

use crate::load::{Component, Environment, Platform};
use crate::world::join;
use crate::yaml::{Node, Origin, Value};

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
}

#[derive(Clone, Debug)]
pub struct LayerStep {
    /// The layer file, relative to the repository root.
    pub file: String,
    pub step: Step,
}

/// The chart's default at the path, read from a profile.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartDefault {
    pub profile: String,
    pub versions: Option<String>,
    pub value: serde_json::Value,
}

#[derive(Clone, Debug)]
pub struct Explanation {
    pub path: String,
    /// The merged value; `None` when no layer sets it (or it was deleted
    /// from above).
    pub value: Option<Node>,
    pub layers: Vec<LayerStep>,
    /// Looked up only when no layer sets the path.
    pub chart_default: Option<ChartDefault>,
}

/// Explains the value at dot-separated `path` of a component in an environment.
///
/// `profile` is the component's chart profile, if it has one: its document,
/// the file it came from and its version range, for the chart default.
pub fn explain(
    platform: &Platform,
    component: &Component,
    env: &Environment,
    path: &str,
    profile: Option<(&Node, &str, &str)>,
) -> Explanation {
    let merged = super::merge_component(platform, component, env);
    let value = merged.values.get_path(path).cloned();
    let contributions = super::contributions(platform, component, env, path);
    let mut layers = Vec::new();
    let mut contributions = contributions.into_iter().peekable();
    for file in platform.layer_files(env) {
        let full = join(&component.dir, &file);
        let step = match contributions.peek() {
            Some(c) if c.layer == full => {
                let c = contributions.next().expect("peeked");
                match (c.node, c.deleted_by) {
                    (Some(n), _) if n.value == Value::Null => Step::Deletes(n.origin),
                    (Some(n), _) if n.as_map().is_some() => Step::Merges(n),
                    (Some(n), _) => Step::Sets(n),
                    (None, Some(o)) => Step::DeletesParent(o),
                    (None, None) => Step::NotSet,
                }
            }
            _ => Step::Absent,
        };
        layers.push(LayerStep { file: full, step });
    }
    let set_by_any = layers.iter().any(|l| !matches!(l.step, Step::Absent | Step::NotSet));
    let chart_default = if set_by_any {
        None
    } else {
        profile.and_then(|(node, file, versions)| {
            find_default(node, path).map(|value| ChartDefault {
                profile: file.to_owned(),
                versions: Some(versions.to_owned()),
                value: value.to_json(),
            })
        })
    };
    Explanation {
        path: path.to_owned(),
        value,
        layers,
        chart_default,
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
    }
}
