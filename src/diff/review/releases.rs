//! Chart bumps, one line each, and the noise a bump makes in the object
//! diffs. A chart writes its own version into labels of every object it
//! renders (`helm.sh/chart: web-1.0.1`, `app.kubernetes.io/version`, the
//! older `chart: web-1.0.1`), and a hash of its configuration into
//! `checksum/*` annotations of pod templates, so that a patch release
//! "changes" every object. Those keys are taken out of each object's diff
//! and counted once per release instead: "chart web 1.0.0 → 1.0.1:
//! relabelled 12 objects; 1 changed". A `checksum/*` annotation that
//! changes without a bump still means the pods restart: the line names the
//! workloads.

use std::collections::BTreeMap;

use serde_json::Value as J;

use super::{EnvSides, Pair};
use crate::render::{EnvRender, Source};
use crate::yaml::Origin;

/// Labels a chart sets to its own version.
const VERSION_LABELS: &[&str] = &["helm.sh/chart", "app.kubernetes.io/version"];

/// One release (a component's chart in an environment) whose chart
/// version changed, or whose objects changed in folded keys alone.
#[derive(Clone, Debug, PartialEq)]
pub struct Release {
    pub env: String,
    pub component: String,
    /// The chart's name.
    pub chart: String,
    /// The chart version on each side (`None`: no chart there).
    pub from: Option<String>,
    pub to: Option<String>,
    /// Whether helm rendered the chart on both sides, so that its effect
    /// on the objects is known.
    pub rendered: bool,
    /// Objects whose only change is the chart's version labels and
    /// checksum annotations, taken out of the diff.
    pub folded: usize,
    /// The chart's objects added, changed (beyond the folded keys) and
    /// removed.
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
    /// Workloads whose pod template's `checksum/*` annotations changed:
    /// their pods restart.
    pub restarts: Vec<String>,
    /// More lines about the bump from other signals (see
    /// [`super::Review::release_mut`]).
    pub notes: Vec<String>,
    /// What the new version does to the user's values, read from both
    /// archives ([`crate::diff::bump`]), shown under the bump's line.
    pub audit: Option<Audit>,
}

/// A chart bump's reading of the user's values against both versions.
#[derive(Clone, Debug, PartialEq)]
pub struct Audit {
    /// Where the working tree pins the new version.
    pub origin: Origin,
    /// The version the base pins, as written.
    pub old_version: String,
    pub outcome: crate::diff::bump::Outcome,
}

impl Release {
    /// Whether the chart version changed.
    pub fn bumped(&self) -> bool {
        self.from != self.to
    }
}

/// The releases of the environments compared, gathered object by object.
pub(super) struct Releases {
    by: BTreeMap<(String, String), Release>,
}

/// A component's chart name and version on one side.
pub(crate) fn chart_of(r: &EnvRender, platform: &crate::load::Platform, component: &str) -> Option<(String, String)> {
    if let Some(info) = r.chart_info.get(component) {
        return Some((info.name.clone(), info.version.clone()));
    }
    let c = platform.components.get(component)?;
    Some((c.chart.name().to_owned(), c.chart.version()?.to_owned()))
}

impl Releases {
    pub(super) fn new(envs: &BTreeMap<String, EnvSides<'_>>) -> Releases {
        let mut by = BTreeMap::new();
        for (env, sides) in envs {
            let mut components: Vec<&String> = [sides.base, sides.head]
                .into_iter()
                .flatten()
                .flat_map(|r| r.merged.keys())
                .collect();
            components.sort();
            components.dedup();
            for c in components {
                let base = sides.base.and_then(|r| {
                    let kept = sides.base_charts.and_then(|k| k.get(&(env.clone(), c.clone())));
                    match r.chart_info.get(c.as_str()) {
                        None if kept.is_some() => kept.cloned(),
                        _ => chart_of(r, sides.base_platform, c),
                    }
                });
                let head = sides.head.and_then(|r| chart_of(r, sides.platform, c));
                let rendered = [sides.base, sides.head]
                    .iter()
                    .all(|r| r.is_some_and(|r| r.inflated(c)));
                let Some(chart) = head.as_ref().or(base.as_ref()).map(|(n, _)| n.clone()) else {
                    continue;
                };
                by.insert(
                    (env.clone(), c.clone()),
                    Release {
                        env: env.clone(),
                        component: c.clone(),
                        chart,
                        from: base.map(|(_, v)| v),
                        to: head.map(|(_, v)| v),
                        rendered,
                        folded: 0,
                        added: 0,
                        changed: 0,
                        removed: 0,
                        restarts: Vec::new(),
                        notes: Vec::new(),
                        audit: None,
                    },
                );
            }
        }
        Releases { by }
    }

    /// Whether the chart of `component` in `env` changed version.
    pub(super) fn bumped(&self, env: &str, component: &str) -> bool {
        self.by
            .get(&(env.to_owned(), component.to_owned()))
            .is_some_and(|r| r.from.is_some() && r.to.is_some() && r.bumped())
    }

    /// Counts one object of a release's chart.
    pub(super) fn object(&mut self, pair: &Pair<'_>, noise_only: bool) {
        if !matches!(pair.object.source, Source::Chart { .. }) {
            return;
        }
        let Some(c) = pair.component else { return };
        let Some(r) = self.by.get_mut(&(pair.env.to_owned(), c.to_owned())) else {
            return;
        };
        match (pair.base, pair.head, noise_only) {
            (Some(_), Some(_), true) => r.folded += 1,
            (Some(_), Some(_), false) => r.changed += 1,
            (None, Some(_), _) => r.added += 1,
            (Some(_), None, _) => r.removed += 1,
            (None, None, _) => {}
        }
    }

    /// Notes a workload whose pods restart because a checksum changed.
    pub(super) fn restart(&mut self, pair: &Pair<'_>, base: &J, head: &J) {
        let checksums = |v: &J| -> Vec<(String, J)> {
            let Some(J::Object(a)) = super::immutable::at(v, &["spec", "template", "metadata", "annotations"]) else {
                return Vec::new();
            };
            a.iter()
                .filter(|(k, _)| k.starts_with("checksum/"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let (a, b) = (checksums(base), checksums(head));
        if a == b || (a.is_empty() && b.is_empty()) {
            return;
        }
        let Some(c) = pair.component else { return };
        if let Some(r) = self.by.get_mut(&(pair.env.to_owned(), c.to_owned())) {
            r.restarts.push(pair.display());
        }
    }

    pub(super) fn finish(self) -> Vec<Release> {
        self.by
            .into_values()
            .filter(|r| (r.bumped() && r.from.is_some() && r.to.is_some()) || r.folded > 0 || !r.restarts.is_empty())
            .map(|mut r| {
                r.restarts.sort();
                r.restarts.dedup();
                r
            })
            .collect()
    }
}

/// `base` with the keys a chart writes for its version (when `labels`)
/// and its checksums set as `head` has them; `None` when no such key
/// differs. An object whose folded base equals its head changed in these
/// keys alone.
pub fn fold_noise(base: &J, head: &J, labels: bool) -> Option<J> {
    let mut folded = base.clone();
    let mut changed = false;
    walk(&mut folded, head, labels, &mut changed);
    changed.then_some(folded)
}

fn walk(b: &mut J, h: &J, labels: bool, changed: &mut bool) {
    if *b == *h {
        return;
    }
    match (b, h) {
        (J::Object(bm), J::Object(hm)) => {
            for (k, bv) in bm.iter_mut() {
                let Some(hv) = hm.get(k) else { continue };
                if k == "metadata" {
                    fold_metadata(bv, hv, labels, changed);
                }
                walk(bv, hv, labels, changed);
            }
        }
        (J::Array(ba), J::Array(ha)) => {
            for (bv, hv) in ba.iter_mut().zip(ha) {
                walk(bv, hv, labels, changed);
            }
        }
        _ => {}
    }
}

/// Whether a label is one a chart sets to its version.
fn version_label(key: &str, old: Option<&J>, new: Option<&J>) -> bool {
    if VERSION_LABELS.contains(&key) {
        return true;
    }
    // The older `chart: <name>-<version>`, as `helm create` once wrote it.
    let versioned = |v: Option<&J>| {
        v.and_then(J::as_str)
            .and_then(|s| s.rsplit_once('-'))
            .is_some_and(|(_, version)| version.starts_with(|c: char| c.is_ascii_digit()) && version.contains('.'))
    };
    key == "chart" && versioned(old) && versioned(new)
}

fn fold_metadata(b: &mut J, h: &J, labels: bool, changed: &mut bool) {
    let (J::Object(bm), J::Object(hm)) = (b, h) else {
        return;
    };
    for field in ["labels", "annotations"] {
        let empty = serde_json::Map::new();
        let theirs = hm.get(field).and_then(J::as_object).unwrap_or(&empty).clone();
        let mine = bm.get(field).and_then(J::as_object).cloned().unwrap_or_default();
        let noise = |k: &str| match field {
            "labels" => labels && version_label(k, mine.get(k), theirs.get(k)),
            _ => k.starts_with("checksum/"),
        };
        let mut keys: Vec<&String> = mine.keys().chain(theirs.keys()).filter(|k| noise(k)).collect();
        keys.sort();
        keys.dedup();
        let mut next = mine.clone();
        for k in keys {
            match theirs.get(k) {
                Some(v) => next.insert(k.clone(), v.clone()),
                None => next.remove(k),
            };
        }
        if next == mine {
            continue;
        }
        *changed = true;
        if next.is_empty() && !hm.contains_key(field) {
            bm.remove(field);
        } else {
            bm.insert(field.to_owned(), J::Object(next));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn version_labels_and_checksums_fold_into_the_head() {
        let base = json!({"metadata": {"name": "web", "labels": {"helm.sh/chart": "web-1.0.0", "app": "web"}},
            "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app.kubernetes.io/version": "1.27"},
                "annotations": {"checksum/config": "aaa"}}}}});
        let mut head = base.clone();
        head["metadata"]["labels"]["helm.sh/chart"] = json!("web-1.0.1");
        head["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/version"] = json!("1.28");
        head["spec"]["template"]["metadata"]["annotations"]["checksum/config"] = json!("bbb");
        assert_eq!(fold_noise(&base, &head, true).unwrap(), head);
        // Without a bump only the checksum folds.
        let folded = fold_noise(&base, &head, false).unwrap();
        assert_eq!(folded["metadata"]["labels"]["helm.sh/chart"], "web-1.0.0");
        assert_eq!(
            folded["spec"]["template"]["metadata"]["annotations"]["checksum/config"],
            "bbb"
        );
        // A real change stays.
        head["spec"]["replicas"] = json!(3);
        let folded = fold_noise(&base, &head, true).unwrap();
        assert_ne!(folded, head);
        assert_eq!(folded["spec"]["replicas"], 2);
        assert!(fold_noise(&base, &base, true).is_none());
    }

    #[test]
    fn a_label_added_by_the_new_chart_folds_too() {
        let base = json!({"metadata": {"name": "web"}});
        let head = json!({"metadata": {"name": "web", "labels": {"helm.sh/chart": "web-1.0.1"}}});
        assert_eq!(fold_noise(&base, &head, true).unwrap(), head);
        let legacy = json!({"metadata": {"labels": {"chart": "web-1.0.0"}}});
        let legacy2 = json!({"metadata": {"labels": {"chart": "web-1.0.1"}}});
        assert_eq!(fold_noise(&legacy, &legacy2, true).unwrap(), legacy2);
        let plain = json!({"metadata": {"labels": {"chart": "web"}}});
        let plain2 = json!({"metadata": {"labels": {"chart": "api"}}});
        assert!(fold_noise(&plain, &plain2, true).is_none());
    }
}
