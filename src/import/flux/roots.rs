//! Where Flux starts in a repository, found rather than assumed. A root is
//! the folder the cluster's first Kustomization applies, from any of:
//!
//! - a folder holding a `GitRepository` and a `Kustomization` that reads
//!   it: the sync pair `flux bootstrap` writes into `flux-system/`
//!   (fluxcd/flux2 `pkg/manifestgen/sync`), or the home-ops layout's
//!   `kubernetes/flux/config/` (`cluster.yaml`: the repository, and the
//!   Kustomization applying `./kubernetes/flux`); the root is the
//!   Kustomization's `path`;
//! - a flux-operator `FluxInstance`, or the `instance:` values of its
//!   flux-instance chart (a values file, or the `spec.values` of its
//!   HelmRelease): `sync.path` (controlplaneio-fluxcd/flux-operator
//!   `docs/api/v1/fluxinstance.md`, "Sync configuration");
//! - a `flux-system` folder with the `gotk-components.yaml` or
//!   `gotk-sync.yaml` that bootstrap writes, anywhere: its parent;
//! - each folder of a top-level `clusters/`.
//!
//! Each root becomes one environment, named after its folder (the folder
//! below `clusters/`, else its last segment that is not a word every layout
//! uses, else the repository's name), and takes the git URL and revision
//! from its GitRepository when the tree has it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::super::tree::{Doc, Tree};
use super::super::{GitSource, dns_label};
use crate::load::environment::GitRef;
use crate::yaml::Origin;

/// A folder Flux starts from.
#[derive(Clone, Debug)]
pub struct Root {
    /// Relative to the tree; `""` is the tree's top.
    pub folder: String,
    pub env: String,
    pub git: Option<GitSource>,
    /// Where the root was found.
    pub origin: Origin,
}

/// Folder names every layout uses, which name no cluster.
const GENERIC: &[&str] = &[
    "apps",
    "base",
    "bootstrap",
    "cluster",
    "clusters",
    "config",
    "deploy",
    "flux",
    "flux-system",
    "gitops",
    "infra",
    "infrastructure",
    "k8s",
    "kube",
    "kubernetes",
    "manifests",
    "sync",
];

/// Every root of the tree, by folder.
pub fn find(tree: &Tree) -> Vec<Root> {
    let mut found: BTreeMap<String, (Option<GitSource>, Origin)> = BTreeMap::new();
    let mut add = |folder: String, git: Option<GitSource>, origin: Origin| {
        let e = found.entry(folder).or_insert((None, origin));
        if e.0.is_none() {
            e.0 = git;
        }
    };
    for (folder, git, origin) in sync_pairs(tree) {
        add(folder, Some(git), origin);
    }
    for (folder, git, origin) in instances(tree) {
        add(folder, Some(git), origin);
    }
    for (folder, origin) in bootstrap_folders(tree) {
        add(folder, None, origin);
    }
    for (folder, origin) in cluster_folders(tree) {
        add(folder, None, origin);
    }
    found
        .into_iter()
        .filter(|(folder, _)| folder.is_empty() || tree.root.join(folder).is_dir())
        .map(|(folder, (git, origin))| Root {
            env: env_name(&folder, git.as_ref()),
            folder,
            git,
            origin,
        })
        .collect()
}

/// Two roots that would share an environment's name are named by their
/// whole folder.
pub fn disambiguate(roots: &mut [Root]) {
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    for r in roots.iter() {
        *taken.entry(r.env.clone()).or_default() += 1;
    }
    for r in roots.iter_mut() {
        if taken[&r.env] > 1 {
            r.env = dns_label(&r.folder.replace('/', "-"), 63).unwrap_or_else(|| r.env.clone());
        }
    }
}

/// The folder of a document's file, relative to the tree.
fn folder_of(tree: &Tree, doc: &Doc) -> String {
    let file = doc.node.origin.file.to_string();
    let rel = file.strip_prefix(&tree.shown).unwrap_or(&file).trim_start_matches('/');
    rel.rsplit_once('/').map_or(String::new(), |(dir, _)| dir.to_owned())
}

fn is_flux(doc: &Doc, group: &str, kind: &str) -> bool {
    doc.kind() == kind
        && doc.value["apiVersion"]
            .as_str()
            .is_some_and(|a| a.starts_with(&format!("{group}/")))
}

/// `(folder applied, git source, origin)` of every GitRepository and
/// Kustomization reading it that lie in one folder.
fn sync_pairs(tree: &Tree) -> Vec<(String, GitSource, Origin)> {
    let mut out = Vec::new();
    for k in tree
        .docs
        .iter()
        .filter(|d| is_flux(d, "kustomize.toolkit.fluxcd.io", "Kustomization"))
    {
        let spec = &k.value["spec"];
        if spec["sourceRef"]["kind"].as_str() != Some("GitRepository") {
            continue;
        }
        let name = spec["sourceRef"]["name"].as_str().unwrap_or("");
        let ns = spec["sourceRef"]["namespace"].as_str().or(k.namespace());
        let here = folder_of(tree, k);
        let repo = tree.docs.iter().find(|g| {
            is_flux(g, "source.toolkit.fluxcd.io", "GitRepository")
                && g.name() == name
                && (ns.is_none() || g.namespace().is_none() || g.namespace() == ns)
                && folder_of(tree, g) == here
        });
        let (Some(repo), Some(git)) = (repo, repo.and_then(|r| git_repository(&r.value))) else {
            continue;
        };
        let path = spec["path"].as_str().unwrap_or("./");
        if let Ok(folder) = crate::world::normalize(path) {
            out.push((folder, git, repo.origin_of("metadata/name")));
        }
    }
    out
}

/// The sync of every FluxInstance, and of the flux-instance chart's
/// `instance:` values, in a values file or inline in its HelmRelease.
fn instances(tree: &Tree) -> Vec<(String, GitSource, Origin)> {
    let mut out = Vec::new();
    for d in &tree.docs {
        let (sync, at) = if is_flux(d, "fluxcd.controlplane.io", "FluxInstance") {
            (&d.value["spec"]["sync"], "spec/sync/path")
        } else if d.value["apiVersion"].is_null() && d.value["instance"]["sync"].is_object() {
            (&d.value["instance"]["sync"], "instance/sync/path")
        } else if is_flux(d, "helm.toolkit.fluxcd.io", "HelmRelease")
            && d.value["spec"]["values"]["instance"]["sync"].is_object()
        {
            // The chart's values written inline in its HelmRelease.
            (
                &d.value["spec"]["values"]["instance"]["sync"],
                "spec/values/instance/sync/path",
            )
        } else {
            continue;
        };
        if sync["kind"].as_str().is_some_and(|k| k != "GitRepository") {
            continue;
        }
        let (Some(url), Some(path)) = (sync["url"].as_str(), sync["path"].as_str()) else {
            continue;
        };
        let Ok(folder) = crate::world::normalize(path) else {
            continue;
        };
        let git = GitSource {
            url: url.to_owned(),
            git_ref: sync["ref"].as_str().map(ref_name),
            secret: sync["pullSecret"].as_str().map(str::to_owned),
        };
        out.push((folder, git, d.origin_of(at)));
    }
    out
}

/// The parent of every `flux-system` folder that holds bootstrap's files.
fn bootstrap_folders(tree: &Tree) -> Vec<(String, Origin)> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(&tree.root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !e.file_name().to_string_lossy().starts_with('.') || e.depth() == 0);
    for e in walk.filter_map(Result::ok) {
        if !e.file_type().is_dir() || e.file_name() != "flux-system" {
            continue;
        }
        let has = ["gotk-components.yaml", "gotk-sync.yaml"]
            .iter()
            .find(|f| e.path().join(f).is_file());
        let Some(file) = has else { continue };
        let rel = e
            .path()
            .strip_prefix(&tree.root)
            .unwrap_or(e.path())
            .to_string_lossy()
            .replace('\\', "/");
        let parent = rel.rsplit_once('/').map_or(String::new(), |(p, _)| p.to_owned());
        out.push((parent, Origin::file_start(tree.shown_path(&format!("{rel}/{file}")))));
    }
    out
}

/// Each folder of a top-level `clusters/`.
fn cluster_folders(tree: &Tree) -> Vec<(String, Origin)> {
    let Ok(entries) = std::fs::read_dir(tree.root.join("clusters")) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Origin)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .map(|n| {
            let folder = format!("clusters/{n}");
            let origin = Origin::file_start(tree.shown_path(&folder));
            (folder, origin)
        })
        .collect();
    out.sort();
    out
}

/// The git source a GitRepository names: its URL, its reference as the
/// source-controller resolves it (`commit` over `name` over `semver` over
/// `tag` over `branch`, fluxcd/source-controller
/// `docs/spec/v1/gitrepositories.md`, "Reference"), and its Secret.
pub fn git_repository(v: &Value) -> Option<GitSource> {
    let spec = &v["spec"];
    let r = &spec["ref"];
    let s = |k: &str| r[k].as_str().filter(|x| !x.is_empty()).map(str::to_owned);
    let git_ref = s("commit")
        .map(GitRef::Commit)
        .or_else(|| s("name").map(|n| ref_name(&n)))
        .or_else(|| s("semver").map(GitRef::Semver))
        .or_else(|| s("tag").map(GitRef::Tag))
        .or_else(|| s("branch").map(GitRef::Branch));
    Some(GitSource {
        url: spec["url"].as_str()?.to_owned(),
        git_ref,
        secret: spec["secretRef"]["name"].as_str().map(str::to_owned),
    })
}

/// A full reference name (`refs/heads/main`, `refs/tags/v1`) as a branch
/// or tag; anything else is taken as a branch name.
fn ref_name(name: &str) -> GitRef {
    if let Some(b) = name.strip_prefix("refs/heads/") {
        GitRef::Branch(b.to_owned())
    } else if let Some(t) = name.strip_prefix("refs/tags/") {
        GitRef::Tag(t.to_owned())
    } else {
        GitRef::Branch(name.to_owned())
    }
}

/// The environment a root becomes.
pub fn env_name(folder: &str, git: Option<&GitSource>) -> String {
    let segments: Vec<&str> = folder.split('/').filter(|s| !s.is_empty()).collect();
    if let Some(i) = segments.iter().position(|s| *s == "clusters")
        && let Some(name) = segments.get(i + 1).and_then(|n| dns_label(n, 63))
    {
        return name;
    }
    if let Some(name) = segments
        .iter()
        .rev()
        .find(|s| !GENERIC.contains(&s.to_ascii_lowercase().as_str()))
        .and_then(|s| dns_label(s, 63))
    {
        return name;
    }
    let repo = git.and_then(|g| {
        let last = g.url.trim_end_matches('/').rsplit(['/', ':']).next()?;
        dns_label(last.trim_end_matches(".git"), 63)
    });
    repo.unwrap_or_else(|| "default".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_named_after_their_folder() {
        let git = GitSource {
            url: "https://github.com/example/home-ops.git".into(),
            ..GitSource::default()
        };
        assert_eq!(env_name("clusters/staging", None), "staging");
        assert_eq!(env_name("clusters/staging/flux-system", None), "staging");
        assert_eq!(env_name("kubernetes/main/flux/config", None), "main");
        assert_eq!(env_name("kubernetes/flux", Some(&git)), "home-ops");
        assert_eq!(env_name("kubernetes/flux/cluster", None), "default");
    }

    #[test]
    fn references_resolve_as_the_source_controller_does() {
        let v = serde_json::json!({"spec": {"url": "ssh://git@example.org/r.git",
            "ref": {"branch": "main", "tag": "v1", "name": "refs/tags/v2"}, "secretRef": {"name": "s"}}});
        let g = git_repository(&v).unwrap();
        assert_eq!(g.git_ref, Some(GitRef::Tag("v2".into())));
        assert_eq!(g.secret.as_deref(), Some("s"));
    }
}
