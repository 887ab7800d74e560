//! The substrate output contract (ADR 0032): `tofu output -json`, or a plain
//! mapping. Sensitive outputs are dropped here, at load: past this module no
//! template, value, log line or output file can see them. Only their names
//! are kept (to name them when something refers to one), and a sealed
//! [`Secrets`] that recognises their texts in any form and nothing else.
//!
//! In `tofu output -json` every output is `{value, type, sensitive}`. A
//! plain mapping gives each output's value directly; an output written there
//! as `{value: …, sensitive: true}` (the same fields, `type` optional) is
//! sensitive, and `{value: …, sensitive: false}` is an ordinary output.
//!
//! In either form a sensitive output may leave its value out —
//! `{sensitive: true, type: string}` — as `strata contract import` writes
//! it: rules and references still know that it exists and is sensitive, and
//! no value is in the repository. One that keeps its value is remembered by
//! name and place ([`Contract::held`]) for SEC002.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::diag::{Diagnostic, Sources, codes};
pub use crate::secrets::Secrets;
use crate::secrets::Sensitive;
use crate::world::{World, WorldError};
use crate::yaml::{self, Entry, Map, Node, Origin, Value};

#[derive(Clone, Debug)]
pub struct Contract {
    pub file: Arc<str>,
    /// The non-sensitive outputs, name to value.
    pub outputs: Node,
    /// Names of the sensitive outputs.
    pub sensitive: BTreeSet<String>,
    pub secrets: Secrets,
    /// The sensitive outputs whose value the file holds, each with where
    /// its value is written (its `value` key; SEC002); empty when git
    /// ignores the file.
    pub held: Vec<(String, Origin)>,
}

impl Contract {
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.outputs.get(name)
    }

    pub fn substrate(&self) -> Option<(&str, &Origin)> {
        let n = self.get("substrate")?;
        Some((n.as_str()?, &n.origin))
    }

    /// The outputs as plain JSON, for templates.
    pub fn to_json(&self) -> serde_json::Value {
        self.outputs.to_json()
    }
}

/// Whether a top-level entry is written as an output record
/// (`{value, type, sensitive}`); in the plain form only one that says
/// whether it is `sensitive` is. A record without `value` is one of a
/// sensitive output whose value was left out.
fn is_record(node: &Node, plain: bool) -> bool {
    match &node.value {
        Value::Map(m) => {
            (m.contains_key("value") || m.contains_key("sensitive"))
                && (!plain || m.contains_key("sensitive"))
                && m.keys().all(|k| matches!(k.as_str(), "value" | "type" | "sensitive"))
        }
        _ => false,
    }
}

/// Whether the document is `tofu output -json`: every top-level value is an
/// output record.
fn is_tofu_form(map: &Map) -> bool {
    !map.is_empty() && map.values().all(|e| is_record(&e.node, false))
}

/// Whether a parsed file reads as a contract: the tofu form, or a plain
/// mapping with a `substrate` output.
pub fn looks_like_contract(node: &Node) -> bool {
    node.as_map()
        .is_some_and(|m| is_tofu_form(m) || m.contains_key("substrate"))
}

/// Reads the contract at `rel` (named at `origin` by an environment),
/// recording its text for diagnostics with its secrets blanked out. A file
/// that is not a contract because a git filter stands between the file and
/// what strata reads is named as such; a held value of a file git ignores
/// is not one SEC002 reports (that file is never committed).
pub fn load(
    world: &dyn World,
    sources: &Sources,
    rel: &str,
    origin: &Origin,
    diags: &mut Vec<Diagnostic>,
) -> Option<Contract> {
    let file: Arc<str> = Arc::from(rel);
    let text = match world.read_text(rel) {
        Ok(t) => t,
        Err(e) => {
            let mut d = super::files::io_error(&file, &e).with_related(origin.clone(), "named here");
            d.origin = origin.clone();
            if e == WorldError::NotFound {
                let env = origin.file.rsplit('/').next().and_then(|f| f.strip_suffix(".yaml"));
                d = d.with_help(format!(
                    "write it from the substrate stack's outputs: `tofu output -json | strata contract import --env {} -`",
                    env.unwrap_or("ENV")
                ));
            }
            diags.push(filtered(world, rel, d));
            return None;
        }
    };
    // The contract's text is recorded for diagnostics only with its secrets
    // blanked out; a syntax error is reported without the line's text.
    let node = match yaml::parse(&file, &text) {
        Ok(n) => n,
        Err(mut e) => {
            // The reader may quote what it read (a duplicate key of a
            // sensitive mapping): the place is said, not the text.
            e.message = unquoted(&e.message);
            diags.push(filtered(world, rel, super::files::syntax_error(e)));
            return None;
        }
    };
    let mut found = Vec::new();
    let contract = decode(&file, node, &mut found);
    diags.extend(
        found
            .into_iter()
            .map(|d| match d.message.contains("must be a mapping") {
                true => filtered(world, rel, d),
                false => d,
            }),
    );
    let mut contract = contract?;
    sources.add_secrets(&contract.secrets);
    sources.insert_redacted(&file, &text, &contract.secrets);
    if !contract.held.is_empty() && world.ignored_by_git(rel) {
        contract.held.clear();
    }
    Some(contract)
}

/// A message with every text it quotes in backticks or quotes left out.
fn unquoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut open: Option<char> = None;
    for c in message.chars() {
        match open {
            Some(q) if c == q => {
                out.push('…');
                out.push(c);
                open = None;
            }
            Some(_) => {}
            None if matches!(c, '`' | '"') => {
                out.push(c);
                open = Some(c);
            }
            None => out.push(c),
        }
    }
    if open.is_some() {
        out.push('…');
    }
    out
}

/// `d`, a contract that cannot be read as one, or, when `.gitattributes`
/// runs a git filter on the file, what that means: strata reads the bytes
/// the filter left.
fn filtered(world: &dyn World, rel: &str, d: Diagnostic) -> Diagnostic {
    let Some(filter) = world.git_filter(rel) else {
        return d;
    };
    let mut f = Diagnostic::error(
        codes::FILTERED,
        d.origin.clone(),
        format!(
            "{rel} is not a contract as strata reads it: .gitattributes runs the git filter `{filter}` on it, and strata reads what the filter left (in a revision, what its clean step stored; in the working tree, what its smudge step wrote, if it ran)"
        ),
    )
    .with_note(format!("as read: {}", d.message))
    .with_help(
        "a contract written by `strata contract import` holds no secret: take it out of the filter's pattern in .gitattributes and commit it as it is",
    );
    f.related = d.related;
    f
}

/// Decodes a parsed contract file.
pub fn decode(file: &Arc<str>, node: Node, diags: &mut Vec<Diagnostic>) -> Option<Contract> {
    let Value::Map(map) = node.value else {
        diags.push(
            Diagnostic::error(
                codes::CONTRACT,
                node.origin,
                "the contract must be a mapping of output names to values",
            )
            .with_help("write it with `tofu output -json | strata contract import --env ENV -`"),
        );
        return None;
    };
    let plain = !is_tofu_form(&map);
    let mut outputs = Map::default();
    let mut sensitive = BTreeSet::new();
    let mut held = Vec::new();
    // Name, value and declared type of each sensitive output.
    let mut hidden: Vec<(String, Node, Option<Node>)> = Vec::new();
    for (name, entry) in Arc::unwrap_or_clone(map) {
        if !is_record(&entry.node, plain) {
            outputs.insert(name, entry);
            continue;
        }
        let Value::Map(fields) = entry.node.value else {
            continue;
        };
        let mut fields = Arc::unwrap_or_clone(fields);
        let is_sensitive = match fields.get("sensitive").map(|e| &e.node.value) {
            Some(Value::Bool(b)) => *b,
            None => false,
            Some(_) => {
                diags.push(
                    Diagnostic::error(
                        codes::CONTRACT,
                        fields["sensitive"].node.origin.clone(),
                        format!("output `{name}`: `sensitive` must be true or false"),
                    )
                    .with_help("write `sensitive: true` to keep the value out of everything strata writes"),
                );
                true
            }
        };
        let value = fields.shift_remove("value").filter(|v| v.node.value != Value::Null);
        if is_sensitive {
            let ty = fields.shift_remove("type").map(|e| e.node);
            if let Some(value) = value {
                held.push((name.clone(), value.key_origin.clone()));
                hidden.push((name.clone(), value.node, ty));
            }
            sensitive.insert(name);
        } else if let Some(value) = value {
            outputs.insert(
                name,
                Entry {
                    key_origin: entry.key_origin,
                    node: value.node,
                },
            );
        } else {
            diags.push(
                Diagnostic::error(
                    codes::CONTRACT,
                    entry.key_origin.clone(),
                    format!("output `{name}` has no `value`: only a sensitive output may leave it out"),
                )
                .with_help("add its `value`, or mark it `sensitive: true` if it is a credential"),
            );
        }
    }
    let outputs = Node {
        value: Value::Map(Arc::new(outputs)),
        origin: Origin::file_start(file),
    };
    let list: Vec<Sensitive<'_>> = hidden
        .iter()
        .map(|(name, value, ty)| Sensitive {
            name,
            value,
            ty: ty.as_ref(),
        })
        .collect();
    let secrets = Secrets::of_contract(file, &list, &outputs);
    Some(Contract {
        file: Arc::clone(file),
        outputs,
        sensitive,
        secrets,
        held,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tofu_form_drops_sensitive_values() {
        let file: Arc<str> = Arc::from("c.json");
        let text = r#"{"client_key": {"sensitive": true, "type": "string", "value": "-----BEGIN KEY-----\nSECRET-VALUE-123\n-----END KEY-----"},
                       "substrate": {"sensitive": false, "type": "string", "value": "talos"}}"#;
        let node = crate::yaml::parse(&file, text).unwrap();
        let mut diags = Vec::new();
        let c = decode(&file, node, &mut diags).unwrap();
        assert!(diags.is_empty());
        assert_eq!(c.substrate().unwrap().0, "talos");
        assert!(c.get("client_key").is_none());
        assert!(c.sensitive.contains("client_key"));
        assert!(c.secrets.text_holds("x SECRET-VALUE-123 y"));
        assert!(!format!("{c:?}").contains("SECRET-VALUE"));
        // PEM armour alone is no secret: a public certificate elsewhere shares it.
        assert!(!c.secrets.text_holds("-----BEGIN KEY-----"));
    }

    #[test]
    fn plain_form_is_taken_as_is() {
        let file: Arc<str> = Arc::from("c.yaml");
        let node = crate::yaml::parse(&file, "substrate: kind\ncluster_name: dev\n").unwrap();
        let c = decode(&file, node, &mut Vec::new()).unwrap();
        assert_eq!(c.get("cluster_name").unwrap().as_str(), Some("dev"));
        assert!(c.sensitive.is_empty());
    }

    #[test]
    fn plain_form_marks_an_output_sensitive_with_a_record() {
        let file: Arc<str> = Arc::from("c.yaml");
        let text = "substrate: kind\nflags: {value: 3}\ntoken:\n  sensitive: true\n  value: plain-form-secret-1\nport: {value: 6443, sensitive: false}\n";
        let node = crate::yaml::parse(&file, text).unwrap();
        let mut diags = Vec::new();
        let c = decode(&file, node, &mut diags).unwrap();
        assert!(diags.is_empty(), "{diags:?}");
        assert!(c.get("token").is_none());
        assert!(c.sensitive.contains("token"));
        assert!(c.secrets.holds("plain-form-secret-1"));
        assert!(!c.to_json().to_string().contains("plain-form-secret-1"));
        // A record that says it is not sensitive is unwrapped; a mapping
        // without `sensitive` is an ordinary value.
        assert_eq!(c.get("port").unwrap().to_json(), serde_json::json!(6443));
        assert_eq!(c.get("flags").unwrap().to_json(), serde_json::json!({"value": 3}));
    }

    #[test]
    fn a_sensitive_output_may_leave_its_value_out_in_either_form() {
        let cases = [
            (
                "c.json",
                r#"{"client_key": {"sensitive": true, "type": "string"},
                    "substrate": {"sensitive": false, "type": "string", "value": "kind"}}"#,
            ),
            (
                "c.yaml",
                "substrate: kind\nclient_key: {sensitive: true, type: string}\n",
            ),
            ("c.yaml", "substrate: kind\nclient_key:\n  sensitive: true\n"),
        ];
        for (name, text) in cases {
            let file: Arc<str> = Arc::from(name);
            let node = crate::yaml::parse(&file, text).unwrap();
            let mut diags = Vec::new();
            let c = decode(&file, node, &mut diags).unwrap();
            assert!(diags.is_empty(), "{text}: {diags:?}");
            assert_eq!(c.substrate().unwrap().0, "kind", "{text}");
            assert!(c.sensitive.contains("client_key"), "{text}");
            assert!(c.get("client_key").is_none(), "{text}");
            assert!(c.held.is_empty() && c.secrets.is_empty(), "{text}");
        }
    }

    #[test]
    fn a_held_value_is_remembered_by_name_and_place() {
        let file: Arc<str> = Arc::from("c.yaml");
        let text = "substrate: kind\nkey:\n  sensitive: true\n  value: >-\n    folded over\n    two lines\nnone: {sensitive: true, value: null}\n";
        let node = crate::yaml::parse(&file, text).unwrap();
        let c = decode(&file, node, &mut Vec::new()).unwrap();
        let held: Vec<(&str, u32)> = c.held.iter().map(|(n, o)| (n.as_str(), o.line)).collect();
        assert_eq!(held, [("key", 4)]);
        assert!(c.sensitive.contains("none"));
        assert!(c.secrets.holds("folded over two lines"));
    }

    #[test]
    fn an_ordinary_output_without_a_value_is_an_error() {
        let file: Arc<str> = Arc::from("c.json");
        let text = r#"{"substrate": {"sensitive": false, "type": "string"}}"#;
        let node = crate::yaml::parse(&file, text).unwrap();
        let mut diags = Vec::new();
        decode(&file, node, &mut diags);
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert!(diags[0].message.contains("`substrate` has no `value`"), "{diags:?}");
    }

    #[test]
    fn a_syntax_error_of_a_contract_quotes_nothing_of_it() {
        assert_eq!(
            unquoted("duplicate key `hunter2`: a YAML mapping may not repeat a key"),
            "duplicate key `…`: a YAML mapping may not repeat a key"
        );
        assert_eq!(unquoted("found \"abc"), "found \"…");
        let world = crate::world::MemWorld::new("2026-01-01").with(
            "c.json",
            r#"{"k": {"sensitive": true, "value": {"hunter2-key": 1, "hunter2-key": 2}}}"#,
        );
        let mut diags = Vec::new();
        let origin = Origin::file_start("environments/dev.yaml");
        assert!(load(&world, &Sources::default(), "c.json", &origin, &mut diags).is_none());
        assert_eq!(diags.len(), 1);
        assert!(!format!("{:?}", diags[0]).contains("hunter2"), "{diags:?}");
    }
}
