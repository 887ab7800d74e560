//! `render --check`: the files of a render compared with the tree on disk as
//! they arrive, with the writer's care (no links followed, no pipes opened,
//! no file read whole); nothing is written.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::layout::Files;
use super::manifest::{Manifest, bad_path, in_scope, read_manifest};
use super::write::{WriteError, io};
use crate::world::disk::{self, Dirs, Entry};

/// How a file on disk differs from what strata would write.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum StaleKind {
    Missing,
    Changed,
    Extra,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stale {
    pub path: String,
    pub kind: StaleKind,
}

/// Compares the tree on disk with the files of a render as they arrive, for
/// `render --check`; writes nothing.
pub struct Checker {
    out: PathBuf,
    scope: Vec<String>,
    manifest: Manifest,
    warnings: Vec<String>,
    dirs: Dirs,
    state: Mutex<(BTreeSet<String>, Vec<Stale>)>,
}

impl Checker {
    pub fn begin(out: &Path, scope: Vec<String>) -> Result<Checker, WriteError> {
        let mut warnings = Vec::new();
        let (manifest, _) = read_manifest(out, &mut warnings)?;
        Ok(Checker {
            out: out.to_path_buf(),
            scope,
            manifest: manifest.unwrap_or_default(),
            warnings,
            dirs: Dirs::default(),
            state: Mutex::new((BTreeSet::new(), Vec::new())),
        })
    }

    /// Manifest entries that were ignored.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Compares one file of the render with the disk; each path once.
    pub fn put(&self, path: &str, content: &[u8]) -> Result<(), WriteError> {
        if let Some(reason) = bad_path(path) {
            return Err(WriteError::Invalid {
                path: path.to_owned(),
                reason: reason.into(),
            });
        }
        let full = self.out.join(path);
        let kind = match self.dirs.probe(&self.out, path).map_err(io(&full))? {
            Entry::Absent | Entry::Blocked(_) => Some(StaleKind::Missing),
            Entry::Dir | Entry::Other => Some(StaleKind::Changed),
            Entry::File(m) => {
                let c = disk::compare(&full, m.len(), content, false).map_err(io(&full))?;
                (!c.equal).then_some(StaleKind::Changed)
            }
        };
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0.insert(path.to_owned());
        if let Some(kind) = kind {
            st.1.push(Stale {
                path: path.to_owned(),
                kind,
            });
        }
        Ok(())
    }

    /// Every difference, files strata wrote and no longer renders included,
    /// sorted.
    pub fn finish(self) -> Vec<Stale> {
        let (seen, mut stale) = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        for path in self.manifest.files.keys() {
            if in_scope(path, &self.scope)
                && !seen.contains(path)
                && matches!(self.dirs.probe(&self.out, path), Ok(Entry::File(_) | Entry::Other))
            {
                stale.push(Stale {
                    path: path.clone(),
                    kind: StaleKind::Extra,
                });
            }
        }
        stale.sort();
        stale
    }
}

/// Compares the desired files of the units in `scope` with the tree on disk.
pub fn check(out: &Path, files: &Files, scope: &[String]) -> Result<Vec<Stale>, WriteError> {
    let checker = Checker::begin(out, scope.to_vec())?;
    for (path, content) in files {
        checker.put(path, content.as_bytes())?;
    }
    Ok(checker.finish())
}
