//! SOPS-encrypted documents and values, as getsops/sops writes them: an
//! encrypted value is the text `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`,
//! and an encrypted document carries a top-level `sops:` mapping with the
//! keys, `lastmodified` and `mac` of its encryption. Flux decrypts such
//! documents at apply time (kustomize-controller `spec.decryption`), Argo CD
//! through a plugin; strata cannot, so an import names every one, never
//! writes ciphertext (nor the `sops:` block) as a value, and cannot call a
//! release that depends on one equal.

use serde_json::Value;

use super::values::{Step, show_path};

/// Whether a string is a SOPS-encrypted value.
pub fn is_enc(s: &str) -> bool {
    let s = s.trim();
    s.starts_with("ENC[") && s.ends_with(']')
}

/// Whether a mapping carries SOPS's metadata block.
pub fn has_sops_block(v: &Value) -> bool {
    v.get("sops").is_some_and(|s| {
        s.is_object() && (s.get("mac").is_some() || s.get("lastmodified").is_some() || s.get("version").is_some())
    })
}

/// Whether a document is SOPS-encrypted: it has the metadata block, or
/// holds an encrypted value anywhere.
pub fn is_encrypted(v: &Value) -> bool {
    has_sops_block(v) || !encrypted_paths(v).is_empty()
}

/// The paths of every encrypted value in `v`.
pub fn encrypted_paths(v: &Value) -> Vec<String> {
    fn walk(v: &Value, at: &mut Vec<Step>, out: &mut Vec<String>) {
        match v {
            Value::String(s) if is_enc(s) => out.push(show_path(at)),
            Value::Object(m) => {
                for (k, x) in m {
                    at.push(Step::Key(k.clone()));
                    walk(x, at, out);
                    at.pop();
                }
            }
            Value::Array(l) => {
                for (i, x) in l.iter().enumerate() {
                    at.push(Step::Index(i));
                    walk(x, at, out);
                    at.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

/// Takes every encrypted value out of a values mapping, and the `sops:`
/// block: a mapping loses the key, a list that holds one is taken out
/// whole. Returns the places taken out (empty: nothing was encrypted).
pub fn scrub(v: &mut Value) -> Vec<String> {
    let mut out = Vec::new();
    if has_sops_block(v)
        && let Some(m) = v.as_object_mut()
    {
        m.remove("sops");
        out.push("sops".to_owned());
    }
    scrub_at(v, &mut Vec::new(), &mut out);
    out
}

fn scrub_at(v: &mut Value, at: &mut Vec<Step>, out: &mut Vec<String>) {
    let Value::Object(m) = v else { return };
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        at.push(Step::Key(k.clone()));
        let drop = match &m[&k] {
            Value::String(s) => is_enc(s),
            Value::Array(_) => !encrypted_paths(&m[&k]).is_empty(),
            _ => false,
        };
        if drop {
            m.remove(&k);
            out.push(show_path(at));
        } else if let Some(x) = m.get_mut(&k) {
            scrub_at(x, at, out);
        }
        at.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ciphertext_and_the_sops_block_are_taken_out() {
        let mut v = json!({
            "plain": "x",
            "db": {"password": "ENC[AES256_GCM,data:abc=,iv:x,tag:y,type:str]", "user": "app"},
            "keys": ["ENC[AES256_GCM,data:q,iv:x,tag:y,type:str]"],
            "sops": {"mac": "ENC[...]", "lastmodified": "2024-01-01T00:00:00Z"}
        });
        assert!(is_encrypted(&v));
        let out = scrub(&mut v);
        assert_eq!(out, ["sops", "db.password", "keys"]);
        assert_eq!(v, json!({"plain": "x", "db": {"user": "app"}}));
        assert!(!is_encrypted(&v));
    }
}
