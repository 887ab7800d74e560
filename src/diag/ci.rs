//! What the formats read by CI (SARIF, GitHub annotations, JSON) share: one
//! finding per problem however many environments show it, paths from the
//! top of the git checkout rather than from the strata root, and a
//! fingerprint that survives a finding moving to another line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{Diagnostic, Severity};
use crate::yaml::Origin;

/// One problem, told once: the diagnostics of every environment that share
/// its code, place and message.
#[derive(Debug)]
pub struct Finding<'a> {
    /// The first diagnostic of the group; its code, origin, message, label
    /// and help are the finding's.
    pub diag: &'a Diagnostic,
    /// The most severe of the group.
    pub severity: Severity,
    /// Every environment that shows it, sorted; empty when none does.
    pub envs: Vec<&'a str>,
    /// Every note of the group, first seen first, without repeats.
    pub notes: Vec<&'a str>,
    /// Every related place of the group, first seen first, without repeats.
    pub related: Vec<(&'a Origin, &'a str)>,
}

impl Finding<'_> {
    /// ` (environment staging)` or ` (environments dev, staging)`; empty
    /// when the finding is about no environment.
    pub fn env_suffix(&self) -> String {
        match self.envs.as_slice() {
            [] => String::new(),
            [one] => format!(" (environment {one})"),
            many => format!(" (environments {})", many.join(", ")),
        }
    }
}

/// Groups diagnostics that differ only in their environment, in a stable
/// order: by file, line, column, code, then message.
pub fn group(diags: &[Diagnostic]) -> Vec<Finding<'_>> {
    type Key<'a> = (&'a str, u32, u32, u32, &'a str, &'a str);
    let mut groups: BTreeMap<Key<'_>, Finding<'_>> = BTreeMap::new();
    for d in diags {
        let o = &d.origin;
        let key = (o.file.as_ref(), o.line, o.col, o.len, d.code, d.message.as_str());
        let f = groups.entry(key).or_insert_with(|| Finding {
            diag: d,
            severity: d.severity,
            envs: Vec::new(),
            notes: Vec::new(),
            related: Vec::new(),
        });
        f.severity = f.severity.min(d.severity);
        if let Some(env) = d.env.as_deref()
            && !f.envs.contains(&env)
        {
            f.envs.push(env);
        }
        for n in &d.notes {
            if !f.notes.contains(&n.as_str()) {
                f.notes.push(n);
            }
        }
        for (o, l) in &d.related {
            if !f.related.iter().any(|(ro, rl)| *ro == o && *rl == l) {
                f.related.push((o, l));
            }
        }
    }
    groups
        .into_values()
        .map(|mut f| {
            f.envs.sort_unstable();
            f
        })
        .collect()
}

/// Where the strata root sits in its git checkout, and which of the files
/// the diagnostics name are files of the repository (not strata's own
/// built-in templates and profiles, `<builtin>/…`).
#[derive(Debug, Clone)]
pub struct Checkout {
    /// The strata root relative to the top, `/`-separated, with a trailing
    /// `/`; empty when they are the same folder.
    prefix: String,
    /// The top as an absolute `file:` URI ending in `/`.
    base_uri: Option<String>,
    /// Root-relative paths that name files of the repository.
    files: BTreeSet<String>,
}

/// The file every strata root holds; findings about no file of the
/// repository are anchored there where a format needs a file.
const PROJECT_FILE: &str = "strata.yaml";

impl Checkout {
    /// `root` is the strata root and `top` the top of the git work tree
    /// holding it, if it is in one; without a top (or with one that does not
    /// hold the root, or a root whose path from it is not UTF-8) paths stay
    /// relative to the root. `is_file` tells
    /// whether a root-relative path is a file of the repository; it is asked
    /// only about the files `diags` name.
    pub fn new(root: &Path, top: Option<&Path>, diags: &[Diagnostic], is_file: impl Fn(&str) -> bool) -> Self {
        let located = top.and_then(|t| {
            let rel = root.strip_prefix(t).ok()?;
            let parts = rel
                .components()
                .map(|c| c.as_os_str().to_str())
                .collect::<Option<Vec<_>>>()?;
            Some((t, parts))
        });
        let (base, parts) = located.unwrap_or((root, Vec::new()));
        let prefix: String = parts.iter().map(|p| format!("{p}/")).collect();
        let named: BTreeSet<&str> = diags
            .iter()
            .flat_map(|d| std::iter::once(&d.origin).chain(d.related.iter().map(|(o, _)| o)))
            .map(|o| o.file.as_ref())
            .chain([PROJECT_FILE])
            .collect();
        let files = named
            .into_iter()
            .filter(|f| !f.starts_with('<') && is_file(f))
            .map(str::to_owned)
            .collect();
        Checkout {
            prefix,
            base_uri: base.is_absolute().then(|| file_uri(base)),
            files,
        }
    }

    /// The path of a diagnostic's file from the top of the checkout, or
    /// `None` when it names no file of the repository.
    pub fn repo_path(&self, file: &str) -> Option<String> {
        self.files.contains(file).then(|| format!("{}{file}", self.prefix))
    }

    /// The repository path of the strata root's `strata.yaml`, where a
    /// finding about no repository file can be anchored.
    pub fn project_file(&self) -> Option<String> {
        self.repo_path(PROJECT_FILE)
    }

    /// The top of the checkout as an absolute `file:` URI ending in `/`.
    pub fn base_uri(&self) -> Option<&str> {
        self.base_uri.as_deref()
    }
}

/// Percent-encodes a `/`-separated path for a URI (RFC 3986): every byte
/// but the unreserved characters and `/` is encoded, so spaces, `%`, `#`,
/// `?`, `:` and non-ASCII text (as UTF-8) are.
pub fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An absolute folder as a `file:` URI ending in `/`.
fn file_uri(dir: &Path) -> String {
    let mut path = dir.to_string_lossy().replace('\\', "/");
    if !path.starts_with('/') {
        // A Windows drive path: `file:///C:/…`.
        path.insert(0, '/');
    }
    if !path.ends_with('/') {
        path.push('/');
    }
    // Keep a drive letter's colon (`/C:`) as it is.
    let (drive, rest) = if path.as_bytes().get(2) == Some(&b':') {
        path.split_at(3)
    } else {
        ("", path.as_str())
    };
    format!("file://{drive}{}", encode_path(rest))
}

/// A finding's identity for code scanning: the code, the file and the
/// message with line and column numbers taken out, so that a finding that
/// only moves to another line keeps it.
pub fn fingerprint(code: &str, path: &str, message: &str) -> String {
    let mut h = Sha256::new();
    for part in [code, path, &normalize_message(&super::identity(message))] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    crate::world::disk::hex(&h.finalize()[..16])
}

/// The message without the places in it: `file.yaml:78:7` becomes
/// `file.yaml:#`, `line 78` becomes `line #`, and runs of white space one
/// space. Other numbers (replica counts, ports of addresses) stay.
fn normalize_message(message: &str) -> String {
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            if !out.is_empty() && i < chars.len() {
                out.push(' ');
            }
            continue;
        }
        // `<path with an extension>:<line>[:<column>]`
        if c == ':' && ends_with_file_name(&out) && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
            i = skip_digits(&chars, i + 1);
            if chars.get(i) == Some(&':') && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
                i = skip_digits(&chars, i + 1);
            }
            out.push_str(":#");
            continue;
        }
        // `line 78`, `lines 3`, `column 7`, `col 7`
        if c.is_ascii_digit() && follows_place_word(&out) {
            i = skip_digits(&chars, i);
            out.push('#');
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

fn skip_digits(chars: &[char], mut i: usize) -> usize {
    while chars.get(i).is_some_and(char::is_ascii_digit) {
        i += 1;
    }
    i
}

/// Whether `text` ends in a file name with an extension (`values.yaml`,
/// `policy.yaml.j2`), as opposed to an address (`10.0.0.1`).
fn ends_with_file_name(text: &str) -> bool {
    let word = text
        .rsplit(|c: char| c.is_whitespace() || "`'\"(".contains(c))
        .next()
        .unwrap_or("");
    match word.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && ext.starts_with(|c: char| c.is_ascii_alphabetic())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
        }
        None => false,
    }
}

fn follows_place_word(text: &str) -> bool {
    let Some(before) = text.strip_suffix(' ') else {
        return false;
    };
    let word = before.rsplit(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
    ["line", "lines", "column", "columns", "col"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn diag(file: &str, line: u32, env: Option<&str>, msg: &str) -> Diagnostic {
        let file: Arc<str> = Arc::from(file);
        let d = Diagnostic::error("HA001", Origin::new(&file, line, 3, 2), msg);
        match env {
            Some(e) => d.in_env(e),
            None => d,
        }
    }

    #[test]
    fn one_finding_per_problem_across_environments() {
        let diags = vec![
            diag("b.yaml", 1, Some("staging"), "same").with_note("n1"),
            diag("b.yaml", 1, Some("dev"), "same").with_note("n1").with_note("n2"),
            diag("a.yaml", 9, Some("dev"), "other"),
            diag("b.yaml", 1, Some("dev"), "different"),
        ];
        let found = group(&diags);
        let summary: Vec<(&str, &str, Vec<&str>)> = found
            .iter()
            .map(|f| (f.diag.origin.file.as_ref(), f.diag.message.as_str(), f.envs.clone()))
            .collect();
        assert_eq!(
            summary,
            [
                ("a.yaml", "other", vec!["dev"]),
                ("b.yaml", "different", vec!["dev"]),
                ("b.yaml", "same", vec!["dev", "staging"]),
            ]
        );
        assert_eq!(found[2].notes, ["n1", "n2"]);
        assert_eq!(found[2].env_suffix(), " (environments dev, staging)");
        assert_eq!(found[0].env_suffix(), " (environment dev)");
    }

    #[test]
    fn paths_are_taken_from_the_top_of_the_checkout() {
        let diags = vec![
            diag("gitops/x.yaml", 1, None, "m"),
            diag("<builtin>/templates/t.yaml.j2", 1, None, "m"),
            diag("gone.yaml", 1, None, "m"),
        ];
        let c = Checkout::new(Path::new("/r/my platform"), Some(Path::new("/r")), &diags, |f| {
            f != "gone.yaml"
        });
        assert_eq!(
            c.repo_path("gitops/x.yaml").as_deref(),
            Some("my platform/gitops/x.yaml")
        );
        assert_eq!(c.repo_path("<builtin>/templates/t.yaml.j2"), None);
        assert_eq!(c.repo_path("gone.yaml"), None);
        assert_eq!(c.project_file().as_deref(), Some("my platform/strata.yaml"));
        assert_eq!(c.base_uri(), Some("file:///r/"));

        // Not in a git repository, or a top that does not hold the root: the root.
        for top in [None, Some(Path::new("/elsewhere"))] {
            let c = Checkout::new(Path::new("/r/p"), top, &diags, |_| true);
            assert_eq!(c.repo_path("gitops/x.yaml").as_deref(), Some("gitops/x.yaml"));
            assert_eq!(c.base_uri(), Some("file:///r/p/"));
        }
    }

    #[test]
    fn uris_are_percent_encoded() {
        assert_eq!(
            encode_path("my platform/a%b#c?d:e/stäging ü.yaml"),
            "my%20platform/a%25b%23c%3Fd%3Ae/st%C3%A4ging%20%C3%BC.yaml"
        );
        assert_eq!(
            encode_path("gitops/a-b_c.d~e/values.yaml"),
            "gitops/a-b_c.d~e/values.yaml"
        );
        assert_eq!(file_uri(Path::new("/tmp/a b")), "file:///tmp/a%20b/");
    }

    #[test]
    fn fingerprints_ignore_places_but_not_other_numbers() {
        assert_eq!(
            normalize_message("set at gitops/values.yaml:78:7 and\n  line 12, column 3"),
            "set at gitops/values.yaml:# and line #, column #"
        );
        assert_eq!(
            normalize_message("endpoint https://10.0.0.1:6443 runs 1 replica"),
            "endpoint https://10.0.0.1:6443 runs 1 replica"
        );
        let a = fingerprint("NET001", "p/values.yaml", "Local at p/values.yaml:78:7");
        assert_eq!(a, fingerprint("NET001", "p/values.yaml", "Local at p/values.yaml:79:7"));
        assert_ne!(
            a,
            fingerprint("NET001", "p/values-dev.yaml", "Local at p/values.yaml:78:7")
        );
        assert_ne!(a, fingerprint("NET002", "p/values.yaml", "Local at p/values.yaml:78:7"));
        assert_ne!(
            fingerprint("HA001", "c.yaml", "runs 1 replica"),
            fingerprint("HA001", "c.yaml", "runs 2 replicas")
        );
        assert_eq!(a.len(), 32);
    }
}
