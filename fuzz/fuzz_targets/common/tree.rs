//! What the import targets share: a fuzz input read as the files of a tree
//! written to a temporary folder, and the import run on it, checked for
//! what any input must give.
//!
//! The input is text: a line `#- PATH` starts a file at PATH (letters,
//! digits, `.`, `_`, `-` and `/`; a part that is empty, `.` or `..`, or
//! starts with `.`, is dropped); what comes before the first such line is
//! the file `first`. At most [`MAX_FILES`] files, each path at most
//! [`MAX_DEPTH`] parts.

use std::path::{Path, PathBuf};

use strata::diag::{Diagnostic, Sources};
use strata::import::{self, Engine, Tools};

pub const MAX_FILES: usize = 24;
pub const MAX_DEPTH: usize = 5;

/// A path of the input made safe to write under the tree, or `None`.
fn clean(path: &str) -> Option<String> {
    let parts: Vec<String> = path
        .split('/')
        .map(|p| {
            p.chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                .take(32)
                .collect::<String>()
        })
        .filter(|p| !p.is_empty() && !p.starts_with('.'))
        .take(MAX_DEPTH)
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The files of the input: `(path, text)`, the text before the first
/// header at `first`.
pub fn files(text: &str, first: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![(first.to_owned(), String::new())];
    for line in text.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("#- ") {
            if out.len() >= MAX_FILES {
                break;
            }
            let path = clean(rest.trim()).unwrap_or_else(|| format!("{first}-{}.yaml", out.len()));
            out.push((path, String::new()));
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.1.push_str(line);
        }
    }
    out
}

/// A new temporary folder, in memory where the system has `/dev/shm`.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .expect("a temporary folder")
}

/// Writes the files under a new temporary folder (in memory where the
/// system has `/dev/shm`); a path that collides with a folder is skipped.
pub fn write(files: &[(String, String)]) -> tempfile::TempDir {
    let tmp = scratch();
    for (path, text) in files {
        let at = tmp.path().join(path);
        if let Some(parent) = at.parent()
            && std::fs::create_dir_all(parent).is_err()
        {
            continue;
        }
        if at.is_dir() {
            continue;
        }
        let _ = std::fs::write(&at, text);
    }
    tmp
}

/// kubectl, which builds a Flux tree's kustomizations: `STRATA_KUBECTL`,
/// else the first on the `PATH`.
pub fn kubectl() -> PathBuf {
    if let Some(p) = std::env::var_os("STRATA_KUBECTL") {
        return PathBuf::from(p);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .expect("the Flux import targets need kubectl on the PATH (or STRATA_KUBECTL)")
}

/// Every diagnostic names a file of the tree (as shown) and a line.
fn placed(d: &Diagnostic, shown: &str) {
    let file = d.origin.file.to_string();
    assert!(
        file.starts_with(shown),
        "a diagnostic about {file:?}, outside the tree {shown:?}: {}",
        d.message
    );
    assert!(!d.message.is_empty(), "a diagnostic without a message at {file}");
}

/// Imports the tree at `root` as `engine` and checks what any tree must
/// give: errors and notes placed in the tree, and, when it reads, releases
/// in environments and under names strata can use, laid out as a platform
/// without a panic.
pub fn import(engine: Engine, root: &Path) {
    let shown = "tree";
    // helm is left out: an Argo CD app-of-apps chart is then named as not
    // rendered, and no input runs a chart.
    let tools = Tools {
        kubectl: (engine == Engine::Flux).then(kubectl),
        helm: None,
    };
    let sources = Sources::default();
    match import::read(engine, root, shown, &tools, &sources) {
        Err(errors) => {
            assert!(!errors.is_empty(), "a failed import says why");
            errors.iter().for_each(|d| placed(d, shown));
        }
        Ok(read) => {
            read.notes.iter().for_each(|d| placed(d, shown));
            for r in &read.releases {
                let label = |s: &str| {
                    !s.is_empty()
                        && s.len() <= 63
                        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                };
                assert!(label(&r.env), "environment {:?} is no name strata can use", r.env);
                assert!(r.origin.file.to_string().starts_with(shown), "{:?}", r.origin);
            }
            let planned = import::plan(&read);
            for f in &planned.files {
                let p = &f.path;
                assert!(
                    !p.starts_with('/') && !p.split('/').any(|part| part == ".."),
                    "an imported file would be written at {p}"
                );
            }
            written(&planned, &sources);
        }
    }
}

/// Writes the planned platform to a folder of its own and compiles it as
/// `strata import` does, without charts (no program runs): it compiles or
/// fails with diagnostics, never a panic.
fn written(planned: &import::Imported, sources: &Sources) {
    let out = scratch();
    if strata::scaffold::write_new(out.path(), &planned.files).is_err() {
        return;
    }
    let inflate = strata::inflate::Settings::default();
    let _ = import::verify(out.path(), "2026-01-01".to_owned(), planned, &inflate, sources);
}
