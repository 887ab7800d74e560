//! `strata schemas pull`: like `strata charts pull`, one of the two commands
//! that use the network. It fetches the JSON Schemas of every kind the
//! platform renders — Kubernetes' own for `kubernetes_version`, and the
//! custom resources' (the GitOps engines', Cilium's, the charts') — into
//! `.strata/schemas/`, where validation finds them afterwards, offline and
//! without any configuration.

use std::collections::BTreeSet;
use std::path::Path;

use super::catalog::{Gvk, expand};
pub use crate::load::project::{DEFAULT_CRDS, DEFAULT_KUBERNETES, SchemaSources as Sources};

/// Where pulled schemas live, under the repository root.
pub const DIR: &str = ".strata/schemas";

/// Largest schema strata downloads.
const MAX_SCHEMA: u64 = 16 * 1024 * 1024;

/// The folder of the Kubernetes schemas for a version, under [`DIR`].
pub fn kubernetes_folder(version: &str) -> String {
    format!(
        "kubernetes/{}-standalone-strict",
        super::catalog::normalized_version(version)
    )
}

/// Whether an apiVersion is one of Kubernetes' own groups.
pub fn is_core(api_version: &str) -> bool {
    match api_version.split_once('/') {
        None => true,
        Some((group, _)) => !group.contains('.') || group.ends_with(".k8s.io"),
    }
}

/// What a pull did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub fetched: Vec<String>,
    pub kept: Vec<String>,
    /// Kinds with no published schema (a 404): validation will warn about them.
    pub unpublished: Vec<String>,
}

fn get(url: &str) -> Result<Option<Vec<u8>>, String> {
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(60)))
        .http_status_as_error(false)
        .build()
        .new_agent();
    let mut resp = agent.get(url).call().map_err(|e| format!("{url}: {e}"))?;
    match resp.status().as_u16() {
        200 => resp
            .body_mut()
            .with_config()
            .limit(MAX_SCHEMA)
            .read_to_vec()
            .map(Some)
            .map_err(|e| format!("{url}: {e}")),
        404 => Ok(None),
        code => Err(format!("{url}: HTTP {code}")),
    }
}

/// Fetches the schema of every kind in `gvks` that the store does not have
/// yet (all of them with `update`).
pub fn pull(
    root: &Path,
    gvks: &BTreeSet<Gvk>,
    version: &str,
    sources: &Sources,
    update: bool,
) -> Result<Outcome, Vec<String>> {
    let dot = root.join(".strata");
    let mut out = Outcome::default();
    let mut errors = Vec::new();
    for (api_version, kind) in gvks {
        let core = is_core(api_version);
        let (template, local) = if core {
            (
                &sources.kubernetes,
                format!(
                    "{}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json",
                    kubernetes_folder(version)
                ),
            )
        } else {
            (
                &sources.crds,
                "crds/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json".to_owned(),
            )
        };
        let what = format!("{kind} ({api_version})");
        let (url, rel) = match (
            expand(template, api_version, kind, version),
            expand(&local, api_version, kind, version),
        ) {
            (Ok(u), Ok(r)) => (u, r),
            (Err(e), _) | (_, Err(e)) => {
                errors.push(e);
                continue;
            }
        };
        // A kind is a Kubernetes name and a group a DNS name: anything else
        // must not become a path.
        let Ok(rel) = crate::world::normalize(&rel) else {
            errors.push(format!("{what}: not a name strata can store"));
            continue;
        };
        if rel.split('/').any(|p| p.starts_with('.') || p.contains('\\')) {
            errors.push(format!("{what}: not a name strata can store"));
            continue;
        }
        let path = dot.join("schemas").join(&rel);
        if !update && path.is_file() {
            out.kept.push(what);
            continue;
        }
        match get(&url) {
            Ok(Some(bytes)) => {
                if serde_json::from_slice::<serde_json::Value>(&bytes).is_err() {
                    errors.push(format!("{url}: not a JSON document"));
                    continue;
                }
                let dir = Path::new("schemas").join(Path::new(&rel).parent().unwrap_or(Path::new("")));
                if let Err(e) = crate::world::ensure_state_dir(&dot, &dir) {
                    errors.push(e.to_string());
                    continue;
                }
                match crate::world::disk::write_atomic(&path, &bytes) {
                    Ok(()) => out.fetched.push(what),
                    Err(e) => errors.push(format!("{}: {e}", path.display())),
                }
            }
            Ok(None) => out.unpublished.push(what),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_groups_and_folders() {
        assert!(is_core("v1") && is_core("apps/v1") && is_core("networking.k8s.io/v1"));
        assert!(!is_core("cilium.io/v2") && !is_core("helm.toolkit.fluxcd.io/v2"));
        assert_eq!(kubernetes_folder("1.35"), "kubernetes/v1.35.0-standalone-strict");
    }
}
