//! Stage 7, diff: two compiles compared object by object.
//!
//! Objects are keyed by environment, target, apiVersion, kind, namespace and
//! name, so an object that moves to another file is not a change. A changed
//! object gets a unified diff of its canonical YAML; merged Helm values live
//! inline in the HelmRelease or Application, so a changed value shows as a
//! change to the object that carries it, and each changed line under the
//! values knows the layer file and line that set it (provenance).
//!
//! Nothing secret leaves this module. Before an object is written as text
//! for diffing, the values under `data` and `stringData` of anything shaped
//! like a `Secret` — the object itself, a manifest held in Helm values
//! (`extraObjects`), or JSON or YAML text in a string such as the
//! `last-applied-configuration` annotation — are replaced, and every
//! sensitive contract output of any environment, on either side, is taken
//! out of strings, keys and numbers (see [`crate::secrets`]), and so is the
//! data of a component's Secrets from every object of that component
//! ([`release`]). A change to a hidden value is named, never shown. A diff
//! line that still shows a secret after that is replaced by a marker.
//!
//! [`revision`] runs `strata diff`: it compiles the working tree and a git
//! revision where [`reach`] says a change can reach, and compares them;
//! [`format`] writes the result as text, Markdown or JSON.

pub mod bump;
pub mod format;
mod hunks;
mod lines;
pub mod reach;
mod release;
pub mod revision;
mod side;

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use crate::diag::{Diagnostic, Severity};
use crate::pipeline::Compiled;
use crate::secrets::{self, Secrets};
use crate::yaml::Origin;

use hunks::hunks;
use side::{Entry, Side, index};

/// Lines of context around each change.
pub const CONTEXT: usize = 3;

/// What an object's diff may cost: Myers' algorithm on a stretch of `n` old
/// and `m` new lines costs at most its grid, `(n + 1) × (m + 1)` steps, and
/// an object may spend this many steps, plus [`DIFF_STEPS_PER_LINE`] for
/// each of its lines. Beyond, stretches between lines that are unique on
/// both sides are shown as removed and added whole.
pub const DIFF_STEPS: usize = 4_000_000;
pub const DIFF_STEPS_PER_LINE: usize = 64;

/// The most lines of an object whose changed lines get their provenance
/// (`--why`, JSON `source`): finding it parses the object's text again.
pub const MAX_TRACED_LINES: usize = 50_000;

/// The note of an object whose diff was cut short.
pub const COARSE_NOTE: &str = "this object is too large to compare line by line everywhere: some stretches \
     are shown as removed and added whole";

/// What stands in for the value of a Secret's key.
pub const REDACTED_VALUE: &str = secrets::SECRET_DATA;

/// The target name under which the objects a chart renders are compared.
pub const CHART_TARGET: &str = "chart";

/// What stands in for a line that still shows a sensitive contract output
/// once values are redacted.
pub const REDACTED_LINE: &str = "<line hidden: it holds a sensitive contract output>";

/// The identity of an object across the two compiles.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub env: String,
    pub target: String,
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl Key {
    /// `Kind namespace/name`, or `Kind name` for cluster-scoped objects.
    pub fn display(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    /// `<env>/<target>`.
    pub fn unit(&self) -> String {
        format!("{}/{}", self.env, self.target)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Added,
    Changed,
    Removed,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Changed => "changed",
            Status::Removed => "removed",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Context,
    Added,
    Removed,
}

/// One line of a hunk. `why` is the input that set the line's value: the
/// head side for context and added lines, the base side for removed ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub op: Op,
    pub text: String,
    pub why: Option<Origin>,
}

/// A unified-diff hunk; line numbers are 1-based, as in `diff -u`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    pub lines: Vec<Line>,
}

impl Hunk {
    pub fn header(&self) -> String {
        format!(
            "@@ -{},{} +{},{} @@",
            self.old_start, self.old_lines, self.new_start, self.new_lines
        )
    }
}

/// One object that was added, removed or changed.
#[derive(Clone, Debug)]
pub struct ObjectChange {
    pub key: Key,
    pub status: Status,
    /// The component it belongs to; `None` for platform-wide objects
    /// (the GitRepository, the cluster objects of the substrate).
    pub component: Option<String>,
    /// Its file in the rendered tree, relative to the repository root.
    pub base_path: Option<String>,
    pub head_path: Option<String>,
    /// The input that produced the object (head side; base side when
    /// removed): a manifest file, or the component's `config.yaml`.
    pub origin: Origin,
    pub hunks: Vec<Hunk>,
    /// Changes that are named but not shown (a Secret's values).
    pub notes: Vec<String>,
}

impl ObjectChange {
    pub fn path(&self) -> &str {
        self.head_path.as_deref().or(self.base_path.as_deref()).unwrap_or("")
    }
}

/// Added, changed and removed objects of one environment and target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
}

/// An invariant finding that the change introduces or fixes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub code: String,
    pub severity: Severity,
    pub env: Option<String>,
    pub message: String,
    pub origin: Origin,
}

/// The difference between two compiles.
#[derive(Clone, Debug, Default)]
pub struct Diff {
    /// Sorted by key.
    pub objects: Vec<ObjectChange>,
    /// Every `<env>, <target>` compiled on either side.
    pub summary: BTreeMap<(String, String), Counts>,
    pub introduced: Vec<Finding>,
    pub fixed: Vec<Finding>,
    /// What was not compared, and why.
    pub notes: Vec<String>,
    /// The releases whose chart version changed (see [`bump`]), by
    /// environment and component.
    pub bumps: Vec<bump::Bump>,
}

impl Diff {
    /// Adds the diff of more environments (compiled apart): objects stay
    /// sorted by key, and a finding or note that every environment's compile
    /// gives (one about the platform) is kept once.
    pub fn absorb(&mut self, more: Diff) {
        self.objects.extend(more.objects);
        self.objects.sort_by(|a, b| a.key.cmp(&b.key));
        self.summary.extend(more.summary);
        for (mine, theirs) in [(&mut self.introduced, more.introduced), (&mut self.fixed, more.fixed)] {
            mine.extend(theirs);
            mine.sort_by(|a, b| (&a.code, &a.env, &a.message).cmp(&(&b.code, &b.env, &b.message)));
            mine.dedup();
        }
        for n in more.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
        self.bumps.extend(more.bumps);
        self.bumps
            .sort_by(|a, b| (&a.env, &a.component).cmp(&(&b.env, &b.component)));
    }

    /// Whether nothing changed: no object, no finding, no chart bump.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.introduced.is_empty() && self.fixed.is_empty() && self.bumps.is_empty()
    }

    pub fn totals(&self) -> Counts {
        let mut t = Counts::default();
        for c in self.summary.values() {
            t.added += c.added;
            t.changed += c.changed;
            t.removed += c.removed;
        }
        t
    }
}

/// Which hidden values changed, by path only: a Secret's data added,
/// removed or changed; a sensitive output replaced by another, which the
/// diff cannot show (both sides read as redacted).
fn secret_notes(base: &secrets::Hidden, head: &secrets::Hidden) -> Vec<String> {
    let keys: BTreeSet<&String> = base.data.keys().chain(head.data.keys()).collect();
    let mut notes = Vec::new();
    for k in keys {
        match (base.data.get(k), head.data.get(k)) {
            (Some(a), Some(b)) if a != b => notes.push(format!("{k}: changed (value not shown)")),
            (Some(_), None) => notes.push(format!("{k}: removed (value not shown)")),
            (None, Some(_)) => notes.push(format!("{k}: added (value not shown)")),
            _ => {}
        }
    }
    for (k, a) in &base.sensitive {
        if head.sensitive.get(k).is_some_and(|b| a != b) {
            notes.push(format!("{k}: a sensitive value changed (not shown)"));
        }
    }
    notes
}

/// Compares two compiles of the same repository. A missing base (the
/// platform, or the selected environment, did not exist then) has no objects.
pub fn diff(base: Option<&Compiled>, head: &Compiled) -> Diff {
    // Every environment's secrets, on both sides: one environment's secret
    // is no less secret in another environment's object.
    let secrets = Secrets::union(base.into_iter().chain([head]).map(|c| &c.platform.secrets));
    let releases = release::releases(base.into_iter().chain([head]), &secrets);
    let (base_side, head_side) = (
        base.map(|b| Side::new(b, &secrets, &releases)),
        Side::new(head, &secrets, &releases),
    );
    let (mut old, mut new) = (base_side.as_ref().map(index).unwrap_or_default(), index(&head_side));
    let notes = match base {
        Some(b) => compare_charts_rendered_on_both(b, head, &mut old, &mut new),
        None => Vec::new(),
    };
    let mut summary = units(base, head);
    let mut objects = Vec::new();
    for key in changed_keys(&old, &new) {
        let (a, b) = (old.get(key), new.get(key));
        let component = b.or(a).and_then(|e| e.object.component.clone());
        let hides = component
            .and_then(|c| releases.get(&(key.env.clone(), c)))
            .unwrap_or(&secrets);
        if let Some(change) = object_change(key, a, b, hides, &mut summary) {
            objects.push(change);
        }
    }
    let base_findings = base.map(|b| b.findings.as_slice()).unwrap_or_default();
    let (mut introduced, mut fixed) = findings_delta(base_findings, &head.findings);
    for f in introduced.iter_mut().chain(fixed.iter_mut()) {
        f.message = secrets.redact_text(&f.message).into_owned();
    }
    Diff {
        objects,
        summary,
        introduced,
        fixed,
        notes,
        bumps: Vec::new(),
    }
}

/// Leaves out what a chart renders where only one side rendered it, and
/// says so: a component judged through its profile on one side (its chart
/// not in the store at that revision, say) would look like every object of
/// its chart added or removed.
fn compare_charts_rendered_on_both<'a>(
    base: &Compiled,
    head: &Compiled,
    old: &mut BTreeMap<Key, Entry<'a>>,
    new: &mut BTreeMap<Key, Entry<'a>>,
) -> Vec<String> {
    let rendered = |c: &Compiled, env: &str, comp: &str| {
        c.renders
            .iter()
            .find(|r| r.env == env)
            .map(|r| (r.merged.contains_key(comp), r.inflated(comp)))
    };
    let mut skipped: BTreeSet<(String, String)> = BTreeSet::new();
    for (env, comp) in old
        .iter()
        .chain(new.iter())
        .filter(|(k, _)| k.target == CHART_TARGET)
        .filter_map(|(k, e)| Some((k.env.clone(), e.object.component.clone()?)))
        .collect::<BTreeSet<_>>()
    {
        let (b_has, b_inflated) = rendered(base, &env, &comp).unwrap_or((false, false));
        let (h_has, h_inflated) = rendered(head, &env, &comp).unwrap_or((false, false));
        if b_has && h_has && b_inflated != h_inflated {
            skipped.insert((env, comp));
        }
    }
    let keep = |k: &Key, e: &Entry<'_>| {
        k.target != CHART_TARGET
            || !e
                .object
                .component
                .as_ref()
                .is_some_and(|c| skipped.contains(&(k.env.clone(), c.clone())))
    };
    old.retain(|k, e| keep(k, e));
    new.retain(|k, e| keep(k, e));
    let mut notes = Vec::new();
    for (env, comp) in &skipped {
        notes.push(format!(
            "what the chart of {comp} renders in {env} is not compared: helm rendered it on one side only (run `strata charts pull` at both revisions' strata.lock)"
        ));
    }
    notes
}

/// Every `<env>, <target>` compiled on either side, with nothing counted yet.
fn units(base: Option<&Compiled>, head: &Compiled) -> BTreeMap<(String, String), Counts> {
    let mut summary: BTreeMap<(String, String), Counts> = BTreeMap::new();
    let base_scope = base.map(|b| b.scope.as_slice()).unwrap_or_default();
    for unit in base_scope.iter().chain(&head.scope) {
        if let Some((env, target)) = unit.split_once('/') {
            summary.entry((env.to_owned(), target.to_owned())).or_default();
        }
    }
    for r in base.into_iter().chain([head]).flat_map(|c| &c.renders) {
        if !r.charts.is_empty() {
            summary.entry((r.env.clone(), CHART_TARGET.to_owned())).or_default();
        }
    }
    summary
}

/// The keys of the objects whose value differs between the sides (or that
/// one side lacks), in order, each written as text side by side. An object
/// whose value is the same on both sides is unchanged: its text and what
/// it hides follow from the value.
fn changed_keys<'k, 'a>(old: &'k BTreeMap<Key, Entry<'a>>, new: &'k BTreeMap<Key, Entry<'a>>) -> Vec<&'k Key> {
    let keys: Vec<&Key> = old
        .keys()
        .chain(new.keys())
        .collect::<BTreeSet<&Key>>()
        .into_iter()
        .filter(|k| match (old.get(*k), new.get(*k)) {
            (Some(a), Some(b)) => a.object.value != b.object.value,
            _ => true,
        })
        .collect();
    keys.par_iter().with_max_len(4).for_each(|k| {
        for e in [old.get(*k), new.get(*k)].into_iter().flatten() {
            e.shown(k);
        }
    });
    keys
}

/// The change to one object, counted in `summary`; `None` when its texts
/// and hidden values read the same on both sides.
fn object_change<'a>(
    key: &Key,
    a: Option<&Entry<'a>>,
    b: Option<&Entry<'a>>,
    secrets: &Secrets,
    summary: &mut BTreeMap<(String, String), Counts>,
) -> Option<ObjectChange> {
    let (status, notes) = match (a, b) {
        (None, Some(_)) => (Status::Added, Vec::new()),
        (Some(_), None) => (Status::Removed, Vec::new()),
        (Some(a), Some(b)) => {
            let (sa, sb) = (a.shown(key), b.shown(key));
            let notes = secret_notes(&sa.hidden, &sb.hidden);
            if sa.text == sb.text && notes.is_empty() {
                return None;
            }
            (Status::Changed, notes)
        }
        (None, None) => return None,
    };
    let (hunks, more) = hunks(key, a, b, secrets);
    let mut notes = notes;
    notes.extend(more);
    let counts = summary.entry((key.env.clone(), key.target.clone())).or_default();
    match status {
        Status::Added => counts.added += 1,
        Status::Changed => counts.changed += 1,
        Status::Removed => counts.removed += 1,
    }
    let component = b.or(a).and_then(|e| e.object.component.clone());
    let origin = b
        .or(a)
        .map(|e| e.object.origin.clone())
        .unwrap_or_else(|| Origin::file_start(""));
    // An object named after a secret (SEC001 flags it) is still listed,
    // its name and file redacted.
    let clean = |s: &str| secrets.redact_text(s).into_owned();
    let base_path = a.and_then(|e| e.shown(key).path.as_deref()).map(clean);
    let head_path = b.and_then(|e| e.shown(key).path.as_deref()).map(clean);
    let mut key = key.clone();
    key.name = clean(&key.name);
    key.namespace = key.namespace.as_deref().map(clean);
    Some(ObjectChange {
        key,
        status,
        component,
        base_path,
        head_path,
        origin,
        hunks,
        notes,
    })
}

/// The findings only the head has (introduced) and only the base has
/// (fixed), compared by code, environment and message: the place may move
/// when unrelated lines are added above it.
pub fn findings_delta(base: &[Diagnostic], head: &[Diagnostic]) -> (Vec<Finding>, Vec<Finding>) {
    type K<'a> = (&'a str, Option<&'a str>, std::borrow::Cow<'a, str>);
    fn keyed(d: &[Diagnostic]) -> BTreeMap<K<'_>, &Diagnostic> {
        let mut m = BTreeMap::new();
        // Notes say how the compile ran (what was judged through profiles),
        // not what the change does.
        for x in d.iter().filter(|x| x.severity != Severity::Note) {
            m.entry((x.code, x.env.as_deref(), crate::diag::identity(&x.message)))
                .or_insert(x);
        }
        m
    }
    let finding = |d: &Diagnostic| Finding {
        code: d.code.to_owned(),
        severity: d.severity,
        env: d.env.clone(),
        message: d.message.clone(),
        origin: d.origin.clone(),
    };
    let (b, h) = (keyed(base), keyed(head));
    let introduced = h
        .iter()
        .filter(|(k, _)| !b.contains_key(*k))
        .map(|(_, d)| finding(d))
        .collect();
    let fixed = b
        .iter()
        .filter(|(k, _)| !h.contains_key(*k))
        .map(|(_, d)| finding(d))
        .collect();
    (introduced, fixed)
}

#[cfg(test)]
mod tests {
    use serde_json::Value as J;

    use super::*;
    use crate::yaml;

    fn diag(code: &'static str, env: &str, msg: &str, line: u32) -> Diagnostic {
        Diagnostic::error(code, Origin::new("v.yaml", line, 1, 0), msg).in_env(env)
    }

    #[test]
    fn findings_are_compared_by_code_env_and_message() {
        let base = vec![
            diag("HA001", "staging", "traefik runs 1 replica", 3),
            diag("NET001", "staging", "Local", 9),
        ];
        // NET001 moved to another line: the same finding. HA001 fixed, TOPO001 new.
        let head = vec![
            diag("NET001", "staging", "Local", 12),
            diag("TOPO001", "production", "2 nodes", 1),
        ];
        let (introduced, fixed) = findings_delta(&base, &head);
        assert_eq!(introduced.len(), 1);
        assert_eq!(introduced[0].code, "TOPO001");
        assert_eq!(introduced[0].env.as_deref(), Some("production"));
        assert_eq!(fixed.len(), 1);
        assert_eq!(fixed[0].code, "HA001");
        let (i, f) = findings_delta(&head, &head);
        assert!(i.is_empty() && f.is_empty());
        // The same message in another environment is another finding.
        let (i, _) = findings_delta(&base, &[diag("HA001", "production", "traefik runs 1 replica", 3)]);
        assert_eq!(i.len(), 1);
    }

    #[test]
    fn secret_values_are_replaced_and_named() {
        let v = serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"a": "c2VjcmV0"}, "stringData": {"b": "hunter2-plain"}});
        let (redacted, values) = secrets::redact_for_display(&v, &Secrets::default()).unwrap();
        let text = yaml::to_canonical_yaml(&redacted);
        assert!(!text.contains("c2VjcmV0") && !text.contains("hunter2"), "{text}");
        assert_eq!(values.data.len(), 2);
        let mut changed = values.clone();
        changed.data.insert("stringData.b".into(), J::from("other"));
        changed.data.remove("data.a");
        changed.data.insert("data.c".into(), J::from("x"));
        assert_eq!(
            secret_notes(&values, &changed),
            vec![
                "data.a: removed (value not shown)",
                "data.c: added (value not shown)",
                "stringData.b: changed (value not shown)"
            ]
        );
        // A sensitive output in place of another reads the same on both
        // sides once redacted; the change is still named.
        let mut a = secrets::Hidden::default();
        a.sensitive.insert("spec.values.x".into(), J::from("one"));
        let mut b = a.clone();
        b.sensitive.insert("spec.values.x".into(), J::from("two"));
        assert_eq!(
            secret_notes(&a, &b),
            vec!["spec.values.x: a sensitive value changed (not shown)"]
        );
        assert!(secret_notes(&secrets::Hidden::default(), &b).is_empty());
    }
}
