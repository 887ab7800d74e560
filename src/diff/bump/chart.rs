//! One version of a chart as the store holds it, read for a bump: its
//! defaults with every bundled subchart's under the subchart's key (a
//! parent's values for that key winning, as Helm coalesces them: helm/helm
//! `pkg/chart/common/util/coalesce.go`), its `values.schema.json` and each
//! subchart's under its key (`pkg/chart/common/util/jsonschema.go`
//! validates a subchart's values against its own schema), and the values
//! paths its templates read ([`super::reads`]), together with the values
//! paths `Chart.yaml` reads: a dependency's `condition` (relative to the
//! chart that lists it) and `tags` (at the top), as helm/helm
//! `pkg/chart/v2/util/dependencies.go` reads them.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value as J;

use super::reads::{self, Found, Loc, Seg, Templates};
use crate::charts::archive::{self, ChartInfo};

/// The deepest nesting of subcharts followed (as the archive reader).
const MAX_NESTING: usize = 6;
/// The deepest a schema is followed through references and combinators.
const MAX_SCHEMA_DEPTH: usize = 32;

/// What one version of a chart reads of its values.
pub struct Chart {
    pub name: String,
    pub version: String,
    /// The defaults, subcharts' under their keys.
    pub defaults: J,
    /// Each `values.schema.json`, by the key path of its chart.
    schemas: Vec<(Vec<String>, J)>,
    templates: Templates,
    found: Found,
    /// What could not be read, for the reviewer.
    pub notes: Vec<String>,
}

/// Why a chart version counts a key as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// A template reads it, here.
    Template(Loc),
    /// Its `values.yaml` (or a subchart's) has it.
    Values,
    /// Its `values.schema.json` (or a subchart's) names it.
    Schema,
    /// The templates were too large to follow: no key is called unread.
    Unbounded,
}

/// One chart of the tree: the top chart or a bundled subchart.
struct Level {
    info: ChartInfo,
    /// The key path of its values from the top chart.
    scope: Vec<String>,
    /// Its files, relative to its folder.
    files: Vec<(String, Vec<u8>)>,
    /// How its files are named in what the reviewer reads.
    shown: String,
    subs: Vec<Level>,
}

impl Chart {
    /// Reads a chart archive's bytes.
    pub fn read(bytes: &[u8]) -> Result<Chart, String> {
        let files = archive::unpack(bytes, false)?;
        let top = level(files, Vec::new(), String::new(), 0)?;
        let mut templates = Templates::default();
        let mut schemas = Vec::new();
        let mut extra = Vec::new();
        let mut notes = Vec::new();
        gather(&top, &mut templates, &mut schemas, &mut extra, &mut notes);
        if templates.faults > 0 {
            notes.push(format!(
                "{} template action(s) of {} {} could not be read; what they read is not known",
                templates.faults, top.info.name, top.info.version
            ));
        }
        let defaults = defaults_of(&top);
        let values_label = format!("{}/values.yaml", top.info.name);
        let found = reads::walk_chart(&templates, &[(&defaults, &values_label)], &extra);
        if found.exhausted {
            notes.push(format!(
                "the templates of {} {} are too large to follow; no override is called unread",
                top.info.name, top.info.version
            ));
        }
        Ok(Chart {
            name: top.info.name.clone(),
            version: top.info.version.clone(),
            defaults,
            schemas,
            templates,
            found,
            notes,
        })
    }

    /// What `tpl` reads of the strings a release's own values put where
    /// the chart renders strings as templates.
    pub fn release_reads(&self, user: &J) -> Found {
        if self.found.tpl.is_empty() {
            return Found::default();
        }
        let label = format!("{}/values.yaml", self.name);
        reads::walk_strings(
            &self.templates,
            &self.found.tpl,
            &[(user, "the release's values"), (&self.defaults, &label)],
        )
    }

    /// Why this version reads the value a user sets at `key`, if it does.
    pub fn why(&self, key: &[String], release: &Found) -> Option<Why> {
        if self.found.exhausted {
            return Some(Why::Unbounded);
        }
        if let Some(loc) = self.found.reads.find(key).or_else(|| release.reads.find(key)) {
            return Some(Why::Template(loc.clone()));
        }
        if has_key(&self.defaults, key) {
            return Some(Why::Values);
        }
        let in_schema = self.schemas.iter().any(|(scope, schema)| {
            key.starts_with(scope) && schema_has(schema, schema, &key[scope.len()..], 0, &mut BTreeMap::new())
        });
        in_schema.then_some(Why::Schema)
    }

    /// Where every value is read whole, if anywhere (`toYaml .Values`).
    pub fn reads_everything(&self) -> Option<&Loc> {
        self.found.reads.everything()
    }
}

/// A chart level from its files, with its bundled subcharts.
fn level(files: Vec<(String, Vec<u8>)>, scope: Vec<String>, shown: String, depth: usize) -> Result<Level, String> {
    if depth > MAX_NESTING {
        return Err("subcharts are nested too deeply".into());
    }
    let info = archive::from_files(&files, depth)?;
    let shown = if shown.is_empty() { info.name.clone() } else { shown };
    // Subcharts: archives directly under charts/, or folders.
    let mut subs_files: BTreeMap<String, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for (path, bytes) in &files {
        let Some(rest) = path.strip_prefix("charts/") else {
            continue;
        };
        match rest.split_once('/') {
            None if rest.ends_with(".tgz") => {
                let inner = archive::unpack(bytes, false).map_err(|e| format!("subchart charts/{rest}: {e}"))?;
                subs_files.insert(rest.to_owned(), inner);
            }
            Some((dir, inner)) => subs_files
                .entry(dir.to_owned())
                .or_default()
                .push((inner.to_owned(), bytes.clone())),
            None => {}
        }
    }
    let mut subs = Vec::new();
    for (at, sub_files) in subs_files {
        if !sub_files.iter().any(|(p, _)| p == "Chart.yaml") {
            continue;
        }
        let name = archive::from_files(&sub_files, depth + 1)
            .map_err(|e| format!("subchart charts/{at}: {e}"))?
            .name;
        // A chart listed twice under two aliases is two subcharts.
        let mut keys: Vec<&str> = info
            .dependencies
            .iter()
            .filter(|d| d.name == name)
            .map(|d| d.values_key())
            .collect();
        if keys.is_empty() {
            keys.push(&name);
        }
        for key in keys {
            let mut sub_scope = scope.clone();
            sub_scope.push(key.to_owned());
            let sub_shown = format!("{shown}/charts/{}", at.trim_end_matches(".tgz"));
            subs.push(level(sub_files.clone(), sub_scope, sub_shown, depth + 1)?);
        }
    }
    Ok(Level {
        info,
        scope,
        files,
        shown,
        subs,
    })
}

/// Every level's templates, schemas and `Chart.yaml` reads.
fn gather(
    l: &Level,
    templates: &mut Templates,
    schemas: &mut Vec<(Vec<String>, J)>,
    extra: &mut Vec<(reads::Path, Loc)>,
    notes: &mut Vec<String>,
) {
    let library = l
        .files
        .iter()
        .find(|(p, _)| p == "Chart.yaml")
        .is_some_and(|(_, b)| String::from_utf8_lossy(b).lines().any(|x| x.trim() == "type: library"));
    for (path, bytes) in &l.files {
        if let Some(rest) = path.strip_prefix("templates/") {
            let partial = rest.rsplit('/').next().is_some_and(|b| b.starts_with('_'));
            let text = String::from_utf8_lossy(bytes);
            // A library chart's templates only define (helm/helm
            // pkg/engine/engine.go, isTemplateValid).
            templates.add(&format!("{}/{path}", l.shown), &text, &l.scope, !partial && !library);
        }
        if path == "values.schema.json" {
            match serde_json::from_slice::<J>(bytes) {
                Ok(s) => schemas.push((l.scope.clone(), s)),
                Err(e) => notes.push(format!(
                    "{}/values.schema.json is not JSON ({e}); it is not read",
                    l.shown
                )),
            }
        }
    }
    let at = Loc {
        file: Arc::from(format!("{}/Chart.yaml", l.shown)),
        line: 0,
    };
    for d in &l.info.dependencies {
        for c in d.condition.iter().flat_map(|c| c.split(',')) {
            let mut p: reads::Path = l.scope.iter().cloned().map(Seg::Key).collect();
            p.extend(
                c.trim()
                    .split('.')
                    .filter(|k| !k.is_empty())
                    .map(|k| Seg::Key(k.to_owned())),
            );
            extra.push((p, at.clone()));
        }
        for t in &d.tags {
            extra.push((vec![Seg::Key("tags".into()), Seg::Key(t.clone())], at.clone()));
        }
    }
    for s in &l.subs {
        gather(s, templates, schemas, extra, notes);
    }
}

/// A level's defaults with its subcharts' under their keys, the level's
/// own values for a key winning over the subchart's.
fn defaults_of(l: &Level) -> J {
    let mut v = l.info.values().clone();
    for s in &l.subs {
        let Some(key) = s.scope.last() else { continue };
        let sub = defaults_of(s);
        if let J::Object(m) = &mut v {
            let merged = overlay(sub, m.get(key));
            m.insert(key.clone(), merged);
        }
    }
    v
}

/// `over` merged onto `base`, mappings key by key.
fn overlay(base: J, over: Option<&J>) -> J {
    match (base, over) {
        (base, None) => base,
        (J::Object(mut b), Some(J::Object(o))) => {
            for (k, v) in o {
                let merged = overlay(b.remove(k).unwrap_or(J::Null), Some(v));
                b.insert(k.clone(), merged);
            }
            J::Object(b)
        }
        (_, Some(o)) => o.clone(),
    }
}

/// Whether the mapping keys `key` lead to a value in `v`.
pub fn has_key(v: &J, key: &[String]) -> bool {
    key.iter()
        .try_fold(v, |v, k| v.as_object().and_then(|m| m.get(k)))
        .is_some()
}

/// Whether a JSON Schema names the path `key`: through `properties`,
/// a matching `patternProperties`, an `additionalProperties` the chart
/// wrote (a schema, or `true`), `$ref` to the same document, and `allOf`,
/// `anyOf`, `oneOf`, `then`, `else`.
fn schema_has(s: &J, root: &J, key: &[String], depth: usize, patterns: &mut BTreeMap<String, bool>) -> bool {
    let Some((first, rest)) = key.split_first() else {
        return true;
    };
    if depth > MAX_SCHEMA_DEPTH {
        return false;
    }
    let J::Object(m) = s else {
        return *s == J::Bool(true);
    };
    let mut next: Vec<&J> = Vec::new();
    if let Some(p) = m.get("properties").and_then(|p| p.get(first)) {
        next.push(p);
    }
    if let Some(J::Object(pp)) = m.get("patternProperties") {
        for (pat, sub) in pp {
            let key = format!("{pat}\u{0}{first}");
            let hit = *patterns.entry(key).or_insert_with(|| pattern_matches(pat, first));
            if hit {
                next.push(sub);
            }
        }
    }
    if let Some(a @ (J::Object(_) | J::Bool(true))) = m.get("additionalProperties") {
        next.push(a);
    }
    if next.into_iter().any(|n| schema_has(n, root, rest, depth + 1, patterns)) {
        return true;
    }
    let mut branches: Vec<&J> = Vec::new();
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(J::Array(a)) = m.get(k) {
            branches.extend(a);
        }
    }
    branches.extend(["then", "else"].iter().filter_map(|k| m.get(*k)));
    if let Some(target) = m
        .get("$ref")
        .and_then(J::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|p| root.pointer(p))
    {
        branches.push(target);
    }
    branches
        .into_iter()
        .any(|b| schema_has(b, root, key, depth + 1, patterns))
}

/// Whether a `patternProperties` pattern matches a key, with JSON Schema's
/// own regular expressions (an unusable pattern matches nothing).
fn pattern_matches(pattern: &str, key: &str) -> bool {
    jsonschema::validator_for(&serde_json::json!({ "pattern": pattern }))
        .is_ok_and(|v| v.is_valid(&J::String(key.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(p: &str) -> Vec<String> {
        p.split('.').map(str::to_owned).collect()
    }

    #[test]
    fn schema_paths() {
        let s = json!({
            "properties": {
                "a": {"properties": {"b": {"type": "string"}}},
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
                "r": {"$ref": "#/$defs/r"},
                "closed": {"type": "object"}
            },
            "patternProperties": {"^x-": {}},
            "allOf": [{"properties": {"c": {}}}],
            "$defs": {"r": {"properties": {"deep": {}}}}
        });
        let has = |p: &str| schema_has(&s, &s, &key(p), 0, &mut BTreeMap::new());
        for yes in ["a", "a.b", "m.anything", "r.deep", "x-extra", "c"] {
            assert!(has(yes), "{yes}");
        }
        for no in ["a.z", "r.z", "closed.z", "y-extra", "nothing"] {
            assert!(!has(no), "{no}");
        }
    }

    #[test]
    fn defaults_take_the_parents_values_over_the_subcharts() {
        let sub = json!({"size": 1, "mode": "lru"});
        assert_eq!(
            overlay(sub, Some(&json!({"size": 5}))),
            json!({"size": 5, "mode": "lru"})
        );
        assert!(has_key(&json!({"a": {"b": null}}), &key("a.b")));
        assert!(!has_key(&json!({"a": {"b": 1}}), &key("a.b.c")));
    }
}
