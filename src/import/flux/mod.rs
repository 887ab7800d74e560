//! Flux trees: every root Flux starts from (see [`roots`]) is built as
//! kustomize-controller builds it, following every Kustomization to its
//! path — in this repository, or in an `ExternalArtifact` an
//! `ArtifactGenerator` makes from it (see [`artifact`]) — with its patches
//! and substitutions; each root becomes an environment, and each
//! HelmRelease in it a component. Every build runs on the import's copy of
//! the tree, after [`super::refs`] has checked that nothing it names lies
//! outside the tree (or the artifact).

mod artifact;
mod release;
mod roots;
mod vars;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::copy::Copied;
use super::kustomize::{self, Kubectl};
use super::tree::Tree;
use super::{Engine, GitSource, Read, Tools, not_converted};
use crate::diag::{Diagnostic, Sources, codes};
use crate::yaml::Origin;

pub(super) use roots::Root;

/// An object a root's build gave, with the Flux Kustomization (by name)
/// that applies it, for messages.
pub(super) struct Built {
    pub value: Value,
    pub via: String,
    /// The Flux Kustomization that applies it (`None`: the root folder).
    pub kustomization: Option<String>,
    /// What its substituted variables hold that the import could not read.
    pub unread: Vec<String>,
}

/// A root's objects, and each Flux Kustomization's `dependsOn`.
pub(super) struct ClusterObjects {
    pub objects: Vec<Built>,
    pub depends_on: BTreeMap<String, Vec<String>>,
    /// The folders built (tree-relative; artifacts are `@ns/name/path`).
    pub built: BTreeSet<String>,
    /// The folders of the tree built without a kustomization: Flux's
    /// generator takes every folder below them too.
    pub walked: BTreeSet<String>,
    pub notes: Vec<Diagnostic>,
}

impl ClusterObjects {
    /// Whether this build applies the tree folder `folder`.
    fn reaches(&self, folder: &str) -> bool {
        self.built.contains(folder)
            || self
                .walked
                .iter()
                .any(|w| crate::world::below(folder, w) || w.is_empty())
    }
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

pub fn read(mut tree: Tree, tools: &Tools, copied: &Arc<Copied>, sources: &Sources) -> Result<Read, Vec<Diagnostic>> {
    let Some(path) = &tools.kubectl else {
        return Err(vec![
            Diagnostic::error(
                codes::IMPORT_SOURCE,
                Origin::file_start(tree.shown.clone()),
                "importing a Flux tree needs kubectl (its folders are built with `kubectl kustomize`), and there is none on the PATH",
            )
            .with_help("install kubectl, or name it with STRATA_KUBECTL"),
        ]);
    };
    let kubectl = Kubectl { path: path.clone() };
    let roots = roots::find(&tree);
    if roots.is_empty() {
        return Err(vec![
            Diagnostic::error(
                codes::IMPORT_SOURCE,
                Origin::file_start(tree.shown.clone()),
                format!(
                    "{}: no Flux root: no folder holds a GitRepository with the Kustomization that reads it, no FluxInstance names a sync path, there is no flux-system folder and no clusters/<name>/",
                    tree.shown
                ),
            )
            .with_help("name the top of the Flux repository (the checkout of the GitRepository Flux syncs from)"),
        ]);
    }
    let mut read = Read {
        engine: Engine::Flux,
        root: tree.root.clone(),
        releases: Vec::new(),
        git: BTreeMap::new(),
        notes: std::mem::take(&mut tree.notes),
        kept: None,
    };
    let mut builds = Vec::new();
    let mut errors = Vec::new();
    for root in &roots {
        let ctx = Ctx {
            tree: &tree,
            kubectl: &kubectl,
            copied,
            sources,
        };
        match Cluster::build(&ctx, root) {
            Ok(c) => builds.push((root, c)),
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let (mut kept, clusters): (Vec<Root>, Vec<ClusterObjects>) =
        independent(builds).into_iter().map(|(r, c)| (r.clone(), c)).unzip();
    roots::disambiguate(&mut kept);
    for (root, mut cluster) in kept.iter().zip(clusters) {
        read.notes.append(&mut cluster.notes);
        match root.git.clone().or_else(|| git_source(&cluster.objects)) {
            Some(git) => {
                read.git.insert(root.env.clone(), git);
            }
            None => read.notes.push(not_converted(
                root.origin.clone(),
                format!(
                    "environment {}: the tree holds no GitRepository that Flux syncs {} from; its git.url is a placeholder",
                    root.env,
                    tree.shown_path(&root.folder)
                ),
                "set git.url (and git.ref) in the environment file to the repository Flux reads",
            )),
        }
        release::releases(&tree, root, &cluster, &mut read);
    }
    Ok(read)
}

/// The roots no other root applies: a root whose folder another root's
/// build reaches is part of that environment (of two that reach each
/// other, the first is kept).
fn independent(builds: Vec<(&Root, ClusterObjects)>) -> Vec<(&Root, ClusterObjects)> {
    let reached: Vec<bool> = builds
        .iter()
        .enumerate()
        .map(|(i, (root, _))| {
            builds.iter().enumerate().any(|(j, (other, c))| {
                j != i && c.reaches(&root.folder) && !(j > i && builds[i].1.reaches(&other.folder))
            })
        })
        .collect();
    builds
        .into_iter()
        .zip(reached)
        .filter(|(_, r)| !r)
        .map(|(b, _)| b)
        .collect()
}

/// What every build of one import shares.
struct Ctx<'a> {
    tree: &'a Tree,
    kubectl: &'a Kubectl,
    copied: &'a Arc<Copied>,
    sources: &'a Sources,
}

/// Where a folder is built: the tree, or an artifact laid out from it.
struct Place {
    /// The folder the build may read, on disk.
    base: PathBuf,
    /// The folder, relative to `base`.
    folder: String,
    /// The key of the folder in [`ClusterObjects::built`].
    key: String,
    /// How messages name a path below `base`.
    label: Option<String>,
}

/// One root's build.
struct Cluster<'a> {
    ctx: &'a Ctx<'a>,
    root: &'a Root,
    objects: Vec<Built>,
    depends_on: BTreeMap<String, Vec<String>>,
    /// Folders built so far, and by which Kustomization.
    built: BTreeMap<String, String>,
    /// Artifacts laid out so far.
    artifacts: BTreeMap<(String, String), PathBuf>,
    /// Tree folders built without a kustomization.
    walked: BTreeSet<String>,
    notes: Vec<Diagnostic>,
}

/// Why a Kustomization was not followed yet.
enum NotYet {
    /// Its artifact's generator has not been built yet: try again later.
    Waiting(String),
    /// Said in a note.
    Never,
}

impl<'a> Cluster<'a> {
    /// Every object the root's Flux applies: the root folder's, and,
    /// through each Kustomization found, its folder's.
    fn build(ctx: &'a Ctx<'a>, root: &'a Root) -> Result<ClusterObjects, Vec<Diagnostic>> {
        let mut c = Cluster {
            ctx,
            root,
            objects: Vec::new(),
            depends_on: BTreeMap::new(),
            built: BTreeMap::new(),
            artifacts: BTreeMap::new(),
            walked: BTreeSet::new(),
            notes: Vec::new(),
        };
        let place = Place {
            base: ctx.tree.root.clone(),
            folder: root.folder.clone(),
            key: root.folder.clone(),
            label: None,
        };
        let stream = c.build_place(&place)?;
        c.built.insert(root.folder.clone(), "the root folder".into());
        let mut queue: VecDeque<Value> = c.take(&place, &stream, None, None)?.into();
        let mut waiting: Vec<(Value, String)> = Vec::new();
        loop {
            while let Some(k) = queue.pop_front() {
                match c.follow(&k)? {
                    Ok(found) => queue.extend(found),
                    Err(NotYet::Waiting(why)) => waiting.push((k, why)),
                    Err(NotYet::Never) => {}
                }
            }
            // A generator built since may make what a Kustomization waits for.
            let before = waiting.len();
            let retry: Vec<(Value, String)> = std::mem::take(&mut waiting);
            for (k, why) in retry {
                match c.follow(&k)? {
                    Ok(found) => queue.extend(found),
                    Err(NotYet::Waiting(_)) => waiting.push((k, why)),
                    Err(NotYet::Never) => {}
                }
            }
            if queue.is_empty() && (waiting.is_empty() || waiting.len() == before) {
                break;
            }
        }
        for (k, why) in waiting {
            let name = k["metadata"]["name"].as_str().unwrap_or("").to_owned();
            let at = c.origin_of("Kustomization", &name);
            c.notes.push(not_converted(
                at,
                format!("environment {}: Kustomization {name} is not followed: {why}", root.env),
                "import from the checkout that holds what it reads",
            ));
        }
        Ok(ClusterObjects {
            objects: c.objects,
            depends_on: c.depends_on,
            built: c.built.into_keys().collect(),
            walked: c.walked,
            notes: c.notes,
        })
    }

    fn shown(&self, place: &Place, rel: &str) -> String {
        match &place.label {
            Some(label) => format!("{label}/{rel}"),
            None => self.ctx.tree.shown_path(rel),
        }
    }

    fn error(&self, place: &Place, why: &str) -> Diagnostic {
        let shown = self.shown(place, &place.folder);
        Diagnostic::error(
            codes::IMPORT_SOURCE,
            Origin::file_start(shown.clone()),
            format!("environment {}: cannot build {shown}: {why}", self.root.env),
        )
        .with_help("fix the kustomization: `kubectl kustomize` must build the folder")
    }

    /// Checks what the folder may read, then builds it.
    fn build_place(&mut self, place: &Place) -> Result<String, Vec<Diagnostic>> {
        let shown = |rel: &str| self.shown(place, rel);
        let scan = super::refs::scan(&place.base, &place.folder, &shown, self.ctx.sources);
        self.notes.extend(scan.notes);
        if !scan.errors.is_empty() {
            return Err(scan.errors);
        }
        let dir = place.base.join(&place.folder);
        if place.label.is_none() && !kustomize::has_kustomization(&dir) {
            self.walked.insert(place.folder.clone());
        }
        kustomize::build_folder(self.ctx.kubectl, &place.base.join(&place.folder))
            .map_err(|e| vec![self.error(place, &e)])
    }

    /// Parses a built stream into the root's objects, substituting
    /// variables document by document as kustomize-controller does;
    /// returns the Flux Kustomizations in it, to follow.
    fn take(
        &mut self,
        place: &Place,
        stream: &str,
        kustomization: Option<&str>,
        vars: Option<&vars::Vars>,
    ) -> Result<Vec<Value>, Vec<Diagnostic>> {
        let via = kustomization.map_or_else(|| "the root folder".to_owned(), |k| format!("Kustomization {k}"));
        let name: Arc<str> = Arc::from(self.shown(place, &place.folder));
        let mut follow = Vec::new();
        for chunk in vars::documents(stream) {
            let (text, unread) = match vars {
                Some(v) => v.substitute(&name, chunk),
                None => (chunk.to_owned(), Vec::new()),
            };
            let docs = crate::yaml::parse_plain_multi(&name, &text)
                .map_err(|e| vec![self.error(place, &format!("its build is not YAML: {}", e.message))])?;
            for d in docs.into_iter().filter(Value::is_object) {
                if is_flux_kustomization(&d) {
                    follow.push(d.clone());
                }
                self.objects.push(Built {
                    value: d,
                    via: via.clone(),
                    kustomization: kustomization.map(str::to_owned),
                    unread: unread.clone(),
                });
            }
        }
        Ok(follow)
    }

    /// Builds the folder a Flux Kustomization applies, as the controller
    /// would; returns the Kustomizations that build holds.
    fn follow(&mut self, k: &Value) -> Result<Result<Vec<Value>, NotYet>, Vec<Diagnostic>> {
        let name = k["metadata"]["name"].as_str().unwrap_or("").to_owned();
        let spec = &k["spec"];
        let deps = spec["dependsOn"].as_array().into_iter().flatten();
        self.depends_on.insert(
            name.clone(),
            deps.filter_map(|d| d["name"].as_str().map(str::to_owned)).collect(),
        );
        let place = match self.place(k) {
            Ok(p) => p,
            Err(e) => return Ok(Err(e)),
        };
        if let Some(by) = self.built.get(&place.key) {
            if place.key != self.root.folder {
                let at = self.origin_of("Kustomization", &name);
                self.notes.push(not_converted(
                    at,
                    format!("environment {}: Kustomization {name} builds {} again (built already for {by}); its objects are read once", self.root.env, place.key),
                    "give each Kustomization a folder of its own",
                ));
            }
            return Ok(Ok(Vec::new()));
        }
        let dir = place.base.join(&place.folder);
        if !dir.is_dir() || !super::inside(&place.base, &dir) {
            let at = self.origin_of("Kustomization", &name);
            self.notes.push(not_converted(
                at,
                format!(
                    "environment {}: Kustomization {name} applies {}, which is not in the tree",
                    self.root.env,
                    self.shown(&place, &place.folder)
                ),
                "import from the top of the repository the Kustomization reads",
            ));
            return Ok(Err(NotYet::Never));
        }
        self.built.insert(place.key.clone(), format!("Kustomization {name}"));
        let stream = self.build_with_components(&place, &name, spec)?;
        let stream = kustomize::overlay(self.ctx.kubectl, &stream, spec)
            .map_err(|e| vec![self.error(&place, &format!("for Kustomization {name}: {e}"))])?;
        let vars = self.vars(&name, k);
        self.take(&place, &stream, Some(&name), vars.as_ref()).map(Ok)
    }

    /// Builds the folder with the Kustomization's `components` added to its
    /// kustomization file for the build (the copy is put back after); a
    /// folder without one is built without them, and that is listed.
    fn build_with_components(&mut self, place: &Place, name: &str, spec: &Value) -> Result<String, Vec<Diagnostic>> {
        let components = spec["components"].as_array().map_or(&[][..], Vec::as_slice);
        if components.is_empty() {
            return self.build_place(place);
        }
        let dir = place.base.join(&place.folder);
        let kept = kustomize::add_components(&dir, components)
            .map_err(|e| vec![self.error(place, &format!("for Kustomization {name}: {e}"))])?;
        let Some(kept) = kept else {
            let at = self.origin_of("Kustomization", name);
            self.notes.push(not_converted(
                at,
                format!("Kustomization {name}: its kustomize components are not applied (its folder has no kustomization.yaml)"),
                "list the components in a kustomization.yaml of the folder",
            ));
            return self.build_place(place);
        };
        let built = self.build_place(place);
        kept.restore().map_err(|e| vec![self.error(place, &e)])?;
        built
    }

    /// Where a Kustomization's path is: in this repository, or in an
    /// artifact made from it.
    fn place(&mut self, k: &Value) -> Result<Place, NotYet> {
        let name = k["metadata"]["name"].as_str().unwrap_or("");
        let spec = &k["spec"];
        let at = self.origin_of("Kustomization", name);
        let kind = spec["sourceRef"]["kind"].as_str().unwrap_or("");
        let raw = spec["path"].as_str().unwrap_or("./");
        let Ok(path) = crate::world::normalize(raw) else {
            self.notes.push(not_converted(
                at,
                format!("Kustomization {name}: path {raw} leaves the tree"),
                "keep paths inside the repository",
            ));
            return Err(NotYet::Never);
        };
        match kind {
            "GitRepository" if self.same_repository(k) => Ok(Place {
                base: self.ctx.tree.root.clone(),
                folder: path.clone(),
                key: path,
                label: None,
            }),
            "ExternalArtifact" => {
                let ns = spec["sourceRef"]["namespace"]
                    .as_str()
                    .or(k["metadata"]["namespace"].as_str())
                    .unwrap_or("default")
                    .to_owned();
                let artifact = spec["sourceRef"]["name"].as_str().unwrap_or("").to_owned();
                let base = self.artifact(&ns, &artifact, &at)?;
                Ok(Place {
                    base,
                    key: format!("@{ns}/{artifact}/{path}"),
                    folder: path,
                    label: Some(format!("ExternalArtifact {ns}/{artifact}:")),
                })
            }
            _ => {
                self.notes.push(not_converted(
                    at,
                    format!(
                        "environment {}: Kustomization {name} reads a {kind} that is not this repository; not followed",
                        self.root.env
                    ),
                    "import the tree that source holds separately",
                ));
                Err(NotYet::Never)
            }
        }
    }

    /// Whether the GitRepository a Kustomization reads is this repository:
    /// the one the root syncs from (by URL), or, where the tree does not
    /// say which that is, any the root's build does not show to be another.
    fn same_repository(&self, k: &Value) -> bool {
        let r = &k["spec"]["sourceRef"];
        let name = r["name"].as_str().unwrap_or("");
        let ns = r["namespace"].as_str().or(k["metadata"]["namespace"].as_str());
        let found = self.objects.iter().map(|o| &o.value).find(|v| {
            v["kind"].as_str() == Some("GitRepository")
                && v["metadata"]["name"].as_str() == Some(name)
                && (ns.is_none() || v["metadata"]["namespace"].as_str().is_none_or(|n| Some(n) == ns))
        });
        let ours = self.root.git.clone().or_else(|| git_source(&self.objects));
        match (found.and_then(|v| v["spec"]["url"].as_str()), ours) {
            (Some(url), Some(ours)) => same_url(url, &ours.url),
            _ => true,
        }
    }

    /// Lays out (once) the artifact `ns/name`, from the generator the
    /// root's build holds.
    fn artifact(&mut self, ns: &str, name: &str, at: &Origin) -> Result<PathBuf, NotYet> {
        let key = (ns.to_owned(), name.to_owned());
        if let Some(dir) = self.artifacts.get(&key) {
            return Ok(dir.clone());
        }
        let generator = self.objects.iter().map(|o| &o.value).find(|v| {
            v["kind"].as_str() == Some("ArtifactGenerator")
                && v["apiVersion"]
                    .as_str()
                    .is_some_and(|a| a.starts_with("source.extensions.fluxcd.io/"))
                && v["metadata"]["namespace"].as_str().unwrap_or("default") == ns
                && v["spec"]["artifacts"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|a| a["name"].as_str() == Some(name)))
        });
        let Some(generator) = generator.cloned() else {
            return Err(NotYet::Waiting(format!(
                "no ArtifactGenerator in what the root applies makes ExternalArtifact {ns}/{name}"
            )));
        };
        let dest = self
            .ctx
            .copied
            .scratch(&format!("artifact-{}-{}", self.root.env, self.artifacts.len()))
            .map_err(|e| self.never(at, name, &e.to_string()))?;
        let repo = self.ctx.tree.root.clone();
        let objects = &self.objects;
        let ours = self.root.git.clone().or_else(|| git_source(objects));
        let source = |s: &Value| -> Result<PathBuf, String> {
            let kind = s["kind"].as_str().unwrap_or("");
            let sname = s["name"].as_str().unwrap_or("");
            let found = objects
                .iter()
                .map(|o| &o.value)
                .find(|v| v["kind"].as_str() == Some(kind) && v["metadata"]["name"].as_str() == Some(sname));
            let other = match (kind, found.and_then(|v| v["spec"]["url"].as_str()), &ours) {
                ("GitRepository", Some(url), Some(ours)) => !same_url(url, &ours.url),
                ("GitRepository", _, _) => false,
                _ => true,
            };
            if other {
                Err(format!("its source {kind} {sname} is not this repository"))
            } else {
                Ok(repo.clone())
            }
        };
        let laid = artifact::lay_out(&generator, name, &dest, &source);
        laid.map_err(|why| self.never(at, name, &why))?;
        self.artifacts.insert(key, dest.clone());
        Ok(dest)
    }

    fn never(&mut self, at: &Origin, name: &str, why: &str) -> NotYet {
        self.notes.push(not_converted(
            at.clone(),
            format!(
                "environment {}: ExternalArtifact {name} cannot be laid out from the tree: {why}",
                self.root.env
            ),
            "import the sources the ArtifactGenerator reads, or point the Kustomization at the repository",
        ));
        NotYet::Never
    }

    /// The variables of a Kustomization's `postBuild`, when it has one.
    fn vars(&mut self, name: &str, k: &Value) -> Option<vars::Vars> {
        let at = self.origin_of("Kustomization", name);
        let (v, notes) = vars::Vars::of(k, &self.objects, &self.root.env, &at)?;
        self.notes.extend(notes);
        Some(v)
    }

    /// Where the tree defines an object: below the root folder if one is
    /// there, else the first anywhere.
    fn origin_of(&self, kind: &str, name: &str) -> Origin {
        let tree = self.ctx.tree;
        let under = tree.shown_path(&self.root.folder);
        let candidates = || tree.docs.iter().filter(|d| d.kind() == kind && d.name() == name);
        candidates()
            .find(|d| d.node.origin.file.starts_with(&format!("{under}/")))
            .or_else(|| candidates().next())
            .map_or_else(
                || Origin::file_start(tree.shown_path(&self.root.folder)),
                |d| d.origin_of("metadata/name"),
            )
    }
}

/// Whether two git URLs name one repository (ignoring a trailing `.git` or
/// `/`, and the case of the host).
fn same_url(a: &str, b: &str) -> bool {
    let norm = |u: &str| u.trim_end_matches('/').trim_end_matches(".git").to_ascii_lowercase();
    norm(a) == norm(b)
}

fn is_flux_kustomization(d: &Value) -> bool {
    d["kind"].as_str() == Some("Kustomization")
        && d["apiVersion"]
            .as_str()
            .is_some_and(|a| a.starts_with("kustomize.toolkit.fluxcd.io/"))
}

/// The git source the root's Flux reads: its `flux-system` GitRepository,
/// else the only GitRepository.
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
    roots::git_repository(repo)
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
        "ArtifactGenerator",
    ]
    .into_iter()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(folder: &str) -> Root {
        Root {
            folder: folder.into(),
            env: "x".into(),
            git: None,
            origin: Origin::file_start(folder),
        }
    }

    fn built(folders: &[&str], walked: &[&str]) -> ClusterObjects {
        ClusterObjects {
            objects: Vec::new(),
            depends_on: BTreeMap::new(),
            built: folders.iter().map(|f| (*f).to_owned()).collect(),
            walked: walked.iter().map(|f| (*f).to_owned()).collect(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn a_root_another_one_applies_is_part_of_its_environment() {
        // kubernetes/flux is built without a kustomization, so it takes
        // kubernetes/flux/cluster too; clusters/a and clusters/b stand apart.
        let (flux, cluster, a, b) = (
            root("kubernetes/flux"),
            root("kubernetes/flux/cluster"),
            root("clusters/a"),
            root("clusters/b"),
        );
        let kept = independent(vec![
            (&flux, built(&["kubernetes/flux"], &["kubernetes/flux"])),
            (&cluster, built(&["kubernetes/flux/cluster", "kubernetes/apps"], &[])),
            (&a, built(&["clusters/a", "apps"], &[])),
            (&b, built(&["clusters/b", "apps"], &[])),
        ]);
        let folders: Vec<&str> = kept.iter().map(|(r, _)| r.folder.as_str()).collect();
        assert_eq!(folders, ["kubernetes/flux", "clusters/a", "clusters/b"]);
        // Two that reach each other: the first stays.
        let kept = independent(vec![
            (&a, built(&["clusters/a", "clusters/b"], &[])),
            (&b, built(&["clusters/b", "clusters/a"], &[])),
        ]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].0.folder, "clusters/a");
    }
}
