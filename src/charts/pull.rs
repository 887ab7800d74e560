//! `strata charts pull`: the one place strata uses the network. Every remote
//! chart a `config.yaml` pins, and every remote dependency of a chart inside
//! the repository, is fetched with `helm pull` into the store, and its digest
//! written to `strata.lock`. An archive the lock already pins is fetched
//! only when the store lacks it, and must hash to the pinned digest:
//! a registry that serves other bytes under the same version is an error,
//! not a silent update. `--update` resolves everything again.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::archive::{self, Dependency};
use super::lock::{self, LocalLock, Lock, Locked, LockedDep};
use super::{State, read_tree, spec_digest};
use crate::helm::Helm;
use crate::load::{Chart, Platform};
use crate::world::World;

/// What a pull did, for the summary line.
#[derive(Debug, Default)]
pub struct Outcome {
    pub fetched: Vec<String>,
    pub kept: Vec<String>,
    pub lock: Lock,
    /// The lock file's new text, when it changed.
    pub lock_text: Option<String>,
}

/// One failure, naming the chart.
#[derive(Debug)]
pub struct PullError {
    pub chart: String,
    pub message: String,
    pub help: String,
}

/// A chart to fetch: repository, name, version (or range for dependencies).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Want {
    repo: String,
    name: String,
    version: String,
}

impl Want {
    fn show(&self) -> String {
        format!("{} {} from {}", self.name, self.version, self.repo)
    }
}

/// Fetches one chart archive with helm; returns its bytes.
fn fetch(helm: &Helm, w: &Want) -> Result<Vec<u8>, String> {
    let tmp = tempfile::Builder::new()
        .prefix("pull-")
        .tempdir_in(&helm.home)
        .map_err(|e| format!("{}: {e}", helm.home.display()))?;
    let dest = tmp.path().to_string_lossy().into_owned();
    let reference;
    let mut args: Vec<&str> = vec!["pull"];
    if w.repo.starts_with("oci://") {
        reference = format!("{}/{}", w.repo.trim_end_matches('/'), w.name);
        args.push(&reference);
    } else {
        args.extend([w.name.as_str(), "--repo", w.repo.as_str()]);
    }
    args.extend(["--version", w.version.as_str(), "--destination", dest.as_str()]);
    helm.run(&args, None, true).map_err(|e| e.to_string())?;
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(tmp.path())
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tgz"))
        .collect();
    found.sort();
    let path = found.pop().ok_or("helm pull wrote no archive")?;
    let meta = std::fs::metadata(&path).map_err(|e| e.to_string())?;
    if meta.len() > super::store::MAX_ARCHIVE {
        return Err(format!("the archive is {} bytes, over the limit", meta.len()));
    }
    std::fs::read(&path).map_err(|e| e.to_string())
}

/// Fetches, checks the archive is the chart asked for, and stores it.
fn fetch_and_store(helm: &Helm, state: &State, w: &Want, exact: bool) -> Result<(String, String), String> {
    let bytes = fetch(helm, w)?;
    let info = archive::read_archive(&bytes)?;
    if info.name != w.name {
        return Err(format!("the archive holds chart `{}`, not `{}`", info.name, w.name));
    }
    if exact && info.version.trim_start_matches('v') != w.version.trim_start_matches('v') {
        return Err(format!("the archive holds version {}, not {}", info.version, w.version));
    }
    let digest = state
        .store
        .put(&bytes)
        .map_err(|e| format!("{}: {e}", state.store.dir.display()))?;
    Ok((digest, info.version))
}

/// Pulls every chart of the platform. `update` resolves all of them again.
pub fn pull(
    world: &dyn World,
    platform: &Platform,
    state: &State,
    helm: &Helm,
    update: bool,
) -> Result<Outcome, Vec<PullError>> {
    let old = &state.lock;
    let mut remote: Vec<Want> = platform
        .components
        .values()
        .filter_map(|c| super::remote_key(&c.chart))
        .map(|(repo, name, version)| Want { repo, name, version })
        .collect();
    remote.sort();
    remote.dedup();

    let results: Vec<Result<(Locked, bool), PullError>> = remote
        .par_iter()
        .map(|w| {
            let pinned = old.find(&w.repo, &w.name, &w.version).filter(|_| !update);
            if let Some(p) = pinned
                && state.store.read(&p.digest).is_ok()
            {
                return Ok((p.clone(), false));
            }
            let (digest, _) = fetch_and_store(helm, state, w, true).map_err(|message| PullError {
                chart: w.show(),
                message,
                help: "check the repository URL, name and version in config.yaml, and that the repository is reachable".into(),
            })?;
            if let Some(p) = pinned
                && p.digest != digest
            {
                return Err(PullError {
                    chart: w.show(),
                    message: format!(
                        "the repository serves different bytes for this version: strata.lock pins {}, the archive fetched now is {}",
                        p.digest, digest
                    ),
                    help: "if the new archive is trusted, run `strata charts pull --update` and review the change to strata.lock".into(),
                });
            }
            Ok((
                Locked {
                    repo_url: w.repo.clone(),
                    name: w.name.clone(),
                    version: w.version.clone(),
                    digest,
                    manifest_digest: None,
                    origin: None,
                },
                true,
            ))
        })
        .collect();

    let mut outcome = Outcome::default();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok((l, fetched)) => {
                let what = format!("{} {}", l.name, l.version);
                if fetched {
                    outcome.fetched.push(what);
                } else {
                    outcome.kept.push(what);
                }
                outcome.lock.charts.push(l);
            }
            Err(e) => errors.push(e),
        }
    }

    // Charts inside the repository: their remote dependencies.
    let mut local_paths: Vec<&str> = platform
        .components
        .values()
        .filter_map(|c| match &c.chart {
            Chart::Local { path } => Some(path.as_str()),
            Chart::Remote { .. } | Chart::None => None,
        })
        .collect();
    local_paths.sort_unstable();
    local_paths.dedup();
    for path in local_paths {
        match local_dependencies(world, state, helm, path, update) {
            Ok(Some((l, fetched))) => {
                for d in &l.dependencies {
                    let what = format!("{} {} (for {path})", d.name, d.version);
                    if fetched {
                        outcome.fetched.push(what)
                    } else {
                        outcome.kept.push(what)
                    }
                }
                outcome.lock.local.push(l);
            }
            Ok(None) => {}
            Err(mut e) => errors.append(&mut e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let text = outcome.lock.to_text();
    if *old != outcome.lock || !lock_file_is(world, &text) {
        outcome.lock_text = Some(text);
    }
    Ok(outcome)
}

fn lock_file_is(world: &dyn World, text: &str) -> bool {
    world.read_text(lock::FILE).is_ok_and(|t| t == text)
}

/// Resolves the remote dependencies of the chart in `path`.
fn local_dependencies(
    world: &dyn World,
    state: &State,
    helm: &Helm,
    path: &str,
    update: bool,
) -> Result<Option<(LocalLock, bool)>, Vec<PullError>> {
    let files = read_tree(world, path).map_err(|message| {
        vec![PullError {
            chart: path.to_owned(),
            message,
            help: "`chart.path` must name a chart folder inside the repository".into(),
        }]
    })?;
    let info = archive::from_files(&files, 0).map_err(|message| {
        vec![PullError {
            chart: path.to_owned(),
            message,
            help: "fix the chart's Chart.yaml".into(),
        }]
    })?;
    let remote: Vec<&Dependency> = info
        .dependencies
        .iter()
        .filter(|d| !d.repository.is_empty() && !d.repository.starts_with("file://"))
        .filter(|d| {
            // Vendored under charts/ already: nothing to fetch.
            !files.iter().any(|(p, _)| {
                p.strip_prefix("charts/")
                    .is_some_and(|r| r.starts_with(&format!("{}-", d.name)) || r.starts_with(&format!("{}/", d.name)))
            })
        })
        .collect();
    if remote.is_empty() {
        return Ok(None);
    }
    let spec = spec_digest(&info.dependencies);
    if !update
        && let Some(l) = state.lock.local(path)
        && l.spec == spec
        && l.dependencies.iter().all(|d| state.store.read(&d.digest).is_ok())
    {
        return Ok(Some((l.clone(), false)));
    }
    let mut errors = Vec::new();
    let mut deps = BTreeMap::new();
    for d in remote {
        match fetch_dependency(helm, state, path, d, update) {
            Ok(dep) => {
                deps.insert(d.values_key().to_owned(), dep);
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Some((
        LocalLock {
            path: path.to_owned(),
            spec,
            dependencies: deps.into_values().collect(),
        },
        true,
    )))
}

/// Fetches one remote dependency of the local chart in `path` into the
/// store. A version strata.lock pins for the same constraint is kept
/// unless updating, and must still be the same bytes.
fn fetch_dependency(
    helm: &Helm,
    state: &State,
    path: &str,
    d: &Dependency,
    update: bool,
) -> Result<LockedDep, PullError> {
    if !(d.repository.starts_with("https://")
        || d.repository.starts_with("http://")
        || d.repository.starts_with("oci://"))
    {
        return Err(PullError {
            chart: format!("{} (dependency of {path})", d.name),
            message: format!("repository `{}` is not a URL", d.repository),
            help: "write the repository as an https:// or oci:// URL in Chart.yaml; strata does not read helm's repository names".into(),
        });
    }
    let w = Want {
        repo: lock::normalize_repo(&d.repository, d.repository.starts_with("oci://")),
        name: d.name.clone(),
        version: d.version.clone(),
    };
    // A pinned version of the same constraint is kept unless updating.
    let pinned = state
        .lock
        .local(path)
        .and_then(|l| {
            l.dependencies
                .iter()
                .find(|x| x.name == d.name && x.constraint == d.version)
        })
        .filter(|_| !update);
    let want = match pinned {
        Some(p) => Want {
            version: p.version.clone(),
            ..w.clone()
        },
        None => w.clone(),
    };
    match fetch_and_store(helm, state, &want, pinned.is_some()) {
        Ok((digest, version)) => {
            if let Some(p) = pinned
                && p.digest != digest
            {
                return Err(PullError {
                    chart: format!("{} (dependency of {path})", w.show()),
                    message: format!(
                        "the repository serves different bytes: strata.lock pins {}, fetched {digest}",
                        p.digest
                    ),
                    help: "if the new archive is trusted, run `strata charts pull --update`".into(),
                });
            }
            Ok(LockedDep {
                name: d.name.clone(),
                alias: d.alias.clone(),
                repository: d.repository.clone(),
                constraint: d.version.clone(),
                version,
                digest,
            })
        }
        Err(message) => Err(PullError {
            chart: format!("{} (dependency of {path})", w.show()),
            message,
            help: "check the dependency's repository and version in Chart.yaml".into(),
        }),
    }
}
