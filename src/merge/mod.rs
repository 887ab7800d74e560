//! Stage 2, merge: a component's value layers, lowest first, merged the way
//! Helm merges several `-f` files. Mappings merge key by key; lists and
//! scalars replace; `null` replaces too, so it deletes what lower layers set
//! and stays in the result as `null`, which makes Helm drop the chart's own
//! default as well. Every node keeps the origin of the layer that set it.

use std::sync::{Arc, OnceLock};

use crate::load::{Component, Environment, Platform, Target};
use crate::yaml::{Node, Origin, Value};

use crate::load::templates::ARGO_HEALTH;

/// strata's own lowest layer of a component, if it has one: the health
/// check of child Applications for Argo CD itself (see [`ARGO_HEALTH`]),
/// where the environment's tree is Argo CD's.
pub fn builtin_layer(platform: &Platform, component: &Component, env: &Environment) -> Option<&'static Node> {
    let argo_cd = component.chart.name() == "argo-cd" || component.profile_name() == "argo-cd";
    if !argo_cd || !platform.targets(env).contains(&Target::Argo) {
        return None;
    }
    static LAYER: OnceLock<Option<Node>> = OnceLock::new();
    LAYER
        .get_or_init(|| crate::yaml::parse(&Arc::from(ARGO_HEALTH.0), ARGO_HEALTH.1).ok())
        .as_ref()
}

/// A component's merged values for one environment.
#[derive(Clone, Debug)]
pub struct Merged {
    pub values: Node,
    /// The layer files that existed and were merged, lowest first.
    pub layers: Vec<String>,
}

/// Merges `over` onto `base`.
pub fn merge_into(base: &mut Node, over: &Node) {
    match (&mut base.value, &over.value) {
        // The first layer: one clone of the whole mapping, sized exactly,
        // rather than entry by entry into a growing one.
        (Value::Map(b), Value::Map(o)) if b.is_empty() => *b = std::sync::Arc::clone(o),
        (Value::Map(b), Value::Map(o)) => {
            // Copy on write: only the mappings on the way to a change are
            // copied, and only their entries (each a shared subtree).
            let b = std::sync::Arc::make_mut(b);
            for (key, entry) in o.iter() {
                match b.get_mut(key) {
                    Some(existing) if existing.node.as_map().is_some() && entry.node.as_map().is_some() => {
                        merge_into(&mut existing.node, &entry.node);
                    }
                    Some(existing) => {
                        existing.node = entry.node.clone();
                        existing.key_origin = entry.key_origin.clone();
                    }
                    None => {
                        b.insert(key.clone(), entry.clone());
                    }
                }
            }
        }
        _ => *base = over.clone(),
    }
}

/// Merges the layers that exist for a component in an environment.
pub fn merge_component(platform: &Platform, component: &Component, env: &Environment) -> Merged {
    let mut values = Node {
        value: Value::Map(Default::default()),
        origin: component.origin(),
    };
    let mut layers = Vec::new();
    if let Some(layer) = builtin_layer(platform, component, env) {
        merge_into(&mut values, layer);
        layers.push(ARGO_HEALTH.0.to_owned());
    }
    for file in platform.layer_files(env) {
        if let Some(layer) = component.layers.get(&file) {
            // An empty values file is null: it contributes nothing.
            if layer.value != Value::Null {
                merge_into(&mut values, layer);
            }
            layers.push(crate::world::join(&component.dir, &file));
        }
    }
    Merged { values, layers }
}

/// What one layer says at a path: unset, or the node it sets there.
#[derive(Clone, Debug)]
pub struct Contribution {
    pub layer: String,
    pub node: Option<Node>,
    /// Set when a mapping above the path was replaced by a non-mapping
    /// (for example `null`), which deletes the path.
    pub deleted_by: Option<Origin>,
}

/// Each layer's contribution at a dot-separated `path`, lowest first.
pub fn contributions(platform: &Platform, component: &Component, env: &Environment, path: &str) -> Vec<Contribution> {
    let keys: Vec<&str> = path.split('.').filter(|k| !k.is_empty()).collect();
    let mut out = Vec::new();
    for file in platform.layer_files(env) {
        let Some(layer) = component.layers.get(&file) else {
            continue;
        };
        let mut node = layer;
        let mut found = Some(layer);
        let mut deleted_by = None;
        for key in &keys {
            match node.as_map().and_then(|m| m.get(*key)) {
                Some(e) => node = &e.node,
                None => {
                    if node.as_map().is_none() && !std::ptr::eq(node, layer) {
                        deleted_by = Some(node.origin.clone());
                    }
                    found = None;
                    break;
                }
            }
            found = Some(node);
        }
        out.push(Contribution {
            layer: crate::world::join(&component.dir, &file),
            node: found.cloned(),
            deleted_by,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn p(name: &str, text: &str) -> Node {
        crate::yaml::parse(&Arc::from(name), text).unwrap()
    }

    #[test]
    fn helm_merge_precedence() {
        let mut base = p(
            "values.yaml",
            "a: {x: 1, y: 2}\nlist: [1, 2, 3]\nkeep: base\ngone: {deep: 1}\nscalar: 1\n",
        );
        let over = p(
            "values-dev.yaml",
            "a: {y: 20, z: 30}\nlist: [9]\ngone: null\nscalar: {now: map}\n",
        );
        merge_into(&mut base, &over);
        assert_eq!(
            base.to_json(),
            serde_json::json!({"a": {"x": 1, "y": 20, "z": 30}, "list": [9], "keep": "base",
                               "gone": null, "scalar": {"now": "map"}})
        );
        // Provenance: x from the base, y from the override.
        assert_eq!(&*base.get_path("a.x").unwrap().origin.file, "values.yaml");
        assert_eq!(&*base.get_path("a.y").unwrap().origin.file, "values-dev.yaml");
        assert_eq!(base.get_path("a.y").unwrap().origin.line, 1);
        assert_eq!(&*base.get("gone").unwrap().origin.file, "values-dev.yaml");
    }

    #[test]
    fn null_then_mapping_restores() {
        let mut base = p("a.yaml", "k: null\n");
        merge_into(&mut base, &p("b.yaml", "k: {v: 1}\n"));
        assert_eq!(base.to_json(), serde_json::json!({"k": {"v": 1}}));
    }
}
