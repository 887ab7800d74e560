//! Flux trees in the layout `flux bootstrap` and fluxcd's examples use:
//! `clusters/<name>/` per cluster, whose Flux Kustomizations point at
//! shared folders (`infrastructure/controllers`, `apps/staging`, ...) that
//! kustomize overlays patch per cluster. Each cluster folder is built as
//! kustomize-controller builds it, following every Kustomization to its
//! path with its patches and substitutions; each cluster becomes an
//! environment of its name, and each HelmRelease in it a component.

mod release;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::kustomize::{self, Kubectl};
use super::tree::Tree;
use super::{Engine, GitSource, Read, Tools, dns_label, not_converted};
use crate::diag::{Diagnostic, codes};
use crate::yaml::Origin;

/// The folder of cluster folders.
pub const CLUSTERS: &str = "clusters";

/// An object a cluster's build gave, with the Flux Kustomization (by name)
/// that applies it, for messages.
pub(super) struct Built {
    pub value: Value,
    pub via: String,
    /// The Flux Kustomization that applies it (`None`: the cluster folder).
    pub kustomization: Option<String>,
}

/// A cluster's objects, and each Flux Kustomization's `dependsOn`.
pub(super) struct ClusterObjects {
    pub objects: Vec<Built>,
    pub depends_on: BTreeMap<String, Vec<String>>,
}

impl ClusterObjects {
    /// The Kustomizations that must be ready before `k`, directly or not.
    pub fn before(&self, k: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut todo: Vec<&str> = vec![k];
        while let Some(at) = todo.pop() {
            for d in self.depends_on.get(at).into_iter().flatten() {
                if out.insert(d.clone()) {
                    todo.push(d);
                }
            }
        }
        out
    }
}

pub fn read(mut tree: Tree, tools: &Tools) -> Result<Read, Vec<Diagnostic>> {
    let Some(path) = &tools.kubectl else {
        return Err(vec![
            Diagnostic::error(
                codes::IMPORT_SOURCE,
                Origin::file_start(tree.shown.clone()),
                "importing a Flux tree needs kubectl (its cluster folders are built with `kubectl kustomize`), and there is none on the PATH",
            )
            .with_help("install kubectl, or name it with STRATA_KUBECTL"),
        ]);
    };
    let kubectl = Kubectl { path: path.clone() };
    let clusters_dir = tree.root.join(CLUSTERS);
    let clusters = cluster_names(&clusters_dir).map_err(|why| {
        vec![
            Diagnostic::error(
                codes::IMPORT_SOURCE,
                Origin::file_start(tree.shown_path(CLUSTERS)),
                format!("{}: {why}", tree.shown_path(CLUSTERS)),
            )
            .with_help("name the top of a Flux repository: the folder that holds clusters/<name>/"),
        ]
    })?;
    let mut read = Read {
        engine: Engine::Flux,
        root: tree.root.clone(),
        releases: Vec::new(),
        git: BTreeMap::new(),
        notes: std::mem::take(&mut tree.notes),
    };
    let mut errors = Vec::new();
    for name in clusters {
        let Some(env) = dns_label(&name, 63) else {
            read.notes.push(not_converted(
                Origin::file_start(tree.shown_path(&format!("{CLUSTERS}/{name}"))),
                format!("cluster folder {name} has no name strata can use for an environment"),
                "rename the folder: lowercase letters, digits and '-'",
            ));
            continue;
        };
        match Cluster::build(&tree, &kubectl, &name, &mut read.notes) {
            Ok(cluster) => release::releases(&tree, &name, &env, &cluster, &mut read),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() { Ok(read) } else { Err(errors) }
}

fn cluster_names(dir: &Path) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read the folder: {e}"))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err("no cluster folder in it".into());
    }
    Ok(names)
}

/// One cluster's build.
struct Cluster<'a> {
    tree: &'a Tree,
    kubectl: &'a Kubectl,
    folder: String,
    objects: Vec<Built>,
    depends_on: BTreeMap<String, Vec<String>>,
    /// Folders built so far, and by which Kustomization.
    built: BTreeMap<String, String>,
}

impl<'a> Cluster<'a> {
    /// Every object the cluster's Flux applies: the cluster folder's, and,
    /// through each Kustomization found, its folder's.
    fn build(
        tree: &'a Tree,
        kubectl: &'a Kubectl,
        name: &str,
        notes: &mut Vec<Diagnostic>,
    ) -> Result<ClusterObjects, Diagnostic> {
        let folder = format!("{CLUSTERS}/{name}");
        let mut c = Cluster {
            tree,
            kubectl,
            folder: folder.clone(),
            objects: Vec::new(),
            depends_on: BTreeMap::new(),
            built: BTreeMap::new(),
        };
        let stream = kustomize::build_folder(kubectl, &tree.root.join(&folder)).map_err(|e| c.error(&folder, &e))?;
        c.built.insert(folder.clone(), "the cluster folder".into());
        let mut queue: VecDeque<Value> = c.take(&folder, &stream, None)?.into();
        while let Some(k) = queue.pop_front() {
            queue.extend(c.follow(&k, notes)?);
        }
        Ok(ClusterObjects {
            objects: c.objects,
            depends_on: c.depends_on,
        })
    }

    fn error(&self, folder: &str, why: &str) -> Diagnostic {
        Diagnostic::error(
            codes::IMPORT_SOURCE,
            Origin::file_start(self.tree.shown_path(folder)),
            format!(
                "cluster {}: cannot build {}: {why}",
                self.cluster(),
                self.tree.shown_path(folder)
            ),
        )
        .with_help("fix the kustomization: `kubectl kustomize` must build the folder")
    }

    fn cluster(&self) -> &str {
        self.folder.rsplit('/').next().unwrap_or(&self.folder)
    }

    /// Parses a built stream into the cluster's objects; returns the Flux
    /// Kustomizations in it, to follow.
    fn take(&mut self, folder: &str, stream: &str, kustomization: Option<&str>) -> Result<Vec<Value>, Diagnostic> {
        let via = kustomization.map_or_else(|| "the cluster folder".to_owned(), |k| format!("Kustomization {k}"));
        let name: Arc<str> = Arc::from(self.tree.shown_path(folder));
        let docs = crate::yaml::parse_plain_multi(&name, stream)
            .map_err(|e| self.error(folder, &format!("its build is not YAML: {}", e.message)))?;
        let mut follow = Vec::new();
        for d in docs.into_iter().filter(Value::is_object) {
            if is_flux_kustomization(&d) {
                follow.push(d.clone());
            }
            self.objects.push(Built {
                value: d,
                via: via.clone(),
                kustomization: kustomization.map(str::to_owned),
            });
        }
        Ok(follow)
    }

    /// Builds the folder a Flux Kustomization applies, as the controller
    /// would; returns the Kustomizations that build holds.
    fn follow(&mut self, k: &Value, notes: &mut Vec<Diagnostic>) -> Result<Vec<Value>, Diagnostic> {
        let name = k["metadata"]["name"].as_str().unwrap_or("").to_owned();
        let spec = &k["spec"];
        let at = self.origin_of("Kustomization", &name);
        let deps = spec["dependsOn"].as_array().into_iter().flatten();
        self.depends_on.insert(
            name.clone(),
            deps.filter_map(|d| d["name"].as_str().map(str::to_owned)).collect(),
        );
        let source = spec["sourceRef"]["kind"].as_str().unwrap_or("");
        if source != "GitRepository" {
            notes.push(not_converted(
                at,
                format!(
                    "cluster {}: Kustomization {name} reads a {source}, not this repository; not followed",
                    self.cluster()
                ),
                "import the tree that source holds separately",
            ));
            return Ok(Vec::new());
        }
        let raw = spec["path"].as_str().unwrap_or("./");
        let Ok(path) = crate::world::normalize(raw.trim_start_matches("./")) else {
            notes.push(not_converted(
                at,
                format!("Kustomization {name}: path {raw} leaves the tree"),
                "keep paths inside the repository",
            ));
            return Ok(Vec::new());
        };
        if let Some(by) = self.built.get(&path) {
            if path != self.folder {
                notes.push(not_converted(
                    at,
                    format!("cluster {}: Kustomization {name} builds {path} again (built already for {by}); its objects are read once", self.cluster()),
                    "give each Kustomization a folder of its own",
                ));
            }
            return Ok(Vec::new());
        }
        let dir = self.tree.root.join(&path);
        if !dir.is_dir() || !super::inside(&self.tree.root, &dir) {
            notes.push(not_converted(
                at,
                format!(
                    "cluster {}: Kustomization {name} applies {path}, which is not in the tree",
                    self.cluster()
                ),
                "import from the top of the repository the Kustomization reads",
            ));
            return Ok(Vec::new());
        }
        self.built.insert(path.clone(), format!("Kustomization {name}"));
        let stream = kustomize::build_folder(self.kubectl, &dir)
            .and_then(|s| kustomize::overlay(self.kubectl, &s, spec))
            .map_err(|e| self.error(&path, &format!("for Kustomization {name}: {e}")))?;
        let stream = self.substitute(&name, spec, &stream, notes);
        if spec.get("components").is_some() {
            notes.push(not_converted(
                self.origin_of("Kustomization", &name),
                format!("Kustomization {name}: its kustomize components are not applied"),
                "list the components in the folder's kustomization.yaml instead",
            ));
        }
        self.take(&path, &stream, Some(&name))
    }

    /// `postBuild.substitute`, and `substituteFrom` ConfigMaps of the
    /// cluster built so far; a Secret's variables are not in git.
    fn substitute(&self, name: &str, spec: &Value, stream: &str, notes: &mut Vec<Diagnostic>) -> String {
        let post = &spec["postBuild"];
        let mut vars: BTreeMap<String, String> = BTreeMap::new();
        for from in post["substituteFrom"].as_array().into_iter().flatten() {
            let (kind, from_name) = (from["kind"].as_str().unwrap_or(""), from["name"].as_str().unwrap_or(""));
            let found = self.objects.iter().find(|o| {
                o.value["kind"].as_str() == Some(kind) && o.value["metadata"]["name"].as_str() == Some(from_name)
            });
            match (kind, found) {
                ("ConfigMap", Some(cm)) => {
                    for (k, v) in cm.value["data"].as_object().into_iter().flatten() {
                        vars.insert(k.clone(), v.as_str().unwrap_or("").to_owned());
                    }
                }
                _ if from["optional"].as_bool() == Some(true) => {}
                _ => notes.push(not_converted(
                    self.origin_of("Kustomization", name),
                    format!("Kustomization {name}: variables from {kind} {from_name} are not in the tree; they are substituted as empty"),
                    "put the values the variables stand for in the layers by hand",
                )),
            }
        }
        for (k, v) in post["substitute"].as_object().into_iter().flatten() {
            vars.insert(k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        }
        if post.is_null() {
            stream.to_owned()
        } else {
            kustomize::substitute(stream, &vars)
        }
    }

    fn origin_of(&self, kind: &str, name: &str) -> Origin {
        self.tree.find(kind, name, None).map_or_else(
            || Origin::file_start(self.tree.shown_path(&self.folder)),
            |d| d.origin_of("metadata/name"),
        )
    }
}

fn is_flux_kustomization(d: &Value) -> bool {
    d["kind"].as_str() == Some("Kustomization")
        && d["apiVersion"]
            .as_str()
            .is_some_and(|a| a.starts_with("kustomize.toolkit.fluxcd.io/"))
}

/// The git source the cluster's Flux reads: its `flux-system`
/// GitRepository, else the only GitRepository.
pub(super) fn git_source(objects: &[Built]) -> Option<GitSource> {
    let repos: Vec<&Value> = objects
        .iter()
        .map(|o| &o.value)
        .filter(|v| v["kind"].as_str() == Some("GitRepository"))
        .collect();
    let repo = repos
        .iter()
        .find(|r| r["metadata"]["name"].as_str() == Some("flux-system"))
        .or_else(|| (repos.len() == 1).then(|| &repos[0]))?;
    Some(GitSource {
        url: repo["spec"]["url"].as_str()?.to_owned(),
        branch: repo["spec"]["ref"]["branch"].as_str().map(str::to_owned),
    })
}

/// The kinds whose objects Flux itself is made of, or that the importer
/// reads for what they say about releases.
pub(super) fn read_kinds() -> BTreeSet<&'static str> {
    [
        "HelmRelease",
        "HelmRepository",
        "OCIRepository",
        "GitRepository",
        "Kustomization",
        "Namespace",
    ]
    .into_iter()
    .collect()
}
