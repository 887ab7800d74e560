//! The substrate output contract (ADR 0032): `tofu output -json`, or a plain
//! mapping. Sensitive outputs are dropped here, at load: past this module no
//! template, value, log line or output file can see them. Only their names
//! are kept (to name them when something refers to one), and a sealed set of
//! their texts that can answer "does this string contain a secret?" and
//! nothing else.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use crate::diag::{Diagnostic, codes};
use crate::yaml::{Entry, Map, Node, Origin, Value};

/// Texts of sensitive outputs. It has no accessor, no `Debug` that shows
/// them, and no `Serialize`: the only question it answers is whether a text
/// contains one of them.
#[derive(Clone, Default)]
pub struct Secrets {
    texts: Vec<String>,
}

impl Secrets {
    /// Short scalars (`true`, a port) would match everywhere; only texts of
    /// at least this many characters are looked for.
    const MIN_LEN: usize = 8;

    fn collect(&mut self, node: &Node) {
        match &node.value {
            Value::Str(s) => {
                for part in std::iter::once(s.as_str()).chain(s.lines()) {
                    let t = part.trim();
                    // PEM armour (`-----BEGIN CERTIFICATE-----`) is the same in
                    // every certificate; only the lines between are secret.
                    if t.starts_with("-----") && t.ends_with("-----") {
                        continue;
                    }
                    if t.len() >= Self::MIN_LEN && !self.texts.iter().any(|x| x == t) {
                        self.texts.push(t.to_owned());
                    }
                }
            }
            Value::Seq(items) => items.iter().for_each(|i| self.collect(i)),
            Value::Map(m) => m.values().for_each(|e| self.collect(&e.node)),
            _ => {}
        }
    }

    /// Whether `text` contains any sensitive value (or one of its lines).
    pub fn occurs_in(&self, text: &str) -> bool {
        self.texts.iter().any(|s| text.contains(s.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets(<{} redacted>)", self.texts.len())
    }
}

#[derive(Clone, Debug)]
pub struct Contract {
    pub file: Arc<str>,
    /// The non-sensitive outputs, name to value.
    pub outputs: Node,
    /// Names of the sensitive outputs.
    pub sensitive: BTreeSet<String>,
    pub secrets: Secrets,
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

/// Whether the document is `tofu output -json`: every top-level value is a
/// mapping with a `value` key and nothing beyond `type` and `sensitive`.
fn is_tofu_form(map: &Map) -> bool {
    !map.is_empty()
        && map.values().all(|e| match &e.node.value {
            Value::Map(m) => {
                m.contains_key("value") && m.keys().all(|k| matches!(k.as_str(), "value" | "type" | "sensitive"))
            }
            _ => false,
        })
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
            .with_help("write the file with `tofu output -json > FILE`"),
        );
        return None;
    };
    let mut outputs = Map::new();
    let mut sensitive = BTreeSet::new();
    let mut secrets = Secrets::default();
    if is_tofu_form(&map) {
        for (name, entry) in Arc::unwrap_or_clone(map) {
            let Value::Map(fields) = entry.node.value else {
                continue;
            };
            let mut fields = Arc::unwrap_or_clone(fields);
            let is_sensitive = match fields.get("sensitive").map(|e| &e.node.value) {
                Some(Value::Bool(b)) => *b,
                None => false,
                Some(_) => {
                    diags.push(Diagnostic::error(
                        codes::CONTRACT,
                        fields["sensitive"].node.origin.clone(),
                        format!("output `{name}`: `sensitive` must be true or false"),
                    ));
                    true
                }
            };
            let Some(value) = fields.shift_remove("value") else {
                continue;
            };
            if is_sensitive {
                secrets.collect(&value.node);
                sensitive.insert(name);
            } else {
                outputs.insert(
                    name,
                    Entry {
                        key_origin: entry.key_origin,
                        node: value.node,
                    },
                );
            }
        }
    } else {
        outputs = Arc::unwrap_or_clone(map);
    }
    Some(Contract {
        file: Arc::clone(file),
        outputs: Node {
            value: Value::Map(Arc::new(outputs)),
            origin: Origin::file_start(file),
        },
        sensitive,
        secrets,
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
        assert!(c.secrets.occurs_in("x SECRET-VALUE-123 y"));
        assert!(!format!("{c:?}").contains("SECRET-VALUE"));
        // PEM armour alone is no secret: a public certificate elsewhere shares it.
        assert!(!c.secrets.occurs_in("-----BEGIN KEY-----"));
    }

    #[test]
    fn plain_form_is_taken_as_is() {
        let file: Arc<str> = Arc::from("c.yaml");
        let node = crate::yaml::parse(&file, "substrate: kind\ncluster_name: dev\n").unwrap();
        let c = decode(&file, node, &mut Vec::new()).unwrap();
        assert_eq!(c.get("cluster_name").unwrap().as_str(), Some("dev"));
        assert!(c.sensitive.is_empty());
    }
}
