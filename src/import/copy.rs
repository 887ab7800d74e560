//! The imported tree, copied into a folder of its own before anything of
//! it is read or built: kustomize, helm and the artifact generator then
//! work on the copy, and a symbolic link in the tree can no longer lead
//! them out of it. A link whose target lies inside the tree is kept as a
//! link to the same place in the copy; one that leads out of the tree is
//! refused (E065) and named, and nothing is imported; one that leads
//! nowhere is left out, and said so. `.git` is not copied.

use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, codes};
use crate::yaml::Origin;

/// The most files one tree may have.
pub const MAX_FILES: usize = 100_000;
/// The most bytes one tree may have.
pub const MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// The copy, removed when dropped.
#[derive(Debug)]
pub struct Copied {
    dir: tempfile::TempDir,
    /// Where the tree's top is in the copy.
    pub root: PathBuf,
    /// Links left out, as warnings.
    pub notes: Vec<Diagnostic>,
}

impl Copied {
    /// A fresh folder beside the copy, for what the import makes from the
    /// tree (artifacts, rendered charts); removed with the copy.
    pub fn scratch(&self, name: &str) -> std::io::Result<PathBuf> {
        let dir = self.dir.path().join("scratch").join(name);
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }
}

/// Copies the tree at `src` (named `shown` in messages).
pub fn copy_tree(src: &Path, shown: &str) -> Result<Copied, Vec<Diagnostic>> {
    let fail = |why: String| {
        vec![
            Diagnostic::error(codes::IMPORT_SOURCE, Origin::file_start(shown), why)
                .with_help("name the folder that holds the Flux or Argo CD tree (a clone of its git repository)"),
        ]
    };
    let top = src
        .canonicalize()
        .map_err(|e| fail(format!("cannot read {shown}: {e}")))?;
    if !top.is_dir() {
        return Err(fail(format!("{shown} is not a folder")));
    }
    let dir = tempfile::Builder::new()
        .prefix("strata-import-")
        .tempdir()
        .map_err(|e| fail(format!("cannot make a folder to copy {shown} into: {e}")))?;
    let root = dir.path().join("tree");
    let mut c = Copier {
        top,
        shown,
        to: root.clone(),
        files: 0,
        bytes: 0,
        errors: Vec::new(),
        notes: Vec::new(),
    };
    c.copy().map_err(fail)?;
    if !c.errors.is_empty() {
        return Err(c.errors);
    }
    Ok(Copied {
        dir,
        root,
        notes: c.notes,
    })
}

struct Copier<'a> {
    top: PathBuf,
    shown: &'a str,
    to: PathBuf,
    files: usize,
    bytes: u64,
    errors: Vec<Diagnostic>,
    notes: Vec<Diagnostic>,
}

impl Copier<'_> {
    fn copy(&mut self) -> Result<(), String> {
        std::fs::create_dir_all(&self.to).map_err(|e| e.to_string())?;
        let walk = walkdir::WalkDir::new(&self.top)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| !(e.depth() > 0 && e.file_type().is_dir() && e.file_name() == ".git"));
        for entry in walk {
            let entry = entry.map_err(|e| e.to_string())?;
            if entry.depth() == 0 {
                continue;
            }
            let rel = entry
                .path()
                .strip_prefix(&self.top)
                .unwrap_or(entry.path())
                .to_path_buf();
            let dest = self.to.join(&rel);
            let ft = entry.file_type();
            if ft.is_dir() {
                std::fs::create_dir_all(&dest).map_err(|e| format!("{}: {e}", dest.display()))?;
            } else if ft.is_symlink() {
                self.link(entry.path(), &rel, &dest)?;
            } else if ft.is_file() {
                self.file(entry.path(), &dest)?;
            }
        }
        Ok(())
    }

    fn file(&mut self, from: &Path, dest: &Path) -> Result<(), String> {
        self.files += 1;
        let len = std::fs::symlink_metadata(from).map(|m| m.len()).unwrap_or(0);
        self.bytes += len;
        if self.files > MAX_FILES || self.bytes > MAX_BYTES {
            return Err(format!(
                "{} holds more than {MAX_FILES} files or {} MiB; import the folder with the GitOps tree",
                self.shown,
                MAX_BYTES >> 20
            ));
        }
        std::fs::copy(from, dest).map_err(|e| format!("{}: {e}", from.display()))?;
        Ok(())
    }

    /// A symbolic link: kept when it stays in the tree, refused when it
    /// leaves it, left out when it leads nowhere.
    fn link(&mut self, at: &Path, rel: &Path, dest: &Path) -> Result<(), String> {
        let shown = crate::world::join(self.shown, &rel.to_string_lossy().replace('\\', "/"));
        let target = std::fs::read_link(at)
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        match at.canonicalize() {
            Ok(real) if real.starts_with(&self.top) => {
                let inside = real.strip_prefix(&self.top).unwrap_or(&real);
                let in_copy = self.to.join(inside);
                make_link(&in_copy, dest).map_err(|e| format!("{}: {e}", dest.display()))
            }
            Ok(real) => {
                self.errors.push(outside(
                    Origin::file_start(shown.clone()),
                    format!(
                        "{shown} is a symbolic link to {target}, which is outside the imported tree ({})",
                        real.display()
                    ),
                ));
                Ok(())
            }
            Err(e) => {
                self.notes.push(super::not_converted(
                    Origin::file_start(shown.clone()),
                    format!("{shown} is a symbolic link to {target}, which cannot be followed ({e}); it is left out"),
                    "remove the link, or make it point at a file of the tree",
                ));
                Ok(())
            }
        }
    }
}

/// An error: something of the tree leads out of it.
pub fn outside(origin: Origin, message: String) -> Diagnostic {
    Diagnostic::error(codes::IMPORT_OUTSIDE, origin, format!("{message}; nothing is imported"))
        .with_help("import reads only the tree it is given: copy what the link or path names into the tree, or import the folder that holds both")
}

#[cfg(unix)]
fn make_link(target: &Path, dest: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, dest)
}

#[cfg(not(unix))]
fn make_link(target: &Path, dest: &Path) -> std::io::Result<()> {
    if target.is_dir() {
        std::fs::create_dir_all(dest)
    } else {
        std::fs::copy(target, dest).map(|_| ())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn links_in_stay_links_out_are_refused() {
        let outside_dir = tempfile::tempdir().unwrap();
        std::fs::write(outside_dir.path().join("secret.yaml"), "a: 1\n").unwrap();
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tree.path().join("apps/x")).unwrap();
        std::fs::write(tree.path().join("apps/x/a.yaml"), "b: 2\n").unwrap();
        std::os::unix::fs::symlink("x", tree.path().join("apps/y")).unwrap();
        std::os::unix::fs::symlink("nowhere", tree.path().join("apps/z.yaml")).unwrap();
        let copied = copy_tree(tree.path(), "t").unwrap();
        assert_eq!(
            std::fs::read_to_string(copied.root.join("apps/y/a.yaml")).unwrap(),
            "b: 2\n"
        );
        assert_eq!(copied.notes.len(), 1, "{:?}", copied.notes);
        std::os::unix::fs::symlink(outside_dir.path().join("secret.yaml"), tree.path().join("apps/s.yaml")).unwrap();
        let errors = copy_tree(tree.path(), "t").unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].code, codes::IMPORT_OUTSIDE);
        assert!(
            errors[0].message.contains("t/apps/s.yaml is a symbolic link"),
            "{errors:?}"
        );
    }
}
