//! Writing the tree, one file at a time: [`Writer`] compares each file with
//! the one on disk as it arrives (from any thread), writes only changed files
//! into a staging copy, then completes the copy with hard links to the rest
//! and swaps it in with one rename (an atomic exchange where the system has
//! one). A crash at any point leaves a whole tree, or the previous one where
//! the next render moves it back from.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::MANIFEST;
use super::layout::Files;
use super::manifest::{Manifest, bad_path, in_scope, read_manifest};
use crate::world::disk::{self, Dirs, Entry, Lock, LockError};

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
        error: io::Error,
    },
    /// A path strata will not write to or through, and what to do about it.
    Refused {
        path: PathBuf,
        reason: String,
        help: String,
    },
    /// Folders marked read-only that hold files this write would change:
    /// each folder with those files.
    ReadOnly {
        dir: PathBuf,
        folders: Vec<(String, Vec<String>)>,
    },
    /// The swap failed half way and the previous tree could not be moved
    /// back: it is whole at `old`, and the next write moves it back first.
    Stranded {
        out: PathBuf,
        old: PathBuf,
        error: io::Error,
    },
    /// A file the writer was handed that it cannot take.
    Invalid {
        path: String,
        reason: String,
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
            WriteError::Refused { path, reason, .. } => write!(f, "{} {reason}", path.display()),
            WriteError::ReadOnly { dir, folders } => {
                write!(
                    f,
                    "these folders are read-only, so strata cannot change the files in them:"
                )?;
                for (folder, files) in folders {
                    let folder = if folder.is_empty() {
                        dir.clone()
                    } else {
                        dir.join(folder)
                    };
                    write!(f, "\n  {}/: {}", folder.display(), files.join(", "))?;
                }
                Ok(())
            }
            WriteError::Stranded { out, old, error } => write!(
                f,
                "{} could not be replaced ({error}), nor the previous tree moved back: it is whole at {}",
                out.display(),
                old.display()
            ),
            WriteError::Invalid { path, reason } => write!(f, "cannot write `{path}`: {reason}"),
        }
    }
}

impl std::error::Error for WriteError {}

impl WriteError {
    /// What the user can do about it.
    pub fn help(&self) -> String {
        match self {
            WriteError::NotOwned { .. } => {
                "choose an empty folder with --out, or pass --force to let strata take it over".into()
            }
            WriteError::Edited(_) => {
                "move the change into the values or manifests it belongs to, or run with --force to overwrite".into()
            }
            WriteError::Locked(_) => "wait for the other `strata render` to finish, then run it again".into(),
            WriteError::Io { path, .. } => format!(
                "check that {} can be read and written and that the disk has room, then render again",
                path.display()
            ),
            WriteError::Refused { help, .. } => help.clone(),
            WriteError::ReadOnly { dir, folders } => {
                let first = folders.first().map_or(String::new(), |(f, _)| f.clone());
                format!(
                    "make them writable (e.g. `chmod u+w {}`) and render again",
                    if first.is_empty() { dir.clone() } else { dir.join(first) }.display()
                )
            }
            WriteError::Stranded { .. } => "run `strata render` again: it moves the previous tree back first".into(),
            WriteError::Invalid { .. } => "this is a bug in strata; please report it with the command you ran".into(),
        }
    }
}

pub(super) fn io(path: &Path) -> impl FnOnce(io::Error) -> WriteError + '_ {
    move |error| WriteError::Io {
        path: path.to_path_buf(),
        error,
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    pub written: usize,
    pub removed: usize,
    pub unchanged: bool,
    /// Things the user should know that did not stop the write, such as a
    /// previous copy that could not be removed.
    pub notes: Vec<String>,
}

/// What a write covers.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `<env>/<target>` prefixes of the units written; an empty prefix is the
    /// whole tree. Files strata wrote outside them are kept.
    pub scope: Vec<String>,
    /// Overwrite hand edits and take over a folder strata did not write.
    pub force: bool,
}

/// The lock and copies of one output folder.
struct StatePaths {
    lock: PathBuf,
    /// In the state folder.
    staging: PathBuf,
    old: PathBuf,
    /// Beside the output, used when the state folder is on another file
    /// system (a rename cannot cross).
    near_staging: PathBuf,
    near_old: PathBuf,
}

impl StatePaths {
    fn new(out: &Path, state_dir: &Path) -> StatePaths {
        let name = out
            .file_name()
            .map_or_else(|| OsString::from("rendered"), |n| n.to_owned());
        let named = |dir: &Path, what: &str| {
            let mut n = OsString::from(".");
            n.push(&name);
            n.push(".strata-");
            n.push(what);
            dir.join(n)
        };
        let parent = parent_of(out);
        StatePaths {
            lock: named(state_dir, "lock"),
            staging: named(state_dir, "staging"),
            old: named(state_dir, "old"),
            near_staging: named(&parent, "staging"),
            near_old: named(&parent, "old"),
        }
    }

    /// Each place a staging and an old copy may be, the state folder first.
    fn places(&self) -> Vec<(&Path, &Path)> {
        let mut v = vec![(self.staging.as_path(), self.old.as_path())];
        if self.near_staging != self.staging {
            v.push((&self.near_staging, &self.near_old));
        }
        v
    }
}

/// Two sequences of entries, each in path order, merged into one in path
/// order.
fn in_path_order<'a>(
    a: impl Iterator<Item = (&'a str, &'a str)> + Clone,
    b: impl Iterator<Item = (&'a str, &'a str)> + Clone,
) -> impl Iterator<Item = (&'a str, &'a str)> + Clone {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if x.0 <= y.0 => a.next(),
        (Some(_), Some(_)) | (None, _) => b.next(),
        (Some(_), None) => a.next(),
    })
}

fn parent_of(out: &Path) -> PathBuf {
    out.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn exists(path: &Path) -> Result<Option<fs::Metadata>, WriteError> {
    match fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

/// Refuses a state path that is a symbolic link or, for folders, a file.
fn no_link(path: &Path, what: &str) -> Result<(), WriteError> {
    if let Some(m) = exists(path)?
        && m.file_type().is_symlink()
    {
        return Err(WriteError::Refused {
            path: path.to_path_buf(),
            reason: format!("is a symbolic link where strata keeps its {what}; strata follows no links there"),
            help: format!("remove the link ({}) and render again", path.display()),
        });
    }
    Ok(())
}

/// The first entry that is not a folder under `out`, sorted by name, if any.
fn first_file(out: &Path) -> Result<Option<String>, WriteError> {
    if exists(out)?.is_none() {
        return Ok(None);
    }
    for entry in walkdir::WalkDir::new(out)
        .follow_links(false)
        .min_depth(1)
        .sort_by_file_name()
    {
        let entry = entry.map_err(|e| walk_error(out, e))?;
        if !entry.file_type().is_dir() {
            let rel = entry.path().strip_prefix(out).unwrap_or(entry.path());
            return Ok(Some(rel.to_string_lossy().replace('\\', "/")));
        }
    }
    Ok(None)
}

fn walk_error(out: &Path, e: walkdir::Error) -> WriteError {
    let path = e.path().unwrap_or(out).to_path_buf();
    let error = e
        .into_io_error()
        .unwrap_or_else(|| io::Error::other("a loop of folders"));
    WriteError::Io { path, error }
}

/// What became of one file handed to [`Writer::put`].
struct Put {
    hash: String,
    /// Its bytes differ from the disk's: it goes into the staging copy.
    staged: bool,
}

#[derive(Default)]
struct PutState {
    files: BTreeMap<String, Put>,
    conflicts: BTreeSet<String>,
    /// Files put where the disk has a folder.
    folders_in_the_way: Vec<String>,
    /// A file whose `put` failed: the tree must not be swapped without it.
    failed: Option<String>,
}

/// A write of the tree in progress. Files arrive with [`Writer::put`], from
/// any number of threads; [`Writer::finish`] decides and swaps. Dropping a
/// writer without finishing removes its staging copy and leaves the tree as
/// it was.
pub struct Writer {
    out: PathBuf,
    paths: StatePaths,
    opts: WriteOptions,
    manifest: Manifest,
    manifest_text: Option<String>,
    warnings: Vec<String>,
    dirs: Dirs,
    state: Mutex<PutState>,
    /// The staging copy and where the old tree goes, once the first change
    /// makes one.
    staging: Mutex<Option<(PathBuf, PathBuf)>>,
    /// Folders of the staging copy made so far: a file's folder is made
    /// once, not asked for again with every file put in it.
    made: Mutex<std::collections::HashSet<PathBuf>>,
    _lock: Lock,
}

impl Writer {
    /// Takes the lock, repairs what an interrupted render left, reads the
    /// manifest, and refuses a folder strata does not own (unless forced).
    pub fn begin(out: &Path, state_dir: &Path, opts: WriteOptions) -> Result<Writer, WriteError> {
        let paths = StatePaths::new(out, state_dir);
        fs::create_dir_all(state_dir).map_err(io(state_dir))?;
        let parent = parent_of(out);
        fs::create_dir_all(&parent).map_err(io(&parent))?;
        no_link(&paths.lock, "lock")?;
        for (staging, old) in paths.places() {
            no_link(staging, "staging copy")?;
            no_link(old, "previous tree while it swaps")?;
        }
        if let Some(m) = exists(out)?
            && !m.is_dir()
        {
            return Err(WriteError::Refused {
                path: out.to_path_buf(),
                reason: format!("is {}, not a folder", disk::kind(m.file_type())),
                help: "remove it, or choose another output folder with --out DIR".into(),
            });
        }
        let lock = match Lock::acquire(&paths.lock) {
            Ok(l) => l,
            Err(LockError::Busy) => return Err(WriteError::Locked(paths.lock.clone())),
            Err(LockError::Io(e)) => return Err(io(&paths.lock)(e)),
        };
        let mut warnings = Vec::new();
        recover(out, &paths, &mut warnings)?;

        let (manifest, manifest_text) = read_manifest(out, &mut warnings)?;
        if manifest.is_none()
            && !opts.force
            && let Some(example) = first_file(out)?
        {
            return Err(WriteError::NotOwned {
                dir: out.to_path_buf(),
                example,
            });
        }
        Ok(Writer {
            out: out.to_path_buf(),
            paths,
            opts,
            manifest: manifest.unwrap_or_default(),
            manifest_text,
            warnings,
            dirs: Dirs::default(),
            state: Mutex::new(PutState::default()),
            staging: Mutex::new(None),
            made: Mutex::default(),
            _lock: lock,
        })
    }

    /// What the user should know before the write, such as manifest entries
    /// that were ignored or a tree restored after an interrupted render.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, PutState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands over one file of the new tree; each path once. An unchanged
    /// file costs one read; a changed one is written into the staging copy.
    pub fn put(&self, path: &str, content: &[u8]) -> Result<(), WriteError> {
        let result = self.put_inner(path, content);
        if result.is_err() {
            self.lock_state().failed.get_or_insert_with(|| path.to_owned());
        }
        result
    }

    fn put_inner(&self, path: &str, content: &[u8]) -> Result<(), WriteError> {
        if let Some(reason) = bad_path(path) {
            return Err(WriteError::Invalid {
                path: path.to_owned(),
                reason: reason.into(),
            });
        }
        if path == MANIFEST {
            return Err(WriteError::Invalid {
                path: path.to_owned(),
                reason: "the manifest is strata's own".into(),
            });
        }
        let full = self.out.join(path);
        let recorded = self.manifest.files.get(path);
        let (equal, conflict) = match self.dirs.probe(&self.out, path).map_err(io(&full))? {
            Entry::Absent => (false, None),
            // A file strata wrote where a folder must go now is removed (and
            // checked for edits) when the write finishes; anything else
            // there is not strata's.
            Entry::Blocked(parent) if self.owned(&parent) => (false, None),
            Entry::Blocked(parent) => (false, Some(parent)),
            // A folder where this file must go: decided when the write
            // finishes, once it is known whether all in it is removed.
            Entry::Dir => {
                self.lock_state().folders_in_the_way.push(path.to_owned());
                (false, None)
            }
            Entry::Other => (false, Some(path.to_owned())),
            Entry::File(meta) => {
                let c = disk::compare(&full, meta.len(), content, recorded.is_some()).map_err(io(&full))?;
                let edited = !c.equal && (recorded.is_none() || recorded != c.hash.as_ref());
                (c.equal, edited.then(|| path.to_owned()))
            }
        };
        // Hashed before the lock both workers take.
        let hash = disk::hash(content);
        let write_now = {
            let mut st = self.lock_state();
            if st.files.contains_key(path) {
                return Err(WriteError::Invalid {
                    path: path.to_owned(),
                    reason: "it was given twice".into(),
                });
            }
            if let Some(c) = conflict {
                st.conflicts.insert(c);
            }
            st.files.insert(path.to_owned(), Put { hash, staged: !equal });
            // Once the write is bound to be refused, stop copying.
            !equal && (self.opts.force || st.conflicts.is_empty())
        };
        if write_now {
            let (staging, _) = self.staging()?;
            let to = staging.join(path);
            if let Some(dir) = to.parent() {
                let made = self.made.lock().is_ok_and(|m| m.contains(dir));
                if !made {
                    fs::create_dir_all(dir).map_err(io(dir))?;
                    if let Ok(mut m) = self.made.lock() {
                        m.insert(dir.to_path_buf());
                    }
                }
            }
            let mut f = fs::File::create(&to).map_err(io(&to))?;
            f.write_all(content).map_err(io(&to))?;
        }
        Ok(())
    }

    /// Whether strata wrote `path`, in the units being written.
    fn owned(&self, path: &str) -> bool {
        self.manifest.files.contains_key(path) && in_scope(path, &self.opts.scope)
    }

    /// Whether the folder `rel` holds anything but files this write
    /// removes: files of the user's, or empty folders.
    fn holds_more_than(&self, rel: &str, removed: &BTreeSet<&str>) -> Result<bool, WriteError> {
        let dir = self.out.join(rel);
        for entry in walkdir::WalkDir::new(&dir).follow_links(false).min_depth(1) {
            let entry = entry.map_err(|e| walk_error(&dir, e))?;
            if entry.file_type().is_dir() {
                let empty = fs::read_dir(entry.path()).map_err(io(entry.path()))?.next().is_none();
                if empty {
                    return Ok(true);
                }
                continue;
            }
            let name = entry
                .path()
                .strip_prefix(&self.out)
                .ok()
                .and_then(Path::to_str)
                .map(|s| s.replace('\\', "/"));
            if !name.is_some_and(|n| removed.contains(n.as_str())) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The staging copy, made on first use: in the state folder, or beside
    /// the output when a rename from the state folder cannot reach it.
    fn staging(&self) -> Result<(PathBuf, PathBuf), WriteError> {
        let mut slot = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = &*slot {
            return Ok(s.clone());
        }
        let p = &self.paths;
        fs::create_dir(&p.staging).map_err(io(&p.staging))?;
        let mut chosen = (p.staging.clone(), p.old.clone());
        if p.near_staging != p.staging {
            // Try the rename the swap will make; a crash here leaves a
            // leftover that the next render removes.
            match fs::rename(&p.staging, &p.near_staging) {
                Ok(()) => fs::rename(&p.near_staging, &p.staging).map_err(io(&p.staging))?,
                Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
                    fs::remove_dir(&p.staging).map_err(io(&p.staging))?;
                    fs::create_dir(&p.near_staging).map_err(io(&p.near_staging))?;
                    chosen = (p.near_staging.clone(), p.near_old.clone());
                }
                Err(e) => {
                    let _ = fs::remove_dir(&p.staging);
                    return Err(io(&p.near_staging)(e));
                }
            }
        }
        *slot = Some(chosen.clone());
        Ok(chosen)
    }

    /// Decides and, if anything changed, swaps the new tree in.
    pub fn finish(self) -> Result<WriteOutcome, WriteError> {
        let mut st = std::mem::take(&mut *self.lock_state());
        if let Some(path) = st.failed.take() {
            return Err(WriteError::Invalid {
                path,
                reason: "writing it failed earlier, so the tree would be incomplete; nothing was written".into(),
            });
        }
        let out = &self.out;
        let mut conflicts = std::mem::take(&mut st.conflicts);
        let (removed, kept) = self.departed(&st, &mut conflicts)?;
        for path in &st.folders_in_the_way {
            if self.holds_more_than(path, &removed)? {
                conflicts.insert(path.clone());
            }
        }
        if !conflicts.is_empty() && !self.opts.force {
            return Err(WriteError::Edited(conflicts.into_iter().collect()));
        }

        let mut written = 0;
        let mut staged = 0;
        for (path, put) in &st.files {
            if put.staged {
                staged += 1;
            }
            if put.staged || self.manifest.files.get(path) != Some(&put.hash) {
                written += 1;
            }
        }
        // The kept entries and the new files, each in path order and none in
        // both, merged into the new manifest's text without copying either.
        let manifest_text = super::manifest::text(
            1,
            in_path_order(
                kept.iter().map(|(path, hash)| (path.as_str(), hash.as_str())),
                st.files.iter().map(|(path, put)| (path.as_str(), put.hash.as_str())),
            ),
        );
        let manifest_changed = self.manifest_text.as_deref() != Some(manifest_text.as_str());
        if staged == 0 && written == 0 && removed.is_empty() && !manifest_changed {
            return Ok(WriteOutcome {
                written,
                removed: 0,
                unchanged: true,
                notes: Vec::new(),
            });
        }

        let (staging, old) = self.staging()?;
        let folders = self.fill(&staging, &st.files, &removed)?;
        self.refuse_read_only(&folders, &staging, &st.files, &removed, manifest_changed)?;
        let mpath = staging.join(MANIFEST);
        fs::write(&mpath, manifest_text).map_err(io(&mpath))?;
        restore_permissions(&staging, &folders)?;
        disk::sync_dir(&staging);

        let garbage = swap(&staging, out, &old)?;
        // The staging path now holds the previous tree, or nothing.
        *self.staging.lock().unwrap_or_else(|e| e.into_inner()) = None;
        disk::sync_dir(&parent_of(out));
        let mut notes = Vec::new();
        if let Some(g) = garbage
            && let Err(e) = disk::remove_tree(&g)
        {
            notes.push(format!(
                "the new tree is in place, but the previous copy at {} could not be removed ({e}); \
                 the next render removes it, or remove it by hand",
                g.display()
            ));
        }
        Ok(WriteOutcome {
            written,
            removed: removed.len(),
            unchanged: false,
            notes,
        })
    }

    /// What the new tree leaves of the old one, from its manifest: the
    /// files strata wrote that are no longer rendered (removed; one edited
    /// since strata wrote it is a conflict), and the entries outside the
    /// scope that stay, with their recorded hash (kept, in path order, to
    /// be built into the new manifest at once: inserting ten thousand long
    /// paths one by one compares their common prefixes over and over).
    fn departed<'m>(&'m self, st: &PutState, conflicts: &mut BTreeSet<String>) -> Result<Departed<'m>, WriteError> {
        let out = &self.out;
        let mut removed: BTreeSet<&str> = BTreeSet::new();
        let mut kept: Vec<(String, String)> = Vec::new();
        for (path, recorded) in &self.manifest.files {
            if st.files.contains_key(path) {
                continue;
            }
            let full = out.join(path);
            let entry = self.dirs.probe(out, path).map_err(io(&full))?;
            let present = matches!(entry, Entry::File(_) | Entry::Other);
            if !in_scope(path, &self.opts.scope) {
                if present {
                    kept.push((path.clone(), recorded.clone()));
                }
                continue;
            }
            let edited = match entry {
                Entry::File(_) => disk::hash_file(&full).map_err(io(&full))? != *recorded,
                Entry::Other => true,
                _ => continue,
            };
            if edited {
                conflicts.insert(path.clone());
            }
            removed.insert(path);
        }
        Ok((removed, kept))
    }

    /// Completes the staging copy: every kept entry of the old tree (user
    /// files of any kind, files outside the scope, unchanged files) as a hard
    /// link, else a copy, and the user's empty folders. Returns each folder of
    /// the old tree (`""` for the tree itself) with its permissions.
    fn fill(
        &self,
        staging: &Path,
        files: &BTreeMap<String, Put>,
        removed: &BTreeSet<&str>,
    ) -> Result<BTreeMap<PathBuf, Folder>, WriteError> {
        let out = &self.out;
        let mut folders = BTreeMap::new();
        let Some(root) = exists(out)? else {
            return Ok(folders);
        };
        folders.insert(
            PathBuf::new(),
            Folder {
                permissions: root.permissions(),
                empty: false,
            },
        );
        let mut walk = walkdir::WalkDir::new(out)
            .follow_links(false)
            .min_depth(1)
            .sort_by_file_name()
            .into_iter();
        while let Some(entry) = walk.next() {
            let entry = entry.map_err(|e| walk_error(out, e))?;
            let rel = entry.path().strip_prefix(out).unwrap_or(entry.path()).to_path_buf();
            let dest = staging.join(&rel);
            let taken = exists(&dest)?;
            let ft = entry.file_type();
            if ft.is_dir() {
                if taken.as_ref().is_some_and(|m| !m.is_dir()) {
                    // A forced file of strata's replaces this folder.
                    walk.skip_current_dir();
                    continue;
                }
                let meta = entry.metadata().map_err(|e| walk_error(out, e))?;
                let empty = fs::read_dir(entry.path()).map_err(io(entry.path()))?.next().is_none();
                if empty {
                    fs::create_dir_all(&dest).map_err(io(&dest))?;
                }
                folders.insert(
                    rel,
                    Folder {
                        permissions: meta.permissions(),
                        empty,
                    },
                );
                continue;
            }
            if entry.depth() == 1 && rel.as_os_str() == MANIFEST {
                continue;
            }
            // Only UTF-8 names can be strata's; any other is the user's.
            let name = rel.to_str().map(|s| s.replace('\\', "/"));
            if let Some(name) = &name {
                if let Some(put) = files.get(name) {
                    if put.staged {
                        continue;
                    }
                } else if removed.contains(name.as_str()) {
                    continue;
                }
            }
            if taken.is_some() {
                // A folder of strata's replaces this entry (with --force).
                continue;
            }
            if let Some(dir) = dest.parent() {
                fs::create_dir_all(dir).map_err(io(dir))?;
            }
            let from = entry.path();
            if ft.is_symlink() {
                let target = fs::read_link(from).map_err(io(from))?;
                disk::symlink(&target, &dest).map_err(io(&dest))?;
            } else if let Err(e) = fs::hard_link(from, &dest) {
                if !ft.is_file() {
                    return Err(WriteError::Refused {
                        path: from.to_path_buf(),
                        reason: format!(
                            "is {} that strata keeps in the tree but cannot link into the new copy ({e}), and it never copies or opens one",
                            disk::kind(ft)
                        ),
                        help: "move it out of the output folder and render again".into(),
                    });
                }
                fs::copy(from, &dest).map_err(io(from))?;
            }
        }
        Ok(folders)
    }

    /// Refuses to change what is in a folder marked read-only: files written
    /// or removed there, folders made or dropped there, the manifest.
    fn refuse_read_only(
        &self,
        folders: &BTreeMap<PathBuf, Folder>,
        staging: &Path,
        files: &BTreeMap<String, Put>,
        removed: &BTreeSet<&str>,
        manifest_changed: bool,
    ) -> Result<(), WriteError> {
        if !folders.values().any(|f| f.permissions.readonly()) {
            return Ok(());
        }
        let read_only = |dir: &Path| folders.get(dir).is_some_and(|f| f.permissions.readonly());
        let mut blocked: BTreeMap<String, Vec<String>> = BTreeMap::new();
        // Each named from inside its folder.
        let mut block = |dir: &Path, path: &Path, note: &str| {
            if read_only(dir) {
                let key = dir.to_string_lossy().replace('\\', "/");
                let name = path
                    .strip_prefix(dir)
                    .unwrap_or(path)
                    .to_string_lossy()
                    .replace('\\', "/");
                blocked.entry(key).or_default().push(format!("{name}{note}"));
            }
        };
        let parent = |p: &Path| p.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        for (path, put) in files {
            if !put.staged {
                continue;
            }
            // The deepest folder that exists is the one that changes.
            let mut dir = parent(Path::new(path));
            while !dir.as_os_str().is_empty() && !folders.contains_key(&dir) {
                dir = parent(&dir);
            }
            block(&dir, Path::new(path), "");
        }
        for path in removed {
            block(&parent(Path::new(path)), Path::new(path), " (removed)");
        }
        for (rel, f) in folders {
            if !rel.as_os_str().is_empty() && !f.empty && !staging.join(rel).is_dir() {
                block(&parent(rel), rel, "/ (removed)");
            }
        }
        if manifest_changed {
            block(Path::new(""), Path::new(MANIFEST), "");
        }
        if blocked.is_empty() {
            return Ok(());
        }
        Err(WriteError::ReadOnly {
            dir: self.out.clone(),
            folders: blocked.into_iter().collect(),
        })
    }
}

/// A folder of the old tree.
struct Folder {
    permissions: fs::Permissions,
    empty: bool,
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Some((staging, _)) = self.staging.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = disk::remove_tree(&staging);
        }
    }
}

/// Puts what an interrupted render left right, under the lock: an old tree
/// with no output folder is the only copy and goes back; an old tree beside
/// an output folder is stale; staging copies are removed.
fn recover(out: &Path, paths: &StatePaths, warnings: &mut Vec<String>) -> Result<(), WriteError> {
    let stuck = |path: &Path, e: io::Error| WriteError::Refused {
        path: path.to_path_buf(),
        reason: format!("was left by an interrupted render and cannot be removed: {e}"),
        help: format!(
            "remove it by hand (`chmod -R u+w {0} && rm -rf {0}`) and render again",
            path.display()
        ),
    };
    for (staging, old) in paths.places() {
        if exists(old)?.is_some() {
            if exists(out)?.is_none() {
                fs::rename(old, out).map_err(|e| WriteError::Refused {
                    path: old.to_path_buf(),
                    reason: format!(
                        "holds the previous tree, left there by an interrupted render, and cannot be moved back to {}: {e}",
                        out.display()
                    ),
                    help: format!("move it back by hand (`mv {} {}`) and render again", old.display(), out.display()),
                })?;
                warnings.push(format!(
                    "restored {} from {}, where an interrupted render had left it",
                    out.display(),
                    old.display()
                ));
            } else {
                disk::remove_tree(old).map_err(|e| stuck(old, e))?;
            }
        }
        disk::remove_tree(staging).map_err(|e| stuck(staging, e))?;
    }
    Ok(())
}

/// Swaps the staging copy in; returns where the previous tree now is, to be
/// removed. With the atomic exchange there is always a tree at `out`; with
/// two renames, a crash between them leaves the previous tree at `old` and
/// none at `out`, which the next [`Writer::begin`] moves back.
fn swap(staging: &Path, out: &Path, old: &Path) -> Result<Option<PathBuf>, WriteError> {
    if exists(out)?.is_none() {
        fs::rename(staging, out).map_err(io(out))?;
        return Ok(None);
    }
    if disk::exchange(staging, out).is_ok() {
        return Ok(Some(staging.to_path_buf()));
    }
    fs::rename(out, old).map_err(io(out))?;
    if let Err(e) = fs::rename(staging, out) {
        return match fs::rename(old, out) {
            Ok(()) => Err(io(out)(e)),
            Err(_) => Err(WriteError::Stranded {
                out: out.to_path_buf(),
                old: old.to_path_buf(),
                error: e,
            }),
        };
    }
    // Moved under the staging name (free again), the previous tree can only
    // ever be taken for a leftover, never for the only copy.
    match fs::rename(old, staging) {
        Ok(()) => Ok(Some(staging.to_path_buf())),
        Err(_) => Ok(Some(old.to_path_buf())),
    }
}

/// Writes the units in `scope` (`<env>/<target>` prefixes) of `files` into
/// `out`, keeping every other file as it is; the lock and copies live beside
/// `out`.
pub fn write(out: &Path, files: &Files, scope: &[String], force: bool) -> Result<WriteOutcome, WriteError> {
    let writer = Writer::begin(
        out,
        &parent_of(out),
        WriteOptions {
            scope: scope.to_vec(),
            force,
        },
    )?;
    for (path, content) in files {
        writer.put(path, content.as_bytes())?;
    }
    writer.finish()
}

/// The files of the old tree no longer rendered, and the entries outside
/// the scope kept with their recorded hash (see [`Writer::departed`]).
type Departed<'m> = (BTreeSet<&'m str>, Vec<(String, String)>);

/// Gives the staged folders the permissions the old tree's had, set last so
/// that filling them needed none; deepest first.
fn restore_permissions(staging: &Path, folders: &BTreeMap<PathBuf, Folder>) -> Result<(), WriteError> {
    for (rel, perms) in folders.iter().rev() {
        let dir = staging.join(rel);
        if let Ok(m) = fs::symlink_metadata(&dir)
            && m.is_dir()
            && m.permissions() != perms.permissions
        {
            fs::set_permissions(&dir, perms.permissions.clone()).map_err(io(&dir))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_merge_in_path_order() {
        let a = [("a/x", "1"), ("c", "3"), ("e/f", "5")];
        let b = [("a/w", "0"), ("b", "2"), ("d", "4"), ("z", "9")];
        let merged: Vec<&str> = in_path_order(a.iter().copied(), b.iter().copied())
            .map(|(p, _)| p)
            .collect();
        assert_eq!(merged, ["a/w", "a/x", "b", "c", "d", "e/f", "z"]);
        assert_eq!(in_path_order([].into_iter(), b.iter().copied()).count(), 4);
        assert_eq!(in_path_order(a.iter().copied(), [].into_iter()).count(), 3);
    }
    use crate::emit::check;

    const fn send_sync<T: Send + Sync>() {}
    const _: () = send_sync::<Writer>();
    const _: () = send_sync::<super::super::Checker>();

    #[test]
    fn files_put_from_many_threads_make_one_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("rendered");
        let files: Files = (0..200)
            .map(|i| (format!("e/t/d{}/f{i}.yaml", i % 7), format!("n: {i}\n")))
            .collect();
        let opts = || WriteOptions {
            scope: vec![String::new()],
            force: false,
        };
        let w = Writer::begin(&out, tmp.path(), opts()).unwrap();
        let all: Vec<_> = files.iter().collect();
        std::thread::scope(|s| {
            for chunk in all.chunks(25) {
                let w = &w;
                s.spawn(move || {
                    for (p, c) in chunk {
                        w.put(p, c.as_bytes()).unwrap();
                    }
                });
            }
        });
        let o = w.finish().unwrap();
        assert_eq!((o.written, o.removed, o.unchanged), (200, 0, false));
        assert!(check(&out, &files, &[String::new()]).unwrap().is_empty());
        // Unchanged: no staging copy is made.
        let w = Writer::begin(&out, tmp.path(), opts()).unwrap();
        for (p, c) in &files {
            w.put(p, c.as_bytes()).unwrap();
        }
        assert!(w.staging.lock().unwrap().is_none());
        assert!(w.finish().unwrap().unchanged);
        // Dropped unfinished: the tree stays, the staging copy goes.
        let w = Writer::begin(&out, tmp.path(), opts()).unwrap();
        w.put("e/t/new.yaml", b"x: 1\n").unwrap();
        let (staging, _) = w.staging.lock().unwrap().clone().unwrap();
        assert!(staging.is_dir());
        drop(w);
        assert!(!staging.exists());
        assert!(check(&out, &files, &[String::new()]).unwrap().is_empty());
    }

    #[test]
    fn a_file_of_strata_s_may_become_a_folder_and_back() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("rendered");
        let scope = [String::new()];
        let files =
            |list: &[(&str, &str)]| -> Files { list.iter().map(|(p, c)| (p.to_string(), c.to_string())).collect() };
        write(&out, &files(&[("u/a", "1\n"), ("u/x/y", "2\n")]), &scope, false).unwrap();
        let next = files(&[("u/a/b", "3\n"), ("u/x", "4\n")]);
        let o = write(&out, &next, &scope, false).unwrap();
        assert_eq!((o.written, o.removed), (2, 2));
        assert!(check(&out, &next, &scope).unwrap().is_empty());
        // With a file of the user's in the folder, it is refused.
        std::fs::write(out.join("u/a/mine"), "m").unwrap();
        let back = files(&[("u/a", "1\n"), ("u/x", "4\n")]);
        match write(&out, &back, &scope, false) {
            Err(WriteError::Edited(list)) => assert_eq!(list, ["u/a"]),
            other => panic!("{other:?}"),
        }
        assert!(check(&out, &next, &scope).unwrap().is_empty());
    }
}
