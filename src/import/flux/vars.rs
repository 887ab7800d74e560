//! A Flux Kustomization's post-build substitution, document by document
//! as kustomize-controller applies it (fluxcd/pkg
//! `kustomize/kustomize_varsub.go`, `SubstituteVariables`): the variables
//! of each `substituteFrom` ConfigMap and Secret, then `substitute` on top,
//! newlines taken out of every value; an object labelled or annotated
//! `kustomize.toolkit.fluxcd.io/substitute: disabled` is left alone; in
//! each other object `${name}`, `${name:=default}` and `${name:-default}`
//! are replaced (fluxcd/pkg `envsubst`), an unknown name becoming empty as
//! the controller does when not strict, and `$${` is a literal `${`.
//!
//! strata reads the variables the tree holds in plain text. A Secret's are
//! not (a Secret is not in git, or is SOPS-encrypted), nor those of a
//! ConfigMap the tree lacks or holds encrypted: an object that uses a
//! variable which may come from one of them is marked, and a release made
//! from it cannot be proven equal.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::super::{not_converted, sops};
use super::Built;
use crate::diag::Diagnostic;
use crate::yaml::Origin;

const DISABLED: &str = "kustomize.toolkit.fluxcd.io/substitute";

/// The variables of one Kustomization.
#[derive(Debug, Default)]
pub struct Vars {
    known: BTreeMap<String, String>,
    /// Variables the tree holds encrypted, by where they are held.
    encrypted: BTreeMap<String, String>,
    /// Sources whose variables the import could not read.
    unreadable: Vec<String>,
}

/// The documents of a built stream, as kustomize prints them (separated
/// by `---` lines).
pub fn documents(stream: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in stream.split_inclusive('\n') {
        if line.trim_end() == "---" {
            out.push(&stream[start..at]);
            start = at + line.len();
        }
        at += line.len();
    }
    out.push(&stream[start..]);
    out.retain(|d| !d.trim().is_empty());
    out
}

impl Vars {
    /// The variables of Kustomization `k` from what the root applied so
    /// far, and notes on what could not be read; `None` without
    /// `postBuild`.
    pub fn of(k: &Value, objects: &[Built], env: &str, at: &Origin) -> Option<(Vars, Vec<Diagnostic>)> {
        let post = k["spec"].get("postBuild").filter(|p| p.is_object())?;
        let name = k["metadata"]["name"].as_str().unwrap_or("");
        let ns = k["metadata"]["namespace"].as_str().unwrap_or("default");
        let mut v = Vars::default();
        let mut notes = Vec::new();
        for from in post["substituteFrom"].as_array().into_iter().flatten() {
            let kind = from["kind"].as_str().unwrap_or("");
            let from_name = from["name"].as_str().unwrap_or("");
            let found = objects.iter().map(|o| &o.value).find(|o| {
                o["kind"].as_str() == Some(kind)
                    && o["metadata"]["name"].as_str() == Some(from_name)
                    && o["metadata"]["namespace"].as_str().unwrap_or(ns) == ns
            });
            let shown = format!("{kind} {from_name}");
            match (kind, found) {
                (_, Some(o)) if sops::is_encrypted(o) => {
                    for key in keys(o) {
                        v.encrypted.insert(key, shown.clone());
                    }
                }
                ("ConfigMap", Some(cm)) => {
                    for (key, val) in cm["data"].as_object().into_iter().flatten() {
                        v.known
                            .insert(key.clone(), val.as_str().unwrap_or("").replace('\n', ""));
                    }
                }
                _ if found.is_none() && from["optional"].as_bool() == Some(true) => {}
                _ => {
                    let why = if kind == "Secret" {
                        "a Secret, not in git"
                    } else {
                        "not in the tree"
                    };
                    v.unreadable.push(shown.clone());
                    notes.push(not_converted(
                        at.clone(),
                        format!("environment {env}: Kustomization {name}: the variables of {shown} cannot be read ({why})"),
                        "a release whose values use them is listed as unproven; put the values they stand for in the layers by hand",
                    ));
                }
            }
        }
        for (key, val) in post["substitute"].as_object().into_iter().flatten() {
            let text = val.as_str().map_or_else(|| val.to_string(), str::to_owned);
            v.known.insert(key.clone(), text.replace('\n', ""));
        }
        Some((v, notes))
    }

    /// One document substituted, and what it used that could not be read.
    pub fn substitute(&self, file: &Arc<str>, doc: &str) -> (String, Vec<String>) {
        if disabled(file, doc) {
            return (doc.to_owned(), Vec::new());
        }
        let mut unread = Vec::new();
        // A variable that may hold what the import cannot read stays as
        // written, so that the layer shows what it stands for.
        let text = substitute(doc, &self.known, &mut |name| {
            if let Some(from) = self.encrypted.get(name) {
                unread.push(format!("variable ${{{name}}} from the SOPS-encrypted {from}"));
            } else if !self.unreadable.is_empty() {
                unread.push(format!(
                    "variable ${{{name}}}, which may come from {}",
                    self.unreadable.join(", ")
                ));
            } else {
                return None;
            }
            Some(format!("${{{name}}}"))
        });
        unread.sort();
        unread.dedup();
        (text, unread)
    }
}

/// The keys a ConfigMap or Secret holds (its encrypted values left aside).
fn keys(o: &Value) -> Vec<String> {
    ["data", "stringData"]
        .iter()
        .flat_map(|f| o[*f].as_object().into_iter().flatten().map(|(k, _)| k.clone()))
        .collect()
}

/// Whether an object turns substitution off.
fn disabled(file: &Arc<str>, doc: &str) -> bool {
    let Ok(docs) = crate::yaml::parse_plain_multi(file, doc) else {
        return false;
    };
    docs.iter().any(|d| {
        let m = &d["metadata"];
        m["labels"][DISABLED].as_str() == Some("disabled") || m["annotations"][DISABLED].as_str() == Some("disabled")
    })
}

/// `${name}`, `${name:=default}` and `${name:-default}` replaced from
/// `vars`, a default substituted in turn (`${a:-"${b}"}`, as Flux's
/// envsubst reads it); `unknown` is told each name used that `vars` lacks,
/// and may give the text to put in its place (else its default, or
/// nothing).
pub fn substitute(
    text: &str,
    vars: &BTreeMap<String, String>,
    unknown: &mut dyn FnMut(&str) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        // `$${` is an escaped `${`.
        if i > 0 && rest.as_bytes()[i - 1] == b'$' {
            out.push_str(&rest[..i - 1]);
            out.push_str("${");
            rest = &rest[i + 2..];
            continue;
        }
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = closing(after) else {
            out.push_str(&rest[i..]);
            return out;
        };
        let inner = &after[..j];
        let (name, default) = match inner.find(":=").or_else(|| inner.find(":-")) {
            Some(p) => (&inner[..p], Some(&inner[p + 2..])),
            None => (inner, None),
        };
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            let value = vars.get(name).map(String::as_str).filter(|v| !v.is_empty());
            let kept = if vars.contains_key(name) { None } else { unknown(name) };
            match (kept, value, default) {
                (Some(k), _, _) => out.push_str(&k),
                (None, Some(v), _) => out.push_str(v),
                // A default is itself substituted: `${a:-"${b}"}`.
                (None, None, Some(d)) => out.push_str(&substitute(d, vars, unknown)),
                (None, None, None) => {}
            }
        } else {
            out.push_str(&rest[i..i + 2 + j + 1]);
        }
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    out
}

/// Where the `}` closing a `${` lies in `after` (the text past it), a
/// `${…}` inside it skipped whole.
fn closing(after: &str) -> Option<usize> {
    let bytes = after.as_bytes();
    let mut depth = 0usize;
    let mut k = 0;
    while k < bytes.len() {
        match bytes[k] {
            b'$' if bytes.get(k + 1) == Some(&b'{') => {
                depth += 1;
                k += 1;
            }
            b'}' if depth == 0 => return Some(k),
            b'}' => depth -= 1,
            _ => {}
        }
        k += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitution_is_fluxs() {
        let vars = [("cluster".to_owned(), "staging".to_owned())].into_iter().collect();
        let mut unknown = Vec::new();
        let out = substitute(
            "a: ${cluster}\nb: ${n:=3}\nc: ${gone}\nd: ${x-y}\ne: $${cluster}\nf: ${open",
            &vars,
            &mut |n| {
                unknown.push(n.to_owned());
                None
            },
        );
        assert_eq!(out, "a: staging\nb: 3\nc: \nd: ${x-y}\ne: ${cluster}\nf: ${open");
        assert_eq!(unknown, ["n", "gone"]);
    }

    #[test]
    fn a_default_may_hold_a_variable() {
        let vars = [("app".to_owned(), "books".to_owned())].into_iter().collect();
        let out = substitute(
            "id: ${client:-\"${app}\"} #x\nurl: ${u:-https://${app}.example.org/*}\nk: ${app:-${gone}}\n",
            &vars,
            &mut |_| None,
        );
        assert_eq!(out, "id: \"books\" #x\nurl: https://books.example.org/*\nk: books\n");
    }

    #[test]
    fn a_stream_splits_into_documents() {
        assert_eq!(documents("a: 1\n---\nb: 2\n---\n"), ["a: 1\n", "b: 2\n"]);
        assert_eq!(documents("a: 1\n"), ["a: 1\n"]);
    }

    #[test]
    fn variables_of_an_encrypted_secret_mark_the_object() {
        let k = serde_json::json!({"metadata": {"name": "apps", "namespace": "flux-system"},
            "spec": {"postBuild": {"substituteFrom": [{"kind": "Secret", "name": "cluster-secrets"}],
                                   "substitute": {"zone": "home"}}}});
        let secret = Built {
            value: serde_json::json!({"kind": "Secret", "metadata": {"name": "cluster-secrets", "namespace": "flux-system"},
                "stringData": {"DOMAIN": "ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]"},
                "sops": {"mac": "m", "lastmodified": "t"}}),
            via: String::new(),
            kustomization: None,
            unread: Vec::new(),
        };
        let (vars, notes) = Vars::of(&k, &[secret], "home", &Origin::file_start("k.yaml")).unwrap();
        assert!(notes.is_empty());
        let file: Arc<str> = Arc::from("f");
        let (text, unread) = vars.substitute(&file, "host: app.${DOMAIN}\nzone: ${zone}\n");
        assert_eq!(text, "host: app.${DOMAIN}\nzone: home\n");
        assert_eq!(
            unread,
            ["variable ${DOMAIN} from the SOPS-encrypted Secret cluster-secrets"]
        );
    }
}
