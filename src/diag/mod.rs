//! Diagnostics: every problem strata finds, from a YAML syntax error to a
//! broken invariant, is one [`Diagnostic`] with a place in a file. Stages
//! collect them; only the CLI prints them, through one of the renderers.

pub mod ci;
mod github;
mod json;
mod sarif;
mod text;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

pub use github::render_github;
pub use json::render_json;
pub use sarif::{RuleMeta, render_sarif};
pub use text::render_text;

use crate::secrets::Secrets;
use crate::yaml::Origin;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        })
    }
}

/// One finding. `code` is a rule code (`NET001`) for invariant findings and
/// an input-error code (`E0xx`, see [`codes`]) for everything else.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub origin: Origin,
    /// The text under the caret; defaults to nothing.
    pub label: Option<String>,
    /// Further places, each with its own label.
    pub related: Vec<(Origin, String)>,
    pub notes: Vec<String>,
    pub help: Option<String>,
    /// The environment the finding is about, when it is about one.
    pub env: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, origin: Origin, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            origin,
            label: None,
            related: Vec::new(),
            notes: Vec::new(),
            help: None,
            env: None,
        }
    }

    pub fn warning(code: &'static str, origin: Origin, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, origin, message)
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_related(mut self, origin: Origin, label: impl Into<String>) -> Self {
        self.related.push((origin, label.into()));
        self
    }

    /// Sets the environment unless one is already set.
    pub fn in_env(mut self, env: &str) -> Self {
        if self.env.is_none() {
            self.env = Some(env.to_owned());
        }
        self
    }

    /// The order diagnostics are printed in: by file, place, then code.
    pub fn sort_key(&self) -> impl Ord + '_ {
        (
            &self.env,
            &self.origin.file,
            self.origin.line,
            self.origin.col,
            self.code,
            &self.message,
        )
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[{}]: {} at {}",
            self.severity, self.code, self.message, self.origin
        )
    }
}

/// A short rendering of a found value: `true`, `"three"`, `a mapping`.
pub fn found(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => {
            let mut t: String = s.chars().take(60).collect();
            if t.len() < s.len() {
                t.push('…');
            }
            format!("the string {}", serde_json::to_string(&t).unwrap_or_default())
        }
        serde_json::Value::Array(_) => "a list".into(),
        serde_json::Value::Object(_) => "a mapping".into(),
    }
}

/// A finding's message as its identity: the digest of values in a name
/// strata writes (`<component>-values-<10 hex digits>`, the Flux values
/// ConfigMap) masked, so that a finding that names one is the same finding
/// when only the values changed.
pub fn identity(message: &str) -> std::borrow::Cow<'_, str> {
    const MARK: &str = "-values-";
    if !message.contains(MARK) {
        return std::borrow::Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find(MARK) {
        let after = &rest[i + MARK.len()..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        out.push_str(&rest[..i + MARK.len()]);
        if hex == 10 {
            out.push('#');
            rest = &after[hex..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Sorts diagnostics into print order and drops exact repeats (the same
/// problem found in two environments is reported for each of them).
pub fn normalize(diags: &mut Vec<Diagnostic>) {
    diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    diags.dedup();
}

/// Input-error codes: problems with what the user wrote, found before any
/// invariant runs. Assigned here only; a code is never reused.
pub mod codes {
    /// A file could not be read (missing, unreadable, outside the repository).
    pub const IO: &str = "E001";
    /// YAML or JSON syntax, duplicate keys, budgets.
    pub const SYNTAX: &str = "E002";
    /// A key strata does not know.
    pub const UNKNOWN_KEY: &str = "E003";
    /// A missing or mistyped field, or a value of the wrong form.
    pub const SHAPE: &str = "E004";
    /// The environment and its contract disagree.
    pub const CONTRACT: &str = "E005";
    /// `requires` names no component, or forms a cycle.
    pub const GRAPH: &str = "E006";
    /// A template failed to render.
    pub const TEMPLATE: &str = "E007";
    /// A sensitive contract output was referred to.
    pub const SENSITIVE: &str = "E008";
    /// The output tree cannot be written safely.
    pub const OUTPUT: &str = "E009";
    /// A schema rejected an input or rendered object (see also E021–E023).
    pub const SCHEMA: &str = "E010";
    /// A waiver is malformed, expired or unused.
    pub const WAIVER: &str = "E011";
    /// helm cannot render a component's chart (a template error such as
    /// `required`, or helm itself is missing when it is required).
    pub const CHART_RENDER: &str = "E012";
    /// A chart archive is not pinned in `strata.lock`, not in the store, or
    /// not the bytes the lock pins.
    pub const CHART_STORE: &str = "E013";
    /// A chart renders differently from one run to the next.
    pub const CHART_UNSTABLE: &str = "E014";
    /// Components judged through chart profiles instead of their rendered chart.
    pub const PROFILE_JUDGED: &str = "E015";
    /// A values key in a layer above the base that no lower layer and no chart default has, near one that exists.
    pub const VALUES_TYPO: &str = "E016";
    /// A `patches:` entry cannot be applied to the object it targets.
    pub const PATCH: &str = "E017";
    /// A `patches:` entry matches no object in an environment.
    pub const PATCH_UNMATCHED: &str = "E042";
    /// The cluster objects the substrate generates cannot work as the
    /// platform is set up (an overlapping pool, L2 without kube-proxy
    /// replacement).
    pub const CLUSTER_OBJECTS: &str = "E018";
    /// A name that Kubernetes, Helm or strata refuses: an environment,
    /// component or namespace name, a reserved name, a folder that does
    /// not match its component.
    pub const NAME: &str = "E019";
    /// Objects that cannot be written as they are: one defined twice, two
    /// laid out into one file, a manifest that is no Kubernetes object or
    /// writes a namespace Kubernetes owns, conflicting namespace metadata.
    pub const OBJECT: &str = "E020";
    /// A rendered kind for which no schema location has a schema.
    pub const NO_SCHEMA: &str = "E021";
    /// A schema, or a schema location, that cannot be used.
    pub const BAD_SCHEMA: &str = "E022";
    /// Rendered objects were not validated: no schema location is set.
    pub const NOT_VALIDATED: &str = "E023";
    /// A hydrated tree would commit a `Secret`, key material in any object,
    /// or values a chart generates at random, to git.
    pub const HYDRATED_SECRET: &str = "E024";
    /// A hydrated chart's Helm hooks, which Flux applies as ordinary objects.
    pub const HYDRATED_HOOK: &str = "E025";
    /// A stored chart archive's own `Chart.yaml` names another chart or
    /// version than the `strata.lock` entry that pins it.
    pub const CHART_IDENTITY: &str = "E026";
    /// A chart name or version, or a custom resource's API version, that
    /// cannot be given to helm.
    pub const HELM_ARGUMENT: &str = "E027";
    /// The CNI renders a Secret, key material in any object, or random
    /// values that the substrate's patch would carry into git.
    pub const SUBSTRATE_SECRET: &str = "E040";
    /// The substrate's patch lacks the CNI's objects (its chart was not rendered).
    pub const SUBSTRATE_CNI: &str = "E041";
    /// A chart mirror that no chart goes through: its key names no
    /// repository a component (or a local chart's dependency) uses.
    pub const UNUSED_MIRROR: &str = "E060";
    /// Which workloads the HA rules judge in an environment: ADR 007's
    /// controllers, and every Deployment and StatefulSet of a component
    /// with `ha: true`.
    pub const HA_JUDGED: &str = "E061";
    /// An input is what a git filter stores in place of the file: a Git
    /// LFS pointer, a git-crypt blob, the output of a repository's filter.
    pub const FILTERED: &str = "E030";
    /// `strata contract import` cannot write the contract: its input is not
    /// `tofu output -json`, or the place to write is not the environment's
    /// contract.
    pub const CONTRACT_IMPORT: &str = "E031";
    /// The tree `strata import` was given cannot be read: no such folder,
    /// malformed YAML in an object it needs, kubectl missing or failing.
    pub const IMPORT_SOURCE: &str = "E032";
    /// Something `strata import` could not convert, and why.
    pub const NOT_CONVERTED: &str = "E033";
    /// A release whose values after an import differ from what the source
    /// tree gives it.
    pub const IMPORT_DIFFERS: &str = "E034";
    /// `strata init` or `strata import` refused to write: the folder holds a
    /// platform, a file is already there, or a path leaves the folder.
    pub const REFUSED_WRITE: &str = "E035";
    /// An engine version strata cannot write for: `engines:` that is no
    /// release, or a Flux or Argo CD older than the oldest strata writes for.
    pub const ENGINE_VERSION: &str = "E055";
    /// A setting the environment's Flux or Argo CD version does not accept:
    /// strata writes the nearest form that version takes, and says so.
    pub const ENGINE_FIELD: &str = "E056";
    /// An object strata generates that the CRDs of the environment's own
    /// engine chart refuse.
    pub const ENGINE_CRD: &str = "E057";
    /// A component switches between a Helm release and hydrated objects:
    /// the tree hands it over so that the engine uninstalls nothing.
    pub const HAND_OVER: &str = "E058";
    /// A Helm hook a hydrated Flux tree leaves out (delete, rollback, test).
    pub const HOOK_LEFT_OUT: &str = "E059";
    /// A namespace label or annotation the API server refuses: not a
    /// qualified name, a label value past 63 characters or with other
    /// characters, a Pod Security level or version that is none.
    pub const NAMESPACE_METADATA: &str = "E050";
    /// One of strata's own engine objects (Flux's sources, Kustomization
    /// and HelmRelease, Argo CD's Application), as patched, that its
    /// kind's schema refuses.
    pub const ENGINE_OBJECT: &str = "E051";
    /// A value of a rendered object that the API server refuses and no
    /// JSON Schema states: a port, a label, an annotation key, a name.
    pub const SERVER_VALUE: &str = "E052";
    /// The admission preview did not run: its program is missing or failed,
    /// or the substrate's PodSecurity configuration is refused.
    pub const ADMISSION_NOT_RUN: &str = "E073";
    /// Something the admission preview could not judge: an object it could
    /// not read, a policy without a binding, a kind of policy it does not run.
    pub const ADMISSION_NOT_JUDGED: &str = "E074";
    /// The tree `strata import` was given names something outside itself:
    /// a symbolic link, or a kustomization path that leaves it.
    pub const IMPORT_OUTSIDE: &str = "E065";
    /// An imported release that could not be proven equal: its chart did
    /// not render, or the engine gives it values the import cannot read.
    pub const IMPORT_UNPROVEN: &str = "E066";
    /// An imported release whose rendered objects differ from the engine's
    /// render of the source.
    pub const IMPORT_OBJECTS: &str = "E067";
}

/// The text of every file strata has read, so that renderers can show the
/// offending line, and the secrets of every contract read so far, so that
/// they never show one. Shared across threads; filled as files are loaded.
#[derive(Clone, Default)]
pub struct Sources {
    files: Arc<RwLock<BTreeMap<Arc<str>, Arc<str>>>>,
    /// Every contract's secrets, and how many times they grew.
    secrets: Arc<RwLock<(u64, Secrets)>>,
    /// Texts as snippets may show them, computed when first shown, with the
    /// generation of the secrets they were computed with.
    shown: Arc<RwLock<BTreeMap<Arc<str>, Shown>>>,
    /// Parsed YAML documents by file and text, kept when a second compile
    /// of mostly the same files follows (the base of a diff): an unchanged
    /// file is not parsed twice.
    parses: Option<Arc<RwLock<ParseCache>>>,
}

type ParseCache = std::collections::HashMap<Arc<str>, (Arc<str>, crate::yaml::Node)>;

/// A file's text as shown, and the generation of secrets it was made with.
type Shown = (u64, Arc<str>);

impl Sources {
    /// New, empty file texts that share this one's secrets: for a second
    /// compile (the base of a diff) whose diagnostics must hide the secrets
    /// of both.
    pub fn sharing_secrets(&self) -> Sources {
        Sources {
            secrets: Arc::clone(&self.secrets),
            parses: self.parses.clone(),
            ..Sources::default()
        }
    }

    /// Keeps every parsed document for the compiles that share these
    /// sources' secrets (see [`Sources::sharing_secrets`]).
    pub fn keeping_parses(mut self) -> Sources {
        self.parses = Some(Arc::default());
        self
    }

    /// `text` of `file` parsed by `parse`, or as parsed before when the
    /// parses are kept and the text is the same. `text` is kept as it is
    /// (see [`Sources::record`]), not copied.
    pub fn parse<E>(
        &self,
        file: &Arc<str>,
        text: &Arc<str>,
        parse: impl FnOnce() -> Result<crate::yaml::Node, E>,
    ) -> Result<crate::yaml::Node, E> {
        let Some(cache) = &self.parses else { return parse() };
        if let Ok(cache) = cache.read()
            && let Some((kept, node)) = cache.get(file)
            && (Arc::ptr_eq(kept, text) || **kept == **text)
        {
            return Ok(node.clone());
        }
        let node = parse()?;
        if let Ok(mut cache) = cache.write() {
            cache.insert(Arc::clone(file), (Arc::clone(text), node.clone()));
        }
        Ok(node)
    }

    pub fn insert(&self, path: &Arc<str>, text: &str) {
        self.note_credentials(text);
        if let Ok(mut files) = self.files.write() {
            files.entry(Arc::clone(path)).or_insert_with(|| Arc::from(text));
        }
    }

    /// Records a file's text as [`Sources::insert`] does and gives it back
    /// shared: one copy serves the diagnostics, the kept parses and, when
    /// the text is the same, the other side of a diff (whose sources share
    /// the parses). A path recorded before with another text keeps that
    /// text for its diagnostics, as `insert` does; the text read now is
    /// still the one given back.
    pub fn record(&self, path: &Arc<str>, text: String) -> Arc<str> {
        self.note_credentials(&text);
        let known = self.parses.as_ref().and_then(|cache| {
            let cache = cache.read().ok()?;
            let (kept, _) = cache.get(path)?;
            (**kept == *text).then(|| Arc::clone(kept))
        });
        let text = known.unwrap_or_else(|| Arc::from(text));
        if let Ok(mut files) = self.files.write() {
            let kept = files.entry(Arc::clone(path)).or_insert_with(|| Arc::clone(&text));
            if Arc::ptr_eq(kept, &text) || **kept == *text {
                return Arc::clone(kept);
            }
        }
        text
    }

    /// The text as read. Renderers use [`Sources::shown`].
    pub fn get(&self, path: &str) -> Option<Arc<str>> {
        self.files.read().ok()?.get(path).cloned()
    }

    /// Records a file's text with every line that shows one of `secrets`
    /// replaced by a marker: the contract's own text is never kept whole.
    pub fn insert_redacted(&self, path: &Arc<str>, text: &str, secrets: &Secrets) {
        self.insert(path, &hide_lines(text, &crate::secrets::hidden_lines(text, secrets)));
    }

    /// The credentials of the URLs a file's text holds (a repository's,
    /// a mirror's, a git remote's) join the secrets, so that no printed
    /// form of one shows, not only the URL as written.
    fn note_credentials(&self, text: &str) {
        if !text.contains("://") {
            return;
        }
        let found = crate::secrets::url::credentials(text);
        if !found.is_empty() {
            self.add_secrets(&Secrets::of_texts("the credentials of a URL", found));
        }
    }

    /// Adds a contract's secrets to those every diagnostic is scrubbed of.
    pub fn add_secrets(&self, more: &Secrets) {
        if more.is_empty() {
            return;
        }
        if let Ok(mut s) = self.secrets.write() {
            s.1 = Secrets::union([&s.1, more]);
            s.0 += 1;
        }
    }

    /// Every secret of every contract read so far.
    pub fn secrets(&self) -> Secrets {
        self.secrets.read().map(|s| s.1.clone()).unwrap_or_default()
    }

    /// A file's text as a snippet may show it: each line that a secret
    /// spans, or that shows one, replaced by [`REDACTED`], and the
    /// credentials of each URL hidden.
    pub fn shown(&self, path: &str) -> Option<Arc<str>> {
        let (generation, secrets) = self.secrets.read().ok().map(|s| (s.0, s.1.clone()))?;
        if let Some((g, text)) = self.shown.read().ok()?.get(path)
            && *g == generation
        {
            return Some(Arc::clone(text));
        }
        let raw = self.get(path)?;
        let text: Arc<str> = if secrets.is_empty() {
            raw
        } else {
            Arc::from(hide_lines(&raw, &crate::secrets::hidden_lines(&raw, &secrets)))
        };
        let text = match crate::secrets::url::redact_userinfo(&text) {
            std::borrow::Cow::Owned(t) => Arc::from(t),
            std::borrow::Cow::Borrowed(_) => text,
        };
        if let Ok(mut shown) = self.shown.write() {
            shown.insert(Arc::from(path), (generation, Arc::clone(&text)));
        }
        Some(text)
    }
}

/// What a hidden line shows instead.
pub const REDACTED: &str = crate::secrets::MARK;

fn hide_lines(text: &str, hidden: &std::collections::BTreeSet<u32>) -> String {
    if hidden.is_empty() {
        return text.to_owned();
    }
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            // The indentation stays, so that a label still points at its column.
            if hidden.contains(&(i as u32 + 1)) {
                let indent = l.len() - l.trim_start_matches([' ', '\t']).len();
                format!("{}{REDACTED}", &l[..indent])
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Takes every secret [`Sources`] knows out of the text of diagnostics:
/// message, label, notes, help and related labels. Only the secret's
/// occurrence is replaced, so the rest of the message still reads. Snippets
/// are hidden where they are shown ([`Sources::shown`]). Every command runs
/// this before a renderer sees a diagnostic.
pub fn scrub(diags: &mut [Diagnostic], sources: &Sources) {
    // Not only a contract's secrets: the credentials of a URL too.
    let secrets = sources.secrets();
    let clean = |s: &mut String| {
        if let std::borrow::Cow::Owned(o) = secrets.redact_text(s) {
            *s = o;
        }
    };
    for d in diags.iter_mut() {
        clean(&mut d.message);
        if let Some(l) = d.label.as_mut() {
            clean(l);
        }
        if let Some(h) = d.help.as_mut() {
            clean(h);
        }
        d.notes.iter_mut().for_each(clean);
        d.related.iter_mut().for_each(|(_, l)| clean(l));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_read_on_both_sides_of_a_diff_is_held_once() {
        let head = Sources::default().keeping_parses();
        let base = head.sharing_secrets();
        let file: Arc<str> = Arc::from("a.yaml");
        let text = head.record(&file, "a: 1\n".to_owned());
        let parse = |t: &Arc<str>| crate::yaml::parse(&file, t);
        head.parse(&file, &text, || parse(&text)).unwrap();
        // The base reads the same bytes: the head's text is shared, in its
        // diagnostics and its parse.
        let same = base.record(&file, "a: 1\n".to_owned());
        assert!(Arc::ptr_eq(&text, &same));
        assert!(Arc::ptr_eq(&base.get("a.yaml").unwrap(), &text));
        // Another text is its own.
        let other = base.record(&Arc::from("b.yaml"), "a: 1\n".to_owned());
        assert!(!Arc::ptr_eq(&text, &other));
        let changed = base.record(&Arc::from("c.yaml"), "a: 2\n".to_owned());
        assert_eq!(&*changed, "a: 2\n");
        // A path recorded before with another text keeps that text for its
        // diagnostics, and the text read now is the one given back.
        let again = head.record(&file, "a: 3\n".to_owned());
        assert_eq!(&*again, "a: 3\n");
        assert_eq!(&*head.get("a.yaml").unwrap(), "a: 1\n");
    }
}
