//! Charts: the content-addressed store in `.strata/charts/`, the lock file
//! `strata.lock`, reading archives without helm, and finding, for each
//! component, the exact chart it renders with — offline, checked against the
//! lock on every run. Only [`pull`] uses the network.

pub mod add;
pub mod archive;
pub mod http;
pub mod index;
pub mod local;
pub mod lock;
pub mod mirrors;
pub mod pull;
pub mod store;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use archive::ChartInfo;
pub use lock::Lock;
pub use store::Store;

use crate::helm::args::{check_chart_name, check_version};
use crate::load::{Chart, Platform};
use crate::world::{World, join};
use crate::yaml::Origin;

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
    /// The archive the lock entry pins holds another chart or version
    /// than the entry names (`name version` each), e.g. a lock entry
    /// edited to another stored chart's digest.
    Mismatched {
        pinned: String,
        found: String,
        digest: String,
        lock: Option<Origin>,
    },
    /// A chart name or version that cannot be given to helm or become a
    /// folder name, and why.
    Unsafe(String),
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
        matches!(
            self,
            Unavailable::Tampered { .. } | Unavailable::Mismatched { .. } | Unavailable::Unsafe(_)
        )
    }

    /// Why, in a few words, for the note that lists components judged
    /// through profiles.
    pub fn reason(&self) -> String {
        match self {
            Unavailable::NotLocked => "not in strata.lock".into(),
            Unavailable::NotPulled { .. } => "not in .strata/charts".into(),
            Unavailable::Tampered { .. } => "its archive does not match strata.lock".into(),
            Unavailable::Mismatched { pinned, found, .. } => {
                format!("strata.lock pins {pinned} to an archive of {found}")
            }
            Unavailable::Unsafe(e) => e.clone(),
            Unavailable::DependenciesNotLocked => "its dependencies are not in strata.lock".into(),
            Unavailable::Broken(e) => format!("unreadable: {e}"),
        }
    }
}

/// What every component renders with, computed once per run.
pub struct Resolved {
    pub charts: BTreeMap<String, Result<Ready, Unavailable>>,
    /// What a local chart that cannot be rendered says of itself (its
    /// `Chart.yaml` with the dependencies it asks for, its values), read
    /// from its own files: a wrapper's dependencies are still judged under
    /// their keys, never as the chart itself.
    pub partial: BTreeMap<String, Arc<ChartInfo>>,
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
/// the lock: their bytes against the digest, and their own `Chart.yaml`
/// name and version against the entry's. Archives shared by several
/// components are read once.
pub fn resolve(world: &dyn World, platform: &Platform, state: &State) -> Resolved {
    let mut by_digest: BTreeMap<String, Result<Ready, Unavailable>> = BTreeMap::new();
    let mut charts = BTreeMap::new();
    let mut local_used = Vec::new();
    let mut prepared = false;
    let mut partial = BTreeMap::new();
    for c in platform.components.values() {
        let r = match &c.chart {
            Chart::Remote { .. } => {
                let (repo, name, version) = remote_key(&c.chart).unwrap_or_default();
                match checked_reference(&name, &version) {
                    Err(e) => Err(e),
                    Ok(()) => match state.lock.find(&repo, &name, &version) {
                        None => Err(Unavailable::NotLocked),
                        Some(l) => by_digest
                            .entry(l.digest.clone())
                            .or_insert_with(|| remote(&state.store, &l.digest))
                            .clone()
                            .and_then(|r| {
                                same_chart(&l.name, &l.version, &r.info, &l.digest, l.origin.as_ref()).map(|()| r)
                            }),
                    },
                }
            }
            Chart::Local { path } => {
                let r = local::local(world, state, path).map(|(ready, wrote)| {
                    prepared |= wrote;
                    local_used.push(ready.identity.clone());
                    ready
                });
                if let Err(u) = &r
                    && !u.is_integrity_error()
                    && let Some(info) = local::own_info(world, path)
                {
                    partial.insert(c.name.clone(), Arc::new(info));
                }
                r
            }
            Chart::None => continue,
        };
        charts.insert(c.name.clone(), r);
    }
    if prepared {
        local::bound(&state.dir, local::MAX_BYTES, &local_used);
    }
    Resolved { charts, partial }
}

/// A chart name and version from a `config.yaml`, checked before either
/// can reach helm's command line.
fn checked_reference(name: &str, version: &str) -> Result<(), Unavailable> {
    check_chart_name(name)
        .and_then(|()| check_version(version))
        .map_err(Unavailable::Unsafe)
}

/// Whether an archive's own `Chart.yaml` is the chart and version a lock
/// entry names (a leading `v` aside, as helm compares versions).
pub fn same_chart(
    name: &str,
    version: &str,
    info: &ChartInfo,
    digest: &str,
    lock: Option<&Origin>,
) -> Result<(), Unavailable> {
    if info.name == name && info.version.trim_start_matches('v') == version.trim_start_matches('v') {
        return Ok(());
    }
    Err(Unavailable::Mismatched {
        pinned: format!("{name} {version}"),
        found: format!("{} {}", info.name, info.version),
        digest: digest.to_owned(),
        lock: lock.cloned(),
    })
}

/// The archive the store holds under `digest`, or why it cannot be used:
/// not pulled, not the pinned bytes, unreadable.
fn stored(store: &Store, digest: &str) -> Result<Vec<u8>, Unavailable> {
    store.read(digest).map_err(|e| match e {
        store::StoreError::Missing => Unavailable::NotPulled {
            digest: digest.to_owned(),
        },
        store::StoreError::Mismatch { found } => Unavailable::Tampered {
            expected: digest.to_owned(),
            found,
        },
        store::StoreError::Io(e) => Unavailable::Broken(e),
    })
}

fn remote(store: &Store, digest: &str) -> Result<Ready, Unavailable> {
    let bytes = stored(store, digest)?;
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
