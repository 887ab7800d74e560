//! Schemas from the CustomResourceDefinitions an environment ships: a
//! chart's CRDs (rendered with `--include-crds`) or a manifest's validate
//! the custom resources of that environment before any catalog is asked,
//! as kubeconform's strict mode would with the converted CRD. The
//! structural OpenAPI v3 schema of each served version becomes a JSON
//! Schema: objects with properties reject unknown fields unless the CRD
//! preserves them, `x-kubernetes-int-or-string` takes an integer or a
//! string, and `nullable` admits null.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value as J, json};

use super::catalog::{Gvk, KindSchema};

/// Converts one OpenAPI v3 schema node of a CRD into a JSON Schema node.
fn convert(v: &J) -> J {
    let J::Object(m) = v else { return v.clone() };
    let mut out = Map::new();
    for (k, x) in m {
        let converted = match k.as_str() {
            "properties" | "patternProperties" | "definitions" => match x {
                J::Object(props) => J::Object(props.iter().map(|(n, s)| (n.clone(), convert(s))).collect()),
                other => other.clone(),
            },
            "items" | "additionalProperties" | "not" => convert(x),
            "allOf" | "anyOf" | "oneOf" => match x {
                J::Array(list) => J::Array(list.iter().map(convert).collect()),
                other => other.clone(),
            },
            // Formats Kubernetes knows (int32, byte, date-time, …) are not
            // asserted: kubeconform does not either.
            "format" => continue,
            _ => x.clone(),
        };
        out.insert(k.clone(), converted);
    }
    if m.get("x-kubernetes-int-or-string") == Some(&J::Bool(true)) {
        out.remove("type");
        out.insert("anyOf".into(), json!([{"type": "integer"}, {"type": "string"}]));
    }
    let preserve = m.get("x-kubernetes-preserve-unknown-fields") == Some(&J::Bool(true));
    if m.contains_key("properties") && !m.contains_key("additionalProperties") && !preserve {
        out.insert("additionalProperties".into(), J::Bool(false));
    }
    if m.get("nullable") == Some(&J::Bool(true))
        && let Some(J::String(t)) = out.get("type").cloned()
    {
        out.insert("type".into(), json!([t, "null"]));
    }
    J::Object(out)
}

/// The schema of every served version of a CRD object, by apiVersion and
/// kind, with the root's apiVersion, kind and metadata allowed.
pub fn schemas(crd: &J) -> Vec<(Gvk, J)> {
    let spec = &crd["spec"];
    let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for v in spec["versions"].as_array().into_iter().flatten() {
        if v["served"].as_bool() == Some(false) {
            continue;
        }
        let (Some(name), Some(schema)) = (v["name"].as_str(), v["schema"].get("openAPIV3Schema")) else {
            continue;
        };
        let mut s = convert(schema);
        if let Some(props) = s.get_mut("properties").and_then(J::as_object_mut) {
            for key in ["apiVersion", "kind"] {
                props.entry(key).or_insert_with(|| json!({"type": "string"}));
            }
            props.entry("metadata").or_insert_with(|| json!({"type": "object"}));
        }
        out.push(((format!("{group}/{name}"), kind.to_owned()), s));
    }
    out
}

/// The kinds the CRD objects among `objects` define, compiled.
pub fn registry<'a>(objects: impl IntoIterator<Item = &'a crate::render::Object>) -> BTreeMap<Gvk, Arc<KindSchema>> {
    let mut out = BTreeMap::new();
    for o in objects.into_iter().filter(|o| o.kind() == "CustomResourceDefinition") {
        let from = match &o.source {
            crate::render::Source::Chart { template } => format!("the CRD {} ({template})", o.name()),
            _ => format!("the CRD {} ({})", o.name(), o.origin.file),
        };
        for (gvk, schema) in schemas(&o.value) {
            let Ok(validator) = jsonschema::options().should_validate_formats(false).build(&schema) else {
                continue;
            };
            out.entry(gvk).or_insert_with(|| {
                Arc::new(KindSchema {
                    validator,
                    path: from.clone(),
                    docs: BTreeMap::new(),
                    root: Arc::new(schema),
                })
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crd_becomes_a_strict_schema() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Widget"}, "versions": [
                {"name": "v1", "served": true, "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"x-kubernetes-int-or-string": true},
                        "note": {"type": "string", "nullable": true},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }}}}}},
                {"name": "v0", "served": false}
            ]}
        });
        let s = schemas(&crd);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].0, ("example.com/v1".to_owned(), "Widget".to_owned()));
        let v = jsonschema::options().build(&s[0].1).unwrap();
        let ok = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"},
                        "spec": {"size": "50%", "note": null, "extra": {"any": 1}}});
        assert!(v.is_valid(&ok));
        assert!(!v.is_valid(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"sise": 1}})));
        assert!(!v.is_valid(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"size": true}})));
    }
}
