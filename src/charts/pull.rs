//! `strata charts pull`: the one place strata uses the network. Every remote
//! chart a `config.yaml` pins, and every remote dependency of a chart inside
//! the repository, is fetched into the store, and its digest written to
//! `strata.lock`: from a Helm repository by strata itself (its
//! `index.yaml` read within bounds, see [`super::index`]), from an OCI
//! registry with `helm pull`, whose manifest digest is kept too. A mirror
//! of `charts.mirrors` in strata.yaml is fetched from instead of the
//! upstream URL; the lock keeps the upstream URL.
//!
//! An archive the lock already pins is fetched only when the store lacks
//! it, and must hash to the pinned digest: a registry that serves other
//! bytes under the same version is an error, not a silent update.
//! `--update` resolves everything again. A pull fetches what it can: each
//! chart it cannot get is named with the reason, keeps the entry the lock
//! had for it, and the lock holds every chart that resolved.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use super::archive::{self, Dependency};
use super::http::Http;
use super::index::{self, Versions};
use super::lock::{self, LocalLock, Lock, Locked, LockedDep};
use super::{State, read_tree, spec_digest};
use crate::helm::Helm;
use crate::helm::args::{check_chart_name, check_range, check_version, pulled_manifest_digest};
use crate::load::project::ChartSettings;
use crate::load::{Chart, Platform};
use crate::world::World;

/// What a pull did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub fetched: Vec<String>,
    pub kept: Vec<String>,
    pub lock: Lock,
    /// The lock file's new text, when it changed.
    pub lock_text: Option<String>,
    /// The charts that could not be pulled, each with the reason.
    pub errors: Vec<PullError>,
}

/// One failure, naming the chart.
#[derive(Debug)]
pub struct PullError {
    pub chart: String,
    pub message: String,
    pub help: String,
}

/// How a pull reaches the network.
pub struct Net<'a> {
    /// For Helm repositories.
    pub http: &'a Http,
    /// For OCI registries; without helm, OCI charts cannot be pulled.
    pub helm: Option<&'a Helm>,
    /// `charts.mirrors` of strata.yaml.
    pub mirrors: &'a ChartSettings,
}

/// A chart to fetch: repository (upstream), name, and a version or, for a
/// dependency, a range.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Want {
    repo: String,
    name: String,
    version: String,
    exact: bool,
}

/// What a fetch brought.
struct Fetched {
    digest: String,
    version: String,
    manifest_digest: Option<String>,
}

/// An index as read, shared by the charts fetched from its repository.
type Read = Arc<Result<Versions, String>>;

/// Fetches archives, reading each repository's index once.
struct Fetcher<'a> {
    net: &'a Net<'a>,
    state: &'a State,
    /// Per index URL, the charts wanted from it and the index once read.
    indexes: BTreeMap<String, (BTreeSet<String>, OnceLock<Read>)>,
}

impl Want {
    fn show(&self) -> String {
        format!("{} {} from {}", self.name, self.version, self.repo)
    }
}

impl<'a> Fetcher<'a> {
    fn new(net: &'a Net<'a>, state: &'a State, wants: &[&Want]) -> Fetcher<'a> {
        let mut indexes: BTreeMap<String, (BTreeSet<String>, OnceLock<_>)> = BTreeMap::new();
        for w in wants {
            let source = source_of(net.mirrors, &w.repo);
            if !source.starts_with("oci://") {
                indexes
                    .entry(index_url(&source))
                    .or_insert_with(|| (BTreeSet::new(), OnceLock::new()))
                    .0
                    .insert(w.name.clone());
            }
        }
        Fetcher { net, state, indexes }
    }

    /// The index at `url`, read once for every chart wanted from it.
    fn index(&self, url: &str) -> Read {
        let Some((want, once)) = self.indexes.get(url) else {
            return Arc::new(Err(format!("{url} was not expected")));
        };
        Arc::clone(once.get_or_init(|| {
            Arc::new(
                self.net
                    .http
                    .get(url, index::MAX_BYTES, "index.yaml")
                    .and_then(|bytes| index::read(&bytes, want).map_err(|e| format!("{url}: {e}"))),
            )
        }))
    }

    /// Fetches a chart, checks the archive is the chart asked for, and
    /// stores it.
    fn fetch(&self, w: &Want) -> Result<Fetched, String> {
        check_chart_name(&w.name)?;
        if w.exact {
            check_version(&w.version)?;
        } else {
            check_range(&w.version)?;
        }
        let source = source_of(self.net.mirrors, &w.repo);
        let (bytes, manifest_digest) = if source.starts_with("oci://") {
            self.fetch_from_registry(&source, w)?
        } else {
            (self.fetch_from_repository(&source, w)?, None)
        };
        let info = archive::read_archive(&bytes)?;
        if info.name != w.name {
            return Err(format!("the archive holds chart `{}`, not `{}`", info.name, w.name));
        }
        if w.exact && info.version.trim_start_matches('v') != w.version.trim_start_matches('v') {
            return Err(format!("the archive holds version {}, not {}", info.version, w.version));
        }
        check_version(&info.version)?;
        let digest = self
            .state
            .store
            .put(&bytes)
            .map_err(|e| format!("{}: {e}", self.state.store.dir.display()))?;
        Ok(Fetched {
            digest,
            version: info.version,
            manifest_digest,
        })
    }

    /// From a Helm repository: the index, the version, the archive.
    fn fetch_from_repository(&self, source: &str, w: &Want) -> Result<Vec<u8>, String> {
        let url = index_url(source);
        let index = self.index(&url);
        let versions = match index.as_ref() {
            Ok(v) => v.get(&w.name).map(Vec::as_slice).unwrap_or_default(),
            Err(e) => return Err(e.clone()),
        };
        if versions.is_empty() {
            return Err(format!("{url} lists no chart `{}`", w.name));
        }
        let release = if w.exact {
            index::exact(versions, &w.version)
        } else {
            index::newest(versions, &w.version)?
        };
        let Some(release) = release else {
            let mut listed: Vec<&str> = versions.iter().rev().take(5).map(|r| r.version.as_str()).collect();
            listed.sort_unstable();
            return Err(format!(
                "{url} lists no version {} of `{}` (some it lists: {})",
                w.version,
                w.name,
                listed.join(", ")
            ));
        };
        let first = release
            .urls
            .first()
            .ok_or_else(|| format!("{url} gives no URL for {} {}", w.name, release.version))?;
        let archive_url = resolve_url(source, first);
        // An absolute URL under a mirrored prefix is fetched from the mirror.
        let archive_url = self.net.mirrors.mirrored(&archive_url).map_or(archive_url, |(m, _)| m);
        if !(archive_url.starts_with("https://") || archive_url.starts_with("http://")) {
            return Err(format!("{url} gives `{first}` for {}, not an http(s) URL", w.name));
        }
        let bytes = self
            .net
            .http
            .get(&archive_url, super::store::MAX_ARCHIVE, "the archive")?;
        if let Some(d) = release.digest.as_deref().filter(|d| !d.is_empty()) {
            let found = crate::world::disk::digest(&bytes);
            if found.trim_start_matches("sha256:") != d.trim_start_matches("sha256:") {
                return Err(format!(
                    "the archive from {archive_url} is {found}, not the digest {d} that {url} gives"
                ));
            }
        }
        Ok(bytes)
    }

    /// From an OCI registry, with helm: the archive and the manifest digest
    /// helm prints (`Digest: sha256:…`, on standard output in helm 3 and 4).
    fn fetch_from_registry(&self, source: &str, w: &Want) -> Result<(Vec<u8>, Option<String>), String> {
        let Some(helm) = self.net.helm else {
            return Err("pulling from an OCI registry needs helm, and there is none on the PATH".into());
        };
        let tmp = tempfile::Builder::new()
            .prefix("pull-")
            .tempdir_in(&helm.home)
            .map_err(|e| format!("{}: {e}", helm.home.display()))?;
        let reference = format!("{}/{}", source.trim_end_matches('/'), w.name);
        let version = format!("--version={}", w.version);
        let destination = format!("--destination={}", tmp.path().display());
        let args = ["pull", version.as_str(), destination.as_str(), "--", reference.as_str()];
        let (out, err) = helm.run_both(&args, None, true).map_err(|e| e.to_string())?;
        let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(tmp.path())
            .map_err(|e| e.to_string())?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "tgz"))
            .collect();
        found.sort();
        let path = found.pop().ok_or("helm pull wrote no archive")?;
        let meta = std::fs::symlink_metadata(&path).map_err(|e| e.to_string())?;
        if !meta.is_file() || meta.len() > super::store::MAX_ARCHIVE {
            return Err(format!("the archive is {} bytes, over the limit", meta.len()));
        }
        let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
        let printed = [out, err].concat();
        Ok((bytes, pulled_manifest_digest(&String::from_utf8_lossy(&printed))))
    }
}

/// Where a chart of the upstream repository `repo` is fetched from.
fn source_of(mirrors: &ChartSettings, repo: &str) -> String {
    mirrors.mirrored(repo).map_or_else(|| repo.to_owned(), |(m, _)| m)
}

/// A Helm repository's index, as helm finds it.
fn index_url(repo: &str) -> String {
    format!("{}/index.yaml", repo.trim_end_matches('/'))
}

/// A URL an index gives, against the repository's URL (with a trailing
/// slash, as helm takes it).
fn resolve_url(repo: &str, url: &str) -> String {
    if url.contains("://") {
        return url.to_owned();
    }
    let base = repo.trim_end_matches('/');
    if let Some(abs) = url.strip_prefix('/') {
        let origin_end = base.find("://").map_or(0, |i| i + 3);
        let host_end = base[origin_end..].find('/').map_or(base.len(), |i| origin_end + i);
        return format!("{}/{abs}", &base[..host_end]);
    }
    format!("{base}/{}", url.trim_start_matches("./"))
}

/// How a pull names a chart in messages: with the mirror it came from.
fn shown(net: &Net<'_>, w: &Want) -> String {
    match net.mirrors.mirrored(&w.repo) {
        Some((m, _)) => format!("{} (through the mirror {m})", w.show()),
        None => w.show(),
    }
}

/// Pulls every chart of the platform. `update` resolves all of them again.
pub fn pull(world: &dyn World, platform: &Platform, state: &State, net: &Net<'_>, update: bool) -> Outcome {
    let old = &state.lock;
    let mut remote: Vec<Want> = platform
        .components
        .values()
        .filter_map(|c| super::remote_key(&c.chart))
        .map(|(repo, name, version)| Want {
            repo,
            name,
            version,
            exact: true,
        })
        .collect();
    remote.sort();
    remote.dedup();
    let locals = local_charts(world, platform, state, update);
    let wanted: Vec<&Want> = remote.iter().chain(locals.iter().flat_map(|l| &l.wants)).collect();
    let fetcher = Fetcher::new(net, state, &wanted);

    let results: Vec<Result<(Locked, bool), PullError>> =
        remote.par_iter().map(|w| pull_one(&fetcher, w, update)).collect();
    let mut outcome = Outcome::default();
    for (w, r) in remote.iter().zip(results) {
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
            Err(e) => {
                // The pin the lock had stays until a pull resolves it.
                if let Some(p) = old.find(&w.repo, &w.name, &w.version) {
                    outcome.lock.charts.push(p.clone());
                }
                outcome.errors.push(e);
            }
        }
    }
    for l in locals {
        local_outcome(&fetcher, l, &mut outcome);
    }
    let text = outcome.lock.to_text();
    if *old != outcome.lock || !lock_file_is(world, &text) {
        outcome.lock_text = Some(text);
    }
    outcome
}

/// One chart of a `config.yaml`: kept as pinned, or fetched.
fn pull_one(fetcher: &Fetcher<'_>, w: &Want, update: bool) -> Result<(Locked, bool), PullError> {
    let state = fetcher.state;
    let pinned = state.lock.find(&w.repo, &w.name, &w.version).filter(|_| !update);
    if let Some(p) = pinned
        && state.store.read(&p.digest).is_ok()
    {
        return Ok((p.clone(), false));
    }
    let got = fetcher.fetch(w).map_err(|message| PullError {
        chart: shown(fetcher.net, w),
        message,
        help: "check the repository URL, name and version in config.yaml (and the mirror in strata.yaml), and that the repository is reachable".into(),
    })?;
    if let Some(p) = pinned
        && p.digest != got.digest
    {
        return Err(PullError {
            chart: shown(fetcher.net, w),
            message: format!(
                "the repository serves different bytes for this version: strata.lock pins {}, the archive fetched now is {}",
                p.digest, got.digest
            ),
            help:
                "if the new archive is trusted, run `strata charts pull --update` and review the change to strata.lock"
                    .into(),
        });
    }
    Ok((
        Locked {
            repo_url: w.repo.clone(),
            name: w.name.clone(),
            version: w.version.clone(),
            digest: got.digest,
            manifest_digest: got.manifest_digest,
            origin: None,
        },
        true,
    ))
}

fn lock_file_is(world: &dyn World, text: &str) -> bool {
    world.read_text(lock::FILE).is_ok_and(|t| t == text)
}

/// A chart inside the repository, and what its remote dependencies need.
struct LocalChart {
    path: String,
    spec: String,
    /// Kept as the lock has it (nothing to fetch).
    kept: Option<LocalLock>,
    /// Each remote dependency, and the version to fetch for it.
    deps: Vec<(Dependency, Result<Want, PullError>)>,
    /// The lock's pinned version per dependency, to check fetched bytes.
    pinned: Vec<Option<LockedDep>>,
    wants: Vec<Want>,
    /// The chart could not be read.
    error: Option<PullError>,
}

/// Every chart inside the repository with remote dependencies.
fn local_charts(world: &dyn World, platform: &Platform, state: &State, update: bool) -> Vec<LocalChart> {
    let mut paths: Vec<&str> = platform
        .components
        .values()
        .filter_map(|c| match &c.chart {
            Chart::Local { path } => Some(path.as_str()),
            Chart::Remote { .. } | Chart::None => None,
        })
        .collect();
    paths.sort_unstable();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|p| local_chart(world, state, p, update))
        .collect()
}

fn local_chart(world: &dyn World, state: &State, path: &str, update: bool) -> Option<LocalChart> {
    let mut chart = LocalChart {
        path: path.to_owned(),
        spec: String::new(),
        kept: None,
        deps: Vec::new(),
        pinned: Vec::new(),
        wants: Vec::new(),
        error: None,
    };
    let info = read_tree(world, path)
        .map_err(|m| (m, "`chart.path` must name a chart folder inside the repository"))
        .and_then(|files| {
            let info = archive::from_files(&files, 0).map_err(|m| (m, "fix the chart's Chart.yaml"))?;
            Ok((files, info))
        });
    let (files, info) = match info {
        Ok(x) => x,
        Err((message, help)) => {
            chart.error = Some(PullError {
                chart: path.to_owned(),
                message,
                help: help.into(),
            });
            return Some(chart);
        }
    };
    let own: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
    let remote: Vec<&Dependency> = info
        .dependencies
        .iter()
        .filter(|d| !d.repository.is_empty() && !d.repository.starts_with("file://"))
        .filter(|d| !super::local::vendored(&own, &d.name))
        .collect();
    if remote.is_empty() {
        return None;
    }
    chart.spec = spec_digest(&info.dependencies);
    let locked = state.lock.local(path);
    if !update
        && let Some(l) = locked
        && l.spec == chart.spec
        && l.dependencies.iter().all(|d| state.store.read(&d.digest).is_ok())
    {
        chart.kept = Some(l.clone());
        return Some(chart);
    }
    for d in remote {
        // A pinned version of the same constraint is kept unless updating.
        let pinned = locked
            .and_then(|l| {
                l.dependencies
                    .iter()
                    .find(|x| x.name == d.name && x.constraint == d.version)
            })
            .filter(|_| !update)
            .cloned();
        let want = dependency_want(path, d, pinned.as_ref());
        if let Ok(w) = &want {
            chart.wants.push(w.clone());
        }
        chart.deps.push(((*d).clone(), want));
        chart.pinned.push(pinned);
    }
    Some(chart)
}

/// What to fetch for one remote dependency of the chart in `path`.
fn dependency_want(path: &str, d: &Dependency, pinned: Option<&LockedDep>) -> Result<Want, PullError> {
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
    let repo = lock::normalize_repo(&d.repository, d.repository.starts_with("oci://"));
    Ok(match pinned {
        Some(p) => Want {
            repo,
            name: d.name.clone(),
            version: p.version.clone(),
            exact: true,
        },
        None => Want {
            repo,
            name: d.name.clone(),
            version: d.version.clone(),
            exact: false,
        },
    })
}

/// Fetches what a local chart's dependencies need, into the outcome; on
/// any error the lock keeps what it had for the chart.
fn local_outcome(fetcher: &Fetcher<'_>, chart: LocalChart, outcome: &mut Outcome) {
    let path = chart.path.as_str();
    if let Some(e) = chart.error {
        outcome.errors.push(e);
        return;
    }
    if let Some(l) = chart.kept {
        for d in &l.dependencies {
            outcome.kept.push(format!("{} {} (for {path})", d.name, d.version));
        }
        outcome.lock.local.push(l);
        return;
    }
    let mut errors = Vec::new();
    let mut deps = BTreeMap::new();
    for ((d, want), pinned) in chart.deps.iter().zip(&chart.pinned) {
        let got = want
            .as_ref()
            .map_err(|e| PullError {
                chart: e.chart.clone(),
                message: e.message.clone(),
                help: e.help.clone(),
            })
            .and_then(|w| fetch_dependency(fetcher, path, d, w, pinned.as_ref()));
        match got {
            Ok(dep) => {
                outcome
                    .fetched
                    .push(format!("{} {} (for {path})", dep.name, dep.version));
                deps.insert(d.values_key().to_owned(), dep);
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        outcome.lock.local.push(LocalLock {
            path: path.to_owned(),
            spec: chart.spec,
            dependencies: deps.into_values().collect(),
        });
    } else {
        if let Some(l) = fetcher.state.lock.local(path) {
            outcome.lock.local.push(l.clone());
        }
        outcome.errors.extend(errors);
    }
}

/// Fetches one remote dependency of the local chart in `path`. A version
/// the lock pins must still be the same bytes.
fn fetch_dependency(
    fetcher: &Fetcher<'_>,
    path: &str,
    d: &Dependency,
    w: &Want,
    pinned: Option<&LockedDep>,
) -> Result<LockedDep, PullError> {
    let chart = format!("{} (dependency of {path})", shown(fetcher.net, w));
    let got = fetcher.fetch(w).map_err(|message| PullError {
        chart: chart.clone(),
        message,
        help: "check the dependency's repository and version in Chart.yaml".into(),
    })?;
    if let Some(p) = pinned
        && p.digest != got.digest
    {
        return Err(PullError {
            chart,
            message: format!(
                "the repository serves different bytes: strata.lock pins {}, fetched {}",
                p.digest, got.digest
            ),
            help: "if the new archive is trusted, run `strata charts pull --update`".into(),
        });
    }
    Ok(LockedDep {
        name: d.name.clone(),
        alias: d.alias.clone(),
        repository: d.repository.clone(),
        constraint: d.version.clone(),
        version: got.version,
        digest: got.digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_an_index_gives_are_taken_against_the_repository() {
        assert_eq!(resolve_url("http://h/charts", "web-1.tgz"), "http://h/charts/web-1.tgz");
        assert_eq!(
            resolve_url("http://h/charts/", "./web-1.tgz"),
            "http://h/charts/web-1.tgz"
        );
        assert_eq!(resolve_url("http://h/charts", "/dl/web-1.tgz"), "http://h/dl/web-1.tgz");
        assert_eq!(resolve_url("http://h/charts", "https://o/x.tgz"), "https://o/x.tgz");
        assert_eq!(index_url("https://h/charts/"), "https://h/charts/index.yaml");
    }
}
