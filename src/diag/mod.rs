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
    /// A missing or mistyped field.
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
    /// A schema rejected an input or rendered object.
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
    /// The cluster objects the substrate generates cannot work as the
    /// platform is set up (an overlapping pool, L2 without kube-proxy
    /// replacement).
    pub const CLUSTER_OBJECTS: &str = "E018";
}

/// The text of every file strata has read, so that renderers can show the
/// offending line. Shared across threads; filled as files are loaded.
#[derive(Clone, Default)]
pub struct Sources {
    files: Arc<RwLock<BTreeMap<Arc<str>, Arc<str>>>>,
}

impl Sources {
    pub fn insert(&self, path: &Arc<str>, text: &str) {
        if let Ok(mut files) = self.files.write() {
            files.entry(Arc::clone(path)).or_insert_with(|| Arc::from(text));
        }
    }

    pub fn get(&self, path: &str) -> Option<Arc<str>> {
        self.files.read().ok()?.get(path).cloned()
    }

    /// Records a file's text with every line for which `hide` holds
    /// replaced by a marker, so that no snippet can ever show it.
    pub fn insert_redacted(&self, path: &Arc<str>, text: &str, hide: impl Fn(&str) -> bool) {
        self.insert(path, &hide_lines(text, hide));
    }

    /// Replaces every line of a recorded file for which `hide` holds with a
    /// marker, so that no snippet can show it.
    pub fn redact_lines(&self, path: &str, hide: impl Fn(&str) -> bool) {
        if let Ok(mut files) = self.files.write()
            && let Some(text) = files.get_mut(path)
            && text.lines().any(&hide)
        {
            *text = Arc::from(hide_lines(text, hide).as_str());
        }
    }
}

/// What a redacted line shows instead.
pub const REDACTED: &str = "<sensitive value redacted>";

fn hide_lines(text: &str, hide: impl Fn(&str) -> bool) -> String {
    text.lines()
        .map(|l| if hide(l) { REDACTED } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}
