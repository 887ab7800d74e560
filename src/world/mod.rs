//! The world a compile sees: every file read and the clock go through the
//! [`World`] trait, so a compile is hermetic. The CLI uses [`FsWorld`] (a
//! repository on disk); tests and `strata diff` use [`MemWorld`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::yaml::MAX_INPUT_BYTES;

pub mod checkout;
pub mod disk;
pub mod git;
pub mod process;
pub mod shared;

/// Why a file could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorldError {
    NotFound,
    Escapes(String),
    TooLarge(u64),
    NotUtf8 {
        line: u32,
        col: u32,
    },
    Io(String),
    /// The file as git stores it is not the file (a Git LFS pointer, a
    /// git-crypt blob): what it is, and what to do.
    Filtered {
        message: String,
        help: String,
    },
}

impl fmt::Display for WorldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorldError::NotFound => f.write_str("no such file"),
            WorldError::Escapes(why) => write!(f, "path leaves the repository: {why}"),
            WorldError::TooLarge(n) => write!(
                f,
                "file is {n} bytes, over the limit of {MAX_INPUT_BYTES} bytes for an input file"
            ),
            WorldError::NotUtf8 { line, col } => {
                write!(
                    f,
                    "file is not UTF-8 text (first bad byte at line {line}, column {col})"
                )
            }
            WorldError::Io(e) => f.write_str(e),
            WorldError::Filtered { message, .. } => f.write_str(message),
        }
    }
}

/// An entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DirEntry {
    pub name: String,
    pub is_dir: bool,
}

/// Read access to one repository, by repository-relative `/`-separated paths.
pub trait World: Sync {
    /// The bytes of a file.
    fn read(&self, path: &str) -> Result<Vec<u8>, WorldError>;
    /// The entries of a directory, sorted by name; empty if it does not exist.
    fn list(&self, dir: &str) -> Result<Vec<DirEntry>, WorldError>;
    /// Whether a file exists.
    fn is_file(&self, path: &str) -> bool;
    /// Whether a directory exists.
    fn is_dir(&self, path: &str) -> bool;
    /// Today's date as `YYYY-MM-DD`, for waiver expiry.
    fn today(&self) -> String;

    /// Whether git ignores the file, so that it is never committed. A
    /// world with no git (tests, a revision, whose files are committed)
    /// ignores nothing.
    fn ignored_by_git(&self, path: &str) -> bool {
        let _ = path;
        false
    }

    /// The filter `.gitattributes` runs on the file, if any: what git
    /// stores may be other than the file. A world with no git knows none.
    fn git_filter(&self, path: &str) -> Option<String> {
        let _ = path;
        None
    }

    /// A file of a schema location (`schemas:` in strata.yaml, `--schemas`).
    /// Schema folders are shared, read-only data (a Kubernetes schema
    /// package, a CRD catalog) that need not live in the repository, so
    /// `path` may be absolute or climb out of the root; a relative path is
    /// taken from the repository root. The default world has none.
    fn read_schema(&self, path: &str) -> Result<String, WorldError> {
        let _ = path;
        Err(WorldError::NotFound)
    }

    /// Whether a schema folder exists (see [`World::read_schema`]).
    fn is_schema_dir(&self, path: &str) -> bool {
        self.is_dir(path)
    }

    /// The text of a UTF-8 file.
    fn read_text(&self, path: &str) -> Result<String, WorldError> {
        let bytes = self.read(path)?;
        if bytes.len() > MAX_INPUT_BYTES {
            return Err(WorldError::TooLarge(bytes.len() as u64));
        }
        String::from_utf8(bytes).map_err(|e| {
            let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = good.iter().filter(|b| **b == b'\n').count() as u32 + 1;
            let col = good.iter().rev().take_while(|b| **b != b'\n').count() as u32 + 1;
            WorldError::NotUtf8 { line, col }
        })
    }
}

/// Whether the repository-relative `path` lies inside the folder `dir`.
pub fn below(path: &str, dir: &str) -> bool {
    !dir.is_empty() && path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
}

/// Joins repository-relative paths.
pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() || dir == "." {
        name.to_owned()
    } else {
        format!("{}/{}", dir.trim_end_matches('/'), name)
    }
}

/// Normalises a path written by a user into a repository-relative path,
/// refusing absolute paths and `..` that would leave the repository.
pub fn normalize(path: &str) -> Result<String, WorldError> {
    if path.starts_with('/') || path.starts_with('\\') || Path::new(path).is_absolute() {
        return Err(WorldError::Escapes(format!("`{path}` is absolute")));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(WorldError::Escapes(format!("`{path}` climbs above the root")));
                }
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// A repository on disk. Reads never leave `root`, even through symbolic links.
pub struct FsWorld {
    root: PathBuf,
    today: String,
    /// Folders (root-relative) found to be real folders with no symbolic
    /// link on the way from the root: a path in one of them is its own
    /// real path once its last part is seen not to be a link.
    plain_dirs: std::sync::RwLock<std::collections::HashSet<String>>,
    /// The folders listed so far, by root-relative path, once
    /// [`FsWorld::remember_lists`] is called; `None` until then.
    lists: std::sync::RwLock<Option<std::collections::HashMap<String, Vec<DirEntry>>>>,
}

impl FsWorld {
    /// `root` must exist; `today` is the date waivers are judged by.
    pub fn new(root: &Path, today: String) -> std::io::Result<Self> {
        Ok(FsWorld {
            root: root.canonicalize()?,
            today,
            plain_dirs: Default::default(),
            lists: Default::default(),
        })
    }

    /// From now on, a folder listed once is answered from memory: for a
    /// command that reads the tree and writes nothing into it (`strata
    /// diff` lists each component's folder for its load and again for what
    /// a change can reach).
    pub fn remember_lists(&self) {
        if let Ok(mut lists) = self.lists.write() {
            lists.get_or_insert_with(Default::default);
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// This working tree, knowing the files in `same` to hold what `read`
    /// holds at their paths.
    pub fn knowing<'a>(&'a self, read: &'a MemWorld, same: &'a BTreeSet<String>) -> Known<'a> {
        Known { disk: self, read, same }
    }

    /// The entries of `dir` as the disk holds them now.
    fn list_now(&self, dir: &str) -> Result<Vec<DirEntry>, WorldError> {
        let real = match self.resolve(dir) {
            Ok(r) => r,
            Err(WorldError::NotFound) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let rd = std::fs::read_dir(&real).map_err(|e| WorldError::Io(e.to_string()))?;
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| WorldError::Io(e.to_string()))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            // Follow links for the kind, but a link that escapes is reported
            // when it is read, not here.
            let is_dir = match entry.file_type() {
                Ok(t) if !t.is_symlink() => t.is_dir(),
                _ => std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()),
            };
            out.push(DirEntry { name, is_dir });
        }
        out.sort();
        Ok(out)
    }

    /// The real path of a repository-relative path, checked to stay inside.
    fn resolve(&self, path: &str) -> Result<PathBuf, WorldError> {
        self.resolve_with_metadata(path).map(|(real, _)| real)
    }

    /// [`FsWorld::resolve`], and what the real path is (a link followed).
    /// A path with no symbolic link on its way from the root is its own
    /// real path: that is found with one `lstat` of its last part once its
    /// folders are known, where `canonicalize` looks at every part, the
    /// root's included. Any link on the way takes the full resolution.
    fn resolve_with_metadata(&self, path: &str) -> Result<(PathBuf, std::fs::Metadata), WorldError> {
        let rel = normalize(path)?;
        let (parent, _) = rel.rsplit_once('/').unwrap_or(("", &rel));
        if parent.is_empty() || self.plain_dir(parent) {
            let joined = self.root.join(&rel);
            match std::fs::symlink_metadata(&joined) {
                Ok(meta) if !meta.file_type().is_symlink() => return Ok((joined, meta)),
                // No such file, and no dangling link either.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(WorldError::NotFound),
                _ => {}
            }
        }
        let real = self.canonical(path, &rel)?;
        let meta = std::fs::metadata(&real).map_err(|e| WorldError::Io(e.to_string()))?;
        Ok((real, meta))
    }

    /// Whether the root-relative folder `dir` and every folder above it are
    /// real folders, not links; remembered once true.
    fn plain_dir(&self, dir: &str) -> bool {
        if self.plain_dirs.read().is_ok_and(|d| d.contains(dir)) {
            return true;
        }
        if let Some((parent, _)) = dir.rsplit_once('/')
            && !self.plain_dir(parent)
        {
            return false;
        }
        let plain = std::fs::symlink_metadata(self.root.join(dir)).is_ok_and(|m| m.is_dir());
        if plain && let Ok(mut d) = self.plain_dirs.write() {
            d.insert(dir.to_owned());
        }
        plain
    }

    /// The real path by `canonicalize`, which follows every link.
    fn canonical(&self, path: &str, rel: &str) -> Result<PathBuf, WorldError> {
        let joined = self.root.join(rel);
        match joined.canonicalize() {
            Ok(real) if real.starts_with(&self.root) => Ok(real),
            Ok(real) => Err(WorldError::Escapes(format!(
                "`{path}` is a symbolic link to {}",
                real.display()
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A dangling link is reported as what it is.
                if std::fs::symlink_metadata(&joined).is_ok() {
                    Err(WorldError::Io(format!("`{path}` is a symbolic link to nothing")))
                } else {
                    Err(WorldError::NotFound)
                }
            }
            Err(e) if e.raw_os_error() == Some(40) => {
                Err(WorldError::Io(format!("`{path}` is part of a loop of symbolic links")))
            }
            Err(e) => Err(WorldError::Io(e.to_string())),
        }
    }
}

impl World for FsWorld {
    fn read(&self, path: &str) -> Result<Vec<u8>, WorldError> {
        let (real, meta) = self.resolve_with_metadata(path)?;
        if !meta.is_file() {
            return Err(WorldError::Io(format!("`{path}` is not a regular file")));
        }
        if meta.len() > MAX_INPUT_BYTES as u64 {
            return Err(WorldError::TooLarge(meta.len()));
        }
        // With the length just seen (`fs::read` would ask for it again), and
        // a file that grew since stops one byte past the limit.
        let limit = MAX_INPUT_BYTES as u64;
        let file = std::fs::File::open(&real).map_err(|e| WorldError::Io(e.to_string()))?;
        let bytes =
            crate::world::disk::read_to_limit(file, meta.len(), limit).map_err(|e| WorldError::Io(e.to_string()))?;
        if bytes.len() as u64 > limit {
            return Err(WorldError::TooLarge(bytes.len() as u64));
        }
        if let Some(e) = checkout::not_smudged(path, &bytes) {
            return Err(e);
        }
        Ok(bytes)
    }

    fn ignored_by_git(&self, path: &str) -> bool {
        checkout::ignored(&self.root, path)
    }

    fn git_filter(&self, path: &str) -> Option<String> {
        checkout::filter(&self.root, path)
    }

    fn list(&self, dir: &str) -> Result<Vec<DirEntry>, WorldError> {
        let key = {
            let Ok(lists) = self.lists.read() else {
                return self.list_now(dir);
            };
            let (Some(lists), Ok(key)) = (lists.as_ref(), normalize(dir)) else {
                return self.list_now(dir);
            };
            if let Some(listed) = lists.get(&key) {
                return Ok(listed.clone());
            }
            key
        };
        let listed = self.list_now(dir)?;
        if let Ok(mut lists) = self.lists.write()
            && let Some(lists) = lists.as_mut()
        {
            lists.insert(key, listed.clone());
        }
        Ok(listed)
    }

    fn is_file(&self, path: &str) -> bool {
        self.resolve_with_metadata(path).is_ok_and(|(_, m)| m.is_file())
    }

    fn is_dir(&self, path: &str) -> bool {
        self.resolve_with_metadata(path).is_ok_and(|(_, m)| m.is_dir())
    }

    fn today(&self) -> String {
        self.today.clone()
    }

    fn read_schema(&self, path: &str) -> Result<String, WorldError> {
        shared::read_schema_at(&self.root, path)
    }

    fn is_schema_dir(&self, path: &str) -> bool {
        shared::schema_dir_at(&self.root, path)
    }
}

/// Why strata's state folder (`.strata/` and folders in it) cannot be used.
#[derive(Debug)]
pub enum StateDirError {
    /// Something other than a folder (a link, a file) is in its place.
    NotAFolder {
        path: PathBuf,
        kind: &'static str,
    },
    /// `.strata/.gitignore` is not a regular file.
    NotAFile {
        path: PathBuf,
    },
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl fmt::Display for StateDirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateDirError::NotAFolder { path, kind } => write!(
                f,
                "{} is {kind}, not a folder; strata keeps its state there and follows no links",
                path.display()
            ),
            StateDirError::NotAFile { path } => write!(
                f,
                "{} is not a regular file; strata writes `*` there so that git ignores its state folder",
                path.display()
            ),
            StateDirError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

/// The working tree, with the files a diff's base found unchanged taken
/// from the bytes read then: listing the base hashes every working-tree file
/// against git's blob ([`git::Listing::read`]), and a file git holds byte for
/// byte need not be opened a second time. Only a file under real folders is
/// taken so (as [`FsWorld`] reads it without resolving links); every other
/// path, and every other question, goes to the disk.
pub struct Known<'a> {
    disk: &'a FsWorld,
    read: &'a MemWorld,
    same: &'a BTreeSet<String>,
}

impl World for Known<'_> {
    fn read(&self, path: &str) -> Result<Vec<u8>, WorldError> {
        if let Ok(rel) = normalize(path)
            && self.same.contains(&rel)
        {
            let parent = rel.rsplit_once('/').map_or("", |(parent, _)| parent);
            if (parent.is_empty() || self.disk.plain_dir(parent))
                && let Ok(bytes) = self.read.read(&rel)
            {
                return Ok(bytes);
            }
        }
        self.disk.read(path)
    }

    fn list(&self, dir: &str) -> Result<Vec<DirEntry>, WorldError> {
        self.disk.list(dir)
    }

    fn is_file(&self, path: &str) -> bool {
        self.disk.is_file(path)
    }

    fn is_dir(&self, path: &str) -> bool {
        self.disk.is_dir(path)
    }

    fn today(&self) -> String {
        self.disk.today()
    }

    fn read_schema(&self, path: &str) -> Result<String, WorldError> {
        self.disk.read_schema(path)
    }

    fn ignored_by_git(&self, path: &str) -> bool {
        self.disk.ignored_by_git(path)
    }

    fn git_filter(&self, path: &str) -> Option<String> {
        self.disk.git_filter(path)
    }
}

/// What a file-system entry is, in words.
pub fn entry_kind(ft: std::fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_dir() {
        "a folder"
    } else if ft.is_file() {
        "a file"
    } else {
        "a special file"
    }
}

/// Makes `dir` a folder, refusing a link or a file in its place.
pub fn real_dir(dir: &Path) -> Result<(), StateDirError> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) => Err(StateDirError::NotAFolder {
            path: dir.to_path_buf(),
            kind: entry_kind(m.file_type()),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::create_dir(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => real_dir(dir),
            Err(error) => Err(StateDirError::Io {
                path: dir.to_path_buf(),
                error,
            }),
        },
        Err(error) => Err(StateDirError::Io {
            path: dir.to_path_buf(),
            error,
        }),
    }
}

/// Creates strata's state folder `dot` (`<root>/.strata`) with a
/// `.gitignore` of `*`, so that git ignores it with no rule of the
/// repository's own, and the folder `sub` inside it, every step checked to
/// be a real folder: a link planted there cannot send strata's writes
/// outside the repository. Returns `dot/sub`.
pub fn ensure_state_dir(dot: &Path, sub: &Path) -> Result<PathBuf, StateDirError> {
    real_dir(dot)?;
    let ignore = dot.join(".gitignore");
    match std::fs::symlink_metadata(&ignore) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::write(&ignore, "*\n").map_err(|error| StateDirError::Io {
                path: ignore.clone(),
                error,
            })?;
        }
        Err(error) => return Err(StateDirError::Io { path: ignore, error }),
        Ok(m) if !m.is_file() => return Err(StateDirError::NotAFile { path: ignore }),
        Ok(_) => {}
    }
    let mut dir = dot.to_path_buf();
    for c in sub.components() {
        dir.push(c);
        real_dir(&dir)?;
    }
    Ok(dir)
}

/// Largest schema file strata reads. Kubernetes' shared definitions are
/// about 1.5 MiB and the largest CRD schemas a few MiB.
pub const MAX_SCHEMA_BYTES: u64 = 64 * 1024 * 1024;

/// Most symbolic links followed to resolve one path, as Linux allows.
const MAX_LINK_HOPS: usize = 40;

/// A repository in memory: tests, and the base revision of `strata diff`.
///
/// It may hold symbolic links, resolved on every lookup by the rules
/// [`FsWorld`] applies on disk: a link that stays inside the repository is
/// followed, one that leaves it, leads to nothing or loops cannot be read.
/// So a revision read from git answers as its checkout would.
#[derive(Clone, Default)]
pub struct MemWorld {
    files: BTreeMap<String, Vec<u8>>,
    /// Symbolic links: path to target, as written.
    links: BTreeMap<String, String>,
    /// Files that exist but cannot be read, and why.
    unreadable: BTreeMap<String, WorldError>,
    /// The repository's absolute path, for links with an absolute target.
    root: Option<PathBuf>,
    today: String,
}

impl MemWorld {
    pub fn new(today: &str) -> Self {
        MemWorld {
            today: today.to_owned(),
            ..MemWorld::default()
        }
    }

    pub fn insert(&mut self, path: &str, contents: impl Into<Vec<u8>>) {
        if let Ok(p) = normalize(path) {
            self.files.insert(p, contents.into());
        }
    }

    pub fn with(mut self, path: &str, contents: impl Into<Vec<u8>>) -> Self {
        self.insert(path, contents);
        self
    }

    /// Adds a symbolic link at `path` to `target` (relative to the link's
    /// folder, or absolute).
    pub fn insert_link(&mut self, path: &str, target: &str) {
        if let Ok(p) = normalize(path) {
            self.links.insert(p, target.to_owned());
        }
    }

    /// Adds a file that exists but cannot be read.
    pub fn insert_unreadable(&mut self, path: &str, why: WorldError) {
        if let Ok(p) = normalize(path) {
            self.unreadable.insert(p, why);
        }
    }

    /// Where the repository is on disk, for links with an absolute target.
    pub fn set_root(&mut self, root: &Path) {
        self.root = Some(root.to_path_buf());
    }

    /// The real path of `path`, every link on the way followed.
    fn resolve(&self, path: &str) -> Result<String, WorldError> {
        let rel = normalize(path)?;
        if self.links.is_empty() {
            return Ok(rel);
        }
        let mut pending: std::collections::VecDeque<String> = rel.split('/').map(str::to_owned).collect();
        let mut done: Vec<String> = Vec::new();
        let mut hops = 0;
        while let Some(part) = pending.pop_front() {
            match part.as_str() {
                "" | "." => continue,
                ".." => {
                    if done.pop().is_none() {
                        return Err(WorldError::Escapes(format!(
                            "`{path}` climbs above the root through a link"
                        )));
                    }
                    continue;
                }
                _ => {}
            }
            done.push(part);
            let here = done.join("/");
            let Some(target) = self.links.get(&here) else {
                continue;
            };
            hops += 1;
            if hops > MAX_LINK_HOPS {
                return Err(WorldError::Io(format!("`{path}` is part of a loop of symbolic links")));
            }
            done.pop();
            let rest: Vec<&str> = if Path::new(target).is_absolute() || target.starts_with('/') {
                let inside = self
                    .root
                    .as_deref()
                    .and_then(|r| Path::new(target).strip_prefix(r).ok())
                    .and_then(|p| p.to_str());
                match inside {
                    Some(p) => {
                        done.clear();
                        p.split('/').collect()
                    }
                    None => {
                        return Err(WorldError::Escapes(format!("`{path}` is a symbolic link to {target}")));
                    }
                }
            } else {
                target.split(['/', '\\']).collect()
            };
            for p in rest.into_iter().rev() {
                pending.push_front(p.to_owned());
            }
        }
        Ok(done.join("/"))
    }

    /// Whether the last part of `path` is itself a symbolic link.
    fn is_link(&self, path: &str) -> bool {
        let Ok(rel) = normalize(path) else { return false };
        let (parent, name) = rel.rsplit_once('/').unwrap_or(("", &rel));
        self.resolve(parent)
            .is_ok_and(|p| self.links.contains_key(&join(&p, name)))
    }

    fn dir_exists(&self, d: &str) -> bool {
        fn has<V>(map: &BTreeMap<String, V>, prefix: &str) -> bool {
            map.range(prefix.to_owned()..)
                .next()
                .is_some_and(|(k, _)| k.starts_with(prefix))
        }
        let prefix = format!("{d}/");
        d.is_empty() || has(&self.files, &prefix) || has(&self.links, &prefix) || has(&self.unreadable, &prefix)
    }

    /// Every path under `prefix`, of files, links and unreadable files.
    fn under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        fn keys<'a, V>(map: &'a BTreeMap<String, V>, prefix: &'a str) -> impl Iterator<Item = &'a String> + 'a {
            map.range(prefix.to_owned()..)
                .map(|(k, _)| k)
                .take_while(move |k| k.starts_with(prefix))
        }
        keys(&self.files, prefix)
            .chain(keys(&self.links, prefix))
            .chain(keys(&self.unreadable, prefix))
    }
}

impl World for MemWorld {
    fn read(&self, path: &str) -> Result<Vec<u8>, WorldError> {
        let p = self.resolve(path)?;
        if let Some(e) = self.unreadable.get(&p) {
            return Err(e.clone());
        }
        match self.files.get(&p) {
            Some(bytes) => Ok(bytes.clone()),
            None if self.dir_exists(&p) => Err(WorldError::Io(format!("`{path}` is not a regular file"))),
            None if self.is_link(path) => Err(WorldError::Io(format!("`{path}` is a symbolic link to nothing"))),
            None => Err(WorldError::NotFound),
        }
    }

    fn list(&self, dir: &str) -> Result<Vec<DirEntry>, WorldError> {
        let d = self.resolve(dir)?;
        if !self.dir_exists(&d) && !self.files.contains_key(&d) && self.is_link(dir) {
            return Err(WorldError::Io(format!("`{dir}` is a symbolic link to nothing")));
        }
        let prefix = if d.is_empty() { String::new() } else { format!("{d}/") };
        let mut out: Vec<DirEntry> = Vec::new();
        for key in self.under(&prefix) {
            let rest = &key[prefix.len()..];
            let (name, is_dir) = match rest.split_once('/') {
                Some((first, _)) => (first, true),
                // A link is a folder when what it leads to is one.
                None => (rest, self.links.contains_key(key.as_str()) && self.is_dir(key)),
            };
            out.push(DirEntry {
                name: name.to_owned(),
                is_dir,
            });
        }
        out.sort();
        out.dedup_by(|a, b| {
            a.name == b.name && {
                b.is_dir |= a.is_dir;
                true
            }
        });
        Ok(out)
    }

    fn is_file(&self, path: &str) -> bool {
        self.resolve(path)
            .is_ok_and(|p| self.files.contains_key(&p) || self.unreadable.contains_key(&p))
    }

    fn is_dir(&self, path: &str) -> bool {
        self.resolve(path).is_ok_and(|d| self.dir_exists(&d))
    }

    fn today(&self) -> String {
        self.today.clone()
    }

    /// A schema file the revision holds is read from it; any other (outside
    /// the repository, or not committed, as `.strata/schemas/` is not) where
    /// the working tree reads it, when the revision knows where that is.
    fn read_schema(&self, path: &str) -> Result<String, WorldError> {
        let held = normalize(path).is_ok_and(|_| self.is_file(path));
        match &self.root {
            Some(root) if !held => shared::read_schema_at(root, path),
            _ => {
                let bytes = self.read(path)?;
                String::from_utf8(bytes).map_err(|_| WorldError::NotUtf8 { line: 1, col: 1 })
            }
        }
    }

    fn is_schema_dir(&self, path: &str) -> bool {
        let held = normalize(path).is_ok_and(|_| self.is_dir(path));
        held || self
            .root
            .as_deref()
            .is_some_and(|root| shared::schema_dir_at(root, path))
    }

    /// A revision read from git answers with the working tree's
    /// `.gitattributes` (the git strata supports cannot ask a revision's).
    fn git_filter(&self, path: &str) -> Option<String> {
        checkout::filter(self.root.as_deref()?, path)
    }
}

/// Converts days since 1970-01-01 to a civil date (proleptic Gregorian).
pub fn civil_date(days_since_epoch: i64) -> String {
    let z = days_since_epoch + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Whether a path component list stays within its root (used for `--out`).
pub fn has_parent_components(path: &Path) -> bool {
    path.components().any(|c| matches!(c, Component::ParentDir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_refuses_escapes() {
        assert_eq!(normalize("a/./b/../c").unwrap(), "a/c");
        assert!(normalize("../x").is_err());
        assert!(normalize("/etc/passwd").is_err());
        assert!(normalize("a/../../x").is_err());
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_425), "2025-12-03");
        assert_eq!(civil_date(-1), "1969-12-31");
    }

    #[test]
    fn mem_world_lists_dirs() {
        let w = MemWorld::new("2026-01-01")
            .with("a/b/c.yaml", "x")
            .with("a/d.yaml", "y");
        let names: Vec<_> = w.list("a").unwrap().into_iter().map(|e| (e.name, e.is_dir)).collect();
        assert_eq!(names, vec![("b".into(), true), ("d.yaml".into(), false)]);
        assert!(w.is_dir("a/b"));
        assert!(!w.is_dir("a/x"));
    }

    #[test]
    fn the_disk_follows_links_inside_the_root_and_refuses_the_rest() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.yaml"), "s: 1").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("shared")).unwrap();
        std::fs::create_dir_all(root.join("comp")).unwrap();
        std::fs::write(root.join("shared/values.yaml"), "a: 1").unwrap();
        std::fs::write(root.join("comp/config.yaml"), "x").unwrap();
        symlink("../shared/values.yaml", root.join("comp/values.yaml")).unwrap();
        symlink("comp", root.join("alias")).unwrap();
        symlink(outside.path(), root.join("away")).unwrap();
        symlink("missing.yaml", root.join("nothing.yaml")).unwrap();
        symlink("loop-b", root.join("loop-a")).unwrap();
        symlink("loop-a", root.join("loop-b")).unwrap();
        let w = FsWorld::new(root, "2026-01-01".into()).unwrap();
        // Twice: the second time the folders are known to be plain.
        for _ in 0..2 {
            assert_eq!(w.read("comp/config.yaml").unwrap(), b"x");
            assert_eq!(w.read("comp/values.yaml").unwrap(), b"a: 1");
            assert_eq!(w.read("alias/values.yaml").unwrap(), b"a: 1");
            assert!(w.is_dir("alias") && w.is_file("alias/config.yaml") && !w.is_file("comp"));
            assert!(w.list("").unwrap().iter().any(|e| e.name == "alias" && e.is_dir));
            assert!(matches!(w.read("away/secret.yaml"), Err(WorldError::Escapes(_))));
            assert!(matches!(w.read("nothing.yaml"), Err(WorldError::Io(e)) if e.contains("to nothing")));
            assert!(matches!(w.read("loop-a"), Err(WorldError::Io(e)) if e.contains("loop")));
            assert_eq!(w.read("absent.yaml"), Err(WorldError::NotFound));
            assert_eq!(w.read("comp/absent.yaml"), Err(WorldError::NotFound));
            assert!(matches!(w.read("comp/config.yaml/x"), Err(WorldError::Io(_))));
            assert!(matches!(w.read("shared"), Err(WorldError::Io(e)) if e.contains("not a regular file")));
        }
    }

    #[test]
    fn remembered_lists_answer_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("comp")).unwrap();
        std::fs::write(root.join("comp/a.yaml"), "a").unwrap();
        let w = FsWorld::new(root, "2026-01-01".into()).unwrap();
        let names = |w: &FsWorld, dir: &str| w.list(dir).unwrap().into_iter().map(|e| e.name).collect::<Vec<_>>();
        std::fs::write(root.join("comp/b.yaml"), "b").unwrap();
        // Not remembered: the disk as it is now.
        assert_eq!(names(&w, "comp"), ["a.yaml", "b.yaml"]);
        w.remember_lists();
        assert_eq!(names(&w, "comp"), ["a.yaml", "b.yaml"]);
        std::fs::write(root.join("comp/c.yaml"), "c").unwrap();
        // Remembered, by the folder's normal path.
        assert_eq!(names(&w, "comp"), ["a.yaml", "b.yaml"]);
        assert_eq!(names(&w, "./comp/"), ["a.yaml", "b.yaml"]);
        // A folder not listed before is read from the disk, as is a file.
        assert_eq!(names(&w, ""), ["comp"]);
        assert_eq!(w.read("comp/c.yaml").unwrap(), b"c");
    }

    #[test]
    fn known_files_are_taken_only_under_real_folders() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("comp")).unwrap();
        std::fs::write(outside.path().join("comp/values.yaml"), "away: 1").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("comp")).unwrap();
        std::fs::write(root.join("comp/values.yaml"), "disk: 1").unwrap();
        std::fs::write(root.join("top.yaml"), "disk: 2").unwrap();
        std::fs::write(root.join("other.yaml"), "disk: 3").unwrap();
        symlink(outside.path(), root.join("away")).unwrap();
        let disk = FsWorld::new(root, "2026-01-01".into()).unwrap();
        // What a base listing read: the bytes differ from the disk's here
        // only to show where each answer comes from.
        let mut read = MemWorld::new("2026-01-01");
        read.insert("comp/values.yaml", "known: 1");
        read.insert("top.yaml", "known: 2");
        read.insert("other.yaml", "known: 3");
        read.insert("away/comp/values.yaml", "known: 4");
        read.insert_unreadable("filtered.yaml", WorldError::Io("filtered".into()));
        let same: BTreeSet<String> = ["comp/values.yaml", "top.yaml", "away/comp/values.yaml", "filtered.yaml"]
            .map(String::from)
            .into();
        let w = disk.knowing(&read, &same);
        assert_eq!(w.read("comp/values.yaml").unwrap(), b"known: 1");
        assert_eq!(w.read("./top.yaml").unwrap(), b"known: 2");
        // Not known the same: read from the disk.
        assert_eq!(w.read("other.yaml").unwrap(), b"disk: 3");
        // Under a link: the disk's rules refuse it, whatever was read before.
        assert!(matches!(w.read("away/comp/values.yaml"), Err(WorldError::Escapes(_))));
        // Known but not readable from what was read: the disk answers.
        assert_eq!(w.read("filtered.yaml"), Err(WorldError::NotFound));
        assert!(w.is_dir("comp") && w.is_file("top.yaml") && !w.is_file("absent.yaml"));
        assert_eq!(w.list("comp").unwrap(), disk.list("comp").unwrap());
    }

    #[test]
    fn mem_world_follows_links_as_the_disk_does() {
        let mut w = MemWorld::new("2026-01-01")
            .with("shared/values.yaml", "a: 1")
            .with("comp/config.yaml", "x");
        w.set_root(Path::new("/repo"));
        w.insert_link("comp/values.yaml", "../shared/values.yaml");
        w.insert_link("alias", "comp");
        w.insert_link("abs.yaml", "/repo/shared/values.yaml");
        w.insert_link("out.yaml", "../../etc/passwd");
        w.insert_link("abs-out.yaml", "/etc/passwd");
        w.insert_link("nothing.yaml", "missing.yaml");
        w.insert_link("loop-a", "loop-b");
        w.insert_link("loop-b", "loop-a");
        assert_eq!(w.read("comp/values.yaml").unwrap(), b"a: 1");
        assert_eq!(w.read("alias/values.yaml").unwrap(), b"a: 1");
        assert_eq!(w.read("abs.yaml").unwrap(), b"a: 1");
        assert!(w.is_dir("alias") && w.is_file("alias/config.yaml"));
        let names: Vec<_> = w.list("alias").unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, vec!["config.yaml", "values.yaml"]);
        assert!(w.list("").unwrap().iter().any(|e| e.name == "alias" && e.is_dir));
        assert!(matches!(w.read("out.yaml"), Err(WorldError::Escapes(_))));
        assert!(matches!(w.read("abs-out.yaml"), Err(WorldError::Escapes(_))));
        assert!(matches!(w.read("nothing.yaml"), Err(WorldError::Io(e)) if e.contains("to nothing")));
        assert!(matches!(w.read("loop-a"), Err(WorldError::Io(e)) if e.contains("loop")));
        assert_eq!(w.read("absent.yaml"), Err(WorldError::NotFound));
    }
}
