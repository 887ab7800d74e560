//! Argo CD trees: every Application is a component of its own name, in the
//! environment of its destination; every ApplicationSet a component named
//! after it, in one environment per generated Application (its list
//! element's `cluster`, or `name`). A release's values are what Argo CD's
//! repo-server gives helm (argo-cd `docs/user-guide/helm.md`, "Helm Value
//! Precedence"): the `valueFiles` in order, then `valuesObject` if set,
//! else `values`, then `parameters` as `--set`.

mod appset;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::tree::{Doc, Tree};
use super::values::{self, Step};
use super::{Chart, Engine, GitSource, Read, Release, dns_label, not_converted};
use crate::diag::Diagnostic;
use crate::yaml::Origin;

/// The environment of an Application whose destination is the cluster
/// Argo CD runs in.
pub const IN_CLUSTER: &str = "in-cluster";

pub fn read(mut tree: Tree) -> Result<Read, Vec<Diagnostic>> {
    let mut read = Read {
        engine: Engine::Argo,
        root: tree.root.clone(),
        releases: Vec::new(),
        git: BTreeMap::new(),
        notes: std::mem::take(&mut tree.notes),
    };
    let app_folders = app_folders(&tree);
    let mut others: BTreeMap<&str, Vec<&Doc>> = BTreeMap::new();
    for doc in &tree.docs {
        let argo = doc.value["apiVersion"]
            .as_str()
            .is_some_and(|a| a.starts_with("argoproj.io/"));
        match doc.kind() {
            "Application" if argo => {
                let app = App {
                    key: doc.name().to_owned(),
                    name: doc.name().to_owned(),
                    env: None,
                    spec: &doc.value["spec"],
                    origin: doc.origin_of("metadata/name"),
                };
                app.read(&tree, &app_folders, &mut read);
            }
            "ApplicationSet" if argo => appset::read(doc, &tree, &app_folders, &mut read),
            // Objects beside the Applications (an AppProject) are listed;
            // what the Applications deploy, and files that are no
            // Kubernetes object (values files), are not.
            kind if is_object(doc) && app_folders.contains(&folder_of(&tree, doc)) => {
                others.entry(kind).or_default().push(doc);
            }
            _ => {}
        }
    }
    for (kind, docs) in others {
        read.notes.push(not_converted(
            docs[0].origin(),
            format!(
                "{} object(s) of kind {} are not imported ({})",
                docs.len(),
                kind,
                docs.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
            ),
            "strata imports Applications and ApplicationSets; put other objects in a component's manifests/",
        ));
    }
    Ok(read)
}

fn is_object(doc: &Doc) -> bool {
    doc.value["apiVersion"].is_string() && !doc.kind().is_empty()
}

/// The folder of a document's file, relative to the tree.
fn folder_of(tree: &Tree, doc: &Doc) -> String {
    let file = doc.node.origin.file.to_string();
    let rel = file.strip_prefix(&tree.shown).unwrap_or(&file).trim_start_matches('/');
    rel.rsplit_once('/').map_or(String::new(), |(dir, _)| dir.to_owned())
}

/// The folders (relative to the tree) that hold Application files: an
/// Application whose source is one of them is an app of apps, which strata
/// replaces with its own.
fn app_folders(tree: &Tree) -> BTreeSet<String> {
    tree.docs
        .iter()
        .filter(|d| matches!(d.kind(), "Application" | "ApplicationSet"))
        .map(|d| folder_of(tree, d))
        .collect()
}

/// An Application, written or generated.
pub(super) struct App<'a> {
    pub key: String,
    pub name: String,
    /// The environment, when a generator gives it.
    pub env: Option<String>,
    pub spec: &'a Value,
    pub origin: Origin,
}

impl App<'_> {
    fn read(&self, tree: &Tree, app_folders: &BTreeSet<String>, read: &mut Read) {
        let sources: Vec<&Value> = match self.spec["sources"].as_array() {
            Some(list) => list.iter().collect(),
            None => self.spec.get("source").into_iter().collect(),
        };
        let refs: BTreeMap<&str, &Value> = sources.iter().filter_map(|s| Some((s["ref"].as_str()?, *s))).collect();
        let helm_sources: Vec<&Value> = sources
            .iter()
            .copied()
            .filter(|s| s.get("chart").is_some() || s.get("helm").is_some() || is_chart_folder(tree, s))
            .collect();
        let Some(env) = self.env.clone().or_else(|| destination_env(&self.spec["destination"])) else {
            read.notes.push(not_converted(
                self.origin.clone(),
                format!("Application {}: its destination names no cluster", self.name),
                "set destination.name or destination.server",
            ));
            return;
        };
        let Some(source) = helm_sources.first() else {
            self.not_a_release(&sources, app_folders, read);
            return;
        };
        for extra in &helm_sources[1..] {
            read.notes.push(not_converted(
                self.origin.clone(),
                format!(
                    "Application {}: only its first Helm source is imported, not {}",
                    self.name,
                    extra["chart"].as_str().or(extra["path"].as_str()).unwrap_or("another")
                ),
                "split the Application: one Helm release per component",
            ));
        }
        let git = refs.values().chain(sources.iter()).find(|s| s.get("chart").is_none());
        if let Some(g) = git.and_then(|g| g["repoURL"].as_str()) {
            let branch = git.and_then(|g| g["targetRevision"].as_str()).filter(|r| *r != "HEAD");
            read.git.entry(env.clone()).or_insert(GitSource {
                url: g.to_owned(),
                branch: branch.map(str::to_owned),
            });
        }
        let values = self.values(source, &refs, tree, &mut read.notes);
        read.releases.push(Release {
            key: self.key.clone(),
            name: self.name.clone(),
            env,
            namespace: self.spec["destination"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_owned(),
            chart: self.chart(source, tree, &mut read.notes),
            values,
            requires: Vec::new(),
            release_name: source["helm"]["releaseName"].as_str().map(str::to_owned),
            origin: self.origin.clone(),
        });
    }

    /// An Application with no Helm source: an app of apps (fine: strata
    /// writes its own), or plain objects, which are not imported.
    fn not_a_release(&self, sources: &[&Value], app_folders: &BTreeSet<String>, read: &mut Read) {
        let app_of_apps = sources.iter().any(|s| {
            let path = s["path"]
                .as_str()
                .unwrap_or("")
                .trim_matches('/')
                .trim_start_matches("./");
            app_folders
                .iter()
                .any(|f| f == path || f.starts_with(&format!("{path}/")))
        });
        if !app_of_apps {
            read.notes.push(not_converted(
                self.origin.clone(),
                format!(
                    "Application {}: not a Helm release (a directory or kustomize source)",
                    self.name
                ),
                "put its objects in a component's manifests/ by hand",
            ));
        }
    }

    fn chart(&self, source: &Value, tree: &Tree, notes: &mut Vec<Diagnostic>) -> Option<Chart> {
        let repo = source["repoURL"].as_str().unwrap_or("");
        let Some(name) = source["chart"].as_str() else {
            if is_chart_folder(tree, source) {
                let dir = crate::world::normalize(source["path"].as_str().unwrap_or("")).ok()?;
                return Some(Chart::Local { dir });
            }
            notes.push(not_converted(
                self.origin.clone(),
                format!(
                    "Application {}: its chart is a folder of git repository {repo}, not in the tree; the component is not written",
                    self.name
                ),
                "import from the checkout of that repository, or write the component by hand",
            ));
            return None;
        };
        let version = source["targetRevision"].as_str().unwrap_or("");
        super::exact_version(version, &self.origin, notes);
        let oci = repo.starts_with("oci://") || !repo.contains("://");
        Some(Chart::Remote {
            repo_url: repo.to_owned(),
            name: name.to_owned(),
            version: if version.is_empty() {
                "*".into()
            } else {
                version.to_owned()
            },
            oci,
        })
    }

    /// The values Argo CD gives the release.
    fn values(&self, source: &Value, refs: &BTreeMap<&str, &Value>, tree: &Tree, notes: &mut Vec<Diagnostic>) -> Value {
        let helm = &source["helm"];
        let mut out = Value::Object(serde_json::Map::new());
        let ignore_missing = helm["ignoreMissingValueFiles"].as_bool() == Some(true);
        for f in helm["valueFiles"].as_array().into_iter().flatten() {
            let Some(f) = f.as_str() else { continue };
            match self.value_file(f, source, refs, tree) {
                Ok(Some(v)) => values::merge(&mut out, &v),
                Ok(None) if ignore_missing => {}
                Ok(None) => notes.push(not_converted(
                    self.origin.clone(),
                    format!("Application {}: value file {f} is not in the tree", self.name),
                    "name the folder that is the checkout of the repository the file is read from",
                )),
                Err(why) => notes.push(not_converted(
                    self.origin.clone(),
                    format!("Application {}: value file {f}: {why}", self.name),
                    "set these values in the component's layers by hand",
                )),
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
        } else if f.contains("://") {
            return Err("a remote URL; strata reads only files of the tree".into());
        } else if source.get("chart").is_some() {
            return Err("read from the chart archive, which the tree does not hold".into());
        } else {
            crate::world::join(source["path"].as_str().unwrap_or(""), f)
        };
        let rel = crate::world::normalize(&rel).map_err(|e| e.to_string())?;
        let path = tree.root.join(&rel);
        if !path.is_file() {
            return Ok(None);
        }
        if !super::inside(&tree.root, &path) {
            return Err("a symbolic link leads it out of the tree".into());
        }
        let bytes =
            crate::world::disk::read_regular(&path, crate::yaml::MAX_INPUT_BYTES as u64).map_err(|e| e.to_string())?;
        let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())?;
        parse_values(&text, &Origin::file_start(tree.shown_path(&rel))).map(Some)
    }
}

/// Whether a source is a folder of the tree holding a chart.
fn is_chart_folder(tree: &Tree, s: &Value) -> bool {
    s["path"]
        .as_str()
        .and_then(|p| crate::world::normalize(p).ok())
        .is_some_and(|p| tree.root.join(p).join("Chart.yaml").is_file())
}

/// Values text as a mapping (empty text: no values).
fn parse_values(text: &str, at: &Origin) -> Result<Value, String> {
    let name = std::sync::Arc::from(at.file.to_string());
    let node = crate::yaml::parse(&name, text).map_err(|e| format!("{}: {}", e.origin, e.message))?;
    match node.to_json() {
        Value::Null => Ok(Value::Object(serde_json::Map::new())),
        v @ Value::Object(_) => Ok(v),
        _ => Err("not a mapping".into()),
    }
}

/// The environment of a destination: its cluster name, or, by server,
/// [`IN_CLUSTER`] or the server's host.
fn destination_env(dest: &Value) -> Option<String> {
    if let Some(name) = dest["name"].as_str() {
        return dns_label(name, 63);
    }
    let server = dest["server"].as_str()?;
    if server.trim_end_matches('/') == "https://kubernetes.default.svc" {
        return Some(IN_CLUSTER.into());
    }
    let host = server.split("://").nth(1).unwrap_or(server);
    dns_label(host.split([':', '/']).next().unwrap_or(host), 63)
}
