//! Where a tree may be written. The output folder is reached without a
//! symbolic link anywhere inside the repository and is never the repository
//! itself; strata's lock and staging copies go to the repository's
//! `.strata/` folder (which tells git to ignore it), or beside an output
//! folder that lies outside the repository.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::write::WriteError;

/// The folder at the repository root that holds strata's lock and copies.
pub const STATE_DIR: &str = ".strata";

/// An output folder that is safe to write, and where its state lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The output folder, with every link outside the repository resolved.
    pub out: PathBuf,
    /// Where the lock and the staging and old copies live.
    pub state_dir: PathBuf,
    /// `<root>/.strata`, when the output is inside the repository.
    repo_state: Option<PathBuf>,
}

fn refused(path: &Path, reason: impl Into<String>, help: impl Into<String>) -> WriteError {
    WriteError::Refused {
        path: path.to_path_buf(),
        reason: reason.into(),
        help: help.into(),
    }
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> WriteError + '_ {
    move |error| WriteError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Checks where `out` leads from the repository `root` (canonical) and
/// decides where the state lives. A relative `out` is taken from the root.
/// Nothing is written.
pub fn place(root: &Path, out: &Path) -> Result<Placement, WriteError> {
    let given = root.join(out);
    let resolved = resolve(root, &given)?;
    if root.starts_with(&resolved) {
        let reason = if resolved == root {
            "is the repository root; strata replaces its whole output folder, so it must be a folder of its own"
        } else {
            "contains the repository; strata replaces its whole output folder, so it must not hold the repository"
        };
        return Err(refused(
            &given,
            reason,
            "set `output:` in strata.yaml (or --out) to a subfolder such as `rendered`",
        ));
    }
    match fs::symlink_metadata(&resolved) {
        Ok(m) if !m.is_dir() => {
            return Err(refused(
                &resolved,
                "is a file, not a folder",
                "remove it, or choose another output folder with --out DIR",
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(&resolved)(e)),
    }
    if let Ok(rel) = resolved.strip_prefix(root) {
        if rel.components().next().is_some_and(|c| c.as_os_str() == STATE_DIR) {
            return Err(refused(
                &resolved,
                format!("is inside {STATE_DIR}/, where strata keeps its lock and staging copies"),
                "choose an output folder outside .strata/, such as `rendered`",
            ));
        }
        let dot = root.join(STATE_DIR);
        let state_dir = rel.parent().map_or_else(|| dot.clone(), |p| dot.join(p));
        return Ok(Placement {
            out: resolved,
            state_dir,
            repo_state: Some(dot),
        });
    }
    let state_dir = resolved.parent().map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
    Ok(Placement {
        out: resolved,
        state_dir,
        repo_state: None,
    })
}

fn inside(path: &Path, root: &Path) -> bool {
    path != root && path.starts_with(root)
}

enum Step {
    Prefix(OsString),
    RootDir,
    Up,
    Name(OsString),
}

fn steps(p: &Path) -> Vec<Step> {
    p.components()
        .filter_map(|c| match c {
            Component::Prefix(p) => Some(Step::Prefix(p.as_os_str().to_owned())),
            Component::RootDir => Some(Step::RootDir),
            Component::CurDir => None,
            Component::ParentDir => Some(Step::Up),
            Component::Normal(n) => Some(Step::Name(n.to_owned())),
        })
        .collect()
}

/// The real path of `given`, following symbolic links only outside the
/// repository: every component is looked at with `symlink_metadata`, and a
/// link met inside `root` is refused rather than followed.
fn resolve(root: &Path, given: &Path) -> Result<PathBuf, WriteError> {
    let mut todo: Vec<Step> = steps(given);
    todo.reverse();
    let mut cur = PathBuf::new();
    let mut missing = false;
    let mut hops = 0;
    while let Some(step) = todo.pop() {
        match step {
            Step::Prefix(p) => cur = PathBuf::from(p),
            Step::RootDir => {
                let prefix: PathBuf = cur
                    .components()
                    .take_while(|c| matches!(c, Component::Prefix(_)))
                    .collect();
                cur = prefix;
                cur.push(Component::RootDir.as_os_str());
            }
            Step::Up => {
                cur.pop();
            }
            Step::Name(n) => {
                let next = cur.join(&n);
                if missing {
                    cur = next;
                    continue;
                }
                match fs::symlink_metadata(&next) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        missing = true;
                        cur = next;
                    }
                    Err(e) => return Err(io_error(&next)(e)),
                    Ok(m) if m.file_type().is_symlink() => {
                        let target = fs::read_link(&next).map_err(io_error(&next))?;
                        if inside(&next, root) {
                            return Err(refused(
                                &next,
                                format!(
                                    "is a symbolic link (to {}) inside the repository, and the output folder must be reached without links: a render would write wherever it points",
                                    target.display()
                                ),
                                "make it a real folder (remove the link; strata creates the folder), or write outside the repository with --out DIR",
                            ));
                        }
                        hops += 1;
                        if hops > 40 {
                            return Err(refused(
                                &next,
                                "is part of a loop of symbolic links",
                                "fix the links, or choose another output folder with --out DIR",
                            ));
                        }
                        let mut more = steps(&target);
                        more.reverse();
                        todo.extend(more);
                    }
                    Ok(m) => {
                        if !m.is_dir() && todo.iter().any(|s| matches!(s, Step::Name(_))) {
                            return Err(refused(
                                &next,
                                "is a file, but the output folder lies below it",
                                "choose another output folder with --out DIR",
                            ));
                        }
                        cur = next;
                    }
                }
            }
        }
    }
    Ok(cur)
}

impl Placement {
    /// Creates the folder that holds the state: inside the repository
    /// `.strata/` with a `.gitignore` of `*`, so that git ignores it without
    /// help; outside it, the output's parent.
    pub fn prepare(&self) -> Result<(), WriteError> {
        let Some(dot) = &self.repo_state else {
            return fs::create_dir_all(&self.state_dir).map_err(io_error(&self.state_dir));
        };
        let rel = self.state_dir.strip_prefix(dot).unwrap_or(Path::new(""));
        crate::world::ensure_state_dir(dot, rel).map_err(|e| match e {
            crate::world::StateDirError::NotAFolder { path, kind } => refused(
                &path,
                format!("is {kind}, not a folder; strata keeps its lock and staging copies there and follows no links"),
                format!(
                    "remove {} (strata creates the folder itself) and render again",
                    path.display()
                ),
            ),
            crate::world::StateDirError::NotAFile { path } => refused(
                &path,
                "is not a regular file; strata writes `*` there so that git ignores its state folder",
                format!("remove {} and render again", path.display()),
            ),
            crate::world::StateDirError::Io { path, error } => io_error(&path)(error),
        })?;
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("repo");
        fs::create_dir(&root).unwrap();
        (tmp, root)
    }

    #[test]
    fn inside_the_repository_state_goes_to_dot_strata() {
        let (_tmp, root) = setup();
        let p = place(&root, Path::new("rendered")).unwrap();
        assert_eq!(p.out, root.join("rendered"));
        assert_eq!(p.state_dir, root.join(".strata"));
        let p = place(&root, Path::new("out/sub")).unwrap();
        assert_eq!(p.state_dir, root.join(".strata/out"));
        p.prepare().unwrap();
        assert_eq!(fs::read_to_string(root.join(".strata/.gitignore")).unwrap(), "*\n");
        assert!(root.join(".strata/out").is_dir());
    }

    #[test]
    fn outside_the_repository_state_goes_beside_the_folder() {
        let (tmp, root) = setup();
        let elsewhere = tmp.path().canonicalize().unwrap().join("elsewhere/tree");
        let p = place(&root, &elsewhere).unwrap();
        assert_eq!(p.out, elsewhere);
        assert_eq!(p.state_dir, elsewhere.parent().unwrap());
        // `..` out of the repository is outside too.
        let p = place(&root, Path::new("../elsewhere/tree")).unwrap();
        assert_eq!(p.out, elsewhere);
    }

    #[test]
    fn links_inside_the_repository_the_root_and_its_parents_are_refused() {
        let (tmp, root) = setup();
        let far = tmp.path().join("far");
        fs::create_dir(&far).unwrap();
        std::os::unix::fs::symlink(&far, root.join("link")).unwrap();
        for out in ["link", "link/sub", "link/../rendered"] {
            let e = place(&root, Path::new(out)).unwrap_err().to_string();
            assert!(e.contains("symbolic link") && e.contains("link"), "{out}: {e}");
        }
        for out in [".", "", "..", "a/../.."] {
            let e = place(&root, Path::new(out)).unwrap_err().to_string();
            assert!(e.contains("repository"), "{out}: {e}");
        }
        let e = place(&root, Path::new(".strata/x")).unwrap_err().to_string();
        assert!(e.contains(".strata"), "{e}");
        // A link outside the repository that leads into it is followed, and
        // what it leads to is checked.
        std::os::unix::fs::symlink(&root, tmp.path().join("alias")).unwrap();
        let p = place(&root, &tmp.path().join("alias/rendered")).unwrap();
        assert_eq!(p.out, root.join("rendered"));
        assert!(place(&root, &tmp.path().join("alias/link/x")).is_err());
        assert!(place(&root, &tmp.path().join("alias")).is_err());
    }
}
