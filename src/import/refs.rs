//! What a kustomization may read, checked before kustomize runs: every
//! path a `kustomization.yaml` names (resources, components, patches,
//! generator files, helm values files, …) must stay inside the root it is
//! built in — the imported tree, or a Flux artifact — as
//! kustomize-controller's secure file system keeps it (fluxcd/pkg
//! `kustomize/kustomize_generator.go`, `SecureBuild`: files may be loaded
//! from outside the kustomization's own folder, never from outside the
//! root). A path that leaves the root is refused (E065), named at its line.
//!
//! A remote resource (an `https://` URL, a git repository) is not fetched:
//! it is struck from the copy's kustomization and listed as not imported
//! (E033), so that nothing outside the tree is read.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::diag::{Diagnostic, Sources};
use crate::yaml::{Node, Origin};

/// The file names kustomize recognises, in its order.
pub const KUSTOMIZATION_FILES: &[&str] = &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// The most folders one scan visits.
const MAX_FOLDERS: usize = 20_000;

/// Fields holding a list of paths to files or folders.
const PATH_LISTS: &[&str] = &[
    "resources",
    "bases",
    "components",
    "crds",
    "configurations",
    "generators",
    "transformers",
    "validators",
    "patchesStrategicMerge",
];

/// Fields holding a list of remote-capable resources, struck when remote.
const REMOTE_OK: &[&str] = &["resources", "bases", "components"];

/// What a scan found: errors (paths out of the root) and notes (remote
/// resources struck).
#[derive(Debug, Default)]
pub struct Scan {
    pub errors: Vec<Diagnostic>,
    pub notes: Vec<Diagnostic>,
}

/// Checks every kustomization reachable from `folder` (relative to `root`);
/// `shown` names a root-relative path in messages.
pub fn scan(root: &Path, folder: &str, shown: &dyn Fn(&str) -> String, sources: &Sources) -> Scan {
    let mut s = Scanner {
        root,
        shown,
        sources,
        visited: BTreeSet::new(),
        out: Scan::default(),
    };
    s.visit(folder);
    s.out
}

/// The kustomization file of a folder, if it has one.
pub fn kustomization_file(dir: &Path) -> Option<&'static str> {
    KUSTOMIZATION_FILES.iter().copied().find(|f| dir.join(f).is_file())
}

/// Whether a resource entry is something kustomize fetches (a URL or a git
/// repository), not a path.
pub fn is_remote(entry: &str) -> bool {
    let e = entry.trim();
    e.contains("://")
        || e.starts_with("git@")
        || e.starts_with("git::")
        || ["github.com/", "gitlab.com/", "bitbucket.org/"]
            .iter()
            .any(|h| e.starts_with(h))
        || e.contains("?ref=")
}

/// Whether a file entry (a patch, a generator's file, a values file) is
/// one kustomize's file loader fetches: an http(s) URL. Anything else is a
/// path.
fn is_remote_file(entry: &str) -> bool {
    let e = entry.trim().to_ascii_lowercase();
    e.starts_with("http://") || e.starts_with("https://")
}

struct Scanner<'a> {
    root: &'a Path,
    shown: &'a dyn Fn(&str) -> String,
    sources: &'a Sources,
    visited: BTreeSet<String>,
    out: Scan,
}

impl Scanner<'_> {
    fn visit(&mut self, folder: &str) {
        if self.visited.len() >= MAX_FOLDERS || !self.visited.insert(folder.to_owned()) {
            return;
        }
        let dir = self.root.join(folder);
        if let Some(file) = kustomization_file(&dir) {
            self.kustomization(folder, file);
            return;
        }
        // No kustomization: Flux's generator takes every file and builds
        // each subfolder.
        let Ok(entries) = std::fs::read_dir(&dir) else { return };
        let mut subs: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        subs.sort();
        for sub in subs {
            self.visit(&crate::world::join(folder, &sub));
        }
    }

    fn kustomization(&mut self, folder: &str, file: &str) {
        let rel = crate::world::join(folder, file);
        let path = self.root.join(&rel);
        let Ok(bytes) = crate::world::disk::read_regular(&path, crate::yaml::MAX_INPUT_BYTES as u64) else {
            return;
        };
        let Ok(text) = String::from_utf8(bytes) else { return };
        let name: Arc<str> = Arc::from((self.shown)(&rel));
        self.sources.insert(&name, &text);
        // A kustomization that does not parse is kustomize's to refuse.
        let Ok(node) = crate::yaml::parse(&name, &text) else {
            return;
        };
        let mut value = node.to_json();
        let mut struck = false;
        for field in PATH_LISTS {
            let Some(list) = node.get(field).and_then(|n| match &n.value {
                crate::yaml::Value::Seq(l) => Some(l),
                _ => None,
            }) else {
                continue;
            };
            for entry in list {
                let Some(s) = entry.as_str() else { continue };
                if s.contains('\n') {
                    continue; // an inline patch or generator
                }
                if is_remote(s) {
                    if REMOTE_OK.contains(field) {
                        struck = true;
                        strike(&mut value, field, s);
                        self.out.notes.push(super::not_converted(
                            entry.origin.clone(),
                            format!("{name}: {field} entry {s} is fetched from the network; it is not read, and what it holds is not imported"),
                            "strata imports what the tree holds: vendor the resource into the tree if a release depends on it",
                        ));
                    }
                    continue;
                }
                if let Some(p) = self.local(folder, s, &entry.origin, field) {
                    self.visit_if_dir(&p);
                }
            }
        }
        self.files(folder, &node);
        if struck {
            let _ = std::fs::write(&path, serde_json::to_string(&value).unwrap_or_default());
        }
    }

    /// The single-file fields: patches, generator files, helm values files.
    fn files(&mut self, folder: &str, node: &Node) {
        let each = |n: &Node| -> Vec<Node> {
            match &n.value {
                crate::yaml::Value::Seq(l) => l.clone(),
                _ => Vec::new(),
            }
        };
        let mut check: Vec<(Node, &str)> = Vec::new();
        for (list, key) in [
            ("patches", "path"),
            ("patchesJson6902", "path"),
            ("replacements", "path"),
        ] {
            for item in node.get(list).map(each).unwrap_or_default() {
                if let Some(p) = item.get(key) {
                    check.push((p.clone(), list));
                }
            }
        }
        for generator in ["configMapGenerator", "secretGenerator"] {
            for item in node.get(generator).map(each).unwrap_or_default() {
                for key in ["files", "envs"] {
                    for f in item.get(key).map(each).unwrap_or_default() {
                        check.push((f, generator));
                    }
                }
                if let Some(env) = item.get("env") {
                    check.push((env.clone(), generator));
                }
            }
        }
        for chart in node.get("helmCharts").map(each).unwrap_or_default() {
            if let Some(v) = chart.get("valuesFile") {
                check.push((v.clone(), "helmCharts"));
            }
            for v in chart.get("additionalValuesFiles").map(each).unwrap_or_default() {
                check.push((v, "helmCharts"));
            }
        }
        if let Some(home) = node.get_path("helmGlobals.chartHome") {
            check.push((home.clone(), "helmGlobals"));
        }
        if let Some(p) = node.get_path("openapi.path") {
            check.push((p.clone(), "openapi"));
        }
        for (n, field) in check {
            let Some(s) = n.as_str() else { continue };
            // `key=path` in a generator's files.
            let s = match s.split_once('=') {
                Some((_, p)) if field.ends_with("Generator") => p,
                _ => s,
            };
            if s.contains('\n') {
                continue;
            }
            if is_remote_file(s) {
                // kustomize's file loader fetches an http(s) path itself
                // (sigs.k8s.io/kustomize `api/internal/loader/fileloader.go`,
                // `Load`): what it holds would change the build unseen.
                self.out.errors.push(super::copy::outside(
                    n.origin.clone(),
                    format!(
                        "{}: {field} entry {s} is fetched from the network, outside the imported tree",
                        (self.shown)(&crate::world::join(folder, "kustomization.yaml"))
                    ),
                ));
            } else {
                self.local(folder, s, &n.origin, field);
            }
        }
    }

    /// The root-relative path an entry names, or an error when it leaves
    /// the root.
    fn local(&mut self, folder: &str, entry: &str, at: &Origin, field: &str) -> Option<String> {
        // kustomize reads an absolute path as it is, wherever it leads.
        let absolute = entry.starts_with(['/', '\\']) || Path::new(entry).is_absolute();
        match crate::world::normalize(&crate::world::join(folder, entry)) {
            Ok(p) if !absolute => Some(p),
            _ => {
                self.out.errors.push(super::copy::outside(
                    at.clone(),
                    format!(
                        "{}: {field} entry {entry} is outside the imported tree",
                        (self.shown)(&crate::world::join(folder, "kustomization.yaml"))
                    ),
                ));
                None
            }
        }
    }

    fn visit_if_dir(&mut self, rel: &str) {
        if self.root.join(rel).is_dir() {
            self.visit(rel);
        }
    }
}

/// Takes `entry` out of the list `field` of a kustomization.
fn strike(k: &mut Value, field: &str, entry: &str) {
    if let Some(list) = k.get_mut(field).and_then(Value::as_array_mut) {
        list.retain(|e| e.as_str() != Some(entry));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_out_are_refused_and_remote_resources_struck() {
        let tmp = tempfile::tempdir().unwrap();
        let w = |p: &str, t: &str| {
            let p = tmp.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        w(
            "apps/kustomization.yaml",
            "resources:\n  - ../base\n  - https://example.org/crds.yaml\n",
        );
        w(
            "base/kustomization.yaml",
            "resources:\n  - ../../outside\npatches:\n  - path: ../../../p.yaml\n",
        );
        let sources = Sources::default();
        let scan = scan(tmp.path(), "apps", &|p: &str| format!("t/{p}"), &sources);
        assert_eq!(scan.errors.len(), 2, "{:?}", scan.errors);
        assert!(
            scan.errors[0]
                .message
                .contains("t/base/kustomization.yaml: resources entry ../../outside is outside")
        );
        assert_eq!(scan.errors[0].origin.line, 2);
        assert_eq!(scan.notes.len(), 1);
        let rewritten = std::fs::read_to_string(tmp.path().join("apps/kustomization.yaml")).unwrap();
        assert!(
            !rewritten.contains("example.org") && rewritten.contains("../base"),
            "{rewritten}"
        );
        assert!(is_remote("github.com/fluxcd/flux2/manifests/install?ref=v2.8.6"));
        assert!(!is_remote("./podinfo"));
    }

    #[test]
    fn absolute_paths_and_fetched_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let w = |p: &str, t: &str| {
            let p = tmp.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        // kustomize reads an absolute path as it is, and fetches an http(s)
        // patch itself: both would bring in what the tree does not hold.
        w(
            "apps/kustomization.yaml",
            "resources:\n  - /srv/elsewhere/release.yaml\npatches:\n  - path: https://example.org/p.yaml\nconfigMapGenerator:\n  - name: v\n    files: [values.yaml=/etc/values.yaml, github.com/local.yaml]\n",
        );
        let sources = Sources::default();
        let scan = scan(tmp.path(), "apps", &|p: &str| format!("t/{p}"), &sources);
        let messages: Vec<&str> = scan.errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].contains("resources entry /srv/elsewhere/release.yaml is outside"));
        assert!(messages[1].contains("patches entry https://example.org/p.yaml is fetched from the network"));
        assert!(messages[2].contains("configMapGenerator entry /etc/values.yaml is outside"));
        assert!(scan.errors.iter().all(|e| e.code == crate::diag::codes::IMPORT_OUTSIDE));
    }
}
