//! Schema errors in words a user acts on. The validator's own text names
//! schema keywords (`oneOf`, `additionalProperties`); these messages name the
//! field, what was expected and what was found, and turn the two Kubernetes
//! unions everybody meets (quantities and int-or-string) into one sentence.

use crate::diag::found;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{JsonType, ValidationError};
use serde_json::Value;

/// One step of a path into a JSON document.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// `spec.template.spec.containers[0].resources`, or `(top level)`.
pub fn display_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                let plain = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if plain {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                } else {
                    out.push_str(&format!("[{}]", serde_json::to_string(k).unwrap_or_default()));
                }
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if out.is_empty() { "(top level)".to_owned() } else { out }
}

/// What a schema error says, ready for a diagnostic.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// Where in the instance, from its root.
    pub path: Vec<Seg>,
    /// For an unknown field: the field, so that the caret can point at the key.
    pub key: Option<String>,
    /// For a missing field: its name; the caret points at the mapping.
    pub missing: Option<String>,
    pub message: String,
    pub label: String,
    pub help: Option<String>,
}

fn segments(loc: &jsonschema::paths::Location) -> Vec<Seg> {
    loc.segments()
        .map(|s| match s {
            LocationSegment::Property(p) => Seg::Key(p.into_owned()),
            LocationSegment::Index(i) => Seg::Index(i),
        })
        .collect()
}

fn type_word(t: JsonType) -> &'static str {
    match t {
        JsonType::Array => "a list",
        JsonType::Boolean => "a boolean",
        JsonType::Integer => "an integer",
        JsonType::Null => "null",
        JsonType::Number => "a number",
        JsonType::Object => "a mapping",
        JsonType::String => "a string",
    }
}

fn types_of(kind: &TypeKind) -> Vec<JsonType> {
    match kind {
        TypeKind::Single(t) => vec![*t],
        TypeKind::Multiple(set) => set.iter().collect(),
    }
}

/// The types the branches of a failed `oneOf`/`anyOf` wanted, when every
/// branch failed only on its type; `None` when a branch failed otherwise.
fn branch_types(context: &[Vec<ValidationError<'static>>]) -> Option<Vec<JsonType>> {
    let mut out = Vec::new();
    for branch in context {
        if branch.len() != 1 {
            return None;
        }
        match branch[0].kind() {
            ValidationErrorKind::Type { kind } => out.extend(types_of(kind)),
            _ => return None,
        }
    }
    out.retain(|t| *t != JsonType::Null);
    out.sort_by_key(|t| type_word(*t));
    out.dedup();
    Some(out)
}

fn union_message(context: &[Vec<ValidationError<'static>>], instance: &Value, at: &str) -> Option<(String, String)> {
    let types = branch_types(context)?;
    let has = |t: JsonType| types.contains(&t);
    if types.len() == 2 && has(JsonType::String) && has(JsonType::Number) {
        return Some((
            format!(
                "`{at}`: expected a quantity like 100m or 1Gi, found {}",
                found(instance)
            ),
            "expected a quantity".into(),
        ));
    }
    if types.len() == 2 && has(JsonType::String) && has(JsonType::Integer) {
        return Some((
            format!(
                "`{at}`: expected an integer or a string (int-or-string, like 8080 or \"http\"), found {}",
                found(instance)
            ),
            "expected an integer or a string".into(),
        ));
    }
    if !types.is_empty() {
        let words: Vec<&str> = types.iter().map(|t| type_word(*t)).collect();
        return Some((
            format!("`{at}`: expected {}, found {}", words.join(" or "), found(instance)),
            format!("expected {}", words.join(" or ")),
        ));
    }
    None
}

/// Describes one validation error. `known` gives the property names the
/// schema allows where an unknown field was found, for a suggestion.
pub fn describe(e: &ValidationError<'_>, known: impl Fn(&ValidationError<'_>) -> Vec<String>) -> Vec<Problem> {
    let path = segments(e.instance_path());
    let at = display_path(&path);
    let instance = e.instance();
    let problem = |message: String, label: &str| problem_at(&path, message, label);
    match e.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => unknown_fields(&path, unexpected, &known(e)),
        ValidationErrorKind::Required { property } => vec![missing(&path, property)],
        ValidationErrorKind::Type { kind } => vec![wrong_type(&path, &at, kind, instance)],
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
            vec![no_form(&path, &at, context, instance)]
        }
        ValidationErrorKind::Enum { options } => vec![not_allowed(&path, &at, options, instance)],
        ValidationErrorKind::Constant { expected_value } => vec![problem(
            format!("`{at}`: must be {expected_value}, found {}", found(instance)),
            "not the required value",
        )],
        ValidationErrorKind::Pattern { pattern } => vec![problem(
            format!("`{at}`: {} does not match the pattern {pattern}", found(instance)),
            "does not match the pattern",
        )],
        ValidationErrorKind::Format { format } => vec![problem(
            format!("`{at}`: {} is not a valid {format}", found(instance)),
            &format!("not a valid {format}"),
        )],
        _ => vec![problem(format!("`{at}`: {e}"), "rejected by the schema")],
    }
}

/// A problem at `path`, with no field, and no help yet.
fn problem_at(path: &[Seg], message: String, label: &str) -> Problem {
    Problem {
        path: path.to_vec(),
        key: None,
        missing: None,
        message,
        label: label.to_owned(),
        help: None,
    }
}

/// Fields the schema does not allow at `path`, each with the nearest
/// allowed name (of `known`) or what to do.
fn unknown_fields(path: &[Seg], unexpected: &[String], known: &[String]) -> Vec<Problem> {
    let names: Vec<&str> = known.iter().map(String::as_str).collect();
    unexpected
        .iter()
        .map(|key| {
            let mut field = path.to_vec();
            field.push(Seg::Key(key.clone()));
            let help = match crate::load::decode::suggest(key, &names) {
                Some(s) => Some(format!("did you mean `{s}`?")),
                None if names.is_empty() => Some("remove the field".to_owned()),
                None if names.len() <= 12 => Some(format!("known fields here: {}", names.join(", "))),
                None => Some("remove the field, or check its spelling in the API reference".to_owned()),
            };
            Problem {
                path: path.to_vec(),
                key: Some(key.clone()),
                missing: None,
                message: format!("unknown field `{}`", display_path(&field)),
                label: "not a field of this object".into(),
                help,
            }
        })
        .collect()
}

/// A required field missing from the mapping at `path`.
fn missing(path: &[Seg], property: &Value) -> Problem {
    let name = property.as_str().map_or_else(|| property.to_string(), str::to_owned);
    let mut field = path.to_vec();
    field.push(Seg::Key(name.clone()));
    Problem {
        missing: Some(name.clone()),
        help: Some(format!("add `{name}:` here")),
        ..problem_at(
            path,
            format!("missing required field `{}`", display_path(&field)),
            &format!("`{name}` is missing here"),
        )
    }
}

/// A value of the wrong type, with a hint when quotes are the cause.
fn wrong_type(path: &[Seg], at: &str, kind: &TypeKind, instance: &Value) -> Problem {
    let words: Vec<&str> = types_of(kind)
        .into_iter()
        .filter(|t| *t != JsonType::Null)
        .map(type_word)
        .collect();
    let words = if words.is_empty() { vec!["null"] } else { words };
    let mut p = problem_at(
        path,
        format!("`{at}`: expected {}, found {}", words.join(" or "), found(instance)),
        &format!("expected {}", words.join(" or ")),
    );
    if words == ["a string"] && matches!(instance, Value::Bool(_) | Value::Number(_)) {
        p.help = Some("quote the value to make it a string".into());
    } else if words.iter().any(|w| *w == "an integer" || *w == "a number")
        && instance.as_str().is_some_and(|s| s.parse::<f64>().is_ok())
    {
        p.help = Some("remove the quotes to make it a number".into());
    }
    p
}

/// A value that matches none of the forms of a `oneOf`/`anyOf`: in one
/// sentence for a union of types, else with why the first forms failed.
fn no_form(path: &[Seg], at: &str, context: &[Vec<ValidationError<'static>>], instance: &Value) -> Problem {
    if let Some((message, label)) = union_message(context, instance, at) {
        return problem_at(path, message, &label);
    }
    let mut p = problem_at(
        path,
        format!("`{at}`: {} matches none of the allowed forms", found(instance)),
        "matches no allowed form",
    );
    let firsts: Vec<String> = context
        .iter()
        .filter_map(|b| b.first())
        .map(|b| b.to_string())
        .take(3)
        .collect();
    if !firsts.is_empty() {
        p.help = Some(format!("each form failed: {}", firsts.join("; ")));
    }
    p
}

/// A value not among the `enum`'s options, with the nearest one.
fn not_allowed(path: &[Seg], at: &str, options: &Value, instance: &Value) -> Problem {
    let opts: Vec<String> = match options {
        Value::Array(items) => items
            .iter()
            .filter(|v| !v.is_null())
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect(),
        other => vec![other.to_string()],
    };
    let mut p = problem_at(
        path,
        format!("`{at}`: must be one of {}, found {}", opts.join(", "), found(instance)),
        "not an allowed value",
    );
    if let Some(s) = instance.as_str() {
        let refs: Vec<&str> = opts.iter().map(String::as_str).collect();
        if let Some(sug) = crate::load::decode::suggest(s, &refs) {
            p.help = Some(format!("did you mean `{sug}`?"));
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(schema: Value, instance: Value) -> Vec<Problem> {
        let v = jsonschema::validator_for(&schema).unwrap();
        let mut out: Vec<Problem> = v
            .iter_errors(&instance)
            .flat_map(|e| describe(&e, |_| Vec::new()))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn paths_read_like_yaml() {
        let p = vec![
            Seg::Key("spec".into()),
            Seg::Key("containers".into()),
            Seg::Index(0),
            Seg::Key("a.b/c".into()),
        ];
        assert_eq!(display_path(&p), "spec.containers[0][\"a.b/c\"]");
        assert_eq!(display_path(&[]), "(top level)");
    }

    #[test]
    fn quantity_and_int_or_string_are_named() {
        let quantity =
            json!({"properties": {"cpu": {"oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]}}});
        let p = problems(quantity, json!({"cpu": true}));
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].message, "`cpu`: expected a quantity like 100m or 1Gi, found true");
        let ios =
            json!({"properties": {"port": {"oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]}}});
        let p = problems(ios, json!({"port": 1.5}));
        assert!(p[0].message.contains("int-or-string"), "{p:?}");
    }

    #[test]
    fn unknown_required_and_type() {
        let schema = json!({"type": "object", "additionalProperties": false, "required": ["name"],
                            "properties": {"name": {"type": "string"}, "replicas": {"type": "integer"}}});
        let p = problems(schema, json!({"replica": 2, "replicas": "3"}));
        let msgs: Vec<&str> = p.iter().map(|p| p.message.as_str()).collect();
        assert!(msgs.contains(&"unknown field `replica`"), "{msgs:?}");
        assert!(msgs.contains(&"missing required field `name`"), "{msgs:?}");
        assert!(
            msgs.contains(&"`replicas`: expected an integer, found the string \"3\""),
            "{msgs:?}"
        );
    }
}
