//! A Helm repository's `index.yaml`, read the way a hostile one cannot
//! hurt: at most [`MAX_BYTES`] are fetched, the document is read as a
//! stream (never built whole in memory) within a budget of values, only the
//! versions of the charts asked for are kept, and past [`MAX_VERSIONS`]
//! chart versions in all the index is refused with a message. Then the
//! version a `config.yaml` pins, or the newest one a `Chart.yaml`
//! dependency's range admits, is chosen, as Helm's version constraints
//! read (`^1.2.0`, `~1.2`, `>=1.0.0 <2.0.0`, `1.x`, `1.0.0 - 1.4.0`,
//! `!=1.3.0`, alternatives joined by `||`).

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Largest `index.yaml` read.
pub const MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Most chart versions (of all charts) an index may list.
pub const MAX_VERSIONS: usize = 100_000;

/// One version of a chart as the index lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Release {
    #[serde(default, deserialize_with = "scalar")]
    pub version: String,
    #[serde(default)]
    pub urls: Vec<String>,
    #[serde(default)]
    pub digest: Option<String>,
}

/// A version written as a string or a number.
fn scalar<'de, D: de::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => s,
        serde_json::Value::Number(n) => n.to_string(),
        _ => String::new(),
    })
}

/// The versions of each chart of `want` the index lists.
pub type Versions = BTreeMap<String, Vec<Release>>;

/// Reads the versions of the charts `want` from an index's bytes.
pub fn read(bytes: &[u8], want: &BTreeSet<String>) -> Result<Versions, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "index.yaml is not UTF-8".to_owned())?;
    let count = Cell::new(0);
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: 64,
            max_documents: 1,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_events: MAX_VERSIONS * 100,
            max_nodes: MAX_VERSIONS * 100,
        },
        with_snippet: false,
    };
    let seed = Top { want, count: &count };
    serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| seed.deserialize(de)).map_err(|e| {
        let e = e.to_string();
        let first = e.lines().next().unwrap_or("").to_owned();
        if count.get() > MAX_VERSIONS {
            format!("index.yaml lists more than {MAX_VERSIONS} chart versions, the limit")
        } else if first.contains("budget") {
            format!(
                "index.yaml is too large to read (more than {} values)",
                MAX_VERSIONS * 100
            )
        } else {
            format!("index.yaml cannot be read: {first}")
        }
    })
}

struct Top<'a> {
    want: &'a BTreeSet<String>,
    count: &'a Cell<usize>,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Versions;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Versions, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Versions;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Helm repository index: a mapping with `entries`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Versions, A::Error> {
        let mut out = Versions::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "entries" {
                out = map.next_value_seed(Entries {
                    want: self.want,
                    count: self.count,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}

struct Entries<'a> {
    want: &'a BTreeSet<String>,
    count: &'a Cell<usize>,
}

impl<'de> DeserializeSeed<'de> for Entries<'_> {
    type Value = Versions;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Versions, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = Versions;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`entries`: a mapping of chart name to its versions")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Versions, E> {
        Ok(Versions::new())
    }
    fn visit_none<E: de::Error>(self) -> Result<Versions, E> {
        Ok(Versions::new())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Versions, A::Error> {
        let mut out = Versions::new();
        while let Some(name) = map.next_key::<String>()? {
            let keep = self.want.contains(&name);
            let versions = map.next_value_seed(Chart {
                keep,
                count: self.count,
            })?;
            if keep {
                out.entry(name).or_default().extend(versions);
            }
        }
        Ok(out)
    }
}

/// The versions of one chart: kept, or only counted.
struct Chart<'a> {
    keep: bool,
    count: &'a Cell<usize>,
}

impl<'de> DeserializeSeed<'de> for Chart<'_> {
    type Value = Vec<Release>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<Release>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Chart<'_> {
    type Value = Vec<Release>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of chart versions")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Vec<Release>, E> {
        Ok(Vec::new())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Release>, A::Error> {
        let mut out = Vec::new();
        loop {
            self.count.set(self.count.get() + 1);
            if self.count.get() > MAX_VERSIONS {
                return Err(de::Error::custom(format!("more than {MAX_VERSIONS} chart versions")));
            }
            if self.keep {
                match seq.next_element::<Release>()? {
                    Some(r) => out.push(r),
                    None => break,
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
        }
        self.count.set(self.count.get() - 1);
        Ok(out)
    }
}

/// A version as Helm reads one: an optional `v`, and missing minor or
/// patch numbers taken as 0.
pub fn parse_version(v: &str) -> Option<semver::Version> {
    let v = v.trim().trim_start_matches('v');
    if let Ok(x) = semver::Version::parse(v) {
        return Some(x);
    }
    let (core, rest) = match v.find(['-', '+']) {
        Some(i) => v.split_at(i),
        None => (v, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty()
        || parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let mut full = parts.join(".");
    for _ in parts.len()..3 {
        full.push_str(".0");
    }
    semver::Version::parse(&format!("{full}{rest}")).ok()
}

/// Whether `version` satisfies Helm's version constraint `range`.
pub fn satisfies(range: &str, version: &semver::Version) -> Result<bool, String> {
    for alternative in range.split("||") {
        if all_hold(alternative, version)? {
            return Ok(true);
        }
    }
    Ok(false)
}

const OPERATORS: &[&str] = &["!=", ">=", "<=", "~>", "=", ">", "<", "~", "^"];

/// The comparators of one alternative (joined by spaces or commas) all hold.
fn all_hold(alternative: &str, version: &semver::Version) -> Result<bool, String> {
    let tokens: Vec<&str> = alternative
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .collect();
    let mut comparators: Vec<String> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let mut t = tokens[i].to_owned();
        // An operator written apart from its version: `>= 1.2`.
        if OPERATORS.contains(&t.as_str()) && i + 1 < tokens.len() {
            t.push_str(tokens[i + 1]);
            i += 1;
        }
        // A hyphen range: `1.2 - 1.4.5`.
        if tokens.get(i + 1) == Some(&"-") && i + 2 < tokens.len() {
            comparators.push(format!(">={t}"));
            comparators.push(format!("<={}", tokens[i + 2]));
            i += 3;
            continue;
        }
        comparators.push(t);
        i += 1;
    }
    let mut req = semver::VersionReq {
        comparators: Vec::new(),
    };
    for c in comparators {
        if let Some(v) = c.strip_prefix("!=") {
            let v = parse_version(v).ok_or_else(|| format!("`{c}` in `{alternative}` is not a version"))?;
            if *version == v {
                return Ok(false);
            }
            continue;
        }
        let op = OPERATORS.iter().find(|o| c.starts_with(**o)).copied().unwrap_or("");
        let rest = c[op.len()..].trim_start_matches('v');
        if matches!(rest, "*" | "x" | "X") && matches!(op, "" | "=" | ">=") {
            continue;
        }
        let op = match op {
            "" => "=",
            "~>" => "~",
            o => o,
        };
        let parsed = semver::Comparator::parse(&format!("{op}{rest}"))
            .map_err(|e| format!("`{c}` in `{alternative}` is not a version constraint: {e}"))?;
        req.comparators.push(parsed);
    }
    Ok(req.matches(version) || (req.comparators.is_empty() && version.pre.is_empty()))
}

/// The release of `versions` a config.yaml's exact `version` names.
pub fn exact<'a>(versions: &'a [Release], version: &str) -> Option<&'a Release> {
    let want = version.trim_start_matches('v');
    versions.iter().find(|r| r.version.trim_start_matches('v') == want)
}

/// The newest release of `versions` that satisfies `range`.
pub fn newest<'a>(versions: &'a [Release], range: &str) -> Result<Option<&'a Release>, String> {
    let mut best: Option<(semver::Version, &Release)> = None;
    for r in versions {
        let Some(v) = parse_version(&r.version) else {
            continue;
        };
        if satisfies(range, &v)? && best.as_ref().is_none_or(|(b, _)| v > *b) {
            best = Some((v, r));
        }
    }
    Ok(best.map(|(_, r)| r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn keeps_only_the_charts_asked_for() {
        let index = "apiVersion: v1\nentries:\n  web:\n    - {name: web, version: 1.0.0, urls: [web-1.0.0.tgz], digest: abc}\n    - {name: web, version: 1.1, urls: [web-1.1.tgz]}\n  other:\n    - {name: other, version: 2.0.0, urls: [o.tgz], dependencies: [{name: x}]}\ngenerated: now\n";
        let v = read(index.as_bytes(), &want(&["web"])).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v["web"][1].version, "1.1");
        assert_eq!(v["web"][0].digest.as_deref(), Some("abc"));
        assert!(read(b"apiVersion: v1\nentries:\n", &want(&["web"])).unwrap().is_empty());
        assert!(read(b"- a\n", &want(&["web"])).is_err());
    }

    #[test]
    fn too_many_versions_are_refused_without_building_them() {
        let mut index = String::from("entries:\n  big:\n");
        for i in 0..=MAX_VERSIONS {
            index.push_str(&format!("    - {{version: 0.0.{i}}}\n"));
        }
        let e = read(index.as_bytes(), &want(&["web"])).unwrap_err();
        assert!(e.contains("more than 100000 chart versions"), "{e}");
    }

    #[test]
    fn helm_constraints() {
        let ok = |range: &str, v: &str| satisfies(range, &parse_version(v).unwrap()).unwrap();
        assert!(ok("1.2.3", "1.2.3") && !ok("1.2.3", "1.2.4"));
        assert!(ok("^1.2.0", "1.9.0") && !ok("^1.2.0", "2.0.0"));
        assert!(ok("~1.2", "1.2.9") && !ok("~1.2", "1.3.0"));
        assert!(ok(">=1.0.0 <2.0.0", "1.5.0") && !ok(">= 1.0.0, < 2.0.0", "2.0.0"));
        assert!(ok("1.x", "1.4.0") && !ok("1.x", "2.0.0"));
        assert!(ok("1.0.0 - 1.4.0", "1.4.0") && !ok("1.0.0 - 1.4.0", "1.4.1"));
        assert!(ok("^1 || ^3", "3.1.0") && !ok("^1 || ^3", "2.0.0"));
        assert!(!ok(">=1.0.0, !=1.3.0", "1.3.0") && ok(">=1.0.0, !=1.3.0", "1.3.1"));
        assert!(ok("*", "4.0.0") && !ok("*", "4.0.0-rc.1"));
        assert!(ok("v1.2.3", "1.2.3"));
        let versions: Vec<Release> = ["1.0.0", "1.2.0", "1.10.0", "2.0.0", "junk"]
            .iter()
            .map(|v| Release {
                version: (*v).into(),
                ..Release::default()
            })
            .collect();
        assert_eq!(newest(&versions, "^1.0.0").unwrap().unwrap().version, "1.10.0");
        assert!(newest(&versions, "^3").unwrap().is_none());
        assert_eq!(exact(&versions, "v1.2.0").unwrap().version, "1.2.0");
        assert!(satisfies(">=banana", &parse_version("1.0.0").unwrap()).is_err());
    }
}
