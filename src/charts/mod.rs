//! Charts: the content-addressed store in `.strata/charts/`, the lock file
//! `strata.lock`, reading archives without helm, and finding, for each
//! component, the exact chart it renders with — offline, checked against the
//! lock on every run. Only [`pull`] uses the network.

pub mod archive;
pub mod lock;
pub mod pull;
pub mod store;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use archive::ChartInfo;
pub use lock::Lock;
pub use store::Store;

use crate::load::{Chart, Platform};
use crate::world::{World, join};

/// The folder under the repository root that holds the store and caches.
pub const STATE_DIR: &str = ".strata";

/// A chart ready to render.
#[derive(Clone, Debug)]
pub struct Ready {
    /// What helm is given: an archive in the store, or a prepared folder.
    pub path: PathBuf,
    /// Identifies the chart's bytes, for cache keys: the archive digest, or
    /// the digest of a local chart's files and resolved dependencies.
    pub identity: String,
    pub info: Arc<ChartInfo>,
}

/// Why a component's chart cannot be rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// `strata.lock` has no entry for the pinned chart.
    NotLocked,
    /// The lock has it, the store does not.
    NotPulled { digest: String },
    /// The stored archive is not the one the lock pins.
    Tampered { expected: String, found: String },
    /// A local chart's remote dependencies are not resolved in the lock, or
    /// changed since.
    DependenciesNotLocked,
    /// The chart cannot be read.
    Broken(String),
}

impl Unavailable {
    /// Whether this is an error whatever the mode: the store holds bytes
    /// that are not what the lock pins.
    pub fn is_integrity_error(&self) -> bool {
        matches!(self, Unavailable::Tampered { .. })
    }

    /// Why, in a few words, for the note that lists components judged
    /// through profiles.
    pub fn reason(&self) -> String {
        match self {
            Unavailable::NotLocked => "not in strata.lock".into(),
            Unavailable::NotPulled { .. } => "not in .strata/charts".into(),
            Unavailable::Tampered { .. } => "its archive does not match strata.lock".into(),
            Unavailable::DependenciesNotLocked => "its dependencies are not in strata.lock".into(),
            Unavailable::Broken(e) => format!("unreadable: {e}"),
        }
    }
}

/// What every component renders with, computed once per run.
pub struct Resolved {
    pub charts: BTreeMap<String, Result<Ready, Unavailable>>,
}

/// Everything of one repository's chart state: the lock and the store.
pub struct State {
    pub lock: Lock,
    pub store: Store,
    /// `.strata/` of the working tree.
    pub dir: PathBuf,
}

impl State {
    pub fn new(root: &Path, lock: Lock) -> State {
        let dir = root.join(STATE_DIR);
        State {
            lock,
            store: Store::new(dir.join("charts")),
            dir,
        }
    }
}

/// The lock entry key of a remote chart.
pub fn remote_key(chart: &Chart) -> Option<(String, String, String)> {
    match chart {
        Chart::Remote {
            repo_url,
            name,
            version,
            oci,
        } => Some((lock::normalize_repo(repo_url, *oci), name.clone(), version.clone())),
        Chart::Local { .. } | Chart::None => None,
    }
}

/// Finds the chart of every component, checking stored archives against
/// the lock. Archives shared by several components are read once.
pub fn resolve(world: &dyn World, platform: &Platform, state: &State) -> Resolved {
    let mut by_digest: BTreeMap<String, Result<Ready, Unavailable>> = BTreeMap::new();
    let mut charts = BTreeMap::new();
    for c in platform.components.values() {
        let r = match &c.chart {
            Chart::Remote { .. } => {
                let (repo, name, version) = remote_key(&c.chart).unwrap_or_default();
                match state.lock.find(&repo, &name, &version) {
                    None => Err(Unavailable::NotLocked),
                    Some(l) => by_digest
                        .entry(l.digest.clone())
                        .or_insert_with(|| remote(&state.store, &l.digest))
                        .clone(),
                }
            }
            Chart::Local { path } => local(world, state, path),
            Chart::None => continue,
        };
        charts.insert(c.name.clone(), r);
    }
    Resolved { charts }
}

fn remote(store: &Store, digest: &str) -> Result<Ready, Unavailable> {
    let bytes = match store.read(digest) {
        Ok(b) => b,
        Err(store::StoreError::Missing) => {
            return Err(Unavailable::NotPulled {
                digest: digest.to_owned(),
            });
        }
        Err(store::StoreError::Mismatch { found }) => {
            return Err(Unavailable::Tampered {
                expected: digest.to_owned(),
                found,
            });
        }
        Err(store::StoreError::Io(e)) => return Err(Unavailable::Broken(e)),
    };
    let info = archive::read_archive(&bytes).map_err(Unavailable::Broken)?;
    Ok(Ready {
        path: store.path(digest),
        identity: digest.to_owned(),
        info: Arc::new(info),
    })
}

/// Every file under `dir` in the world, by path relative to it.
pub fn read_tree(world: &dyn World, dir: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let mut stack = vec![String::new()];
    let mut total: u64 = 0;
    while let Some(sub) = stack.pop() {
        let here = if sub.is_empty() {
            dir.to_owned()
        } else {
            join(dir, &sub)
        };
        let entries = world.list(&here).map_err(|e| format!("{here}: {e}"))?;
        for e in entries {
            let rel = if sub.is_empty() {
                e.name.clone()
            } else {
                format!("{sub}/{}", e.name)
            };
            if e.is_dir {
                if rel.matches('/').count() >= 16 || stack.len() > 256 {
                    return Err(format!("{dir}: folders nested too deeply"));
                }
                stack.push(rel);
            } else {
                let bytes = world
                    .read(&join(dir, &rel))
                    .map_err(|e| format!("{}: {e}", join(dir, &rel)))?;
                total += bytes.len() as u64;
                if total > archive::MAX_UNPACKED || out.len() >= archive::MAX_ENTRIES {
                    return Err(format!("{dir}: the chart folder is too large"));
                }
                out.push((rel, bytes));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The digest of a dependency list as `Chart.yaml` writes it, for the lock.
pub fn spec_digest(deps: &[archive::Dependency]) -> String {
    let mut h = Sha256::new();
    for d in deps {
        for part in [&d.name, &d.repository, &d.version] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.update(d.alias.as_deref().unwrap_or("").as_bytes());
        h.update([1]);
    }
    format!("sha256:{}", crate::world::disk::hex(&h.finalize()))
}

/// A local chart: its files, `file://` dependencies copied in, remote ones
/// taken from the store as the lock pins them; prepared once per content
/// digest under `.strata/cache/local/`.
fn local(world: &dyn World, state: &State, path: &str) -> Result<Ready, Unavailable> {
    let mut files = read_tree(world, path).map_err(Unavailable::Broken)?;
    if !files.iter().any(|(p, _)| p == "Chart.yaml") {
        return Err(Unavailable::Broken(format!("{path} has no Chart.yaml")));
    }
    let first = archive::from_files(&files, 0).map_err(|e| Unavailable::Broken(format!("{path}: {e}")))?;
    let own: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
    for d in &first.dependencies {
        let vendored = own.iter().any(|p| {
            p.strip_prefix("charts/")
                .is_some_and(|r| r.starts_with(&format!("{}-", d.name)) || r.starts_with(&format!("{}/", d.name)))
        });
        if vendored {
            continue;
        }
        if let Some(rel) = d.repository.strip_prefix("file://") {
            let dep_dir = crate::world::normalize(&join(path, rel))
                .map_err(|e| Unavailable::Broken(format!("dependency {}: {e}", d.name)))?;
            for (p, b) in read_tree(world, &dep_dir).map_err(Unavailable::Broken)? {
                files.push((format!("charts/{}/{p}", d.name), b));
            }
        } else if !d.repository.is_empty() {
            let locked = state
                .lock
                .local(path)
                .filter(|l| l.spec == spec_digest(&first.dependencies))
                .and_then(|l| {
                    l.dependencies
                        .iter()
                        .find(|x| x.name == d.name && x.alias == d.alias && x.repository == d.repository)
                })
                .ok_or(Unavailable::DependenciesNotLocked)?;
            let bytes = match state.store.read(&locked.digest) {
                Ok(b) => b,
                Err(store::StoreError::Missing) => {
                    return Err(Unavailable::NotPulled {
                        digest: locked.digest.clone(),
                    });
                }
                Err(store::StoreError::Mismatch { found }) => {
                    return Err(Unavailable::Tampered {
                        expected: locked.digest.clone(),
                        found,
                    });
                }
                Err(store::StoreError::Io(e)) => return Err(Unavailable::Broken(e)),
            };
            let file = format!("charts/{}-{}.tgz", d.name, locked.version);
            if !files.iter().any(|(p, _)| *p == file) {
                files.push((file, bytes));
            }
        }
    }
    files.sort();
    let info = archive::from_files(&files, 0).map_err(|e| Unavailable::Broken(format!("{path}: {e}")))?;
    let mut h = Sha256::new();
    for (p, b) in &files {
        h.update(p.as_bytes());
        h.update([0]);
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    }
    let identity = format!("sha256:{}", crate::world::disk::hex(&h.finalize()));
    let prepared = prepare(&state.dir, &identity, &info.name, &files)
        .map_err(|e| Unavailable::Broken(format!("preparing {path} for helm: {e}")))?;
    Ok(Ready {
        path: prepared,
        identity,
        info: Arc::new(info),
    })
}

/// Writes a chart's files into `.strata/cache/local/<digest>/<name>/` once.
fn prepare(state_dir: &Path, identity: &str, name: &str, files: &[(String, Vec<u8>)]) -> std::io::Result<PathBuf> {
    let base = state_dir.join("cache").join("local");
    let key = identity.trim_start_matches("sha256:");
    let dir = base.join(&key[..key.len().min(32)]);
    let safe_name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let chart_dir = dir.join(&safe_name);
    if chart_dir.join("Chart.yaml").is_file() {
        return Ok(chart_dir);
    }
    std::fs::create_dir_all(&base)?;
    let tmp = tempfile::Builder::new().prefix(".tmp-").tempdir_in(&base)?;
    for (p, b) in files {
        let rel = crate::world::normalize(p).map_err(|e| std::io::Error::other(e.to_string()))?;
        let to = tmp.path().join(&safe_name).join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&to, b)?;
    }
    match std::fs::rename(tmp.path(), &dir) {
        Ok(()) => {
            // The folder now lives at `dir`; nothing is left to clean up.
            let _ = tmp.keep();
        }
        // Another run prepared the same content first.
        Err(_) if chart_dir.join("Chart.yaml").is_file() => {}
        Err(e) => return Err(e),
    }
    Ok(chart_dir)
}
