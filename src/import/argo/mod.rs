//! Argo CD trees: every Application is a component, in the environment of
//! its destination; every ApplicationSet a component named after it, in
//! one environment per generated Application (see [`appset`]); the
//! Applications a Helm chart of the tree renders (an app of apps kept as a
//! chart) are rendered with helm and read the same way (see
//! [`app_chart`]).
//!
//! Each source of an Application is what Argo CD makes of it
//! (argoproj/argo-cd `pkg/apis/application/v1alpha1/types.go`,
//! `ExplicitType`; `util/app/discovery/discovery.go`, `AppType`): the one
//! of `helm`, `kustomize`, `directory`, `plugin` it sets, else, by its
//! folder, kustomize where there is a kustomization (which wins over a
//! `Chart.yaml` beside it), Helm where there is a `Chart.yaml`, plain
//! objects otherwise. A Helm source is a release (see [`values`] for its
//! values); a kustomize source's `helmCharts:` are releases (see
//! [`helm_charts`]); a plugin source is never imported, whatever its folder
//! holds.

mod app_chart;
mod appset;
mod helm_charts;
mod values;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::copy::Copied;
use super::tree::{Doc, Tree};
use super::{Chart, Engine, GitSource, Read, Release, Tools, dns_label, not_converted};
use crate::diag::{Diagnostic, Sources};
use crate::load::environment::GitRef;
use crate::yaml::Origin;

/// The environment of an Application whose destination is the cluster
/// Argo CD runs in.
pub const IN_CLUSTER: &str = "in-cluster";

/// How deep app-of-apps charts may render one another.
const MAX_DEPTH: usize = 4;

/// What the Applications of one import share.
pub(super) struct Ctx<'a> {
    pub tree: &'a Tree,
    /// Folders (relative to the tree) that hold Application files.
    app_folders: BTreeSet<String>,
    /// Chart folders whose templates make Applications.
    app_charts: BTreeSet<String>,
    /// App-of-apps charts rendered so far.
    rendered: BTreeSet<String>,
    tools: &'a Tools,
    copied: &'a Copied,
    depth: usize,
    sources: &'a Sources,
    /// What stops the import: a path out of the tree.
    errors: Vec<Diagnostic>,
}

pub fn read(mut tree: Tree, tools: &Tools, copied: &Arc<Copied>, sources: &Sources) -> Result<Read, Vec<Diagnostic>> {
    let mut read = Read {
        engine: Engine::Argo,
        root: tree.root.clone(),
        releases: Vec::new(),
        git: BTreeMap::new(),
        notes: std::mem::take(&mut tree.notes),
        kept: None,
    };
    let mut ctx = Ctx {
        tree: &tree,
        app_folders: app_folders(&tree),
        app_charts: app_chart::find(&tree),
        rendered: BTreeSet::new(),
        tools,
        copied,
        depth: 0,
        sources,
        errors: Vec::new(),
    };
    let mut others: BTreeMap<&str, Vec<&Doc>> = BTreeMap::new();
    for doc in &tree.docs {
        match doc.kind() {
            "Application" if is_argo(&doc.value) => {
                let app = App {
                    key: doc.name().to_owned(),
                    name: doc.name().to_owned(),
                    env: None,
                    spec: &doc.value["spec"],
                    origin: doc.origin_of("metadata/name"),
                };
                app.read(&mut ctx, &mut read);
            }
            "ApplicationSet" if is_argo(&doc.value) => appset::read(doc, &mut ctx, &mut read),
            // Objects beside the Applications (an AppProject) are listed;
            // what the Applications deploy, and files that are no
            // Kubernetes object (values files), are not.
            kind if is_object(doc)
                && ctx.app_folders.contains(&folder_of(&tree, doc))
                && !super::sops::is_encrypted(&doc.value) =>
            {
                others.entry(kind).or_default().push(doc);
            }
            _ => {}
        }
    }
    // App-of-apps charts no Application of the tree points at: Argo CD is
    // given them some other way (`argocd app create`); rendered with their
    // own values.
    let mut pending: BTreeSet<String> = ctx.app_charts.difference(&ctx.rendered).cloned().collect();
    pending.extend(app_chart::find_by_dependency(&tree).difference(&ctx.rendered).cloned());
    for dir in pending {
        app_chart::render(None, &dir, &mut ctx, &mut read);
    }
    if !ctx.errors.is_empty() {
        return Err(ctx.errors);
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

fn is_argo(v: &Value) -> bool {
    v["apiVersion"].as_str().is_some_and(|a| a.starts_with("argoproj.io/"))
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

/// What Argo CD makes of one source.
enum Kind {
    /// Only a `ref` for other sources' value files.
    Ref,
    Plugin(String),
    /// More than one of helm, kustomize, directory, plugin.
    Conflict(String),
    /// A chart from a Helm repository or an OCI registry.
    Remote,
    /// A chart folder of the tree.
    LocalChart(String),
    /// A chart folder whose templates make Applications.
    AppChart(String),
    Kustomize(String),
    Directory(String),
    /// A folder that is not in the tree (or has no chart where `helm:` asks).
    Missing(String),
}

fn classify(ctx: &Ctx<'_>, s: &Value) -> Kind {
    let explicit: Vec<&str> = ["helm", "kustomize", "directory", "plugin"]
        .into_iter()
        .filter(|k| s.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    if explicit.len() > 1 {
        return Kind::Conflict(explicit.join(", "));
    }
    if explicit == ["plugin"] {
        let name = s["plugin"]["name"].as_str().unwrap_or("found by discovery");
        return Kind::Plugin(name.to_owned());
    }
    if s.get("chart").is_some() {
        return Kind::Remote;
    }
    let Some(raw) = s["path"].as_str() else {
        return if s.get("ref").is_some() {
            Kind::Ref
        } else {
            Kind::Missing(String::new())
        };
    };
    let Ok(dir) = crate::world::normalize(raw) else {
        return Kind::Missing(raw.to_owned());
    };
    let at = ctx.tree.root.join(&dir);
    if !at.is_dir() {
        return Kind::Missing(dir);
    }
    let chart = at.join("Chart.yaml").is_file();
    let kustomize = super::refs::kustomization_file(&at).is_some();
    let as_chart = |dir: String| {
        if ctx.app_charts.contains(&dir) {
            Kind::AppChart(dir)
        } else {
            Kind::LocalChart(dir)
        }
    };
    match explicit.first().copied() {
        Some("helm") if chart => as_chart(dir),
        Some("helm") => Kind::Missing(format!("{dir} (no Chart.yaml)")),
        Some("kustomize") => Kind::Kustomize(dir),
        Some("directory") => Kind::Directory(dir),
        _ if kustomize => Kind::Kustomize(dir),
        _ if chart => as_chart(dir),
        _ => Kind::Directory(dir),
    }
}

impl App<'_> {
    pub(super) fn read(&self, ctx: &mut Ctx<'_>, read: &mut Read) {
        let sources: Vec<&Value> = match self.spec["sources"].as_array() {
            Some(list) => list.iter().collect(),
            None => self.spec.get("source").into_iter().collect(),
        };
        let refs: BTreeMap<&str, &Value> = sources.iter().filter_map(|s| Some((s["ref"].as_str()?, *s))).collect();
        let Some(env) = self.env.clone().or_else(|| destination_env(&self.spec["destination"])) else {
            read.notes.push(not_converted(
                self.origin.clone(),
                format!("Application {}: its destination names no cluster", self.name),
                "set destination.name or destination.server",
            ));
            return;
        };
        self.record_git(&sources, &env, read);
        let mut released = false;
        for s in &sources {
            match classify(ctx, s) {
                Kind::Ref => {}
                Kind::Remote | Kind::LocalChart(_) if released => self.note(
                    read,
                    format!(
                        "only its first Helm source is imported, not {}",
                        s["chart"].as_str().or(s["path"].as_str()).unwrap_or("another")
                    ),
                    "split the Application: one Helm release per component",
                ),
                Kind::Remote => {
                    released = true;
                    self.release(s, None, &refs, &env, ctx, read);
                }
                Kind::LocalChart(dir) => {
                    released = true;
                    self.release(s, Some(dir), &refs, &env, ctx, read);
                }
                Kind::AppChart(dir) => {
                    if ctx.depth < MAX_DEPTH && ctx.rendered.insert(dir.clone()) {
                        let mut unread = Vec::new();
                        let values = self.values(s, &refs, ctx.tree, &mut unread, &mut read.notes);
                        app_chart::render(Some((self, s, values)), &dir, ctx, read);
                    }
                }
                Kind::Kustomize(dir) => {
                    let shown = |p: &str| ctx.tree.shown_path(p);
                    let scan = super::refs::scan(&ctx.tree.root, &dir, &shown, ctx.sources);
                    read.notes.extend(scan.notes);
                    if scan.errors.is_empty() {
                        helm_charts::read(self, &dir, &env, ctx, read);
                    }
                    ctx.errors.extend(scan.errors);
                }
                Kind::Directory(dir) => self.directory(&dir, ctx, read),
                Kind::Plugin(name) => self.note(
                    read,
                    format!("its source is rendered by the config management plugin {name}; strata runs no plugin, so it is not imported"),
                    "render what the plugin makes into a chart or plain objects, and add the component by hand",
                ),
                Kind::Conflict(which) => self.note(
                    read,
                    format!("a source sets {which}; Argo CD refuses more than one source type"),
                    "keep one of them",
                ),
                Kind::Missing(dir) => self.note(
                    read,
                    format!("its source folder {dir} is not in the tree; it is not imported"),
                    "import from the checkout of the repository the source reads, or write the component by hand",
                ),
            }
        }
    }

    fn note(&self, read: &mut Read, what: String, help: &str) {
        read.notes.push(not_converted(
            self.origin.clone(),
            format!("Application {}: {what}", self.name),
            help,
        ));
    }

    /// Where Argo CD reads the platform repository for this environment:
    /// the first source that is no chart.
    fn record_git(&self, sources: &[&Value], env: &str, read: &mut Read) {
        let Some(g) = sources.iter().find(|s| s.get("chart").is_none()) else {
            return;
        };
        let Some(url) = g["repoURL"].as_str() else { return };
        let rev = g["targetRevision"].as_str().filter(|r| !r.is_empty() && *r != "HEAD");
        read.git.entry(env.to_owned()).or_insert(GitSource {
            url: url.to_owned(),
            git_ref: rev.map(revision),
            secret: None,
        });
    }

    /// A Helm source as a release.
    fn release(
        &self,
        s: &Value,
        local: Option<String>,
        refs: &BTreeMap<&str, &Value>,
        env: &str,
        ctx: &Ctx<'_>,
        read: &mut Read,
    ) {
        let namespace = self.spec["destination"]["namespace"].as_str().unwrap_or("default");
        let mut r = Release::new(
            self.key.clone(),
            self.name.clone(),
            env.to_owned(),
            namespace.to_owned(),
            self.origin.clone(),
        );
        r.values = self.values(s, refs, ctx.tree, &mut r.unread, &mut read.notes);
        r.chart = match local {
            Some(dir) => Some(Chart::Local { dir }),
            None => self.remote_chart(s),
        };
        r.release_name = s["helm"]["releaseName"].as_str().map(str::to_owned);
        // `helm.skipCrds` renders without the chart's crds/ folder.
        r.crds = s["helm"]["skipCrds"].as_bool() != Some(true);
        read.releases.push(r);
    }

    /// A source of plain objects: an app of apps (fine: strata writes its
    /// own), or objects that are not imported.
    fn directory(&self, dir: &str, ctx: &Ctx<'_>, read: &mut Read) {
        let app_of_apps = ctx
            .app_folders
            .iter()
            .any(|f| f == dir || f.starts_with(&format!("{dir}/")) || dir.is_empty());
        if !app_of_apps {
            self.note(
                read,
                format!("not a Helm release (the plain objects of {dir})"),
                "put its objects in a component's manifests/ by hand",
            );
        }
    }

    fn remote_chart(&self, source: &Value) -> Option<Chart> {
        let repo = source["repoURL"].as_str().unwrap_or("");
        let name = source["chart"].as_str()?;
        let version = source["targetRevision"].as_str().unwrap_or("");
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
}

/// A `targetRevision` in Flux's vocabulary: a full commit hash, a tag
/// (`v1.2.3`), else a branch.
fn revision(rev: &str) -> GitRef {
    if rev.len() == 40 && rev.chars().all(|c| c.is_ascii_hexdigit()) {
        GitRef::Commit(rev.to_owned())
    } else if rev.starts_with('v') && semver::Version::parse(&rev[1..]).is_ok() {
        GitRef::Tag(rev.to_owned())
    } else {
        GitRef::Branch(rev.to_owned())
    }
}

/// The environment of a destination: its cluster name, or, by server,
/// [`IN_CLUSTER`] or the server's host.
pub(super) fn destination_env(dest: &Value) -> Option<String> {
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
