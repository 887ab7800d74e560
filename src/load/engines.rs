//! `engines:` in strata.yaml: the Flux and Argo CD versions the clusters
//! run, when strata should not read them from the engine component's chart.
//! strata writes only the fields those versions accept (see
//! `render::versions`).

use super::decode::Fields;
use crate::diag::{Diagnostic, codes};
use crate::yaml::{Node, Origin, Value};

const KEYS: &[&str] = &["flux", "argo"];

/// A release of an engine: `MAJOR.MINOR[.PATCH]`, with or without a `v`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EngineVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl EngineVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        EngineVersion { major, minor, patch }
    }

    /// `2.7`, `v3.1.0`, `3.1.4`; a pre-release or build suffix
    /// (`2.0.0-rc.3`, `3.2.0+abc`) is read as its release.
    pub fn parse(s: &str) -> Option<EngineVersion> {
        let s = s.trim();
        let s = s.strip_prefix('v').unwrap_or(s);
        let s = s.split(['-', '+']).next()?;
        let mut parts = s.split('.');
        let number = |p: Option<&str>| -> Option<u32> {
            let p = p?;
            (!p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse().ok())
                .flatten()
        };
        let major = number(parts.next())?;
        let minor = number(parts.next())?;
        let patch = match parts.next() {
            None => 0,
            p => number(p)?,
        };
        parts.next().is_none().then_some(EngineVersion { major, minor, patch })
    }

    /// `2.7` (the minor release, as the engines' changelogs name features).
    pub fn minor_text(&self) -> String {
        format!("{}.{}", self.major, self.minor)
    }
}

impl std::fmt::Display for EngineVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// `engines:` as written: each version with the place that sets it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnginePins {
    pub flux: Option<(EngineVersion, Origin)>,
    pub argo: Option<(EngineVersion, Origin)>,
}

/// Reads `engines: {flux: VERSION, argo: VERSION}`.
pub fn decode(node: &Node, diags: &mut Vec<Diagnostic>) -> EnginePins {
    let f = Fields::new(node, "`engines`", KEYS, diags);
    let mut pins = EnginePins::default();
    for key in KEYS {
        let Some(n) = f.get(key) else { continue };
        let parsed = version_of(n, key, diags);
        match *key {
            "flux" => pins.flux = parsed,
            _ => pins.argo = parsed,
        }
    }
    pins
}

fn version_of(n: &Node, key: &str, diags: &mut Vec<Diagnostic>) -> Option<(EngineVersion, Origin)> {
    let help = format!(
        "write the release as a quoted string, e.g. `{key}: \"{}\"`",
        example(key)
    );
    let text = match &n.value {
        Value::Str(s) => s.clone(),
        // YAML reads `2.10` as the number 2.1: a number is refused rather
        // than guessed.
        Value::Float(_) | Value::Int(_) | Value::UInt(_) => {
            diags.push(
                Diagnostic::error(
                    codes::ENGINE_VERSION,
                    n.origin.clone(),
                    format!("`engines.{key}` is a number; YAML reads `2.10` as 2.1, so a release must be a string"),
                )
                .with_label("a number")
                .with_help(help),
            );
            return None;
        }
        _ => {
            diags.push(super::decode::type_error(n, key, "a release such as \"2.7\""));
            return None;
        }
    };
    match EngineVersion::parse(&text) {
        Some(v) => Some((v, n.origin.clone())),
        None => {
            diags.push(
                Diagnostic::error(
                    codes::ENGINE_VERSION,
                    n.origin.clone(),
                    format!("`engines.{key}` is `{text}`, not a release (MAJOR.MINOR or MAJOR.MINOR.PATCH)"),
                )
                .with_label("not a release")
                .with_help(help),
            );
            None
        }
    }
}

fn example(key: &str) -> &'static str {
    if key == "flux" { "2.7" } else { "3.1.4" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_with_or_without_v_and_patch() {
        assert_eq!(EngineVersion::parse("2.7"), Some(EngineVersion::new(2, 7, 0)));
        assert_eq!(EngineVersion::parse("v3.1.4"), Some(EngineVersion::new(3, 1, 4)));
        assert_eq!(EngineVersion::parse("2.0.0-rc.3"), Some(EngineVersion::new(2, 0, 0)));
        assert_eq!(EngineVersion::parse("\"1.4.0\""), None);
        for bad in ["", "2", "2.x", "2.7.1.1", "v", "2..1", "1234567.1"] {
            assert_eq!(EngineVersion::parse(bad), None, "{bad}");
        }
        assert!(EngineVersion::new(2, 10, 0) > EngineVersion::new(2, 9, 9));
    }

    #[test]
    fn a_number_is_refused_with_the_quoted_form() {
        let node = crate::yaml::parse(&std::sync::Arc::from("strata.yaml"), "flux: 2.10\nargo: \"3.2\"\n").unwrap();
        let mut diags = Vec::new();
        let pins = decode(&node, &mut diags);
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].code, codes::ENGINE_VERSION);
        assert!(diags[0].help.as_deref().unwrap_or("").contains("\"2.7\""));
        assert_eq!(pins.argo.map(|(v, _)| v), Some(EngineVersion::new(3, 2, 0)));
        assert!(pins.flux.is_none());
    }
}
