//! The syntax checks the Kubernetes API server applies to names, labels,
//! annotations and ports, which no JSON Schema states: each function says
//! what the server says, and returns the reason it refuses a value.
//!
//! The rules are those of k8s.io/apimachinery v0.35
//! (`pkg/util/validation/validation.go`: `IsQualifiedName`,
//! `IsValidLabelValue`, `IsDNS1123Label`, `IsDNS1123Subdomain`,
//! `IsDNS1035Label`, `IsValidPortNum`, `IsValidPortName`;
//! `pkg/api/validation/objectmeta.go`: `ValidateAnnotations` and its
//! 256 KiB total), and of the Pod Security admission of k8s.io/pod-security-admission
//! (`api/constants.go`, `api/helpers.go`: the level and version labels of a
//! namespace, refused on create and update by `admission/admission.go`).

/// The longest name part of a qualified name, and the longest label value.
pub const NAME_MAX: usize = 63;
/// The longest DNS-1123 subdomain.
pub const SUBDOMAIN_MAX: usize = 253;
/// The most bytes all annotations of an object hold, keys and values.
pub const ANNOTATIONS_MAX: usize = 256 * 1024;

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`: the name part of a
/// qualified name, and a non-empty label value.
fn qualified_chars(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_alphanumeric();
    !b.is_empty()
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A label or annotation key: `[prefix/]name`, the prefix a DNS-1123
/// subdomain, the name at most 63 characters of letters, digits, `-`, `_`
/// and `.`, starting and ending with a letter or digit.
pub fn qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        None => (None, key),
        Some((p, n)) => (Some(p), n),
    };
    if name.contains('/') {
        return Err("a qualified name has at most one `/`, between a DNS subdomain prefix and the name".into());
    }
    if let Some(p) = prefix {
        if p.is_empty() {
            return Err("the prefix before `/` is empty".into());
        }
        dns1123_subdomain(p).map_err(|e| format!("the prefix `{p}`: {e}"))?;
    }
    if name.is_empty() {
        return Err("the name part is empty".into());
    }
    if name.len() > NAME_MAX {
        return Err(format!(
            "the name part is {} characters; at most {NAME_MAX} are allowed",
            name.len()
        ));
    }
    if !qualified_chars(name) {
        return Err(
            "the name part must consist of letters, digits, `-`, `_` or `.`, and start and end with a letter or digit"
                .into(),
        );
    }
    Ok(())
}

/// A label value: empty, or at most 63 characters of letters, digits,
/// `-`, `_` and `.`, starting and ending with a letter or digit.
pub fn label_value(value: &str) -> Result<(), String> {
    if value.len() > NAME_MAX {
        return Err(format!(
            "a label value is at most {NAME_MAX} characters; this one has {}",
            value.len()
        ));
    }
    if !value.is_empty() && !qualified_chars(value) {
        return Err(
            "a label value must be empty or consist of letters, digits, `-`, `_` or `.`, and start and end with a letter or digit"
                .into(),
        );
    }
    Ok(())
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most `max` characters.
fn dns_label_chars(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || *c == b'-')
}

/// A DNS-1123 label: at most 63 lower-case letters, digits and `-`,
/// starting and ending with a letter or digit (a Namespace's name).
pub fn dns1123_label(s: &str) -> Result<(), String> {
    if s.len() > NAME_MAX {
        return Err(format!("at most {NAME_MAX} characters are allowed; it has {}", s.len()));
    }
    if !dns_label_chars(s) {
        return Err(
            "it must consist of lower-case letters, digits and `-`, and start and end with a letter or digit".into(),
        );
    }
    Ok(())
}

/// A DNS-1035 label: a DNS-1123 label that starts with a letter (a
/// Service's name).
pub fn dns1035_label(s: &str) -> Result<(), String> {
    dns1123_label(s)?;
    if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err("it must start with a lower-case letter".into());
    }
    Ok(())
}

/// A DNS-1123 subdomain: at most 253 characters, DNS-1123 labels joined by
/// `.` (the name of most objects).
pub fn dns1123_subdomain(s: &str) -> Result<(), String> {
    if s.len() > SUBDOMAIN_MAX {
        return Err(format!(
            "at most {SUBDOMAIN_MAX} characters are allowed; it has {}",
            s.len()
        ));
    }
    if !s.split('.').all(dns_label_chars) {
        return Err(
            "it must consist of lower-case letters, digits, `-` and `.`, each part between dots starting and ending with a letter or digit"
                .into(),
        );
    }
    Ok(())
}

/// A port number: 1 to 65535.
pub fn port_number(n: i64) -> Result<(), String> {
    if (1..=65535).contains(&n) {
        Ok(())
    } else {
        Err("a port number is between 1 and 65535".into())
    }
}

/// A port name (an IANA service name): at most 15 lower-case letters,
/// digits and `-`, at least one letter, no `--`, and no `-` at either end.
pub fn port_name(s: &str) -> Result<(), String> {
    if s.len() > 15 {
        return Err(format!("a port name is at most 15 characters; `{s}` has {}", s.len()));
    }
    if !s
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        return Err("a port name consists of lower-case letters, digits and `-`".into());
    }
    if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        return Err("a port name has at least one letter".into());
    }
    if s.contains("--") || s.starts_with('-') || s.ends_with('-') {
        return Err("a port name has no `--`, and does not start or end with `-`".into());
    }
    Ok(())
}

/// The Pod Security labels of a namespace: a level for each mode, and the
/// version of the standard each mode applies.
pub const POD_SECURITY_PREFIX: &str = "pod-security.kubernetes.io/";
pub const POD_SECURITY_LEVELS: &[&str] = &["privileged", "baseline", "restricted"];
const POD_SECURITY_MODES: &[&str] = &["enforce", "audit", "warn"];

/// Whether the label is one that Pod Security admission reads, and then
/// whether its value is one it accepts: a level (`privileged`, `baseline`,
/// `restricted`) for `enforce`, `audit` and `warn`, and `latest` or
/// `v1.<minor>` for their `-version`. Other keys are not its to judge.
pub fn pod_security(key: &str, value: &str) -> Option<Result<(), String>> {
    let rest = key.strip_prefix(POD_SECURITY_PREFIX)?;
    let (mode, version) = match rest.strip_suffix("-version") {
        Some(m) => (m, true),
        None => (rest, false),
    };
    if !POD_SECURITY_MODES.contains(&mode) {
        return None;
    }
    if version {
        let minor = value.strip_prefix("v1.");
        let ok = value == "latest"
            || minor.is_some_and(|m| {
                !m.is_empty() && m.bytes().all(|c| c.is_ascii_digit()) && (m == "0" || !m.starts_with('0'))
            });
        return Some(if ok {
            Ok(())
        } else {
            Err(format!(
                "`{value}` is no Pod Security version: it is `latest` or `v1.<minor>`, such as `v1.35`"
            ))
        });
    }
    Some(if POD_SECURITY_LEVELS.contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "`{value}` is no Pod Security level: it is one of privileged, baseline, restricted"
        ))
    })
}

/// The total size the API server counts for annotations: every key and
/// value, in bytes.
pub fn annotations_size<'a>(entries: impl Iterator<Item = (&'a str, &'a str)>) -> usize {
    entries.map(|(k, v)| k.len() + v.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_as_the_server_reads_them() {
        for ok in [
            "app",
            "app.kubernetes.io/name",
            "a_b.c-d",
            "A9",
            "pod-security.kubernetes.io/enforce",
            &"x".repeat(63),
        ] {
            assert_eq!(qualified_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "team owner",
            "-app",
            "app-",
            "a/b/c",
            "/name",
            "Example.com/name",
            "example.com/",
            &"x".repeat(64),
            &format!("{}/n", "a".repeat(254)),
        ] {
            assert!(qualified_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn label_values_allow_empty_and_at_most_63_characters() {
        assert_eq!(label_value(""), Ok(()));
        assert_eq!(label_value("v1.2_3-x"), Ok(()));
        assert_eq!(label_value(&"a".repeat(63)), Ok(()));
        assert!(label_value(&"a".repeat(64)).is_err());
        assert!(label_value("front end").is_err());
        assert!(label_value("_x").is_err());
        assert!(label_value("x.").is_err());
    }

    #[test]
    fn dns_names() {
        assert_eq!(dns1123_label("kube-system"), Ok(()));
        assert!(dns1123_label("Kube").is_err());
        assert!(dns1123_label("a.b").is_err());
        assert_eq!(dns1123_subdomain("a.b-c.d"), Ok(()));
        assert!(dns1123_subdomain("a..b").is_err());
        assert!(dns1123_subdomain(&"a".repeat(254)).is_err());
        assert_eq!(dns1035_label("web"), Ok(()));
        assert!(dns1035_label("9web").is_err());
    }

    #[test]
    fn ports_and_port_names() {
        assert_eq!(port_number(1), Ok(()));
        assert_eq!(port_number(65535), Ok(()));
        assert!(port_number(0).is_err());
        assert!(port_number(70000).is_err());
        assert_eq!(port_name("http"), Ok(()));
        assert_eq!(port_name("h2c-8080"), Ok(()));
        for bad in ["8080", "HTTP", "a--b", "-a", "a-", "abcdefghijklmnop", "metrics_port"] {
            assert!(port_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pod_security_labels() {
        assert_eq!(pod_security("app", "x"), None);
        assert_eq!(pod_security("pod-security.kubernetes.io/other", "x"), None);
        assert_eq!(
            pod_security("pod-security.kubernetes.io/enforce", "restricted"),
            Some(Ok(()))
        );
        assert!(pod_security("pod-security.kubernetes.io/enforce", "restricetd").is_some_and(|r| r.is_err()));
        assert!(pod_security("pod-security.kubernetes.io/warn", "Baseline").is_some_and(|r| r.is_err()));
        for ok in ["latest", "v1.0", "v1.35"] {
            assert_eq!(
                pod_security("pod-security.kubernetes.io/audit-version", ok),
                Some(Ok(())),
                "{ok}"
            );
        }
        for bad in ["1.35", "v1.035", "v2.0", "v1.", "Latest"] {
            assert!(
                pod_security("pod-security.kubernetes.io/enforce-version", bad).is_some_and(|r| r.is_err()),
                "{bad}"
            );
        }
    }
}
