//! A document that kinds' schemas `$ref` (Kubernetes' `_definitions.json`,
//! 1.5 MiB of 735 definitions), read once per compile and handed to each
//! kind pruned to the definitions that kind reaches.
//!
//! Building a `Value` of the whole document, and registering and indexing it
//! for every kind, was most of the fixed cost of validation; a Deployment
//! reaches 117 of the definitions, a Namespace a handful. So the document is
//! skimmed once: every member but the definition sections is parsed, and
//! each definition is kept as its raw text (still checked to be JSON). A kind
//! gets a document with the same `$id` and the same members that holds only
//! the definitions reachable from its `$ref`s, so every reference resolves,
//! and every keyword location points, exactly as in the whole document.
//!
//! When the shape is anything else (not an object, a reference that is not
//! `#/<section>/<name>`, a nested `$id` or anchor, which would make the
//! reachable set depend on resolution rules), the whole document is used.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The members that hold definitions by name.
const SECTIONS: &[&str] = &["$defs", "definitions"];

/// Keywords that give a subschema its own base URI or a name to be reached
/// by: with them a `#` reference no longer means "from the document's top".
const SCOPES: &[&str] = &[
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$dynamicRef",
    "$recursiveRef",
    "$recursiveAnchor",
];

pub enum RefDoc {
    /// Definitions as text, parsed when a kind reaches them.
    Split {
        /// Every other member, parsed.
        top: Map<String, Value>,
        /// Section (`$defs`) → definition name → its JSON text.
        sections: BTreeMap<String, BTreeMap<String, Box<RawValue>>>,
    },
    Whole(Arc<Value>),
}

struct Skim {
    top: Map<String, Value>,
    sections: BTreeMap<String, BTreeMap<String, Box<RawValue>>>,
}

impl<'de> Deserialize<'de> for Skim {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Skim, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Skim;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Skim, A::Error> {
                let mut top = Map::new();
                let mut sections = BTreeMap::new();
                while let Some(k) = m.next_key::<String>()? {
                    if SECTIONS.contains(&k.as_str()) {
                        // A repeated key: the last one wins, as in a `Value`.
                        top.remove(&k);
                        sections.insert(k, m.next_value::<BTreeMap<String, Box<RawValue>>>()?);
                    } else {
                        top.insert(k, m.next_value::<Value>()?);
                    }
                }
                Ok(Skim { top, sections })
            }
        }
        d.deserialize_map(V)
    }
}

impl RefDoc {
    /// Reads a document's text; the error is serde_json's, as for a `Value`.
    pub fn parse(text: &str) -> Result<RefDoc, serde_json::Error> {
        match serde_json::from_str::<Skim>(text) {
            Ok(s) if !s.sections.is_empty() => Ok(RefDoc::Split {
                top: s.top,
                sections: s.sections,
            }),
            // Not an object, a section that is not an object of definitions,
            // or no section at all: the whole document (or its error).
            _ => serde_json::from_str::<Value>(text).map(|v| RefDoc::Whole(Arc::new(v))),
        }
    }

    /// The document's `$id`, if it has one.
    pub fn id(&self) -> Option<&str> {
        match self {
            RefDoc::Split { top, .. } => top.get("$id").and_then(Value::as_str),
            RefDoc::Whole(v) => v.get("$id").and_then(Value::as_str),
        }
    }

    /// The document holding what `fragments` (of references into it) reach.
    pub fn pruned<'a>(&self, fragments: impl IntoIterator<Item = &'a str>) -> Result<Arc<Value>, String> {
        let RefDoc::Split { top, sections } = self else {
            return self.whole();
        };
        let mut todo: Vec<(&str, &str)> = Vec::new();
        for f in fragments {
            match definition(sections, f) {
                Some(d) => todo.push(d),
                None => return self.whole(),
            }
        }
        let mut reached: BTreeMap<(&str, &str), Value> = BTreeMap::new();
        while let Some((section, name)) = todo.pop() {
            if reached.contains_key(&(section, name)) {
                continue;
            }
            // A name that is not there stays missing: the reference fails
            // to resolve as it would against the whole document.
            let Some((name, raw)) = sections[section].get_key_value(name) else {
                continue;
            };
            let v: Value = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
            if !local_refs(&v, &mut |r| match definition(sections, r) {
                Some(d) => {
                    todo.push(d);
                    true
                }
                None => false,
            }) {
                return self.whole();
            }
            reached.insert((section, name.as_str()), v);
        }
        let mut doc = top.clone();
        for ((section, name), v) in reached {
            let entry = doc
                .entry(section.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = entry {
                m.insert(name.to_owned(), v);
            }
        }
        Ok(Arc::new(Value::Object(doc)))
    }

    /// Every member and every definition, parsed.
    fn whole(&self) -> Result<Arc<Value>, String> {
        match self {
            RefDoc::Whole(v) => Ok(Arc::clone(v)),
            RefDoc::Split { top, sections } => {
                let mut doc = top.clone();
                for (section, defs) in sections {
                    let mut m = Map::new();
                    for (name, raw) in defs {
                        m.insert(
                            name.clone(),
                            serde_json::from_str(raw.get()).map_err(|e| e.to_string())?,
                        );
                    }
                    doc.insert(section.clone(), Value::Object(m));
                }
                Ok(Arc::new(Value::Object(doc)))
            }
        }
    }
}

/// `(section, name)` for a fragment `/<section>/<name>` (percent-encoded,
/// JSON-pointer-escaped), with a leading `#` or not; `None` for anything else.
fn definition<'s>(
    sections: &'s BTreeMap<String, BTreeMap<String, Box<RawValue>>>,
    fragment: &str,
) -> Option<(&'s str, &'s str)> {
    let pointer = super::schemas::percent_decode(fragment.strip_prefix('#').unwrap_or(fragment));
    let rest = pointer.strip_prefix('/')?;
    let (section, name) = rest.split_once('/')?;
    if name.contains('/') {
        return None;
    }
    let unescape = |s: &str| s.replace("~1", "/").replace("~0", "~");
    let (section, defs) = sections.get_key_value(&unescape(section))?;
    let name = unescape(name);
    // The name borrowed from the document; a missing one is reported by
    // resolution, so it is kept as a section-only marker.
    match defs.get_key_value(&name) {
        Some((n, _)) => Some((section.as_str(), n.as_str())),
        None => Some((section.as_str(), "")),
    }
}

/// Calls `each` with every `$ref` in `v`; false when a reference is not
/// local (`each` said no, or it leaves the document) or `v` sets a scope.
fn local_refs(v: &Value, each: &mut impl FnMut(&str) -> bool) -> bool {
    match v {
        Value::Object(m) => m.iter().all(|(k, x)| {
            if SCOPES.contains(&k.as_str()) && x.is_string() {
                return false;
            }
            if k == "$ref"
                && let Some(r) = x.as_str()
            {
                return r.starts_with('#') && each(r);
            }
            local_refs(x, each)
        }),
        Value::Array(items) => items.iter().all(|x| local_refs(x, each)),
        _ => true,
    }
}

/// Every `$ref` that leaves `v`'s document: its document part, with the
/// fragments referred to in it.
pub fn external_refs(v: &Value, out: &mut BTreeMap<String, BTreeSet<String>>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref"
                    && let Some(r) = x.as_str()
                    && !r.starts_with('#')
                {
                    let (base, fragment) = r.split_once('#').unwrap_or((r, ""));
                    out.entry(base.to_owned()).or_default().insert(fragment.to_owned());
                }
                external_refs(x, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|x| external_refs(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: &Value) -> RefDoc {
        RefDoc::parse(&v.to_string()).unwrap()
    }

    #[test]
    fn keeps_what_is_reachable_and_the_other_members() {
        let d = doc(&json!({
            "$id": "https://x/_d.json",
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {
                "a": {"properties": {"b": {"$ref": "#/$defs/b"}}},
                "b": {"items": {"$ref": "#/$defs/c~1d"}},
                "c/d": {"type": "string"},
                "e": {"type": "integer"},
                "loop": {"$ref": "#/$defs/loop"}
            }
        }));
        assert_eq!(d.id(), Some("https://x/_d.json"));
        let p = d.pruned(["/$defs/a", "/$defs/loop"]).unwrap();
        let defs = p["$defs"].as_object().unwrap();
        assert_eq!(defs.keys().collect::<Vec<_>>(), ["a", "b", "c/d", "loop"]);
        assert_eq!(p["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert_eq!(p["$defs"]["c/d"], json!({"type": "string"}));
        // Percent-encoded fragments, as a URI may carry them.
        let p = d.pruned(["/%24defs/e"]).unwrap();
        assert_eq!(p["$defs"].as_object().unwrap().len(), 1);
    }

    #[test]
    fn anything_else_is_the_whole_document() {
        let v = json!({"$defs": {"a": {"$ref": "other.json#/x"}, "b": {"type": "null"}}});
        let d = doc(&v);
        assert_eq!(*d.pruned(["/$defs/a"]).unwrap(), v);
        assert_eq!(
            *d.pruned(["/$defs/b"]).unwrap(),
            json!({"$defs": {"b": {"type": "null"}}})
        );
        assert_eq!(*d.pruned([""]).unwrap(), v);
        assert_eq!(*d.pruned(["/$defs/b/type"]).unwrap(), v);
        let v = json!({"$defs": {"a": {"$anchor": "x"}}});
        assert_eq!(*doc(&v).pruned(["/$defs/a"]).unwrap(), v);
        let v = json!([1, 2]);
        assert_eq!(*doc(&v).pruned(["/0"]).unwrap(), v);
        let v = json!({"properties": {}});
        assert_eq!(*doc(&v).pruned(["/properties"]).unwrap(), v);
    }

    #[test]
    fn invalid_json_is_an_error_as_for_a_value() {
        let text = r#"{"$defs": {"a": {"type": "string",}}}"#;
        let want = serde_json::from_str::<Value>(text).unwrap_err().to_string();
        assert_eq!(RefDoc::parse(text).err().unwrap().to_string(), want);
    }
}
