//! Chart bumps: for each release whose chart version differs between the
//! base revision and the working tree, what the new version does to the
//! user's values, read from both archives in the chart store (each side's
//! `strata.lock` names its archive), without helm:
//!
//! - the overrides the new version no longer reads: keys the release's
//!   layers set (each with the file and line that set it, through the merge
//!   provenance) that the old version read and the new one does not — not
//!   in its `values.yaml`, not in its `values.schema.json`, and no template
//!   of it or of its subcharts reaches them ([`reads`] says how far that
//!   analysis goes);
//! - the chart defaults that changed under keys no layer sets, old and new;
//! - or, when an archive is not in the store, that it is not, and why.
//!
//! [`show`] writes them as text, Markdown and JSON.

mod chart;
mod gotmpl;
pub mod reads;
pub mod show;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use serde_json::Value as J;

use crate::charts::{self, Lock, Store, store::StoreError};
use crate::load::{Component, Environment, Platform};
use crate::pipeline::Compiled;
use crate::secrets::Secrets;
use crate::yaml::path::{Seg as PathSeg, ValuesPath};
use crate::yaml::{Node, Origin};

use chart::{Chart, Why};

/// One release's chart bump.
#[derive(Clone, Debug, PartialEq)]
pub struct Bump {
    pub env: String,
    pub component: String,
    pub chart: String,
    pub old_version: String,
    pub new_version: String,
    /// Where the working tree pins the new version.
    pub origin: Origin,
    pub outcome: Outcome,
}

/// What the comparison of the two versions found, or why there was none.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Compared(Findings),
    /// One side's archive cannot be read from the store.
    Unavailable {
        /// The base revision's version, or the working tree's.
        base: bool,
        reason: String,
        help: String,
    },
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Findings {
    pub stale: Vec<Stale>,
    pub defaults: Vec<ChangedDefault>,
    /// What the comparison could not judge.
    pub notes: Vec<String>,
}

/// A key the release sets that the old version read and the new one does not.
#[derive(Clone, Debug, PartialEq)]
pub struct Stale {
    /// The values path, `a.b."c.d"`.
    pub path: String,
    /// The layer whose value the merge keeps.
    pub origin: Origin,
    /// The other layers that set it, lowest first.
    pub also: Vec<Origin>,
    /// Where the old version read it: a template and line, `values.yaml`
    /// or `values.schema.json`.
    pub old_read: String,
    /// A key the new version has and the old did not, with a name near
    /// this one's: what it may have become.
    pub hint: Option<String>,
}

/// A chart default that changed under a key no layer of the release sets.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangedDefault {
    pub path: String,
    /// `None`: the version has no default there.
    pub old: Option<J>,
    pub new: Option<J>,
}

/// Where each side's archives are: both sides' locks and the store, and
/// the archives read so far (a chart bumped in several environments is
/// read once).
pub struct Charts {
    base_lock: Lock,
    head_lock: Lock,
    store: Option<Store>,
    /// The base revision as the user named it, for remedies.
    base_rev: String,
    read: Mutex<BTreeMap<String, Result<Arc<Chart>, String>>>,
}

impl Charts {
    pub fn new(base_lock: Lock, head_lock: Lock, store: Option<Store>, base_rev: &str) -> Charts {
        Charts {
            base_lock,
            head_lock,
            store,
            base_rev: base_rev.to_owned(),
            read: Mutex::new(BTreeMap::new()),
        }
    }

    /// One side's archive of a chart, read; or what is wrong, and the remedy.
    fn chart(&self, base: bool, pinned: &crate::load::Chart) -> Result<Arc<Chart>, (String, String)> {
        let (lock, at) = if base {
            (&self.base_lock, format!(" at {}", self.base_rev))
        } else {
            (&self.head_lock, String::new())
        };
        let pull = if base {
            format!(
                "the store keeps every archive pulled: run `strata charts pull` on a checkout of {} (or `strata charts add` the archive), then diff again",
                self.base_rev
            )
        } else {
            "run `strata charts pull`, then diff again".to_owned()
        };
        let again = || "remove .strata/charts and run `strata charts pull`".to_owned();
        let (repo, name, version) = charts::remote_key(pinned).unwrap_or_default();
        let Some(locked) = lock.find(&repo, &name, &version) else {
            return Err((format!("{name} {version} is not in strata.lock{at}"), pull));
        };
        let Some(store) = &self.store else {
            return Err(("there is no chart store to read".into(), pull));
        };
        let known = self.read.lock().ok().and_then(|m| m.get(&locked.digest).cloned());
        let read = match known {
            Some(r) => r,
            None => {
                let bytes = store.read(&locked.digest).map_err(|e| match e {
                    StoreError::Missing => (format!("{name} {version}{at} is not in .strata/charts"), pull.clone()),
                    StoreError::Mismatch { found } => (
                        format!(
                            "the stored archive of {name} {version}{at} is not the one strata.lock pins ({} holds {found})",
                            locked.digest
                        ),
                        again(),
                    ),
                    StoreError::Io(e) => (e, pull.clone()),
                })?;
                let read = Chart::read(&bytes).map(Arc::new);
                if let Ok(mut m) = self.read.lock() {
                    m.insert(locked.digest.clone(), read.clone());
                }
                read
            }
        };
        let c = read.map_err(|e| {
            (
                format!("the archive of {name} {version}{at} cannot be read: {e}"),
                again(),
            )
        })?;
        // The archive is the chart and version its lock entry names.
        if c.name != locked.name || c.version.trim_start_matches('v') != locked.version.trim_start_matches('v') {
            return Err((
                format!(
                    "strata.lock{at} pins {name} {version} to an archive of {} {}",
                    c.name, c.version
                ),
                again(),
            ));
        }
        Ok(c)
    }
}

/// The chart bumps of the environments both compiles hold: every release
/// in them whose remote chart keeps its name and changes its version.
pub fn releases(base: &Compiled, head: &Compiled, charts: &Charts) -> Vec<Bump> {
    let secrets = Secrets::union([&base.platform.secrets, &head.platform.secrets]);
    let mut todo = Vec::new();
    for r in &head.renders {
        let (Some(env), Some(base_env)) = (
            head.platform.environments.get(&r.env),
            base.platform.environments.get(&r.env),
        ) else {
            continue;
        };
        for c in head.platform.components_in(env) {
            let Some(was) = base
                .platform
                .components
                .get(&c.name)
                .filter(|b| base_env.takes(&b.name))
            else {
                continue;
            };
            if let (
                crate::load::Chart::Remote { name, version, .. },
                crate::load::Chart::Remote {
                    name: old_name,
                    version: old_version,
                    ..
                },
            ) = (&c.chart, &was.chart)
                && name == old_name
                && version.trim_start_matches('v') != old_version.trim_start_matches('v')
            {
                todo.push((env, c, was));
            }
        }
    }
    let mut out: Vec<Bump> = todo
        .par_iter()
        .with_max_len(1)
        .map(|(env, c, was)| bump(&head.platform, env, c, was, charts, &secrets))
        .collect();
    out.sort_by(|a, b| (&a.env, &a.component).cmp(&(&b.env, &b.component)));
    out
}

fn bump(
    platform: &Platform,
    env: &Environment,
    c: &Component,
    was: &Component,
    charts: &Charts,
    secrets: &Secrets,
) -> Bump {
    let unavailable = |base: bool, (reason, help): (String, String)| Outcome::Unavailable { base, reason, help };
    let outcome = match (charts.chart(true, &was.chart), charts.chart(false, &c.chart)) {
        (Err(e), _) => unavailable(true, e),
        (_, Err(e)) => unavailable(false, e),
        (Ok(old), Ok(new)) => Outcome::Compared(compare(platform, env, c, &old, &new, secrets)),
    };
    Bump {
        env: env.name.clone(),
        component: c.name.clone(),
        chart: c.chart.name().to_owned(),
        old_version: was.chart.version().unwrap_or_default().to_owned(),
        new_version: c.chart.version().unwrap_or_default().to_owned(),
        origin: crate::profiles::version_origin(c),
        outcome,
    }
}

/// What the new version does to one release's values.
fn compare(
    platform: &Platform,
    env: &Environment,
    c: &Component,
    old: &Chart,
    new: &Chart,
    secrets: &Secrets,
) -> Findings {
    let merged = crate::merge::merge_component(platform, c, env).values;
    let user = merged.to_json();
    let (old_release, new_release) = rayon::join(|| old.release_reads(&user), || new.release_reads(&user));
    let clean = |s: String| secrets.redact_text(&s).into_owned();
    let mut leaves = Vec::new();
    user_leaves(&merged, &mut Vec::new(), &mut leaves);
    let mut f = Findings::default();
    for (key, origin) in leaves {
        if new.why(&key, &new_release).is_some() {
            continue;
        }
        let Some(why) = old.why(&key, &old_release) else {
            continue;
        };
        let old_read = match why {
            Why::Template(loc) => loc.to_string(),
            Why::Values => format!("{}/values.yaml", old.name),
            Why::Schema => format!("{}/values.schema.json", old.name),
            Why::Unbounded => continue,
        };
        f.stale.push(Stale {
            path: clean(shown(&key)),
            also: other_layers(platform, c, env, &key, &origin),
            origin,
            old_read: clean(old_read),
            hint: hint(&key, old, new).map(clean),
        });
    }
    changed(
        Some(&old.defaults),
        Some(&new.defaults),
        Some(&merged),
        &mut Vec::new(),
        &mut f.defaults,
    );
    for d in &mut f.defaults {
        d.path = clean(std::mem::take(&mut d.path));
        for v in [&mut d.old, &mut d.new].into_iter().flatten() {
            secrets.redact_json(v);
        }
    }
    let mut notes: BTreeSet<String> = old.notes.iter().chain(&new.notes).cloned().collect();
    if let Some(loc) = new.reads_everything() {
        notes.insert(format!(
            "{} {} reads all of its values at once ({loc}), so every key counts as read",
            new.name, new.version
        ));
    }
    f.notes = notes.into_iter().map(clean).collect();
    f
}

/// A values path as the reviewer reads it: `a.b."c.d"`.
fn shown(key: &[String]) -> String {
    ValuesPath(key.iter().cloned().map(PathSeg::Key).collect()).to_string()
}

/// Every key the merged values set, down to what is not a non-empty
/// mapping, with the key's origin. strata's own lowest layer is not the
/// user's.
fn user_leaves(node: &Node, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Origin)>) {
    let Some(m) = node.as_map() else { return };
    for (k, e) in m.iter() {
        if *e.key_origin.file == *crate::load::templates::ARGO_HEALTH.0 {
            continue;
        }
        path.push(k.clone());
        match e.node.as_map() {
            Some(inner) if !inner.is_empty() => user_leaves(&e.node, path, out),
            _ => out.push((path.clone(), e.key_origin.clone())),
        }
        path.pop();
    }
}

/// The layers of the release, other than the one the merge keeps, that set `key`.
fn other_layers(platform: &Platform, c: &Component, env: &Environment, key: &[String], kept: &Origin) -> Vec<Origin> {
    let mut out = Vec::new();
    for file in platform.layer_files(env) {
        let Some(layer) = c.layers.get(&file) else { continue };
        let mut node = layer;
        let mut at = None;
        for k in key {
            match node.as_map().and_then(|m| m.get(k)) {
                Some(e) => {
                    at = Some(&e.key_origin);
                    node = &e.node;
                }
                None => {
                    at = None;
                    break;
                }
            }
        }
        if let Some(o) = at.filter(|o| *o != kept) {
            out.push(o.clone());
        }
    }
    out
}

/// The defaults that differ between `old` and `new` under keys the merged
/// values do not set: a key the user sets to anything but a mapping with
/// keys (a scalar, a list, `null`) hides everything under it; an empty
/// mapping hides nothing (Helm merges it with the defaults).
fn changed(
    old: Option<&J>,
    new: Option<&J>,
    user: Option<&Node>,
    path: &mut Vec<String>,
    out: &mut Vec<ChangedDefault>,
) {
    let user_map = match user.map(|u| u.as_map()) {
        Some(None) => return,
        Some(Some(m)) if !m.is_empty() => Some(m),
        _ => None,
    };
    let both_maps = matches!((old, new), (Some(J::Object(_)), Some(J::Object(_))));
    let one_map = matches!(old, Some(J::Object(_))) || matches!(new, Some(J::Object(_)));
    if old == new {
        return;
    }
    if both_maps || (one_map && user_map.is_some()) {
        let keys: BTreeSet<&String> = [old, new]
            .into_iter()
            .flatten()
            .filter_map(J::as_object)
            .flat_map(|m| m.keys())
            .collect();
        for k in keys {
            let (o, n) = (child(old, k), child(new, k));
            path.push(k.clone());
            let u = user_map.and_then(|m| m.get(k)).map(|e| &e.node);
            changed(o, n, u, path, out);
            path.pop();
        }
        return;
    }
    if path.is_empty() {
        return;
    }
    out.push(ChangedDefault {
        path: shown(path),
        old: old.cloned(),
        new: new.cloned(),
    });
}

fn child<'a>(v: Option<&'a J>, k: &str) -> Option<&'a J> {
    v.and_then(J::as_object).and_then(|m| m.get(k))
}

/// The key of `new` (absent from `old`) whose name is nearest the stale
/// key's last name, if near enough to be a rename.
fn hint(key: &[String], old: &Chart, new: &Chart) -> Option<String> {
    let last = key.last()?.to_lowercase();
    let mut paths = Vec::new();
    all_paths(&new.defaults, &mut Vec::new(), &mut paths, 0);
    paths
        .into_iter()
        .filter(|p| !chart::has_key(&old.defaults, p))
        .filter_map(|p| {
            let score = strsim::jaro_winkler(&last, &p.last()?.to_lowercase());
            (score >= 0.85).then_some((score, p))
        })
        .max_by(|(a, p), (b, q)| {
            a.total_cmp(b)
                .then_with(|| q.len().cmp(&p.len()))
                .then_with(|| q.cmp(p))
        })
        .map(|(_, p)| shown(&p))
}

/// Every key path of a values tree, to a bounded depth.
fn all_paths(v: &J, here: &mut Vec<String>, out: &mut Vec<Vec<String>>, depth: usize) {
    let J::Object(m) = v else { return };
    if depth > 8 {
        return;
    }
    for (k, x) in m {
        here.push(k.clone());
        out.push(here.clone());
        all_paths(x, here, out, depth + 1);
        here.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(text: &str) -> Node {
        crate::yaml::parse(&Arc::from("values.yaml"), text).unwrap()
    }

    #[test]
    fn changed_defaults_skip_what_the_user_sets() {
        let old = json!({"image": {"tag": "1", "repo": "a"}, "port": 80, "res": {"cpu": 1}, "gone": 1, "x": {"a": 1}});
        let new =
            json!({"image": {"tag": "2", "repo": "b"}, "port": 8080, "res": {"cpu": 2}, "x": 3, "added": {"k": true}});
        let user = node("image:\n  repo: mine\nport: 81\nres: {}\n");
        let mut out = Vec::new();
        changed(Some(&old), Some(&new), Some(&user), &mut Vec::new(), &mut out);
        let paths: Vec<&str> = out.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["added", "gone", "image.tag", "res.cpu", "x"]);
        assert_eq!(out[1].new, None);
        assert_eq!(out[0].old, None);
        assert_eq!(out[0].new, Some(json!({"k": true})));
    }

    #[test]
    fn leaves_carry_their_key_origin() {
        let user = node("a:\n  b: 1\n  c: {}\nd: [1]\n");
        let mut out = Vec::new();
        user_leaves(&user, &mut Vec::new(), &mut out);
        let got: Vec<(String, u32)> = out.iter().map(|(k, o)| (k.join("."), o.line)).collect();
        assert_eq!(got, [("a.b".to_owned(), 2), ("a.c".to_owned(), 3), ("d".to_owned(), 4)]);
    }
}
