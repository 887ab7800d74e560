//! Writing the tree: stage a complete new copy beside the output folder,
//! then swap it in with one rename.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::MANIFEST;
use super::layout::Files;

#[derive(Debug)]
pub enum WriteError {
    /// The output folder holds files but no manifest: strata did not make it.
    NotOwned {
        dir: PathBuf,
        example: String,
    },
    /// Generated files that were edited by hand, or files strata did not
    /// write that it would overwrite.
    Edited(Vec<String>),
    /// Someone else is writing the tree.
    Locked(PathBuf),
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::NotOwned { dir, example } => write!(
                f,
                "{} is not empty and was not written by strata (it has no {MANIFEST}; it holds {example})",
                dir.display()
            ),
            WriteError::Edited(files) => write!(
                f,
                "{} generated file(s) were edited by hand or not written by strata, and would be overwritten: {}",
                files.len(),
                files.join(", ")
            ),
            WriteError::Locked(p) => write!(f, "another strata is writing this tree (lock {} is held)", p.display()),
            WriteError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |error| WriteError::Io {
        path: path.to_path_buf(),
        error,
    }
}

pub fn hash(content: &[u8]) -> String {
    let digest = Sha256::digest(content);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Manifest {
    version: u32,
    files: BTreeMap<String, String>,
}

fn read_manifest(out: &Path) -> Option<Manifest> {
    let text = fs::read_to_string(out.join(MANIFEST)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether a path belongs to the units being written. An empty unit stands
/// for the whole tree (a render of every environment and target).
fn in_scope(path: &str, scope: &[String]) -> bool {
    scope
        .iter()
        .any(|u| u.is_empty() || path.strip_prefix(u.as_str()).is_some_and(|rest| rest.starts_with('/')))
}

/// Every regular file under `dir`, relative, `/`-separated, sorted.
fn list_files(dir: &Path) -> Result<Vec<String>, WriteError> {
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    for entry in walkdir::WalkDir::new(dir).follow_links(false).sort_by_file_name() {
        let entry = entry.map_err(|e| WriteError::Io {
            path: dir.to_path_buf(),
            error: e.into(),
        })?;
        if entry.file_type().is_dir() {
            continue;
        }
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        out.push(rel);
    }
    // Walk order is per folder; callers binary-search by full path.
    out.sort();
    Ok(out)
}

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

/// Compares the desired files of the units in `scope` with the tree on disk.
pub fn check(out: &Path, files: &Files, scope: &[String]) -> Result<Vec<Stale>, WriteError> {
    let manifest = read_manifest(out).unwrap_or_default();
    let mut stale = Vec::new();
    for (path, content) in files {
        match fs::read(out.join(path)) {
            Ok(disk) if disk == content.as_bytes() => {}
            Ok(_) => stale.push(Stale {
                path: path.clone(),
                kind: StaleKind::Changed,
            }),
            Err(_) => stale.push(Stale {
                path: path.clone(),
                kind: StaleKind::Missing,
            }),
        }
    }
    for path in manifest.files.keys() {
        if in_scope(path, scope) && !files.contains_key(path) && out.join(path).exists() {
            stale.push(Stale {
                path: path.clone(),
                kind: StaleKind::Extra,
            });
        }
    }
    stale.sort();
    Ok(stale)
}

#[derive(Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    pub written: usize,
    pub removed: usize,
    pub unchanged: bool,
}

/// Writes the units in `scope` (`<env>/<target>` prefixes) of `files` into
/// `out`, keeping every other file as it is.
pub fn write(out: &Path, files: &Files, scope: &[String], force: bool) -> Result<WriteOutcome, WriteError> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    fs::create_dir_all(&parent).map_err(io(&parent))?;
    let base = out
        .file_name()
        .map_or_else(|| "rendered".into(), |n| n.to_string_lossy().into_owned());
    let _lock = Lock::acquire(&parent.join(format!(".{base}.strata-lock")))?;
    let staging = parent.join(format!(".{base}.strata-staging"));
    let old = parent.join(format!(".{base}.strata-old"));
    // Leftovers of a run that was killed.
    for dir in [&staging, &old] {
        if dir.exists() {
            fs::remove_dir_all(dir).map_err(io(dir))?;
        }
    }

    let existing = list_files(out)?;
    let manifest = read_manifest(out);
    if manifest.is_none()
        && !force
        && let Some(example) = existing.first()
    {
        return Err(WriteError::NotOwned {
            dir: out.to_path_buf(),
            example: example.clone(),
        });
    }
    let manifest = manifest.unwrap_or_default();

    // Hand edits, and files strata did not write, that this write would change.
    let mut conflicts = Vec::new();
    for path in &existing {
        if path == MANIFEST {
            continue;
        }
        let disk = fs::read(out.join(path)).map_err(io(&out.join(path)))?;
        let wanted = files.get(path).map(String::as_bytes);
        let changes = match wanted {
            Some(w) => w != disk.as_slice(),
            None => in_scope(path, scope) && manifest.files.contains_key(path),
        };
        if !changes {
            continue;
        }
        let edited = match manifest.files.get(path) {
            Some(recorded) => *recorded != hash(&disk),
            None => true,
        };
        if edited {
            conflicts.push(path.clone());
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(WriteError::Edited(conflicts));
    }

    // The new tree: kept files, then the new ones.
    let mut new_manifest = Manifest {
        version: 1,
        files: BTreeMap::new(),
    };
    let mut keep: Vec<&String> = Vec::new();
    let mut removed = 0;
    for path in &existing {
        if path == MANIFEST || files.contains_key(path) {
            continue;
        }
        let owned = manifest.files.contains_key(path);
        if owned && in_scope(path, scope) {
            removed += 1;
            continue;
        }
        if owned {
            new_manifest.files.insert(path.clone(), manifest.files[path].clone());
        }
        keep.push(path);
    }
    let mut written = 0;
    for (path, content) in files {
        let h = hash(content.as_bytes());
        if manifest.files.get(path) != Some(&h) || existing.binary_search(path).is_err() {
            written += 1;
        }
        new_manifest.files.insert(path.clone(), h);
    }
    let manifest_text = serde_json::to_string_pretty(&new_manifest).unwrap_or_default() + "\n";
    let unchanged = written == 0
        && removed == 0
        && fs::read_to_string(out.join(MANIFEST)).ok().as_deref() == Some(manifest_text.as_str());
    if unchanged {
        return Ok(WriteOutcome {
            written,
            removed,
            unchanged: true,
        });
    }

    fs::create_dir_all(&staging).map_err(io(&staging))?;
    for path in keep {
        let from = out.join(path);
        let to = staging.join(path);
        if let Some(dir) = to.parent() {
            fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let meta = fs::symlink_metadata(&from).map_err(io(&from))?;
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&from).map_err(io(&from))?;
            symlink(&target, &to).map_err(io(&to))?;
        } else if fs::hard_link(&from, &to).is_err() {
            fs::copy(&from, &to).map_err(io(&from))?;
        }
    }
    for (path, content) in files {
        let to = staging.join(path);
        if let Some(dir) = to.parent() {
            fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let mut f = fs::File::create(&to).map_err(io(&to))?;
        f.write_all(content.as_bytes()).map_err(io(&to))?;
    }
    let mpath = staging.join(MANIFEST);
    fs::write(&mpath, manifest_text).map_err(io(&mpath))?;
    sync_dir(&staging);

    // The swap: one rename (or an atomic exchange where the OS has one).
    if out.exists() {
        if exchange(&staging, out).is_ok() {
            fs::remove_dir_all(&staging).map_err(io(&staging))?;
        } else {
            fs::rename(out, &old).map_err(io(out))?;
            fs::rename(&staging, out).map_err(io(out))?;
            fs::remove_dir_all(&old).map_err(io(&old))?;
        }
    } else {
        fs::rename(&staging, out).map_err(io(out))?;
    }
    sync_dir(&parent);
    Ok(WriteOutcome {
        written,
        removed,
        unchanged: false,
    })
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    fs::copy(target, link).map(|_| ())
}

fn sync_dir(dir: &Path) {
    if let Ok(f) = fs::File::open(dir) {
        let _ = f.sync_all();
    }
}

/// Swaps two directories atomically (Linux `renameat2(RENAME_EXCHANGE)`).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let ca = CString::new(a.as_os_str().as_bytes())?;
    let cb = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both pointers are valid NUL-terminated strings for the duration
    // of the call; the syscall reads them and keeps no reference.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no atomic exchange",
    ))
}

/// An exclusive lock on the tree, held while writing.
struct Lock {
    #[allow(dead_code)]
    file: fs::File,
}

impl Lock {
    fn acquire(path: &Path) -> Result<Lock, WriteError> {
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(io(path))?;
        // Wait for a concurrent writer to finish, but not for ever.
        for _ in 0..600 {
            match file.try_lock() {
                Ok(()) => return Ok(Lock { file }),
                Err(fs::TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_millis(100)),
                Err(fs::TryLockError::Error(e)) => {
                    return Err(WriteError::Io {
                        path: path.to_path_buf(),
                        error: e,
                    });
                }
            }
        }
        Err(WriteError::Locked(path.to_path_buf()))
    }
}
