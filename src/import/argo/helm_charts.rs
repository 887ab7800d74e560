//! A kustomize source's `helmCharts:` (Argo CD with `--enable-helm` in
//! `kustomize.buildOptions`) as releases: one component per chart, with
//! its chart, release name and values as kustomize's helm inflator gives
//! them to helm (kubernetes-sigs/kustomize `api/types/helmchartargs.go`,
//! `api/internal/builtins/HelmChartInflationGenerator.go`):
//!
//! - the chart from `chartHome/<name>` (`chartHome` of `helmGlobals`,
//!   default `charts`; `<name>-<version>/<name>` with a repo and version)
//!   when the folder has it, else pulled from `repo` at `version`;
//! - `valuesFile` (a file of the folder) stands in for the chart's own
//!   values.yaml; `valuesInline` goes on top of it (`valuesMerge:
//!   override`, the default), under it (`merge`) or replaces it
//!   (`replace`); kustomize merges these with kyaml, where a `null`
//!   clears a key and so leaves the chart's default in place; then each
//!   `additionalValuesFiles` as a further `-f`;
//! - the release is `releaseName` in `namespace`; the chart's CRDs only
//!   with `includeCRDs: true`; the kustomization's own `namespace:` is set
//!   on every object the chart renders.
//!
//! What else the kustomization does (resources, patches, generators) is
//! listed, not imported; where it changes the objects the charts render
//! (patches, labels, name prefixes, …), their releases are unproven.

use std::path::Path;

use serde_json::Value;

use super::super::tree::{Doc, Tree};
use super::super::{Chart, Read, Release, not_converted, values};
use super::{App, Ctx};
use crate::yaml::Origin;

/// Kustomization fields that only the chart releases are imported of.
const OTHER_FIELDS: &[&str] = &[
    "resources",
    "components",
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "configMapGenerator",
    "secretGenerator",
    "images",
    "replicas",
    "namePrefix",
    "nameSuffix",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "replacements",
    "transformers",
    "generators",
];

/// Those of them that change the objects the charts render (the others
/// add objects beside them): a release under one cannot be proven equal.
const TRANSFORMING: &[&str] = &[
    "components",
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "images",
    "replicas",
    "namePrefix",
    "nameSuffix",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "replacements",
    "transformers",
];

pub(super) fn read(app: &App<'_>, dir: &str, env: &str, ctx: &Ctx<'_>, read: &mut Read) {
    let tree = ctx.tree;
    let Some(file) = super::super::refs::kustomization_file(&tree.root.join(dir)) else {
        return;
    };
    let rel = crate::world::join(dir, file);
    let shown = tree.shown_path(&rel);
    let doc = match read_doc(&tree.root.join(&rel), &shown) {
        Ok(d) => d,
        Err(why) => {
            read.notes.push(not_converted(
                app.origin.clone(),
                format!(
                    "Application {}: {shown} cannot be read ({why}); its charts are not imported",
                    app.name
                ),
                "fix the kustomization",
            ));
            return;
        }
    };
    let doc = &doc;
    let k = &doc.value;
    let charts = k["helmCharts"].as_array().cloned().unwrap_or_default();
    let others: Vec<&str> = OTHER_FIELDS.iter().copied().filter(|f| k.get(*f).is_some()).collect();
    if charts.is_empty() {
        read.notes.push(not_converted(
            app.origin.clone(),
            format!(
                "Application {}: not a Helm release (the kustomization {shown})",
                app.name
            ),
            "put its objects in a component's manifests/ by hand",
        ));
        return;
    }
    if !others.is_empty() {
        read.notes.push(not_converted(
            doc.origin(),
            format!(
                "Application {}: {shown} also has {}; only its helmCharts are imported, and the charts' objects are rendered without what these do to them",
                app.name,
                others.join(", ")
            ),
            "put the other objects in the component's manifests/, and its patches in config.yaml `patches`",
        ));
    }
    let transforming: Vec<&str> = others.iter().copied().filter(|f| TRANSFORMING.contains(f)).collect();
    let home = k["helmGlobals"]["chartHome"].as_str().unwrap_or("charts");
    for (i, c) in charts.iter().enumerate() {
        let at = doc.origin_of(&format!("helmCharts/{i}/name"));
        let entry = Entry {
            app,
            tree,
            dir,
            home,
            chart: c,
            force_namespace: k["namespace"].as_str(),
            at: &at,
        };
        if let Some(mut r) = entry.release(env, read) {
            if !transforming.is_empty() {
                r.unread.push(format!(
                    "the {} of {shown} (they change the objects its chart renders)",
                    transforming.join(", ")
                ));
            }
            read.releases.push(r);
        }
    }
}

/// One `helmCharts:` entry.
struct Entry<'a> {
    app: &'a App<'a>,
    tree: &'a Tree,
    /// The kustomization's folder.
    dir: &'a str,
    home: &'a str,
    chart: &'a Value,
    force_namespace: Option<&'a str>,
    at: &'a Origin,
}

impl Entry<'_> {
    fn release(&self, env: &str, read: &mut Read) -> Option<Release> {
        let c = self.chart;
        let name = c["name"].as_str().filter(|n| !n.is_empty())?;
        let release = match c["releaseName"].as_str().filter(|r| !r.is_empty()) {
            Some(r) => r.to_owned(),
            None => {
                self.note(read, format!("chart {name} has no releaseName: kustomize passes --generate-name, a new name each time; strata installs it as {name}"));
                name.to_owned()
            }
        };
        let namespace = self
            .force_namespace
            .or(c["namespace"].as_str())
            .or(self.app.spec["destination"]["namespace"].as_str())
            .unwrap_or("default");
        let mut r = Release::new(
            format!("{}/{release}", self.app.key),
            release.clone(),
            env.to_owned(),
            namespace.to_owned(),
            self.at.clone(),
        );
        r.release_name = Some(release);
        r.crds = c["includeCRDs"].as_bool() == Some(true);
        r.force_namespace = self.force_namespace.map(str::to_owned);
        r.chart = self.source(name, read);
        r.values = self.values(&mut r.unread, read);
        Some(r)
    }

    fn note(&self, read: &mut Read, what: String) {
        read.notes.push(not_converted(
            self.at.clone(),
            format!("Application {}: {what}", self.app.name),
            "set it in the kustomization, or the component's config.yaml, by hand",
        ));
    }

    /// The chart: the folder's own copy, else the repository's.
    fn source(&self, name: &str, read: &mut Read) -> Option<Chart> {
        let version = self.chart["version"].as_str().unwrap_or("");
        let repo = self.chart["repo"].as_str().unwrap_or("");
        let home = crate::world::join(self.dir, self.home);
        let local = if !version.is_empty() && !repo.is_empty() {
            crate::world::join(&home, &format!("{name}-{version}/{name}"))
        } else {
            crate::world::join(&home, name)
        };
        if let Ok(local) = crate::world::normalize(&local)
            && self.tree.root.join(&local).join("Chart.yaml").is_file()
        {
            return Some(Chart::Local { dir: local });
        }
        if repo.is_empty() {
            self.note(
                read,
                format!("chart {name} has no repo and is not in {home}; it is not imported"),
            );
            return None;
        }
        if version.is_empty() {
            self.note(
                read,
                format!("chart {name} has no version: kustomize takes the latest; write the version you run"),
            );
        }
        Some(Chart::Remote {
            repo_url: repo.trim_end_matches('/').to_owned(),
            name: name.to_owned(),
            version: if version.is_empty() {
                "*".into()
            } else {
                version.to_owned()
            },
            oci: repo.starts_with("oci://"),
        })
    }

    /// The values helm is given beyond the chart's own defaults.
    fn values(&self, unread: &mut Vec<String>, read: &mut Read) -> Value {
        let c = self.chart;
        let file = c["valuesFile"].as_str().filter(|f| !f.is_empty());
        let base = file.and_then(|f| self.file(f, unread, read));
        let inline = match &c["valuesInline"] {
            v @ Value::Object(m) if !m.is_empty() => Some(v.clone()),
            _ => None,
        };
        let mode = c["valuesMerge"].as_str().unwrap_or("override");
        let mut out = match (inline, mode) {
            (None, _) => base.unwrap_or_else(empty),
            (Some(i), "replace") => i,
            (Some(i), "merge") => {
                let mut v = i;
                kyaml_merge(&mut v, &base.unwrap_or_else(empty));
                v
            }
            (Some(i), _) => {
                let mut v = base.unwrap_or_else(empty);
                kyaml_merge(&mut v, &i);
                v
            }
        };
        for f in c["additionalValuesFiles"].as_array().into_iter().flatten() {
            if let Some(v) = f.as_str().and_then(|f| self.file(f, unread, read)) {
                values::merge(&mut out, &v);
            }
        }
        out
    }

    /// A values file of the kustomization's folder.
    fn file(&self, f: &str, unread: &mut Vec<String>, read: &mut Read) -> Option<Value> {
        let rel = crate::world::normalize(&crate::world::join(self.dir, f)).ok()?;
        let path = self.tree.root.join(&rel);
        match read_values(&path, &self.tree.shown_path(&rel)) {
            Ok(v) => Some(v),
            Err(why) => {
                unread.push(format!("values file {f}"));
                self.note(read, format!("values file {f} cannot be read: {why}"));
                None
            }
        }
    }
}

/// A kustomization file, with the places of its values.
fn read_doc(path: &Path, shown: &str) -> Result<Doc, String> {
    let bytes =
        crate::world::disk::read_regular(path, crate::yaml::MAX_INPUT_BYTES as u64).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())?;
    let node =
        crate::yaml::parse(&std::sync::Arc::from(shown), &text).map_err(|e| format!("{}: {}", e.origin, e.message))?;
    Ok(Doc {
        value: node.to_json(),
        node,
    })
}

fn empty() -> Value {
    Value::Object(serde_json::Map::new())
}

fn read_values(path: &Path, shown: &str) -> Result<Value, String> {
    let bytes =
        crate::world::disk::read_regular(path, crate::yaml::MAX_INPUT_BYTES as u64).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())?;
    super::values::parse_values(&text, &Origin::file_start(shown))
}

/// kyaml's merge of `over` into `base`, as kustomize merges values: maps
/// key by key, a `null` in `over` clearing the key, anything else
/// replacing. (kyaml merges lists of maps that share a key such as `name`
/// element by element; such lists are replaced here, and the rendered
/// objects are compared after the import.)
pub fn kyaml_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                if v.is_null() {
                    b.remove(k);
                    continue;
                }
                match b.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => kyaml_merge(existing, v),
                    _ => {
                        let mut v = v.clone();
                        drop_nulls(&mut v);
                        b.insert(k.clone(), v);
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Takes every `null` out of a mapping (a cleared key is no key).
fn drop_nulls(v: &mut Value) {
    if let Value::Object(m) = v {
        m.retain(|_, x| !x.is_null());
        m.values_mut().for_each(drop_nulls);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inline_values_override_the_values_file_and_nulls_clear() {
        let mut base = json!({"a": {"b": 1, "c": 2}, "l": [1], "gone": 1});
        kyaml_merge(
            &mut base,
            &json!({"a": {"c": 3, "d": null}, "l": [2], "gone": null, "n": {"x": null, "y": 1}}),
        );
        assert_eq!(base, json!({"a": {"b": 1, "c": 3}, "l": [2], "n": {"y": 1}}));
    }
}
