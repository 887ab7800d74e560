//! Redaction of parsed values, before anything is written as text: a
//! sensitive output taken out of strings, keys and numbers, and the data of
//! every Secret-shaped mapping, at any depth and inside strings that hold
//! JSON or YAML.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value as J;

use super::set::Secrets;
use super::{MARK, SECRET_DATA};

/// How deep texts holding JSON or YAML are opened, one inside another.
const MAX_EMBEDDED_DEPTH: usize = 4;

impl Secrets {
    /// Whether a parsed string equals a secret or, printed, holds one.
    fn shows(&self, text: &str) -> bool {
        self.inner.exact.contains_key(text) || self.text_holds(text)
    }

    /// A parsed string with its secrets taken out, or `None` if it holds
    /// none: a string equal to a secret becomes [`MARK`].
    pub fn redact_scalar(&self, s: &str) -> Option<String> {
        if self.inner.exact.contains_key(s) {
            return Some(MARK.to_owned());
        }
        match self.redact_text(s) {
            Cow::Owned(o) => Some(o),
            Cow::Borrowed(_) => None,
        }
    }

    /// Takes every secret out of a JSON value in place: strings, keys and
    /// numbers. Returns whether anything was taken out.
    pub fn redact_json(&self, v: &mut J) -> bool {
        let mut hidden = Hidden::default();
        walk(v, &mut String::new(), Some(self), false, 0, &mut hidden);
        !hidden.is_empty()
    }
}

/// A copy of `value` fit to show: the values under `data` and `stringData`
/// of every Secret-shaped mapping (`kind: Secret`), at any depth and inside
/// strings that hold JSON or YAML (a `last-applied-configuration`
/// annotation, a chart's `extraObjects`), replaced by [`SECRET_DATA`]; and
/// every sensitive contract output taken out (a secret too short to search
/// for also where it is a value of a JSON or YAML text held in a string,
/// such as Argo CD's `helm.values`). `None` when nothing needs
/// hiding. [`Hidden`] gives each hidden value by its path, so that a
/// change to one can be named without showing it.
pub fn redact_for_display(value: &J, secrets: &Secrets) -> Option<(J, Hidden)> {
    if !needs_redaction(value, secrets, 0) {
        return None;
    }
    let mut copy = value.clone();
    let mut hidden = Hidden::default();
    walk(&mut copy, &mut String::new(), Some(secrets), true, 0, &mut hidden);
    Some((copy, hidden))
}

/// What [`redact_for_display`] hid, by path (`data.token`,
/// `spec.values.extraObjects[0].stringData.password`; inside a text that
/// holds a document, the text's path, `: `, and the path inside it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hidden {
    /// The values under `data` and `stringData` of Secret-shaped mappings.
    pub data: BTreeMap<String, J>,
    /// Strings, keys (`<path> (key)`) and numbers that held a sensitive
    /// contract output.
    pub sensitive: BTreeMap<String, J>,
}

impl Hidden {
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.sensitive.is_empty()
    }
}

/// A read-only look for anything [`redact_for_display`] would change.
fn needs_redaction(v: &J, secrets: &Secrets, depth: usize) -> bool {
    match v {
        J::Object(m) => {
            is_secret_shaped(m)
                || m.iter()
                    .any(|(k, child)| secrets.shows(k) || needs_redaction(child, secrets, depth))
        }
        J::Array(items) => items.iter().any(|i| needs_redaction(i, secrets, depth)),
        J::String(s) => {
            secrets.shows(s)
                || (depth < MAX_EMBEDDED_DEPTH
                    && (mentions_secret_kind(s) || (secrets.has_short() && looks_structured(s))))
        }
        J::Number(n) => secrets.is_number_secret(n),
        _ => false,
    }
}

/// Whether a text may be a JSON or YAML document: a secret too short to
/// search for is looked for among its parsed values.
pub fn looks_structured(s: &str) -> bool {
    let t = s.trim_start();
    t.starts_with('{') || t.starts_with('[') || (s.contains('\n') && s.contains(": "))
}

/// `kind: Secret` with `data` or `stringData`.
fn is_secret_shaped(m: &serde_json::Map<String, J>) -> bool {
    m.get("kind").and_then(J::as_str) == Some("Secret") && (m.contains_key("data") || m.contains_key("stringData"))
}

/// Whether a text may hold a Secret manifest: `kind: Secret`, `"kind":"Secret"`, ….
fn mentions_secret_kind(s: &str) -> bool {
    s.match_indices("kind").any(|(i, _)| {
        let rest = s[i + 4..].trim_start_matches(['"', '\'', ':', ' ']);
        rest.strip_prefix("Secret")
            .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric()))
    })
}

fn push_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '/');
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&serde_json::to_string(key).unwrap_or_default());
        path.push(']');
    }
    len
}

/// Redacts in place. `shapes`: also hide Secret-shaped data.
fn walk(v: &mut J, path: &mut String, secrets: Option<&Secrets>, shapes: bool, depth: usize, hidden: &mut Hidden) {
    match v {
        J::Object(m) => {
            if shapes && is_secret_shaped(m) {
                for field in ["data", "stringData"] {
                    let at = push_key(path, field);
                    match m.get_mut(field) {
                        Some(J::Object(values)) => {
                            for (k, v) in values.iter_mut() {
                                let at = push_key(path, k);
                                hidden
                                    .data
                                    .insert(path.clone(), std::mem::replace(v, J::from(SECRET_DATA)));
                                path.truncate(at);
                            }
                        }
                        Some(other @ (J::String(_) | J::Array(_))) => {
                            hidden
                                .data
                                .insert(path.clone(), std::mem::replace(other, J::from(SECRET_DATA)));
                        }
                        _ => {}
                    }
                    path.truncate(at);
                }
            }
            if let Some(secrets) = secrets
                && m.keys().any(|k| secrets.shows(k))
            {
                let old = std::mem::take(m);
                for (k, child) in old {
                    let Some(mut key) = secrets.redact_scalar(&k) else {
                        m.insert(k, child);
                        continue;
                    };
                    let mut n = 1;
                    while m.contains_key(&key) {
                        n += 1;
                        key = format!("{MARK} #{n}");
                    }
                    let at = push_key(path, &key);
                    path.push_str(" (key)");
                    hidden.sensitive.insert(path.clone(), J::String(k));
                    path.truncate(at);
                    m.insert(key, child);
                }
            }
            for (k, child) in m.iter_mut() {
                let at = push_key(path, k);
                walk(child, path, secrets, shapes, depth, hidden);
                path.truncate(at);
            }
        }
        J::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let at = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, path, secrets, shapes, depth, hidden);
                path.truncate(at);
            }
        }
        J::String(s) => {
            let original = s.clone();
            let open = depth < MAX_EMBEDDED_DEPTH
                && ((shapes && mentions_secret_kind(s))
                    || secrets.is_some_and(|x| x.has_short() && looks_structured(s)));
            if open && let Some(t) = redact_embedded(s, path, secrets, shapes, depth, hidden) {
                *s = t;
            }
            if let Some(secrets) = secrets
                && let Some(r) = secrets.redact_scalar(s)
            {
                hidden.sensitive.insert(path.clone(), J::String(original));
                *s = r;
            }
        }
        J::Number(n) if secrets.is_some_and(|s| s.is_number_secret(n)) => {
            hidden.sensitive.insert(path.clone(), J::Number(n.clone()));
            *v = J::from(MARK);
        }
        _ => {}
    }
}

/// A text holding JSON or YAML with a Secret-shaped mapping, written back
/// with the Secret's data hidden; `None` if there is none.
fn redact_embedded(
    s: &str,
    path: &str,
    secrets: Option<&Secrets>,
    shapes: bool,
    depth: usize,
    hidden: &mut Hidden,
) -> Option<String> {
    let mut inner_hidden = Hidden::default();
    let t = s.trim_start();
    let out = if t.starts_with('{') || t.starts_with('[') {
        serde_json::from_str::<J>(s).ok().and_then(|mut doc| {
            walk(
                &mut doc,
                &mut String::new(),
                secrets,
                shapes,
                depth + 1,
                &mut inner_hidden,
            );
            let text = if s.contains('\n') {
                serde_json::to_string_pretty(&doc)
            } else {
                serde_json::to_string(&doc)
            };
            text.ok()
        })
    } else {
        crate::yaml::parse_plain_multi(&Arc::from("<embedded>"), s)
            .ok()
            .filter(|docs| !docs.is_empty())
            .map(|mut docs| {
                for doc in &mut docs {
                    walk(doc, &mut String::new(), secrets, shapes, depth + 1, &mut inner_hidden);
                }
                docs.iter()
                    .map(crate::yaml::to_sorted_yaml)
                    .collect::<Vec<_>>()
                    .join("---\n")
            })
    };
    let out = match out {
        Some(o) => o,
        // Not JSON or YAML as it stands (a template, say): hide its Secret
        // data line by line.
        None if shapes && mentions_secret_kind(s) => {
            let o = redact_secret_lines(s)?;
            inner_hidden.data.insert(String::new(), J::from(s));
            o
        }
        None => return None,
    };
    if inner_hidden.is_empty() {
        return None;
    }
    let key = |k: String| {
        if k.is_empty() {
            path.to_owned()
        } else {
            format!("{path}: {k}")
        }
    };
    for (k, v) in inner_hidden.data {
        hidden.data.insert(key(k), v);
    }
    for (k, v) in inner_hidden.sensitive {
        hidden.sensitive.insert(key(k), v);
    }
    Some(out)
}

/// The lines under `data:` and `stringData:` of a text that is YAML-like
/// but does not parse, with their values hidden.
fn redact_secret_lines(s: &str) -> Option<String> {
    let mut out = Vec::new();
    let mut under: Option<usize> = None;
    let mut changed = false;
    for line in s.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if let Some(i) = under {
            if t.is_empty() || indent > i {
                match line.split_once(':') {
                    Some((k, v)) if !v.trim().is_empty() => {
                        out.push(format!("{k}: {SECRET_DATA}"));
                        changed = true;
                    }
                    _ if t.is_empty() || t.ends_with(':') => out.push(line.to_owned()),
                    _ => {
                        out.push(format!("{}{SECRET_DATA}", " ".repeat(indent)));
                        changed = true;
                    }
                }
                continue;
            }
            under = None;
        }
        let key = t.trim_start_matches("- ");
        if let Some(rest) = key.strip_prefix("data:").or_else(|| key.strip_prefix("stringData:")) {
            if rest.trim().is_empty() {
                under = Some(indent + (t.len() - key.len()));
                out.push(line.to_owned());
            } else {
                let head = &line[..line.len() - rest.len()];
                out.push(format!("{head} {SECRET_DATA}"));
                changed = true;
            }
            continue;
        }
        out.push(line.to_owned());
    }
    changed.then(|| out.join("\n"))
}
