//! `strata import`: an existing Flux or Argo CD tree becomes a platform —
//! components, value layers and environments — and a compile of the
//! written platform proves it: each release's merged values, environment
//! by environment, must equal what the engine gives the release in the
//! source tree, computed by the engine's documented precedence.
//!
//! [`read`] copies the source tree into a folder of its own ([`copy`]),
//! turns it into [`Release`]s (one per release and environment, with its
//! values as the engine combines them) and lists what it cannot convert;
//! [`plan`] lays them out as files; [`verify`] compiles the written
//! platform with its charts rendered and compares values and objects.

mod argo;
mod chart_copy;
mod copy;
mod flux;
mod glob;
mod kustomize;
mod objects;
mod platform;
mod refs;
pub mod resolve;
mod sops;
mod tree;
pub mod values;
mod verify;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::diag::{Diagnostic, Sources, codes};
use crate::yaml::Origin;

pub use platform::{Check, Imported, plan};
pub use verify::{Verdict, verify};

/// The engine whose tree is imported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Flux,
    Argo,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Flux => "flux",
            Engine::Argo => "argo",
        }
    }
}

/// A release's chart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Chart {
    /// From a Helm repository or an OCI registry.
    Remote {
        repo_url: String,
        name: String,
        version: String,
        oci: bool,
    },
    /// A folder of the imported tree (a chart kept in git), copied into
    /// the platform.
    Local { dir: String },
}

impl Chart {
    /// The chart for messages.
    pub fn show(&self) -> String {
        match self {
            Chart::Remote { name, version, .. } => format!("{name} {version}"),
            Chart::Local { dir } => format!("the chart in {dir}"),
        }
    }
}

/// One release in one environment, as the source tree defines it.
#[derive(Clone, Debug)]
pub struct Release {
    /// What identifies the release across environments (`namespace/name`
    /// for Flux, the Application's or ApplicationSet's name for Argo CD).
    pub key: String,
    /// The component name it asks for.
    pub name: String,
    pub env: String,
    pub namespace: String,
    /// `None` when the chart cannot be converted (said in a note): the
    /// component is then not written.
    pub chart: Option<Chart>,
    /// The values the engine gives the release.
    pub values: Value,
    /// Releases (by name) that must be ready first.
    pub requires: Vec<String>,
    /// The Helm release name the engine installs it as, when the source
    /// sets one (strata installs a component under its own name).
    pub release_name: Option<String>,
    /// Where the source tree defines it.
    pub origin: Origin,
    /// What the engine gives the release that the import could not read
    /// (SOPS-encrypted values, values from a Secret outside git): such a
    /// release cannot be proven equal.
    pub unread: Vec<String>,
    /// Whether the engine installs the chart's CRDs (`includeCRDs` of a
    /// kustomize `helmCharts:` entry; Flux and Argo CD do by default).
    pub crds: bool,
    /// The namespace kustomize sets on every namespaced object the chart
    /// renders (the `namespace:` of a kustomization with `helmCharts:`).
    pub force_namespace: Option<String>,
}

impl Release {
    /// A release with the defaults of a Helm source: no release name of its
    /// own, everything read, the chart's CRDs installed.
    pub fn new(key: String, name: String, env: String, namespace: String, origin: Origin) -> Release {
        Release {
            key,
            name,
            env,
            namespace,
            chart: None,
            values: Value::Object(serde_json::Map::new()),
            requires: Vec::new(),
            release_name: None,
            origin,
            unread: Vec::new(),
            crds: true,
            force_namespace: None,
        }
    }
}

/// Where an environment's engine reads the platform repository.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitSource {
    pub url: String,
    /// The revision it follows, in Flux's vocabulary; `None`: the engine's
    /// default.
    pub git_ref: Option<crate::load::environment::GitRef>,
    /// The Secret with the credentials (Flux `secretRef`).
    pub secret: Option<String>,
}

/// What the source tree gives.
#[derive(Debug)]
pub struct Read {
    pub engine: Engine,
    /// The imported tree's folder, where local charts are copied from.
    pub root: PathBuf,
    pub releases: Vec<Release>,
    /// Per environment, the git source its engine reads, when the tree says.
    pub git: BTreeMap<String, GitSource>,
    /// What could not be converted, as warnings.
    pub notes: Vec<Diagnostic>,
    /// The copy `root` lies in, kept as long as the read is.
    pub kept: Option<Arc<copy::Copied>>,
}

/// The programs an import runs: kubectl for Flux trees (their folders are
/// built with `kubectl kustomize`), helm for Argo CD's app-of-apps charts.
#[derive(Clone, Debug, Default)]
pub struct Tools {
    pub kubectl: Option<PathBuf>,
    pub helm: Option<PathBuf>,
}

/// Reads the tree under `path` (shown in messages as `shown`). `Err` holds
/// input errors: nothing could be imported.
pub fn read(
    engine: Engine,
    path: &Path,
    shown: &str,
    tools: &Tools,
    sources: &Sources,
) -> Result<Read, Vec<Diagnostic>> {
    let copied = Arc::new(copy::copy_tree(path, shown)?);
    let tree = tree::read(&copied.root, shown, sources).map_err(|d| vec![d])?;
    let encrypted = encrypted_documents(&tree);
    let mut read = match engine {
        Engine::Flux => flux::read(tree, tools, &copied, sources)?,
        Engine::Argo => argo::read(tree, tools, &copied, sources)?,
    };
    let outside = outside_charts(&read);
    if !outside.is_empty() {
        return Err(outside);
    }
    read.notes.extend(copied.notes.iter().cloned());
    read.notes.extend(encrypted);
    scrub_releases(&mut read);
    read.kept = Some(copied);
    if read.releases.is_empty() {
        let what = match engine {
            Engine::Flux => "no HelmRelease in what any Flux root applies",
            Engine::Argo => "no Helm release in any Application or ApplicationSet",
        };
        let mut errors = read.notes;
        errors.push(
            Diagnostic::error(
                codes::IMPORT_SOURCE,
                Origin::file_start(shown),
                format!("{shown}: {what}"),
            )
            .with_help(match engine {
                Engine::Flux => "name the top of the Flux repository: the folder that holds its flux-system folders, or clusters/<name>/",
                Engine::Argo => "name the folder that holds the Application and ApplicationSet files",
            }),
        );
        return Err(errors);
    }
    Ok(read)
}

/// A `file://` dependency of a chart kept in the tree that leads out of
/// it, named at each release of that chart (E065): helm would read it
/// from elsewhere on the disk.
fn outside_charts(read: &Read) -> Vec<Diagnostic> {
    let mut checked = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for r in &read.releases {
        let Some(Chart::Local { dir }) = &r.chart else { continue };
        if !checked.insert(dir.clone()) {
            continue;
        }
        for why in chart_copy::outside_dependencies(&read.root, dir) {
            out.push(copy::outside(r.origin.clone(), format!("{}: {why}", r.key)));
        }
    }
    out
}

/// Every SOPS-encrypted document of the tree, named: strata cannot
/// decrypt them, so nothing of them is imported.
fn encrypted_documents(tree: &tree::Tree) -> Vec<Diagnostic> {
    tree.docs
        .iter()
        .filter(|d| sops::has_sops_block(&d.value))
        .map(|d| {
            let what = match (d.kind(), d.name()) {
                ("", _) => "a values document".to_owned(),
                (k, "") => format!("a {k}"),
                (k, n) => format!("{k} {n}"),
            };
            not_converted(
                d.origin(),
                format!("{} holds {what} encrypted with SOPS; strata cannot decrypt it, and writes none of it", d.origin().file),
                "a release whose values come from it is listed as unproven; keep the secret values in the cluster (an ExternalSecret) and the rest in plain values",
            )
        })
        .collect()
}

/// Takes SOPS ciphertext out of every release's values, naming each
/// release that had some: its values are then not what the engine gives.
fn scrub_releases(read: &mut Read) {
    for r in &mut read.releases {
        let taken = sops::scrub(&mut r.values);
        if taken.is_empty() {
            continue;
        }
        let at = taken.join(", ");
        r.unread.push(format!("SOPS-encrypted values at {at}"));
        read.notes.push(not_converted(
            r.origin.clone(),
            format!(
                "{} in environment {}: the values at {at} are encrypted with SOPS; they are not written",
                r.key, r.env
            ),
            "keep secret values in the cluster (an ExternalSecret, or a Secret the chart reads), not in Helm values",
        ));
    }
}

/// A warning that something was not converted, at `origin`.
pub(crate) fn not_converted(origin: Origin, message: impl Into<String>, help: &str) -> Diagnostic {
    Diagnostic::warning(codes::NOT_CONVERTED, origin, message).with_help(help)
}

/// Whether a chart version is one version (`1.2.3`, `v1.2.3`), not a range
/// or anything else helm would have to resolve.
pub(crate) fn one_version(version: &str) -> bool {
    semver::Version::parse(version.trim_start_matches('v')).is_ok()
}

/// What the reason a release is not rendered says of a version range the
/// import could not pin.
pub(crate) const UNPINNED: &str = "is a range the import could not pin";

/// Whether `path` lies inside `root` once symbolic links are followed: a
/// link in the imported tree must not lead the import out of it.
pub(crate) fn inside(root: &Path, path: &Path) -> bool {
    match (root.canonicalize(), path.canonicalize()) {
        (Ok(r), Ok(p)) => p.starts_with(r),
        _ => false,
    }
}

/// A name made fit for a component or environment: lowercase letters,
/// digits and `-`, at most `max` characters; `None` if nothing is left.
pub(crate) fn dns_label(name: &str, max: usize) -> Option<String> {
    let mut out = String::new();
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_matches('-').chars().take(max).collect();
    let out = out.trim_end_matches('-').to_owned();
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_become_dns_labels() {
        assert_eq!(super::dns_label("Ingress_NGINX", 53).as_deref(), Some("ingress-nginx"));
        assert_eq!(super::dns_label("--a..b--", 53).as_deref(), Some("a-b"));
        assert_eq!(super::dns_label("___", 53), None);
        assert_eq!(super::dns_label("abc-def", 4).as_deref(), Some("abc"));
    }
}
