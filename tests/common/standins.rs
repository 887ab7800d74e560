//! Stand-in charts in a platform's chart store: each stand-in chart of
//! `tests/charts/standins/` packaged into the store, and `strata.lock`
//! pinning each component's chart to it, as `strata charts pull` would
//! have done, so that an example platform renders offline with helm.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value as J;
use strata::charts::lock::{self, Lock, Locked};
use strata::charts::store::Store;

use super::charts;
use super::repo;

/// The stand-in chart folders, by folder name.
pub fn standins() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/charts/standins"))
        .expect("tests/charts/standins")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("Chart.yaml").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// A scalar of a component's config.yaml, at a dotted path.
fn config_field(config: &strata::yaml::Node, path: &str) -> Option<String> {
    config.get_path(path).map(|n| match n.to_json() {
        J::String(s) => s,
        other => other.to_string(),
    })
}

/// Packages every stand-in into the scratch copy's chart store and writes
/// its `strata.lock`, pinning each component's chart exactly as its
/// config.yaml names it (the upstream repoURL, name and version) to the
/// stand-in's digest, as `strata charts pull` would have done.
pub fn install_standins(root: &Path) {
    install(root, &standins());
}

/// Like [`install_standins`], with the given chart folders.
pub fn install(root: &Path, chart_dirs: &[PathBuf]) {
    let store = Store::new(root.join(strata::charts::STATE_DIR).join("charts"));
    let mut digests: BTreeMap<(String, String), String> = BTreeMap::new();
    for dir in chart_dirs {
        let (name, version, bytes) = charts::package(dir);
        let digest = store.put(&bytes).expect("store a stand-in");
        digests.insert((name, version), digest);
    }
    let platform = root.join("gitops/platform");
    let mut configs: Vec<PathBuf> = std::fs::read_dir(&platform)
        .expect("gitops/platform")
        .map(|e| e.expect("entry").path().join("config.yaml"))
        .filter(|p| p.is_file())
        .collect();
    configs.sort();
    let mut pinned = Lock::default();
    for path in configs {
        let file: std::sync::Arc<str> = std::sync::Arc::from(path.to_string_lossy().as_ref());
        let config = strata::yaml::parse(&file, &std::fs::read_to_string(&path).expect("read config.yaml"))
            .expect("parse config.yaml");
        let (Some(repo_url), Some(name), Some(version)) = (
            config_field(&config, "chart.repoURL"),
            config_field(&config, "chart.name"),
            config_field(&config, "chart.version"),
        ) else {
            continue;
        };
        let oci = config_field(&config, "chart.oci").is_some_and(|o| o == "true");
        let digest = digests
            .get(&(name.clone(), version.clone()))
            .unwrap_or_else(|| panic!("no stand-in for chart {name} {version} ({})", path.display()));
        pinned.charts.push(Locked {
            repo_url: lock::normalize_repo(&repo_url, oci),
            name,
            version,
            digest: digest.clone(),
            ..Default::default()
        });
    }
    std::fs::write(root.join(lock::FILE), pinned.to_text()).expect("write strata.lock");
}
