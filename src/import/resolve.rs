//! Chart version ranges (`1.x`, `>=1.0.0`), which Flux and Argo CD resolve
//! anew at every reconcile, pinned to the version they resolve to today:
//! from a Helm repository's index, the newest version the range admits
//! (Helm's rules, see [`crate::charts::index::newest`]); from an OCI
//! registry, what `helm show chart --version <range>` picks. strata pins
//! one version per chart, so the import writes that one and says so; a
//! range it cannot resolve is written as it is, and the release is not
//! rendered.

use std::collections::BTreeMap;

use super::{Chart, Read, not_converted};
use crate::charts::http::Http;
use crate::charts::index;
use crate::diag::Diagnostic;
use crate::helm::Helm;

/// Pins every range of `read`'s releases; the notes say what was pinned,
/// or why not.
pub fn ranges(read: &mut Read, http: &Http, helm: Option<&Helm>) -> Vec<Diagnostic> {
    let mut notes = Vec::new();
    let mut resolved: BTreeMap<(String, String, String), Result<String, String>> = BTreeMap::new();
    for r in &mut read.releases {
        let Some(Chart::Remote {
            repo_url,
            name,
            version,
            oci,
        }) = &mut r.chart
        else {
            continue;
        };
        if super::one_version(version) {
            continue;
        }
        let key = (repo_url.clone(), name.clone(), version.clone());
        let found = resolved
            .entry(key)
            .or_insert_with(|| {
                if *oci {
                    from_registry(helm, repo_url, name, version)
                } else {
                    from_index(http, repo_url, name, version)
                }
            })
            .clone();
        match found {
            Ok(v) => {
                notes.push(not_converted(
                    r.origin.clone(),
                    format!("{}: chart {name} {version} is pinned to {v}, the newest version the range admits today; the engine moves to newer ones as they come, strata renders this one", r.key),
                    "raise the version in config.yaml when you upgrade (`strata charts pull --update` fetches it)",
                ));
                *version = v;
            }
            Err(why) => notes.push(not_converted(
                r.origin.clone(),
                format!(
                    "{}: chart {name} {version} cannot be pinned: {why}; it is written as it is, and not rendered",
                    r.key
                ),
                "write the version the cluster runs in config.yaml",
            )),
        }
    }
    notes
}

/// Offline, where nothing is pinned: each release whose chart version is
/// not one version, said to be written as it is. Once read, a range is said
/// here or by [`ranges`], never by both.
pub fn unpinned(read: &Read) -> Vec<Diagnostic> {
    read.releases
        .iter()
        .filter_map(|r| match &r.chart {
            Some(Chart::Remote { version, .. }) if !super::one_version(version) => Some(not_converted(
                r.origin.clone(),
                format!("chart version `{version}` is not one version; it is written as it is"),
                "pin one version in config.yaml: `strata charts pull` fetches exactly that",
            )),
            _ => None,
        })
        .collect()
}

fn from_index(http: &Http, repo: &str, name: &str, range: &str) -> Result<String, String> {
    let url = format!("{}/index.yaml", repo.trim_end_matches('/'));
    let bytes = http.get(&url, index::MAX_BYTES, "index.yaml")?;
    let want = [name.to_owned()].into_iter().collect();
    let versions = index::read(&bytes, &want).map_err(|e| format!("{url}: {e}"))?;
    let list = versions.get(name).map(Vec::as_slice).unwrap_or_default();
    let range = if range.is_empty() { "*" } else { range };
    match index::newest(list, range)? {
        Some(r) => Ok(r.version.clone()),
        None => Err(format!("{url} lists no version of {name} in {range}")),
    }
}

fn from_registry(helm: Option<&Helm>, repo: &str, name: &str, range: &str) -> Result<String, String> {
    let helm = helm.ok_or("reading an OCI registry needs helm, and there is none on the PATH")?;
    let reference = format!("{}/{}", repo.trim_end_matches('/'), name);
    let version = format!("--version={}", if range.is_empty() { "*" } else { range });
    crate::helm::args::check_range(range.trim()).or_else(|e| if range.is_empty() { Ok(()) } else { Err(e) })?;
    let out = helm
        .run(
            &["show", "chart", version.as_str(), "--", reference.as_str()],
            None,
            true,
        )
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out);
    text.lines()
        .find_map(|l| l.strip_prefix("version:"))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .filter(|v| super::one_version(v))
        .ok_or_else(|| format!("helm show chart {reference} printed no version"))
}
