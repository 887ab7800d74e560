//! Writing new files into a user's folder, as `strata init` and `strata
//! import` do: every path stays inside the folder (no `..`, no symbolic
//! link on the way), no existing file is ever replaced, and the files
//! appear whole or not at all — each is written to a temporary file beside
//! it and linked into place only where nothing is, and a failure part way
//! removes what this run wrote.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A file to write: a `/`-separated path relative to the folder, and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewFile {
    pub path: String,
    pub bytes: Vec<u8>,
}

impl NewFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        NewFile {
            path: path.into(),
            bytes: text.into().into_bytes(),
        }
    }

    /// The bytes as text (the files strata writes itself are text).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.bytes)
    }
}

/// Why nothing was written.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The folder already holds a platform (`strata.yaml`).
    HoldsPlatform(PathBuf),
    /// A file to write is already there.
    Exists(PathBuf),
    /// A path would leave the folder: `..`, an absolute path, or a symbolic
    /// link (or something that is not a folder) on the way.
    Escapes(PathBuf, String),
    /// The file system refused.
    Io(PathBuf, String),
}

impl Refusal {
    /// The path the refusal is about.
    pub fn path(&self) -> &Path {
        match self {
            Refusal::HoldsPlatform(p) | Refusal::Exists(p) | Refusal::Escapes(p, _) | Refusal::Io(p, _) => p,
        }
    }

    /// What to do about it.
    pub fn help(&self) -> &'static str {
        match self {
            Refusal::HoldsPlatform(_) => "choose an empty folder, or a new one (strata creates it)",
            Refusal::Exists(_) => {
                "strata never replaces a file it did not write: move it away, or choose another folder"
            }
            Refusal::Escapes(..) => "write into a plain folder: no symbolic link and no file where a folder is needed",
            Refusal::Io(..) => "check that the folder is writable and the disk has room",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::HoldsPlatform(p) => write!(f, "{} already holds a platform", p.display()),
            Refusal::Exists(p) => write!(f, "{} already exists", p.display()),
            Refusal::Escapes(p, why) => write!(f, "{}: {why}", p.display()),
            Refusal::Io(p, e) => write!(f, "cannot write {}: {e}", p.display()),
        }
    }
}

/// Checks that `dir` can take a new platform: it is a folder (or does not
/// exist yet) and has no `strata.yaml`.
pub fn check_empty_of_platform(dir: &Path) -> Result<(), Refusal> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(Refusal::Escapes(dir.to_path_buf(), "is not a folder".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Refusal::Io(dir.to_path_buf(), e.to_string())),
    }
    let platform = dir.join(crate::load::project::FILE);
    if std::fs::symlink_metadata(&platform).is_ok() {
        return Err(Refusal::HoldsPlatform(dir.to_path_buf()));
    }
    Ok(())
}

/// The folders of a relative path below `dir`, outermost first, and the
/// file's own path; `..`, absolute paths and empty names are refused.
fn steps(dir: &Path, rel: &str) -> Result<(Vec<PathBuf>, PathBuf), Refusal> {
    let parts: Vec<&str> = rel.split('/').collect();
    let bad =
        rel.starts_with('/') || rel.contains('\\') || parts.iter().any(|p| p.is_empty() || *p == "." || *p == "..");
    if bad || Path::new(rel).is_absolute() {
        return Err(Refusal::Escapes(dir.join(rel), "leaves the folder".into()));
    }
    let mut folders = Vec::new();
    let mut at = dir.to_path_buf();
    for p in &parts[..parts.len() - 1] {
        at = at.join(p);
        folders.push(at.clone());
    }
    Ok((folders, dir.join(rel)))
}

/// Checks every file before anything is written: each folder on the way is
/// a real folder or absent, and each file is absent.
fn plan(dir: &Path, files: &[NewFile]) -> Result<Vec<(Vec<PathBuf>, PathBuf)>, Refusal> {
    let mut out = Vec::new();
    for f in files {
        let (folders, path) = steps(dir, &f.path)?;
        for folder in &folders {
            match std::fs::symlink_metadata(folder) {
                Ok(m) if m.is_dir() => {}
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(Refusal::Escapes(folder.clone(), "is a symbolic link".into()));
                }
                Ok(_) => return Err(Refusal::Escapes(folder.clone(), "is not a folder".into())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) => return Err(Refusal::Io(folder.clone(), e.to_string())),
            }
        }
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(Refusal::Exists(path));
        }
        out.push((folders, path));
    }
    Ok(out)
}

/// What a run created, to take back on failure.
#[derive(Default)]
struct Undo {
    folders: Vec<PathBuf>,
    files: Vec<PathBuf>,
}

impl Undo {
    fn roll_back(self) {
        for f in self.files.iter().rev() {
            let _ = std::fs::remove_file(f);
        }
        for d in self.folders.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// Writes `files` into `dir` (created if missing) and returns their paths.
/// Nothing is written unless every file can be; an existing file is never
/// replaced, even one that appears while the run writes.
pub fn write_new(dir: &Path, files: &[NewFile]) -> Result<Vec<PathBuf>, Refusal> {
    let planned = plan(dir, files)?;
    let mut undo = Undo::default();
    if std::fs::symlink_metadata(dir).is_err()
        && let Err(e) = create_folder(dir, &mut undo)
    {
        undo.roll_back();
        return Err(e);
    }
    let mut written = Vec::new();
    for ((folders, path), f) in planned.iter().zip(files) {
        let done = folders
            .iter()
            .try_for_each(|d| ensure_folder(d, &mut undo))
            .and_then(|()| put(path, &f.bytes));
        match done {
            Ok(()) => {
                undo.files.push(path.clone());
                written.push(path.clone());
            }
            Err(e) => {
                undo.roll_back();
                return Err(e);
            }
        }
    }
    Ok(written)
}

fn create_folder(dir: &Path, undo: &mut Undo) -> Result<(), Refusal> {
    // The folders above `dir` that do not exist yet are created too, and
    // taken back on failure.
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at {
        if std::fs::symlink_metadata(d).is_ok() || d.as_os_str().is_empty() {
            break;
        }
        missing.push(d.to_path_buf());
        at = d.parent();
    }
    for d in missing.into_iter().rev() {
        std::fs::create_dir(&d).map_err(|e| Refusal::Io(d.clone(), e.to_string()))?;
        undo.folders.push(d);
    }
    Ok(())
}

fn ensure_folder(dir: &Path, undo: &mut Undo) -> Result<(), Refusal> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Refusal::Escapes(dir.to_path_buf(), "is not a folder".into())),
        Err(_) => match std::fs::create_dir(dir) {
            Ok(()) => {
                undo.folders.push(dir.to_path_buf());
                Ok(())
            }
            Err(e) => Err(Refusal::Io(dir.to_path_buf(), e.to_string())),
        },
    }
}

/// Writes one file whole: a temporary file in its folder, linked into place
/// only if nothing is there.
fn put(path: &Path, bytes: &[u8]) -> Result<(), Refusal> {
    let io = |e: std::io::Error| Refusal::Io(path.to_path_buf(), e.to_string());
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".strata-new-")
        .tempfile_in(dir)
        .map_err(io)?;
    tmp.write_all(bytes).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist_noclobber(path).map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            Refusal::Exists(path.to_path_buf())
        } else {
            io(e.error)
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<NewFile> {
        vec![NewFile::new("a/b/c.yaml", "c: 1\n"), NewFile::new("d.yaml", "d: 1\n")]
    }

    #[test]
    fn writes_every_file_into_a_new_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("new/platform");
        let written = write_new(&dir, &files()).unwrap();
        assert_eq!(written.len(), 2);
        assert_eq!(std::fs::read_to_string(dir.join("a/b/c.yaml")).unwrap(), "c: 1\n");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn an_existing_file_stops_the_run_before_anything_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("d.yaml"), "mine\n").unwrap();
        let err = write_new(tmp.path(), &files()).unwrap_err();
        assert_eq!(err, Refusal::Exists(tmp.path().join("d.yaml")));
        assert!(!tmp.path().join("a").exists());
        assert_eq!(std::fs::read_to_string(tmp.path().join("d.yaml")).unwrap(), "mine\n");
    }

    #[test]
    fn paths_out_of_the_folder_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        for bad in ["../x.yaml", "/etc/x.yaml", "a/../../x.yaml", "a//x.yaml", "a\\x.yaml"] {
            let err = write_new(tmp.path(), &[NewFile::new(bad, "x")]).unwrap_err();
            assert!(matches!(err, Refusal::Escapes(..)), "{bad}: {err:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_on_the_way_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("a")).unwrap();
        let err = write_new(tmp.path(), &files()).unwrap_err();
        assert!(matches!(err, Refusal::Escapes(..)), "{err:?}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        assert!(!tmp.path().join("d.yaml").exists());
    }

    #[test]
    fn a_failure_part_way_takes_back_what_was_written() {
        let tmp = tempfile::tempdir().unwrap();
        // The same file twice: both are absent when checked, and the second
        // write finds the first in its place, as it would a file another
        // process wrote meanwhile.
        let files = vec![NewFile::new("x/one.yaml", "1"), NewFile::new("x/one.yaml", "2")];
        let err = write_new(tmp.path(), &files).unwrap_err();
        assert_eq!(err, Refusal::Exists(tmp.path().join("x/one.yaml")));
        assert!(!tmp.path().join("x").exists(), "the first file was not taken back");
    }

    #[test]
    fn a_platform_is_recognised() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(check_empty_of_platform(&tmp.path().join("none")), Ok(()));
        assert_eq!(check_empty_of_platform(tmp.path()), Ok(()));
        std::fs::write(tmp.path().join("strata.yaml"), "").unwrap();
        assert_eq!(
            check_empty_of_platform(tmp.path()),
            Err(Refusal::HoldsPlatform(tmp.path().to_path_buf()))
        );
    }
}
