//! The values Argo CD's repo-server gives helm for a Helm source
//! (argo-cd `docs/user-guide/helm.md`, "Helm Value Precedence"): the
//! `valueFiles` in order, then `valuesObject` if set, else `values`, then
//! `parameters` as `--set`. A value file the import cannot read (at a URL,
//! inside a chart archive, behind the helm-secrets `secrets://` scheme)
//! leaves the release unproven.

use std::collections::BTreeMap;

use serde_json::Value;

use super::super::not_converted;
use super::super::tree::Tree;
use super::super::values::{self, Step};
use super::App;
use crate::diag::Diagnostic;
use crate::yaml::Origin;

impl App<'_> {
    /// The values Argo CD gives the release; what could not be read goes
    /// into `unread`.
    pub(super) fn values(
        &self,
        source: &Value,
        refs: &BTreeMap<&str, &Value>,
        tree: &Tree,
        unread: &mut Vec<String>,
        notes: &mut Vec<Diagnostic>,
    ) -> Value {
        let helm = &source["helm"];
        let mut out = Value::Object(serde_json::Map::new());
        let ignore_missing = helm["ignoreMissingValueFiles"].as_bool() == Some(true);
        for f in helm["valueFiles"].as_array().into_iter().flatten() {
            let Some(f) = f.as_str() else { continue };
            match self.value_file(f, source, refs, tree) {
                Ok(Some(v)) => values::merge(&mut out, &v),
                Ok(None) if ignore_missing => {}
                Ok(None) => {
                    unread.push(format!("value file {f} (not in the tree)"));
                    notes.push(not_converted(
                        self.origin.clone(),
                        format!("Application {}: value file {f} is not in the tree", self.name),
                        "name the folder that is the checkout of the repository the file is read from",
                    ));
                }
                Err(why) => {
                    unread.push(format!("value file {f}"));
                    notes.push(not_converted(
                        self.origin.clone(),
                        format!("Application {}: value file {f}: {why}", self.name),
                        "set these values in the component's layers by hand",
                    ));
                }
            }
        }
        let inline = match (&helm["valuesObject"], &helm["values"]) {
            (Value::Object(_), _) => Some(helm["valuesObject"].clone()),
            (_, Value::String(text)) => match parse_values(text, &self.origin) {
                Ok(v) => Some(v),
                Err(why) => {
                    notes.push(not_converted(
                        self.origin.clone(),
                        format!("Application {}: helm.values is not a YAML mapping: {why}", self.name),
                        "fix the values text",
                    ));
                    None
                }
            },
            (_, v @ Value::Object(_)) => Some(v.clone()),
            _ => None,
        };
        if let Some(v) = inline {
            if helm["valuesObject"].is_object() && values::leaf_paths(&v).iter().any(|p| values::null_at(&v, p)) {
                notes.push(not_converted(
                    self.origin.clone(),
                    format!(
                        "Application {}: a null in helm.valuesObject is kept; Argo CD itself drops it when it applies the Application (argoproj/argo-cd#16312)",
                        self.name
                    ),
                    "strata passes the null to helm in `values`; check the chart default it removes is meant to go",
                ));
            }
            values::merge(&mut out, &v);
        }
        self.parameters(helm, &mut out, notes);
        if helm.get("fileParameters").is_some() {
            unread.push("helm.fileParameters".into());
            notes.push(not_converted(
                self.origin.clone(),
                format!("Application {}: helm.fileParameters are not imported", self.name),
                "set these values in the component's layers by hand",
            ));
        }
        out
    }

    /// `parameters` as `--set` (or `--set-string` with `forceString`).
    fn parameters(&self, helm: &Value, out: &mut Value, notes: &mut Vec<Diagnostic>) {
        let mut set: Vec<Vec<Step>> = Vec::new();
        for p in helm["parameters"].as_array().into_iter().flatten() {
            let (Some(name), value) = (p["name"].as_str(), p["value"].as_str().unwrap_or("")) else {
                continue;
            };
            let path = match values::parse_path(name) {
                Ok(path) => path,
                Err(why) => {
                    notes.push(not_converted(
                        self.origin.clone(),
                        format!("Application {}: parameter {why}", self.name),
                        "set this value in the component's layers by hand",
                    ));
                    continue;
                }
            };
            if set.iter().any(|s| s != &path && values::overlaps(s, &path)) {
                notes.push(not_converted(
                    self.origin.clone(),
                    format!(
                        "Application {}: parameter {name} overlaps another; Argo CD passes them in no fixed order",
                        self.name
                    ),
                    "set these values in the component's layers by hand",
                ));
            }
            let v = if p["forceString"].as_bool() == Some(true) {
                Value::String(value.to_owned())
            } else {
                values::typed(value)
            };
            values::set_path(out, &path, v);
            set.push(path);
        }
    }

    /// Reads one value file: `Ok(None)` when it is not in the tree.
    fn value_file(
        &self,
        f: &str,
        source: &Value,
        refs: &BTreeMap<&str, &Value>,
        tree: &Tree,
    ) -> Result<Option<Value>, String> {
        let rel = if let Some(rest) = f.strip_prefix('$') {
            let (name, path) = rest.split_once('/').ok_or("a `$ref` must be followed by a path")?;
            if !refs.contains_key(name) {
                return Err(format!("no source of this Application has `ref: {name}`"));
            }
            path.to_owned()
        } else if f.starts_with("secrets://") || f.starts_with("secrets+") {
            return Err("decrypted by the helm-secrets plugin (SOPS), which strata does not run".into());
        } else if f.contains("://") {
            return Err("a remote URL; strata reads only files of the tree".into());
        } else if source.get("chart").is_some() {
            return Err("read from the chart archive, which the tree does not hold".into());
        } else if let Some(from_top) = f.strip_prefix('/') {
            // An absolute path is read from the repository's top
            // (argoproj/argo-cd `util/io/path/resolved.go`,
            // `resolveFileOrDirectory`).
            from_top.to_owned()
        } else {
            crate::world::join(source["path"].as_str().unwrap_or(""), f)
        };
        let rel = crate::world::normalize(&rel).map_err(|e| e.to_string())?;
        let path = tree.root.join(&rel);
        if !path.is_file() {
            return Ok(None);
        }
        if !super::super::inside(&tree.root, &path) {
            return Err("a symbolic link leads it out of the tree".into());
        }
        let bytes =
            crate::world::disk::read_regular(&path, crate::yaml::MAX_INPUT_BYTES as u64).map_err(|e| e.to_string())?;
        let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())?;
        parse_values(&text, &Origin::file_start(tree.shown_path(&rel))).map(Some)
    }
}

/// Values text as a mapping (empty text: no values).
pub(super) fn parse_values(text: &str, at: &Origin) -> Result<Value, String> {
    let name = std::sync::Arc::from(at.file.to_string());
    let node = crate::yaml::parse(&name, text).map_err(|e| format!("{}: {}", e.origin, e.message))?;
    match node.to_json() {
        Value::Null => Ok(Value::Object(serde_json::Map::new())),
        v @ Value::Object(_) => Ok(v),
        _ => Err("not a mapping".into()),
    }
}
