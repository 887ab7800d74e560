//! The JSON Schemas of strata's own inputs, embedded in the binary and
//! compiled once per process against an offline registry of all of them
//! (the contract-<type> schemas `$ref` the shared `contract.schema.json`).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use jsonschema::{Registry, Resource, ValidationError, Validator};
use serde_json::Value;

/// `schemas/<file>`, as shipped.
pub const BUILTIN: &[(&str, &str)] = &[
    ("strata.schema.json", include_str!("../../schemas/strata.schema.json")),
    ("config.schema.json", include_str!("../../schemas/config.schema.json")),
    (
        "environment.schema.json",
        include_str!("../../schemas/environment.schema.json"),
    ),
    (
        "contract.schema.json",
        include_str!("../../schemas/contract.schema.json"),
    ),
    (
        "contract-kind.schema.json",
        include_str!("../../schemas/contract-kind.schema.json"),
    ),
    (
        "contract-talos.schema.json",
        include_str!("../../schemas/contract-talos.schema.json"),
    ),
];

/// A compiled schema with the documents it was built from, so that an
/// error's keyword location can be looked up (for the fields it allows).
pub struct Compiled {
    pub validator: Validator,
    /// Documents by base URI (`$id`).
    pub docs: BTreeMap<String, Arc<Value>>,
    pub root: Arc<Value>,
    /// Where the schema was read from, for notes.
    pub name: String,
}

impl Compiled {
    /// The property names the schema allows where `e` found an unknown one.
    pub fn known_fields(&self, e: &ValidationError<'_>) -> Vec<String> {
        known_fields(&self.docs, &self.root, e)
    }
}

/// The property names allowed beside the failing `additionalProperties`.
pub fn known_fields(docs: &BTreeMap<String, Arc<Value>>, root: &Value, e: &ValidationError<'_>) -> Vec<String> {
    let (doc, pointer) = match e.absolute_keyword_location() {
        Some(uri) => {
            let s = uri.as_str();
            let (base, frag) = s.split_once('#').unwrap_or((s, ""));
            match docs.get(base) {
                Some(d) => (&**d, percent_decode(frag)),
                None => return Vec::new(),
            }
        }
        None => (root, e.schema_path().as_str().to_owned()),
    };
    let parent = pointer.rsplit_once('/').map_or("", |(p, _)| p);
    let mut names: Vec<String> = doc
        .pointer(parent)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

pub(crate) fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

struct Builtin {
    registry: Registry<'static>,
    /// The `pattern`s compiled so far: the built-in schemas repeat theirs
    /// (a name, a path, a duration), and each is compiled once.
    patterns: jsonschema::PatternCache,
    docs: BTreeMap<String, Arc<Value>>,
    by_file: BTreeMap<&'static str, Arc<Value>>,
    compiled: BTreeMap<&'static str, Result<Arc<Compiled>, String>>,
}

type Docs = (BTreeMap<String, Arc<Value>>, BTreeMap<&'static str, Arc<Value>>);

/// The base a relative `$id` is resolved against when no file is named
/// (the JSON Schema default the validator uses too). The built-in schemas'
/// `$id`s are their own file names, so that they resolve to the files
/// wherever the folder lives: `schemas/` of strata's repository, a folder
/// `strata schemas export` wrote, an editor's copy.
pub const BASE: &str = "json-schema:///";

/// A schema's `$id` resolved against [`BASE`].
pub fn resolve_id(id: &str) -> String {
    if id.contains("://") {
        id.to_owned()
    } else {
        format!("{BASE}{id}")
    }
}

fn parse_builtin() -> Result<Docs, String> {
    let mut docs = BTreeMap::new();
    let mut by_file = BTreeMap::new();
    for (file, text) in BUILTIN {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("schemas/{file}: {e}"))?;
        let id = resolve_id(v["$id"].as_str().unwrap_or(file));
        let v = Arc::new(v);
        docs.insert(id, Arc::clone(&v));
        by_file.insert(*file, v);
    }
    Ok((docs, by_file))
}

fn builtin() -> &'static Result<Builtin, String> {
    static CELL: OnceLock<Result<Builtin, String>> = OnceLock::new();
    CELL.get_or_init(|| {
        let (docs, by_file) = parse_builtin()?;
        let registry = Registry::new()
            .extend(
                docs.iter()
                    .map(|(id, v)| (id.clone(), Resource::from_contents((**v).clone()))),
            )
            .and_then(|b| b.prepare())
            .map_err(|e| format!("the built-in schemas do not resolve: {e}"))?;
        let mut b = Builtin {
            registry,
            patterns: jsonschema::PatternCache::new(),
            docs,
            by_file,
            compiled: BTreeMap::new(),
        };
        let mut compiled = BTreeMap::new();
        for (file, _) in BUILTIN {
            compiled.insert(*file, compile_with(&b, file));
        }
        b.compiled = compiled;
        Ok(b)
    })
}

fn compile_with(b: &Builtin, file: &str) -> Result<Arc<Compiled>, String> {
    let root = Arc::clone(&b.by_file[file]);
    let validator = jsonschema::options()
        .with_registry(&b.registry)
        .with_pattern_cache(b.patterns.clone())
        .should_validate_formats(true)
        .build(&root)
        .map_err(|e| format!("schemas/{file} does not compile: {e}"))?;
    Ok(Arc::new(Compiled {
        validator,
        docs: b.docs.clone(),
        root,
        name: format!("schemas/{file}"),
    }))
}

/// Compiles the built-in schemas now, if no caller has: beside the load,
/// rather than on the main thread when the first input is checked.
pub fn warm_up() {
    let _ = builtin();
}

/// The compiled built-in schema `file` (`config.schema.json`), or `None`
/// when strata ships no schema of that name.
pub fn get(file: &str) -> Option<Result<Arc<Compiled>, String>> {
    match builtin() {
        Ok(b) => b.compiled.get(file).cloned(),
        Err(e) => Some(Err(e.clone())),
    }
}

/// Compiles a schema a repository provides (a substrate type's contract
/// schema, a component's `values.schema.json`), able to `$ref` the built-in
/// ones by their `$id`, with format assertion on.
pub fn compile(schema: &Value, name: &str) -> Result<Compiled, String> {
    let b = builtin().as_ref().map_err(Clone::clone)?;
    let validator = jsonschema::options()
        .with_registry(&b.registry)
        .with_pattern_cache(b.patterns.clone())
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| e.to_string())?;
    let mut docs = b.docs.clone();
    let root = Arc::new(schema.clone());
    if let Some(id) = schema.get("$id").and_then(Value::as_str) {
        docs.insert(resolve_id(id), Arc::clone(&root));
    }
    Ok(Compiled {
        validator,
        docs,
        root,
        name: name.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_builtin_schema_compiles() {
        for (file, _) in BUILTIN {
            assert!(get(file).unwrap().is_ok(), "{file}: {:?}", get(file).unwrap().err());
        }
    }

    #[test]
    fn talos_contract_resolves_the_shared_schema_offline() {
        let c = get("contract-talos.schema.json").unwrap().unwrap();
        // The shared outputs come from contract.schema.json through the $ref.
        let errors: Vec<String> = c
            .validator
            .iter_errors(&json!({"substrate": "talos"}))
            .map(|e| e.to_string())
            .collect();
        assert!(errors.iter().any(|e| e.contains("cluster_name")), "{errors:?}");
        // Talos outputs beyond the shared ones are optional: the rules that
        // need one report it missing at the contract.
        assert!(!errors.iter().any(|e| e.contains("api_vip")), "{errors:?}");
    }

    #[test]
    fn formats_are_asserted() {
        let c = get("environment.schema.json").unwrap().unwrap();
        let env = json!({"substrate": "kind", "contract": "c.json", "git": {"url": "https://g/x.git"},
            "waivers": [{"rule": "HA001", "component": "x", "reason": "r", "expires": "2027-02-30"}]});
        let errors: Vec<String> = c.validator.iter_errors(&env).map(|e| e.to_string()).collect();
        assert!(errors.iter().any(|e| e.contains("date")), "{errors:?}");
    }
}
