//! `strata charts add FILE.tgz [--repo URL]`: an archive you already have
//! (downloaded by hand, copied into an air-gapped network) put into the
//! store and pinned in `strata.lock`, without the network.
//!
//! The archive is checked as a pull checks one, and more strictly: a
//! gzip-compressed tar of at most [`super::store::MAX_ARCHIVE`] bytes, every
//! entry a file or folder under the one chart folder (no link, no `..`, no
//! absolute path), a `Chart.yaml` with a chart name and version helm takes.
//!
//! Which lock entry it becomes: with `--repo`, the chart of that repository;
//! without, the one repository that the `config.yaml` files pin this chart
//! name and version from. An archive no `config.yaml` pins needs `--repo`
//! (and is then pinned with a note: `strata charts pull` keeps only pinned
//! charts); one pinned from several repositories needs `--repo` to say
//! which. An entry the lock already has for another archive is never
//! replaced: the lock is what was reviewed.

use std::path::Path;

use super::lock::{self, Locked};
use super::{State, archive};
use crate::helm::args::{check_chart_name, check_version};
use crate::load::Platform;

/// What adding did.
#[derive(Debug)]
pub struct Added {
    pub entry: Locked,
    /// The lock's new text, when it changed.
    pub lock_text: Option<String>,
    /// Things to say: an unpinned chart, an OCI chart without its manifest
    /// digest.
    pub notes: Vec<String>,
}

/// Why an archive was not added.
#[derive(Debug)]
pub struct AddError {
    pub message: String,
    pub help: String,
}

fn refused(message: impl Into<String>, help: impl Into<String>) -> AddError {
    AddError {
        message: message.into(),
        help: help.into(),
    }
}

/// Reads and checks the archive at `file`: its bytes and chart.
pub fn read_file(file: &Path) -> Result<(Vec<u8>, archive::ChartInfo), AddError> {
    let meta = std::fs::metadata(file).map_err(|e| {
        refused(
            format!("cannot read it: {e}"),
            "give the path of a chart archive (.tgz), as `helm package` or `helm pull` writes it",
        )
    })?;
    if !meta.is_file() {
        return Err(refused(
            "it is not a regular file",
            "give the path of a chart archive (.tgz)",
        ));
    }
    if meta.len() > super::store::MAX_ARCHIVE {
        return Err(refused(
            format!(
                "it is {} bytes, over the limit of {} MiB for a chart archive",
                meta.len(),
                super::store::MAX_ARCHIVE >> 20
            ),
            "a chart archive holds templates and values; check that this is one",
        ));
    }
    let bytes = std::fs::read(file).map_err(|e| refused(format!("cannot read it: {e}"), "check its permissions"))?;
    let info = archive::verify_archive(&bytes).map_err(|e| {
        refused(
            format!("it is not a sound chart archive: {e}"),
            "package the chart with `helm package`, or fetch it again from its repository",
        )
    })?;
    check_chart_name(&info.name)
        .and_then(|()| check_version(&info.version))
        .map_err(|e| {
            refused(
                format!("its Chart.yaml: {e}"),
                "package the chart with a valid name and version",
            )
        })?;
    Ok((bytes, info))
}

/// The repository URL and version string the lock entry takes for a chart
/// `name` `version`, and notes.
fn entry_key(
    platform: &Platform,
    name: &str,
    version: &str,
    repo: Option<&str>,
) -> Result<(String, String, Vec<String>), AddError> {
    let same = |v: &str| v.trim_start_matches('v') == version.trim_start_matches('v');
    let pins: Vec<(String, String)> = platform
        .components
        .values()
        .filter_map(|c| super::remote_key(&c.chart))
        .filter(|(_, n, v)| n == name && same(v))
        .map(|(r, _, v)| (r, v))
        .collect();
    let mut notes = Vec::new();
    let Some(repo) = repo else {
        let mut repos: Vec<&String> = pins.iter().map(|(r, _)| r).collect();
        repos.sort();
        repos.dedup();
        return match repos.as_slice() {
            [] => Err(refused(
                format!(
                    "no config.yaml pins chart {name} {version}, so strata cannot tell which repository it is from"
                ),
                format!(
                    "pin it in a component's config.yaml (chart: repoURL, name: {name}, version: {version}), or pass --repo URL"
                ),
            )),
            [one] => {
                let v = pins
                    .iter()
                    .find(|(r, _)| r == *one)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                Ok(((*one).clone(), v, notes))
            }
            many => Err(refused(
                format!(
                    "config.yaml files pin chart {name} {version} from {} repositories: {}",
                    many.len(),
                    many.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")
                ),
                "pass --repo URL to say which one this archive is from",
            )),
        };
    };
    let oci = repo.starts_with("oci://");
    if !(oci || repo.starts_with("https://") || repo.starts_with("http://")) {
        return Err(refused(
            format!("--repo {repo} is not an http(s):// or oci:// URL"),
            "give the repository URL exactly as the config.yaml pins it",
        ));
    }
    let repo = lock::normalize_repo(repo, oci);
    let v = match pins.iter().find(|(r, _)| *r == repo) {
        Some((_, v)) => v.clone(),
        None => {
            notes.push(format!(
                "no config.yaml pins chart {name} {version} from {repo}; the entry stays in {} until `strata charts pull` writes the lock again (it keeps only pinned charts)",
                lock::FILE
            ));
            version.to_owned()
        }
    };
    Ok((repo, v, notes))
}

/// Adds the archive at `file` to the store and the lock.
pub fn add(platform: &Platform, state: &State, file: &Path, repo: Option<&str>) -> Result<Added, AddError> {
    let (bytes, info) = read_file(file)?;
    let (repo_url, version, mut notes) = entry_key(platform, &info.name, &info.version, repo)?;
    let digest = crate::world::disk::digest(&bytes);
    if let Some(old) = state.lock.find(&repo_url, &info.name, &version)
        && old.digest != digest
    {
        let at = old
            .origin
            .as_ref()
            .map(|o| format!(" (line {})", o.line))
            .unwrap_or_default();
        return Err(refused(
            format!(
                "{} already pins {} {version} from {repo_url} to {}{at}; this archive is {digest}",
                lock::FILE,
                info.name,
                old.digest
            ),
            format!(
                "if this archive is the one to trust, delete that entry from {} and run `strata charts add` again; `strata charts pull --update` fetches the repository's",
                lock::FILE
            ),
        ));
    }
    state.store.put(&bytes).map_err(|e| {
        refused(
            format!("cannot store it: {}: {e}", state.store.dir.display()),
            "check that .strata/ is writable",
        )
    })?;
    // Pinned to this very archive already: the lock stays as it is.
    if let Some(old) = state.lock.find(&repo_url, &info.name, &version) {
        return Ok(Added {
            entry: old.clone(),
            lock_text: None,
            notes,
        });
    }
    if repo_url.starts_with("oci://") {
        notes.push(format!(
            "an archive added offline has no OCI manifest digest: the tree pins {}'s OCIRepository by its tag until `strata charts pull --update` records the digest",
            info.name
        ));
    }
    let entry = Locked {
        repo_url,
        name: info.name.clone(),
        version,
        digest,
        manifest_digest: None,
        origin: None,
    };
    let mut lock = state.lock.clone();
    lock.charts.push(entry.clone());
    Ok(Added {
        entry,
        lock_text: Some(lock.to_text()),
        notes,
    })
}
