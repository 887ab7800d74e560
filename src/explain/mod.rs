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
//!
//! [`chart`] gives what strata knows of the component's chart without helm;
//! [`rendered`], when helm renders it, the rendered fields the value ends
//! up in. The command line prints what these find.

pub mod chart;
pub mod probe;
pub mod rendered;

use crate::diag::Sources;
use crate::inflate;
use crate::load::{Component, Environment, Platform};
use crate::profiles::Profiles;
use crate::profiles::known::{ChartDefault, Knowledge, Unknown, default_at, known_tree, leave, union_into};
use crate::world::{World, join};
use crate::yaml::path::{Seg, ValuesPath};
use crate::yaml::{Node, Origin, Value};

/// What explaining reads besides the merged values: the files, how charts
/// are rendered, the platform and the chart profiles.
pub struct Inputs<'a> {
    pub world: &'a dyn World,
    pub sources: &'a Sources,
    /// How charts are rendered: the mode asked for, helm, the store's root.
    pub inflate: &'a inflate::Settings,
    pub platform: &'a Platform,
    pub profiles: &'a Profiles,
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
    let merged = crate::merge::merge_component(platform, component, env);
    let value = path.lookup(&merged.values).cloned();
    let default = default_at(known, path);
    let mut layers = Vec::new();
    // Whether the path has a value below the layer at hand: a layer that
    // replaces what is above it deletes something only then.
    let mut present = default.is_some();
    // strata's own lowest layer, where the component has one, then the files.
    let builtin = crate::merge::builtin_layer(platform, component, env)
        .map(|layer| (crate::load::templates::ARGO_HEALTH.0.to_owned(), Some(layer)));
    let files = platform
        .layer_files(env)
        .into_iter()
        .map(|file| (join(&component.dir, &file), component.layers.get(&file)));
    for (full, layer) in builtin.into_iter().chain(files) {
        let mut step = match layer {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn parse(text: &str) -> ValuesPath {
        ValuesPath::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    fn node(text: &str) -> Node {
        crate::yaml::parse(&Arc::from("v.yaml"), text).unwrap()
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
}
