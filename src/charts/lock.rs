//! `strata.lock`: the digest of every chart archive the platform renders
//! with, written by `strata charts pull` and committed, as OpenTofu's
//! `.terraform.lock.hcl` is. Every other command checks the archives it uses
//! against it.

use std::sync::Arc;

use serde_json::{Value as J, json};

use crate::diag::{Diagnostic, Sources, codes};
use crate::load::decode::Fields;
use crate::world::{World, WorldError};
use crate::yaml::{Node, Origin};

pub const FILE: &str = "strata.lock";

/// A remote chart, pinned by digest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Locked {
    pub repo_url: String,
    pub name: String,
    pub version: String,
    /// The sha256 of the archive's bytes.
    pub digest: String,
    /// For a chart from an OCI registry, the digest of its OCI manifest as
    /// `helm pull` printed it: what the tree pins an OCIRepository to.
    /// Unknown for an archive added with `strata charts add`.
    pub manifest_digest: Option<String>,
    pub origin: Option<Origin>,
}

/// A dependency of a local chart, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockedDep {
    pub name: String,
    /// The alias `Chart.yaml` gives it, when one chart is used twice.
    pub alias: Option<String>,
    pub repository: String,
    /// The version range `Chart.yaml` asks for.
    pub constraint: String,
    /// The version it resolved to.
    pub version: String,
    pub digest: String,
}

/// The resolved dependencies of a chart inside the repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalLock {
    pub path: String,
    /// A digest of the dependencies `Chart.yaml` lists, to tell when they
    /// change and need resolving again.
    pub spec: String,
    pub dependencies: Vec<LockedDep>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lock {
    pub charts: Vec<Locked>,
    pub local: Vec<LocalLock>,
}

/// A repository URL as the lock compares it: no trailing slash, and an OCI
/// registry always with its `oci://` scheme.
pub fn normalize_repo(url: &str, oci: bool) -> String {
    let u = url.trim().trim_end_matches('/');
    if oci && !u.starts_with("oci://") {
        format!("oci://{u}")
    } else {
        u.to_owned()
    }
}

impl Lock {
    pub fn find(&self, repo_url: &str, name: &str, version: &str) -> Option<&Locked> {
        let want = repo_url.trim_end_matches('/');
        self.charts
            .iter()
            .find(|c| c.repo_url.trim_end_matches('/') == want && c.name == name && c.version == version)
    }

    pub fn local(&self, path: &str) -> Option<&LocalLock> {
        self.local.iter().find(|l| l.path == path)
    }

    /// The lock file's text: sorted, so the same charts give the same bytes.
    pub fn to_text(&self) -> String {
        let mut charts = self.charts.clone();
        charts.sort_by(|a, b| (&a.repo_url, &a.name, &a.version).cmp(&(&b.repo_url, &b.name, &b.version)));
        charts.dedup_by(|a, b| a.repo_url == b.repo_url && a.name == b.name && a.version == b.version);
        let mut local = self.local.clone();
        local.sort_by(|a, b| a.path.cmp(&b.path));
        let mut doc = json!({
            "version": 1,
            "charts": charts.iter().map(|c| {
                let mut v = json!({
                    "repoURL": c.repo_url, "name": c.name, "version": c.version, "digest": c.digest,
                });
                if let Some(m) = &c.manifest_digest {
                    v["manifest_digest"] = json!(m);
                }
                v
            }).collect::<Vec<_>>(),
        });
        if !local.is_empty() {
            doc["local"] = J::Array(
                local
                    .iter()
                    .map(|l| {
                        json!({
                            "path": l.path,
                            "spec": l.spec,
                            "dependencies": l.dependencies.iter().map(|d| {
                                let mut v = json!({
                                    "name": d.name, "repository": d.repository, "constraint": d.constraint,
                                    "version": d.version, "digest": d.digest,
                                });
                                if let Some(a) = &d.alias {
                                    v["alias"] = json!(a);
                                }
                                v
                            }).collect::<Vec<_>>(),
                        })
                    })
                    .collect(),
            );
        }
        let body = crate::yaml::to_sorted_yaml(&doc);
        format!(
            "# strata.lock: the digest of every chart archive this platform renders with.\n\
             # Written by `strata charts pull`; commit it. Do not edit by hand.\n{body}"
        )
    }
}

const KEYS: &[&str] = &["version", "charts", "local"];
const CHART_KEYS: &[&str] = &["repoURL", "name", "version", "digest", "manifest_digest"];
const LOCAL_KEYS: &[&str] = &["path", "spec", "dependencies"];
const DEP_KEYS: &[&str] = &["name", "alias", "repository", "constraint", "version", "digest"];

fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
}

/// Reads `strata.lock` if there is one. Errors are input errors at the line.
pub fn read(world: &dyn World, sources: &Sources) -> Result<Option<Lock>, Vec<Diagnostic>> {
    let node = match world.read_text(FILE) {
        Err(WorldError::NotFound) => return Ok(None),
        Err(e) => return Err(vec![crate::load::files::io_error(&Arc::from(FILE), &e)]),
        Ok(text) => {
            let file: Arc<str> = Arc::from(FILE);
            sources.insert(&file, &text);
            crate::yaml::parse(&file, &text).map_err(|e| vec![crate::load::files::syntax_error(e)])?
        }
    };
    let mut diags = Vec::new();
    let lock = decode(&node, &mut diags);
    if diags.is_empty() { Ok(Some(lock)) } else { Err(diags) }
}

fn digest_field(f: &Fields<'_>, diags: &mut Vec<Diagnostic>) -> String {
    checked_digest(f.required_string("digest", diags), diags)
}

fn checked_digest(field: Option<(String, Origin)>, diags: &mut Vec<Diagnostic>) -> String {
    match field {
        Some((d, _)) if is_digest(&d) => d,
        Some((d, o)) => {
            diags.push(
                Diagnostic::error(codes::SHAPE, o, format!("`{d}` is not a digest"))
                    .with_label("expected sha256:<64 hex digits>")
                    .with_help("run `strata charts pull --update` to write the lock file again"),
            );
            String::new()
        }
        None => String::new(),
    }
}

fn decode(node: &Node, diags: &mut Vec<Diagnostic>) -> Lock {
    let f = Fields::new(node, FILE, KEYS, diags);
    let mut lock = Lock::default();
    let items = |key: &str| match f.get(key).map(|n| &n.value) {
        Some(crate::yaml::Value::Seq(items)) => items.clone(),
        _ => Vec::new(),
    };
    for item in items("charts") {
        let cf = Fields::new(&item, "a locked chart", CHART_KEYS, diags);
        let s = |k: &str, diags: &mut Vec<Diagnostic>| cf.required_string(k, diags).map(|x| x.0).unwrap_or_default();
        let repo_url = s("repoURL", diags);
        let name = s("name", diags);
        let version = s("version", diags);
        let digest = digest_field(&cf, diags);
        let manifest_digest = cf
            .string("manifest_digest", diags)
            .map(|m| checked_digest(Some(m), diags));
        lock.charts.push(Locked {
            repo_url,
            name,
            version,
            digest,
            manifest_digest,
            origin: Some(item.origin.clone()),
        });
    }
    for item in items("local") {
        let lf = Fields::new(&item, "a local chart's lock", LOCAL_KEYS, diags);
        let path = lf.required_string("path", diags).map(|x| x.0).unwrap_or_default();
        let spec = lf.string("spec", diags).map(|x| x.0).unwrap_or_default();
        let mut dependencies = Vec::new();
        if let Some(crate::yaml::Value::Seq(deps)) = lf.get("dependencies").map(|n| &n.value) {
            for d in deps {
                let df = Fields::new(d, "a locked dependency", DEP_KEYS, diags);
                let s = |k: &str, diags: &mut Vec<Diagnostic>| {
                    df.required_string(k, diags).map(|x| x.0).unwrap_or_default()
                };
                dependencies.push(LockedDep {
                    name: s("name", diags),
                    alias: df.string("alias", diags).map(|x| x.0),
                    repository: s("repository", diags),
                    constraint: df.string("constraint", diags).map(|x| x.0).unwrap_or_default(),
                    version: s("version", diags),
                    digest: digest_field(&df, diags),
                });
            }
        }
        lock.local.push(LocalLock {
            path,
            spec,
            dependencies,
        });
    }
    lock
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_text_round_trips() {
        let d = format!("sha256:{}", "a".repeat(64));
        let lock = Lock {
            charts: vec![Locked {
                repo_url: "https://charts.example.com".into(),
                name: "web".into(),
                version: "1.0.0".into(),
                digest: d.clone(),
                manifest_digest: Some(format!("sha256:{}", "b".repeat(64))),
                origin: None,
            }],
            local: vec![LocalLock {
                path: "charts/app".into(),
                spec: d.clone(),
                dependencies: vec![LockedDep {
                    name: "web".into(),
                    alias: Some("front".into()),
                    repository: "https://charts.example.com".into(),
                    constraint: "^1".into(),
                    version: "1.0.0".into(),
                    digest: d,
                }],
            }],
        };
        let text = lock.to_text();
        let world = crate::world::MemWorld::new("2026-01-01").with(FILE, text.as_bytes());
        let mut back = read(&world, &Sources::default()).unwrap().unwrap();
        back.charts[0].origin = None;
        assert_eq!(back, lock);
        assert!(back.find("https://charts.example.com/", "web", "1.0.0").is_some());
    }

    #[test]
    fn a_bad_digest_is_an_error_at_its_line() {
        let world = crate::world::MemWorld::new("2026-01-01").with(
            FILE,
            "version: 1\ncharts:\n  - {repoURL: https://x, name: a, version: 1.0.0, digest: md5:00}\n",
        );
        let e = read(&world, &Sources::default()).unwrap_err();
        assert_eq!(e[0].origin.line, 3);
    }
}
