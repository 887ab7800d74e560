//! Key material judged by what an object holds, not by its kind: a chart
//! may write a private key into a ConfigMap as readily as into a Secret,
//! and a tree committed to git must hold neither. [`held`] looks at every
//! string of an object (and at the bytes of every base64 string) for
//!
//! - a private key in PEM armour (`-----BEGIN … PRIVATE KEY-----`, PGP's
//!   `PRIVATE KEY BLOCK`, an age identity), as written or base64-encoded
//!   (a ConfigMap's `binaryData`, a Secret's `data`);
//! - a value in the shape of a token that some issuer gives: a JSON Web
//!   Token (a ServiceAccount's), a Kubernetes bootstrap token, GitHub,
//!   GitLab, Slack, AWS access key and Google API key formats;
//! - under a key that names a credential (`password`, `token`, `secret`,
//!   `apiKey`, `clientSecret`, …), a value that looks random: at least 16
//!   characters of a token alphabet, mixing letters and digits, with the
//!   entropy of one (a name such as `cert-manager-webhook` does not).
//!
//! Certificates, CA bundles and digests are public and are not key
//! material. What is found is named by its place in the object, never
//! shown.

use serde_json::Value as J;

/// Strings longer than this are looked at in their first part only.
const MAX_LOOK: usize = 1 << 20;

/// Key material found in an object: what it is and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// `a PEM private key`, `a JSON Web Token`, ….
    pub what: &'static str,
    /// Its place, as `data.ca\.key` (keys with dots escaped).
    pub at: String,
}

/// The first key material in `value`, in document order.
pub fn held(value: &J) -> Option<Held> {
    let mut path = Vec::new();
    walk(value, &mut path, None)
}

fn walk<'a>(value: &'a J, path: &mut Vec<&'a str>, key: Option<&'a str>) -> Option<Held> {
    match value {
        J::String(s) => judge(s, key).map(|what| Held {
            what,
            at: shown_path(path),
        }),
        J::Array(items) => items.iter().find_map(|v| walk(v, path, key)),
        J::Object(map) => map.iter().find_map(|(k, v)| {
            path.push(k);
            let found = walk(v, path, Some(k));
            path.pop();
            found
        }),
        _ => None,
    }
}

fn shown_path(path: &[&str]) -> String {
    if path.is_empty() {
        return "the object".to_owned();
    }
    path.iter().map(|p| p.replace('.', "\\.")).collect::<Vec<_>>().join(".")
}

/// What kind of key material a string is, under `key`.
fn judge(s: &str, key: Option<&str>) -> Option<&'static str> {
    let s = cut(s);
    if pem_private_key(s.as_bytes()) {
        return Some("a PEM private key");
    }
    if let Some(bytes) = base64_bytes(s)
        && pem_private_key(&bytes)
    {
        return Some("a base64-encoded PEM private key");
    }
    if let Some(what) = token_shape(s.trim()) {
        return Some(what);
    }
    if key.is_some_and(names_credential) && looks_random(s.trim()) {
        return Some("a random-looking credential");
    }
    None
}

/// The first [`MAX_LOOK`] bytes of `s`, at a character boundary.
fn cut(s: &str) -> &str {
    if s.len() <= MAX_LOOK {
        return s;
    }
    let mut end = MAX_LOOK;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn pem_private_key(bytes: &[u8]) -> bool {
    let has = |needle: &[u8]| memchr::memmem::find(bytes, needle).is_some();
    (has(b"-----BEGIN") && (has(b"PRIVATE KEY-----") || has(b"PRIVATE KEY BLOCK-----"))) || has(b"AGE-SECRET-KEY-1")
}

/// The bytes of a string that is wholly base64 (and long enough to hold a
/// key's armour), else `None`.
fn base64_bytes(s: &str) -> Option<Vec<u8>> {
    let t = s.trim();
    if t.len() < 40
        || !t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n' | b'\r' | b' '))
    {
        return None;
    }
    super::base64_decode(t)
}

/// A value in the shape of a token some issuer gives.
fn token_shape(s: &str) -> Option<&'static str> {
    let tail_of = |prefix: &str, min: usize, ok: fn(u8) -> bool| {
        s.strip_prefix(prefix)
            .is_some_and(|rest| rest.len() >= min && rest.bytes().all(ok))
    };
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let dashed = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    let upper = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit();
    if jwt(s) {
        return Some("a JSON Web Token");
    }
    if bootstrap_token(s) {
        return Some("a Kubernetes bootstrap token");
    }
    if ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]
        .iter()
        .any(|p| tail_of(p, 36, alnum))
        || tail_of("github_pat_", 22, word)
    {
        return Some("a GitHub token");
    }
    if tail_of("glpat-", 20, dashed) {
        return Some("a GitLab token");
    }
    if ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"]
        .iter()
        .any(|p| tail_of(p, 10, dashed))
    {
        return Some("a Slack token");
    }
    if s.len() == 20 && (s.starts_with("AKIA") || s.starts_with("ASIA")) && s.bytes().all(upper) {
        return Some("an AWS access key");
    }
    if tail_of("AIza", 35, dashed) && s.len() == 39 {
        return Some("a Google API key");
    }
    None
}

/// `header.payload.signature`, each base64url, the first two JSON objects.
fn jwt(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts[1].starts_with("eyJ")
        && parts[2].len() >= 16
        && parts
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
}

/// `[a-z0-9]{6}.[a-z0-9]{16}` (kubeadm's and Talos's bootstrap tokens).
fn bootstrap_token(s: &str) -> bool {
    let lower = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    s.split_once('.')
        .is_some_and(|(id, secret)| lower(id, 6) && lower(secret, 16) && secret.bytes().any(|b| b.is_ascii_digit()))
}

/// Whether a key names a credential: its last word (camelCase, `-`, `_`,
/// `.`, `/` split) is one, and it is no checksum, reference or file name.
fn names_credential(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    if [
        "checksum", "hash", "digest", "ref", "name", "file", "path", "existing", "mount", "env", "policy",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        return false;
    }
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in key.chars() {
        if matches!(c, '-' | '_' | '.' | '/') {
            words.push(std::mem::take(&mut cur));
        } else if c.is_ascii_uppercase() && !cur.is_empty() && !cur.ends_with(|p: char| p.is_ascii_uppercase()) {
            words.push(std::mem::take(&mut cur));
            cur.push(c.to_ascii_lowercase());
        } else {
            cur.push(c.to_ascii_lowercase());
        }
    }
    words.push(cur);
    let last = words.iter().rev().find(|w| !w.is_empty()).map_or("", String::as_str);
    let before = words
        .iter()
        .rev()
        .filter(|w| !w.is_empty())
        .nth(1)
        .map_or("", String::as_str);
    matches!(
        last,
        "password" | "passwd" | "secret" | "token" | "apikey" | "passphrase" | "credentials"
    ) || (last == "key"
        && matches!(
            before,
            "api" | "private" | "secret" | "access" | "signing" | "encryption"
        ))
}

/// At least 16 characters of a token alphabet, letters and digits (or
/// cases) mixed within a word, and the entropy of a random text (Shannon, at least 3.5 bits a
/// character).
fn looks_random(s: &str) -> bool {
    let n = s.len();
    if !(16..=4096).contains(&n)
        || !s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'+' | b'/'
                        | b'='
                        | b'_'
                        | b'-'
                        | b'.'
                        | b'~'
                        | b'!'
                        | b'@'
                        | b'#'
                        | b'$'
                        | b'%'
                        | b'^'
                        | b'&'
                        | b'*'
                )
        })
    {
        return false;
    }
    // Some run of letters and digits mixes them, or mixes cases past its
    // first letter: `q8Zr2LmX…`, not `db-credentials-0123456789`.
    let mixed = s.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        let letters = w.bytes().any(|b| b.is_ascii_alphabetic());
        let digits = w.bytes().any(|b| b.is_ascii_digit());
        let tail = w.get(1..).unwrap_or("");
        let cases = tail.bytes().any(|b| b.is_ascii_uppercase()) && tail.bytes().any(|b| b.is_ascii_lowercase());
        (letters && digits) || cases
    });
    if !mixed {
        return false;
    }
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let entropy: f64 = counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n as f64;
            -p * p.log2()
        })
        .sum();
    entropy >= 3.5
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49\n-----END EC PRIVATE KEY-----\n";

    #[test]
    fn a_private_key_is_found_in_any_object_as_written_or_encoded() {
        let cm = json!({"kind": "ConfigMap", "metadata": {"name": "hubble-ca"}, "data": {"ca.key": KEY}});
        assert_eq!(
            held(&cm),
            Some(Held {
                what: "a PEM private key",
                at: "data.ca\\.key".into()
            })
        );
        let encoded = crate::secrets::base64_encode(KEY.as_bytes());
        let bin = json!({"kind": "ConfigMap", "binaryData": {"tls.key": encoded}});
        assert_eq!(held(&bin).unwrap().what, "a base64-encoded PEM private key");
        let pgp = json!({"spec": {"x": ["-----BEGIN PGP PRIVATE KEY BLOCK-----\n..."]}});
        assert_eq!(held(&pgp).unwrap().at, "spec.x");
    }

    #[test]
    fn tokens_are_found_by_their_shape_and_random_values_under_credential_keys() {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLWJ5dGVzLWhlcmU";
        for (v, what) in [
            (jwt, "a JSON Web Token"),
            ("abcdef.0123456789abcdef", "a Kubernetes bootstrap token"),
            ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "a GitHub token"),
            ("glpat-abcDEF0123456789xyzW", "a GitLab token"),
            ("AKIAIOSFODNN7EXAMPLE", "an AWS access key"),
        ] {
            assert_eq!(held(&json!({"data": {"anything": v}})).unwrap().what, what, "{v}");
        }
        let random = "q8Zr2LmX0vB7nT4kYw1H";
        assert_eq!(
            held(&json!({"data": {"adminPassword": random}})).unwrap().what,
            "a random-looking credential"
        );
        assert!(held(&json!({"data": {"note": random}})).is_none());
        assert!(held(&json!({"data": {"api-key": random}})).is_some());
    }

    #[test]
    fn certificates_digests_names_and_references_are_no_key_material() {
        let cert = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----\n";
        let object = json!({
            "kind": "ConfigMap",
            "metadata": {"annotations": {"checksum/secret": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}},
            "data": {
                "ca.crt": cert,
                "caBundle": crate::secrets::base64_encode(cert.as_bytes()),
                "existingSecret": "cert-manager-webhook-ca",
                "token": "use-the-projected-token-1",
                "passwordSecretRef": "db-credentials-0123456789",
                "image": "quay.io/cilium/cilium:v1.18.1@sha256:65ab17c052d8758b2ad157ce766285e04173722df59bdee1ea6d5fda7149f0e9",
                "secret": "short"
            }
        });
        assert_eq!(held(&object), None);
    }
}
