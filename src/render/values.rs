//! How the merged values get into the objects that carry them: through a
//! marker the object templates write, replaced after parsing, or deferred
//! until the file is written.

use std::sync::Arc;

use super::{Deferred, Values};
use serde_json::Value as J;

/// Stands for the merged values in the object templates. The template
/// writes `{{ values | tojson }}`, which gives this string; it is replaced by
/// the values after parsing, so the (large) values are never printed into
/// YAML text and parsed back.
pub(super) const VALUES_MARKER: &str = "\u{1}strata:values\u{1}";

/// Likewise, for the merged values as one YAML string (Argo CD's
/// `helm.values`), nulls kept.
pub(super) const VALUES_YAML_MARKER: &str = "\u{1}strata:values-yaml\u{1}";

/// Whether a string is the marker deferred values stand behind.
pub fn is_values_marker(s: &str) -> bool {
    s == VALUES_MARKER
}

/// Puts the merged values where an object's template asked for them. With
/// `defer`, values asked for once, under keys only (no list on the way),
/// are left as the marker and given back [`Deferred`] when the quick writer
/// writes them.
pub(super) fn substitute_values(doc: &mut J, values: Values<'_>, defer: bool) -> Option<Deferred> {
    let mut found = Vec::new();
    if defer {
        markers(doc, &mut Vec::new(), &mut found);
    }
    let deferred = match found.as_slice() {
        [Some(at)] => values.text().map(|text| Deferred {
            at: at.clone(),
            node: values.node.clone(),
            text: Arc::clone(text),
        }),
        _ => None,
    };
    let mut yaml_text = None;
    replace_markers(doc, values, deferred.is_none(), &mut yaml_text);
    deferred
}

/// The key path of each [`VALUES_MARKER`] in a document; `None` for one
/// inside a list.
pub(super) fn markers(value: &J, path: &mut Vec<String>, found: &mut Vec<Option<Vec<String>>>) {
    match value {
        J::String(s) if s == VALUES_MARKER => found.push(Some(path.clone())),
        J::Array(items) => {
            let mut inner = Vec::new();
            items.iter().for_each(|i| markers(i, &mut Vec::new(), &mut inner));
            found.extend(inner.into_iter().map(|_| None));
        }
        J::Object(m) => {
            for (k, v) in m {
                path.push(k.clone());
                markers(v, path, found);
                path.pop();
            }
        }
        _ => {}
    }
}

pub(super) fn replace_markers(value: &mut J, values: Values<'_>, objects: bool, yaml_text: &mut Option<String>) {
    match value {
        J::String(s) if objects && s == VALUES_MARKER => *value = values.node.to_json(),
        J::String(s) if s == VALUES_YAML_MARKER => {
            let text = yaml_text.get_or_insert_with(|| values.yaml());
            *value = J::String(text.clone());
        }
        J::Array(items) => items
            .iter_mut()
            .for_each(|i| replace_markers(i, values, objects, yaml_text)),
        J::Object(m) => m
            .values_mut()
            .for_each(|v| replace_markers(v, values, objects, yaml_text)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, OnceLock};

    use serde_json::json;

    use super::*;
    use crate::render::{Object, Source};
    use crate::yaml;

    fn values(text: &str) -> yaml::Node {
        yaml::parse(&Arc::from("values.yaml"), text).unwrap()
    }

    /// Values asked for once, under keys, are deferred; anywhere else (in a
    /// list, twice) they are copied in, as is every YAML string.
    #[test]
    fn values_are_deferred_only_where_they_can_be_spliced() {
        let node = values("b: 1\na: [x, {c: null}]\n");
        let cell = OnceLock::new();
        let shared = yaml::Texts::default();
        let v = Values {
            node: &node,
            text: &cell,
            shared: &shared,
        };
        let full = json!({"a": ["x", {"c": null}], "b": 1});

        let mut doc = json!({"kind": "HelmRelease", "spec": {"values": VALUES_MARKER, "s": VALUES_YAML_MARKER}});
        let d = substitute_values(&mut doc, v, true).expect("deferred");
        assert_eq!(d.at, ["spec", "values"]);
        assert_eq!(&*d.text, "a:\n- x\n- c: null\nb: 1\n");
        assert_eq!(doc["spec"]["values"], VALUES_MARKER);
        assert_eq!(doc["spec"]["s"], "a:\n- x\n- c: null\nb: 1\n");
        let object = Object {
            folder: String::new(),
            value: doc,
            origin: node.origin.clone(),
            component: None,
            source: Source::Generated,
            node: None,
            values: Some(Arc::new(d)),
        };
        assert_eq!(object.full()["spec"]["values"], full);
        let mut whole = object.clone();
        whole.materialize();
        assert!(whole.values.is_none());
        assert_eq!(whole.value, *object.full());
        assert_eq!(object.canonical_yaml(), yaml::to_canonical_yaml(&whole.value));

        for mut doc in [
            json!({"spec": {"values": VALUES_MARKER}}),
            json!({"spec": {"list": [VALUES_MARKER]}}),
            json!({"spec": {"values": VALUES_MARKER, "again": VALUES_MARKER}}),
        ] {
            let defer = doc["spec"].get("list").is_none() && doc["spec"].get("again").is_none();
            // Without leave to defer, or where it cannot be spliced.
            assert!(substitute_values(&mut doc.clone(), v, false).is_none());
            assert_eq!(substitute_values(&mut doc, v, true).is_some(), defer, "{doc}");
            if !defer {
                assert!(!doc.to_string().contains("strata:values"), "{doc}");
            }
        }
        // Empty values are written as they are.
        let empty = values("{}\n");
        let cell = OnceLock::new();
        let mut doc = json!({"spec": {"values": VALUES_MARKER}});
        assert!(
            substitute_values(
                &mut doc,
                Values {
                    node: &empty,
                    text: &cell,
                    shared: &shared,
                },
                true
            )
            .is_none()
        );
        assert_eq!(doc["spec"]["values"], json!({}));
    }
}
