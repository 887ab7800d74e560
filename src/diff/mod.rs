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
//! out of strings, keys and numbers (see [`crate::secrets`]). A change to a
//! hidden value is named, never shown. A diff line that still shows a
//! secret after that is replaced by a marker.

pub mod format;
pub mod reach;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use serde_json::Value as J;
use similar::{Algorithm, ChangeTag, DiffOp};

use crate::diag::{Diagnostic, Severity};
use crate::merge::Merged;
use crate::pipeline::Compiled;
use crate::render::Object;
use crate::secrets::{self, Secrets};
use crate::yaml::{self, Node, Origin, Value};

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
    }

    /// Whether nothing changed: no object and no finding.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.introduced.is_empty() && self.fixed.is_empty()
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

/// One object of one side, ready to compare. Its text is written only
/// when it is shown or compared as text: most objects of a diff are the
/// same value on both sides.
struct Entry<'a> {
    object: &'a Object,
    merged: Option<&'a Merged>,
    /// What a chart rendered: the template and component it came from.
    label: Option<String>,
    /// The side it is shown with (a test gives the text itself instead).
    side: Option<&'a Side<'a>>,
    shown: OnceLock<Shown>,
}

/// An object as it may be shown: canonical YAML with Secret data and
/// sensitive outputs replaced, the values replaced by path (`data.<key>`,
/// `spec.values.token`), and the file it is written to.
struct Shown {
    text: String,
    hidden: secrets::Hidden,
    path: Option<String>,
}

/// What the objects of one side are shown with.
struct Side<'a> {
    compiled: &'a Compiled,
    secrets: &'a Secrets,
    /// The file of each object, found by its content within its unit (the
    /// layout writes each object as its canonical YAML, one per file).
    by_content: OnceLock<BTreeMap<(&'a str, &'a str), &'a str>>,
}

impl<'a> Side<'a> {
    fn new(compiled: &'a Compiled, secrets: &'a Secrets) -> Self {
        Side {
            compiled,
            secrets,
            by_content: OnceLock::new(),
        }
    }

    fn by_content(&self) -> &BTreeMap<(&'a str, &'a str), &'a str> {
        self.by_content.get_or_init(|| {
            let mut by_content = BTreeMap::new();
            for (path, content) in &self.compiled.files {
                let unit = path.splitn(3, '/').take(2).collect::<Vec<_>>().join("/");
                by_content.insert((&path[..unit.len()], content.as_str()), path.as_str());
            }
            by_content
        })
    }
}

impl Entry<'_> {
    fn shown(&self, key: &Key) -> &Shown {
        self.shown.get_or_init(|| {
            let Some(side) = self.side else {
                return Shown {
                    text: String::new(),
                    hidden: secrets::Hidden::default(),
                    path: None,
                };
            };
            let secrets = side.secrets;
            if self.label.is_some() {
                let (text, hidden) = shown(&self.object.value, secrets, None);
                return Shown {
                    text,
                    hidden,
                    path: self.label.clone(),
                };
            }
            let unit = crate::emit::unit(&key.env, &key.target);
            let canonical = yaml::to_canonical_yaml(&self.object.value);
            let path = side
                .by_content()
                .get(&(unit.as_str(), canonical.as_str()))
                .map(|p| crate::world::join(&side.compiled.platform.project.output, p));
            let (text, hidden) = shown(&self.object.value, secrets, Some(canonical));
            Shown { text, hidden, path }
        })
    }
}

/// The object as it may be shown, and what was hidden from it.
fn shown(value: &J, secrets: &Secrets, canonical: Option<String>) -> (String, secrets::Hidden) {
    match secrets::redact_for_display(value, secrets) {
        Some((redacted, hidden)) => (yaml::to_canonical_yaml(&redacted), hidden),
        None => (
            canonical.unwrap_or_else(|| yaml::to_canonical_yaml(value)),
            secrets::Hidden::default(),
        ),
    }
}

fn index<'a>(side: &'a Side<'a>) -> BTreeMap<Key, Entry<'a>> {
    let c = side.compiled;
    let mut out = BTreeMap::new();
    let entry = |object, merged, label| Entry {
        object,
        merged,
        label,
        side: Some(side),
        shown: OnceLock::new(),
    };
    // What the charts render, per environment, under the target `chart`.
    for r in &c.renders {
        for (component, objects) in &r.charts {
            for o in objects {
                let template = match &o.source {
                    crate::render::Source::Chart { template } => template.as_str(),
                    _ => "",
                };
                let label = format!("{template} (chart of {component})");
                out.insert(
                    key(&r.env, CHART_TARGET, o),
                    entry(o, r.merged.get(component), Some(label)),
                );
            }
        }
    }
    for r in &c.renders {
        for (target, objects) in &r.targets {
            for o in objects {
                let merged = o.component.as_ref().and_then(|c| r.merged.get(c));
                out.insert(key(&r.env, target.name(), o), entry(o, merged, None));
            }
        }
    }
    out
}

fn key(env: &str, target: &str, o: &Object) -> Key {
    Key {
        env: env.to_owned(),
        target: target.to_owned(),
        api_version: o.api_version().to_owned(),
        kind: o.kind().to_owned(),
        namespace: o.namespace().map(str::to_owned),
        name: o.name().to_owned(),
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
    let (base_side, head_side) = (base.map(|b| Side::new(b, &secrets)), Side::new(head, &secrets));
    let (mut old, mut new) = (base_side.as_ref().map(index).unwrap_or_default(), index(&head_side));
    // What a chart renders is compared only where both sides rendered it:
    // a component judged through its profile on one side (its chart not in
    // the store at that revision, say) would look like every object of
    // its chart added or removed.
    let mut notes = Vec::new();
    if let Some(b) = base {
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
            let (b_has, b_inflated) = rendered(b, &env, &comp).unwrap_or((false, false));
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
        for (env, comp) in &skipped {
            notes.push(format!(
                "what the chart of {comp} renders in {env} is not compared: helm rendered it on one side only (run `strata charts pull` at both revisions' strata.lock)"
            ));
        }
    }
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
    // An object whose value is the same on both sides is unchanged (its
    // text and what it hides follow from the value); the others are
    // written as text side by side.
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
    let mut objects = Vec::new();
    for key in keys {
        let (a, b) = (old.get(key), new.get(key));
        let (status, notes) = match (a, b) {
            (None, Some(_)) => (Status::Added, Vec::new()),
            (Some(_), None) => (Status::Removed, Vec::new()),
            (Some(a), Some(b)) => {
                let (sa, sb) = (a.shown(key), b.shown(key));
                let notes = secret_notes(&sa.hidden, &sb.hidden);
                if sa.text == sb.text && notes.is_empty() {
                    continue;
                }
                (Status::Changed, notes)
            }
            (None, None) => continue,
        };
        let (hunks, more) = hunks(key, a, b, &secrets);
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
        objects.push(ObjectChange {
            key,
            status,
            component,
            base_path,
            head_path,
            origin,
            hunks,
            notes,
        });
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
    }
}

/// The findings only the head has (introduced) and only the base has
/// (fixed), compared by code, environment and message: the place may move
/// when unrelated lines are added above it.
pub fn findings_delta(base: &[Diagnostic], head: &[Diagnostic]) -> (Vec<Finding>, Vec<Finding>) {
    type K<'a> = (&'a str, Option<&'a str>, &'a str);
    fn keyed(d: &[Diagnostic]) -> BTreeMap<K<'_>, &Diagnostic> {
        let mut m = BTreeMap::new();
        // Notes say how the compile ran (what was judged through profiles),
        // not what the change does.
        for x in d.iter().filter(|x| x.severity != Severity::Note) {
            m.entry((x.code, x.env.as_deref(), x.message.as_str())).or_insert(x);
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

/// One segment of a path into an object.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// For each line of a canonical YAML text, the path of the value written on
/// it (or, for the lines of a block scalar, of the scalar they belong to).
fn line_paths(text: &str) -> BTreeMap<u32, Vec<Seg>> {
    let mut out = BTreeMap::new();
    let Ok(node) = yaml::parse(&Arc::from("<rendered>"), text) else {
        return out;
    };
    fn walk(n: &Node, path: &mut Vec<Seg>, out: &mut BTreeMap<u32, Vec<Seg>>) {
        match &n.value {
            Value::Map(m) => {
                for (k, e) in m.iter() {
                    path.push(Seg::Key(k.clone()));
                    out.insert(e.key_origin.line, path.clone());
                    walk(&e.node, path, out);
                    path.pop();
                }
            }
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    out.insert(item.origin.line, path.clone());
                    walk(item, path, out);
                    path.pop();
                }
            }
            // Argo CD's values are one YAML string, a block scalar whose
            // node starts at its first content line: each of its lines
            // gets the path of the value it writes, under the string's own.
            Value::Str(s) if s.contains('\n') && is_values_string(path) => {
                for (line, inner) in line_paths(s) {
                    let mut full = path.clone();
                    full.extend(inner);
                    out.insert(n.origin.line + line - 1, full);
                }
            }
            _ => {
                out.insert(n.origin.line, path.clone());
            }
        }
    }
    walk(&node, &mut Vec::new(), &mut out);
    out
}

/// Whether a path is an Argo CD Application's `spec.source.helm.values`.
fn is_values_string(path: &[Seg]) -> bool {
    let want = ["spec", "source", "helm", "values"];
    path.len() == want.len() && path.iter().zip(want).all(|(s, w)| matches!(s, Seg::Key(k) if k == w))
}

/// Where the merged values sit in an object, by kind.
fn values_prefix(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "HelmRelease" => Some(&["spec", "values"]),
        "Application" => Some(&["spec", "source", "helm", "values"]),
        _ => None,
    }
}

/// The values layer that set the value at `path` of an object, for a line
/// under the merged values (other lines come from the object's own input,
/// [`ObjectChange::origin`]).
fn provenance(entry: &Entry<'_>, path: Option<&Vec<Seg>>) -> Option<Origin> {
    let fallback = None;
    let (Some(path), Some(prefix), Some(merged)) = (path, values_prefix(entry.object.kind()), entry.merged) else {
        return fallback;
    };
    let under = path.len() >= prefix.len()
        && path
            .iter()
            .zip(prefix.iter())
            .all(|(s, p)| matches!(s, Seg::Key(k) if k == p));
    if !under {
        return fallback;
    }
    let rest = &path[prefix.len()..];
    if rest.is_empty() {
        return None;
    }
    let mut node = &merged.values;
    let mut origin = merged.values.origin.clone();
    for seg in rest {
        match (seg, &node.value) {
            (Seg::Key(k), Value::Map(m)) => match m.get(k) {
                Some(e) => {
                    origin = if e.node.as_map().is_some() {
                        e.key_origin.clone()
                    } else {
                        e.node.origin.clone()
                    };
                    node = &e.node;
                }
                None => break,
            },
            (Seg::Index(i), Value::Seq(items)) => match items.get(*i) {
                Some(item) => {
                    origin = item.origin.clone();
                    node = item;
                }
                None => break,
            },
            _ => break,
        }
    }
    Some(origin)
}

fn redact_line(text: &str, secrets: &Secrets) -> String {
    if secrets.text_holds(text) {
        // Keep the indentation, so the diff still reads as YAML.
        let indent = text.len() - text.trim_start().len();
        format!("{}{REDACTED_LINE}", &text[..indent])
    } else {
        text.to_owned()
    }
}

/// The unified-diff hunks between two objects, and notes on what the work
/// bounds left out (a stretch not compared line by line, lines not traced).
fn hunks(key: &Key, base: Option<&Entry<'_>>, head: Option<&Entry<'_>>, secrets: &Secrets) -> (Vec<Hunk>, Vec<String>) {
    let old = base.map_or("", |e| e.shown(key).text.as_str());
    let new = head.map_or("", |e| e.shown(key).text.as_str());
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let (ops, coarse) = line_ops(&old_lines, &new_lines);
    // The path of each line, for provenance: only for an object that
    // carries merged values, only once a changed line needs it, and not
    // for an object too large to parse again at little cost.
    let traced = |e: Option<&Entry<'_>>, lines: usize| {
        e.is_some_and(|e| e.merged.is_some() && values_prefix(e.object.kind()).is_some()) && lines <= MAX_TRACED_LINES
    };
    let (trace_old, trace_new) = (traced(base, old_lines.len()), traced(head, new_lines.len()));
    let mut notes = Vec::new();
    if coarse {
        notes.push(COARSE_NOTE.to_owned());
    }
    let carries_values =
        |e: Option<&Entry<'_>>| e.is_some_and(|e| e.merged.is_some() && values_prefix(e.object.kind()).is_some());
    if (carries_values(base) && !trace_old) || (carries_values(head) && !trace_new) {
        notes.push(format!(
            "the changed values lines of this object are not traced to their layer: it has over {MAX_TRACED_LINES} lines"
        ));
    }
    let old_paths = std::cell::OnceCell::new();
    let new_paths = std::cell::OnceCell::new();
    let why = |entry: Option<&Entry<'_>>,
               paths: &std::cell::OnceCell<BTreeMap<u32, Vec<Seg>>>,
               text: &str,
               traced: bool,
               index: usize|
     -> Option<Origin> {
        let entry = entry.filter(|_| traced)?;
        let paths = paths.get_or_init(|| line_paths(text));
        let line = index as u32 + 1;
        let path = paths.range(..=line).next_back().map(|(_, p)| p);
        provenance(entry, path)
    };
    let mut out = Vec::new();
    for group in similar::group_diff_ops(ops, CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (old_range, new_range) = (
            first.old_range().start..last.old_range().end,
            first.new_range().start..last.new_range().end,
        );
        let mut lines = Vec::new();
        for op in &group {
            for change in op.iter_changes(old_lines.as_slice(), new_lines.as_slice()) {
                let text = change.value().trim_end_matches(['\n', '\r']);
                let (op, why) = match change.tag() {
                    ChangeTag::Equal => (Op::Context, None),
                    ChangeTag::Insert => (
                        Op::Added,
                        why(head, &new_paths, new, trace_new, change.new_index().unwrap_or(0)),
                    ),
                    ChangeTag::Delete => (
                        Op::Removed,
                        why(base, &old_paths, old, trace_old, change.old_index().unwrap_or(0)),
                    ),
                };
                lines.push(Line {
                    op,
                    text: redact_line(text, secrets),
                    why,
                });
            }
        }
        // `diff -u` numbers an empty range by the line before it.
        let start = |r: &std::ops::Range<usize>| if r.is_empty() { r.start } else { r.start + 1 };
        out.push(Hunk {
            old_start: start(&old_range),
            old_lines: old_range.len(),
            new_start: start(&new_range),
            new_lines: new_range.len(),
            lines,
        });
    }
    (out, notes)
}

/// The edit script between two texts' lines, within a bounded amount of
/// work: the common start and end are taken off in one pass, Myers'
/// algorithm diffs what fits the budget, and a larger stretch is split at
/// lines that occur once on each side (in the longest run that keeps their
/// order, as patience diff does). A stretch with no such line, or past the
/// budget, is replaced whole; the second value says whether that happened.
/// The same inputs always give the same script.
fn line_ops(old: &[&str], new: &[&str]) -> (Vec<DiffOp>, bool) {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut work = LineDiff {
        old,
        new,
        budget: DIFF_STEPS.saturating_add(DIFF_STEPS_PER_LINE.saturating_mul(old.len() + new.len())),
        ops: Vec::new(),
        coarse: false,
    };
    work.equal(0, 0, prefix);
    work.range(prefix..old.len() - suffix, prefix..new.len() - suffix, 0);
    work.equal(old.len() - suffix, new.len() - suffix, suffix);
    (merge_ops(work.ops), work.coarse)
}

struct LineDiff<'a, 'b> {
    old: &'a [&'b str],
    new: &'a [&'b str],
    budget: usize,
    ops: Vec<DiffOp>,
    coarse: bool,
}

impl LineDiff<'_, '_> {
    /// How deep stretches are split at unique lines before the rest is
    /// replaced whole.
    const MAX_SPLITS: usize = 8;

    fn equal(&mut self, old_index: usize, new_index: usize, len: usize) {
        if len > 0 {
            self.ops.push(DiffOp::Equal {
                old_index,
                new_index,
                len,
            });
        }
    }

    fn replace(&mut self, o: std::ops::Range<usize>, n: std::ops::Range<usize>) {
        if !o.is_empty() {
            self.ops.push(DiffOp::Delete {
                old_index: o.start,
                old_len: o.len(),
                new_index: n.start,
            });
        }
        if !n.is_empty() {
            self.ops.push(DiffOp::Insert {
                old_index: o.end,
                new_index: n.start,
                new_len: n.len(),
            });
        }
    }

    fn range(&mut self, o: std::ops::Range<usize>, n: std::ops::Range<usize>, depth: usize) {
        if o.is_empty() || n.is_empty() {
            return self.replace(o, n);
        }
        let grid = (o.len() + 1).saturating_mul(n.len() + 1);
        if grid <= self.budget {
            self.budget -= grid;
            self.ops
                .extend(similar::capture_diff(Algorithm::Myers, self.old, o, self.new, n));
            return;
        }
        let anchors = if depth < Self::MAX_SPLITS {
            unique_anchors(&self.old[o.clone()], &self.new[n.clone()])
        } else {
            Vec::new()
        };
        if anchors.is_empty() {
            self.coarse = true;
            return self.replace(o, n);
        }
        let (mut i, mut j) = (o.start, n.start);
        for (a, b) in anchors {
            let (a, b) = (o.start + a, n.start + b);
            self.range(i..a, j..b, depth + 1);
            self.equal(a, b, 1);
            (i, j) = (a + 1, b + 1);
        }
        self.range(i..o.end, j..n.end, depth + 1);
    }
}

/// Lines that occur exactly once in `old` and once in `new`, as (old, new)
/// index pairs: the longest run of them in the same order on both sides.
fn unique_anchors(old: &[&str], new: &[&str]) -> Vec<(usize, usize)> {
    use std::collections::HashMap;
    // (count in old, index in old, count in new, index in new)
    let mut seen: HashMap<&str, (u32, usize, u32, usize)> = HashMap::with_capacity(old.len() + new.len());
    for (i, l) in old.iter().enumerate() {
        let e = seen.entry(l).or_insert((0, i, 0, 0));
        e.0 += 1;
    }
    for (j, l) in new.iter().enumerate() {
        if let Some(e) = seen.get_mut(l) {
            e.2 += 1;
            e.3 = j;
        }
    }
    // In old order, so that nothing depends on the hash map's order.
    let pairs: Vec<(usize, usize)> = old
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let &(co, io, cn, jn) = seen.get(l)?;
            (co == 1 && cn == 1 && io == i).then_some((i, jn))
        })
        .collect();
    // Longest increasing run of new indices (patience sorting).
    let mut tails: Vec<usize> = Vec::new(); // index into pairs
    let mut prev: Vec<Option<usize>> = vec![None; pairs.len()];
    for (k, &(_, j)) in pairs.iter().enumerate() {
        let pos = tails.partition_point(|&t| pairs[t].1 < j);
        if pos > 0 {
            prev[k] = Some(tails[pos - 1]);
        }
        if pos == tails.len() {
            tails.push(k);
        } else {
            tails[pos] = k;
        }
    }
    let mut out = Vec::with_capacity(tails.len());
    let mut at = tails.last().copied();
    while let Some(k) = at {
        out.push(pairs[k]);
        at = prev[k];
    }
    out.reverse();
    out
}

/// Joins neighbouring operations of the same kind, so that hunks group as
/// they would from one diff.
fn merge_ops(ops: Vec<DiffOp>) -> Vec<DiffOp> {
    let mut out: Vec<DiffOp> = Vec::with_capacity(ops.len());
    for op in ops {
        let merged = match (out.last_mut(), op) {
            (
                Some(DiffOp::Equal {
                    old_index,
                    new_index,
                    len,
                }),
                DiffOp::Equal {
                    old_index: o,
                    new_index: n,
                    len: l,
                },
            ) if *old_index + *len == o && *new_index + *len == n => {
                *len += l;
                true
            }
            _ => false,
        };
        if !merged {
            out.push(op);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn line_paths_follow_nesting_and_lists() {
        let text = "apiVersion: v1\nkind: X\nspec:\n  values:\n    a: 1\n    list:\n    - x\n    - name: y\n      v: 2\n    text: |\n      one\n      two\n";
        let p = line_paths(text);
        let at = |line: u32| p.range(..=line).next_back().map(|(_, s)| s.clone()).unwrap();
        let k = |s: &str| Seg::Key(s.into());
        assert_eq!(at(5), vec![k("spec"), k("values"), k("a")]);
        assert_eq!(at(7), vec![k("spec"), k("values"), k("list"), Seg::Index(0)]);
        assert_eq!(at(9), vec![k("spec"), k("values"), k("list"), Seg::Index(1), k("v")]);
        assert_eq!(at(12), vec![k("spec"), k("values"), k("text")]);
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

    #[test]
    fn hunks_number_lines_like_diff_u() {
        let obj = Object {
            folder: String::new(),
            value: J::Null,
            origin: Origin::file_start("m.yaml"),
            component: None,
            source: crate::render::Source::Manifest,
            node: None,
            values: None,
        };
        let entry = |text: &str| Entry {
            object: &obj,
            merged: None,
            label: None,
            side: None,
            shown: OnceLock::from(Shown {
                text: text.to_owned(),
                hidden: Default::default(),
                path: None,
            }),
        };
        let key = Key {
            env: "e".into(),
            target: "flux".into(),
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: None,
            name: "m".into(),
        };
        let old: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l5\n", "L5\n");
        let (a, b) = (entry(&old), entry(&new));
        let (h, _) = hunks(&key, Some(&a), Some(&b), &Secrets::default());
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].header(), "@@ -2,7 +2,7 @@");
        let ops: Vec<Op> = h[0].lines.iter().map(|l| l.op).collect();
        assert_eq!(ops.iter().filter(|o| **o == Op::Context).count(), 6);
        assert_eq!(h[0].lines[3].text, "l5");
        assert_eq!(h[0].lines[3].op, Op::Removed);
        assert_eq!(h[0].lines[4].text, "L5");
        let (added, _) = hunks(&key, None, Some(&b), &Secrets::default());
        assert_eq!(added[0].header(), "@@ -0,0 +1,10 @@");
    }

    /// Applies an edit script to `old`, to check that it gives `new`.
    fn apply(ops: &[DiffOp], old: &[&str], new: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for op in ops {
            for c in op.iter_changes(old, new) {
                if c.tag() != ChangeTag::Delete {
                    out.push(c.value().to_owned());
                }
            }
        }
        out
    }

    #[test]
    fn a_long_list_where_every_item_changed_is_diffed_in_bounded_work() {
        let n = 200_000;
        let old: Vec<String> = (0..n).map(|i| format!("- item-{i}\n")).collect();
        let new: Vec<String> = (0..n).map(|i| format!("- other-{i}\n")).collect();
        let (old, new): (Vec<&str>, Vec<&str>) = (
            old.iter().map(String::as_str).collect(),
            new.iter().map(String::as_str).collect(),
        );
        let started = std::time::Instant::now();
        let (ops, coarse) = line_ops(&old, &new);
        assert!(coarse);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(apply(&ops, &old, &new), new);
        // Reversed: every line still there, none in order.
        let rev: Vec<&str> = old.iter().rev().copied().collect();
        let (ops, _) = line_ops(&old, &rev);
        assert_eq!(apply(&ops, &old, &rev), rev);
    }

    #[test]
    fn far_apart_changes_in_a_large_object_stay_small() {
        let old: Vec<String> = (0..100_000).map(|i| format!("key{i}: {i}\n")).collect();
        let mut new = old.clone();
        new[10] = "key10: changed\n".into();
        new[90_000] = "key90000: changed\n".into();
        let (old, new): (Vec<&str>, Vec<&str>) = (
            old.iter().map(String::as_str).collect(),
            new.iter().map(String::as_str).collect(),
        );
        let (ops, coarse) = line_ops(&old, &new);
        assert!(!coarse);
        assert_eq!(apply(&ops, &old, &new), new);
        let changed: usize = ops
            .iter()
            .filter(|o| !matches!(o, DiffOp::Equal { .. }))
            .map(|o| o.old_range().len() + o.new_range().len())
            .sum();
        assert_eq!(changed, 4);
    }
}
