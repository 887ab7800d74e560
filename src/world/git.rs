//! A past revision of the repository as a [`MemWorld`], read with the `git`
//! command (`rev-parse` for the commit, then one `cat-file --batch` for the
//! trees and every blob), without touching the working tree or the index.
//! Works in a shallow clone as long as the revision itself has been fetched.

use std::collections::BTreeSet;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use rayon::prelude::*;

use super::MemWorld;
use crate::yaml::MAX_INPUT_BYTES;

/// Why a revision could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitError {
    /// `git` could not be started.
    NoGit(String),
    /// The folder is not inside a git work tree.
    NotARepository(String),
    /// git refuses to work in a repository another user owns
    /// (`safe.directory`); the repository's path as git names it.
    DubiousOwnership(String),
    /// The revision names no commit that this clone has.
    UnknownRevision { rev: String, shallow: bool },
    /// git failed in some other way.
    Failed { command: String, stderr: String },
}

impl fmt::Display for GitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GitError::NoGit(e) => write!(f, "cannot run `git`: {e}"),
            GitError::NotARepository(dir) => write!(f, "{dir} is not inside a git repository"),
            GitError::DubiousOwnership(dir) => write!(
                f,
                "git refuses to read the repository at {dir}: it belongs to another user (git's \"dubious ownership\" check)"
            ),
            GitError::UnknownRevision { rev, .. } => {
                write!(f, "unknown revision `{rev}`: this clone has no such commit")
            }
            GitError::Failed { command, stderr } => write!(f, "`{command}` failed: {}", stderr.trim()),
        }
    }
}

impl GitError {
    /// What the user can do about it.
    pub fn help(&self) -> Option<String> {
        match self {
            GitError::NoGit(_) => Some("install git and make sure it is on PATH".into()),
            GitError::NotARepository(_) => {
                Some("`strata diff` compares with a git revision; run it inside a clone".into())
            }
            GitError::DubiousOwnership(dir) => Some(format!(
                "if you trust the repository, tell git so: `git config --global --add safe.directory {dir}` \
                 (in a container or CI job, run it as the user that owns the checkout, or add that line to the job)"
            )),
            GitError::UnknownRevision { rev, shallow } => {
                let branch = rev.strip_prefix("origin/").unwrap_or(rev);
                let mut h = format!("fetch it first, e.g. `git fetch origin {branch}`");
                if *shallow {
                    h.push_str(
                        "; this is a shallow clone, so only fetched commits exist (in CI, check out with fetch-depth: 0)",
                    );
                }
                Some(h)
            }
            GitError::Failed { .. } => None,
        }
    }
}

/// The revision read: its commit id and its tree below the strata root.
pub struct Revision {
    pub commit: String,
    pub world: MemWorld,
    /// Files over the input size limit that were left out.
    pub skipped: Vec<String>,
    /// Files whose blob the working tree holds byte for byte (the same
    /// git object id), read from there: the same on both sides.
    pub as_in_work_tree: BTreeSet<String>,
}

/// The repository git names in a "dubious ownership" refusal, if `stderr`
/// is one.
fn dubious_ownership(stderr: &[u8], dir: &Path) -> Option<GitError> {
    let text = String::from_utf8_lossy(stderr);
    if !text.contains("dubious ownership") {
        return None;
    }
    let repo = text
        .split("repository at '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .map_or_else(|| dir.display().to_string(), str::to_owned);
    Some(GitError::DubiousOwnership(repo))
}

fn git(dir: &Path, args: &[&str]) -> Result<std::process::Output, GitError> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| GitError::NoGit(e.to_string()))
}

fn git_text(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let out = git(dir, args)?;
    if !out.status.success() {
        return Err(GitError::Failed {
            command: format!("git {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end_matches('\n').to_owned())
}

/// One blob of a revision's tree: a regular file, or a symbolic link
/// (whose blob is its target).
struct TreeEntry {
    oid: String,
    path: String,
    link: bool,
}

/// A folder of a revision's tree: its path and its tree's object id.
type Folder = (String, String);

/// The entries of a git tree object (`<mode> <name>\0<id>`, the id as
/// `id_len` raw bytes): the folders apart (path and object id), then the
/// regular files and links. Submodules are not inputs, and a name that is
/// not UTF-8 cannot be named by an input either. `None`: not a tree.
fn parse_tree(bytes: &[u8], id_len: usize, dir: &str) -> Option<(Vec<Folder>, Vec<TreeEntry>)> {
    use crate::world::disk::hex;
    let (mut folders, mut blobs) = (Vec::new(), Vec::new());
    let mut rest = bytes;
    while !rest.is_empty() {
        let space = rest.iter().position(|b| *b == b' ')?;
        let nul = space + rest[space..].iter().position(|b| *b == 0)?;
        let (mode, name) = (&rest[..space], &rest[space + 1..nul]);
        let id = rest.get(nul + 1..nul + 1 + id_len)?;
        rest = &rest[nul + 1 + id_len..];
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        let path = super::join(dir, name);
        match mode {
            b"40000" => folders.push((path, hex(id))),
            b"100644" | b"100755" | b"120000" => blobs.push(TreeEntry {
                oid: hex(id),
                path,
                link: mode == b"120000",
            }),
            _ => {}
        }
    }
    Some((folders, blobs))
}

/// A revision's commit, and the blobs below the strata root but for the
/// folders left out: what [`Listing::read`] reads into memory, with the
/// `git cat-file` that listed them.
pub struct Listing {
    rev: String,
    commit: String,
    wanted: Vec<TreeEntry>,
    batch: Batch,
}

/// Lists the tree of `rev` below `root`, the strata root (which may be a
/// subfolder of the git work tree), but for the folders in `leave_out`
/// (root-relative: the rendered tree, which no compile reads), without
/// reading a blob: the listing is git's work, the reading strata's, and a
/// caller can read the working tree in between.
pub fn list_revision(root: &Path, rev: &str, leave_out: &[&str]) -> Result<Listing, GitError> {
    // One `cat-file` finds the commit and lists its trees: each git
    // started is a few milliseconds, beside a load that keeps both cores
    // busy. The strata root's tree is named by its path from the folder
    // git runs in (`<commit>:./`). What it cannot find (no repository, a
    // folder git refuses, an unknown revision) is asked of `rev-parse`,
    // which says why.
    let mut batch = Batch::start(root)?;
    let (commit, tree) = match batch.commit(rev) {
        Ok(Some(commit)) => {
            let tree = format!("{commit}:./");
            (commit, tree)
        }
        found => {
            let (commit, prefix) = resolve(root, rev)?;
            if prefix.contains('\n') {
                return Err(GitError::Failed {
                    command: "git rev-parse --show-prefix".into(),
                    stderr: format!("the strata root's folder `{}` holds a line break", prefix.trim_end()),
                });
            }
            if found.is_err() {
                batch = Batch::start(root)?;
            }
            let tree = format!("{commit}:{prefix}");
            (commit, tree)
        }
    };
    // The subtree of the strata root at that commit; a root that did not
    // exist then is an empty tree.
    let wanted = list_tree(&mut batch, &commit, tree, leave_out)?;
    Ok(Listing {
        rev: rev.to_owned(),
        commit,
        wanted,
        batch,
    })
}

impl Listing {
    /// Reads the listed blobs into memory. `known` gives the text of a
    /// working-tree file already read (by the load), if any.
    pub fn read(
        self,
        root: &Path,
        today: &str,
        known: &(dyn Fn(&str) -> Option<Arc<str>> + Sync),
    ) -> Result<Revision, GitError> {
        let Listing {
            rev,
            commit,
            wanted,
            mut batch,
        } = self;
        let rev = rev.as_str();
        // A blob the working tree holds byte for byte (the same object id) is
        // taken from there: git would only inflate the same bytes again, and a
        // diff's base is mostly the working tree.
        let kept: Vec<Option<Vec<u8>>> = wanted
            .par_iter()
            .map(|e| unchanged_in_work_tree(root, e, known))
            .collect();
        let asked: Vec<&TreeEntry> = wanted
            .iter()
            .zip(&kept)
            .filter(|(_, k)| k.is_none())
            .map(|(e, _)| e)
            .collect();
        let oids: Vec<&str> = asked.iter().map(|e| e.oid.as_str()).collect();
        let mut fetched = batch.ask(&oids, MAX_INPUT_BYTES)?.into_iter();
        batch.finish()?;
        let mut world = MemWorld::new(today);
        world.set_root(root);
        let mut as_in_work_tree = BTreeSet::new();
        let mut skipped = Vec::new();
        for (entry, kept) in wanted.iter().zip(kept) {
            if kept.is_some() {
                as_in_work_tree.insert(entry.path.clone());
            }
            let bytes = match kept {
                Some(bytes) => bytes,
                None => match fetched.next() {
                    Some(Answer::Object { kind, bytes, .. }) if kind == "blob" => bytes,
                    Some(Answer::TooLarge) => {
                        skipped.push(entry.path.clone());
                        continue;
                    }
                    Some(Answer::Object { kind, .. }) => {
                        return Err(batch_failed(format!("{} is a {kind}, not a blob", entry.path)));
                    }
                    Some(Answer::Missing) | None => {
                        return Err(batch_failed(format!("the object of {} is missing", entry.path)));
                    }
                },
            };
            if entry.link {
                // Followed on reading by the working tree's rules, so a
                // linked values layer reads the same on both sides.
                world.insert_link(&entry.path, &String::from_utf8_lossy(&bytes));
            } else if let Some(why) = filtered(&entry.path, &bytes, rev) {
                world.insert_unreadable(&entry.path, why);
            } else {
                world.insert(&entry.path, bytes);
            }
        }
        Ok(Revision {
            commit,
            world,
            skipped,
            as_in_work_tree,
        })
    }
}

/// The commit `rev` names and the strata root's folder in the work tree,
/// with one git command when all is well; the errors are worked out with
/// more.
fn resolve(root: &Path, rev: &str) -> Result<(String, String), GitError> {
    // `--end-of-options` keeps a revision that starts with `-` from being an option.
    let spec = format!("{rev}^{{commit}}");
    let out = git(
        root,
        &[
            "rev-parse",
            "--is-inside-work-tree",
            "--show-prefix",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    if let ["true", prefix, commit] = text.lines().collect::<Vec<_>>()[..]
        && out.status.success()
        && !rev.is_empty()
    {
        return Ok((commit.to_owned(), prefix.to_owned()));
    }
    let inside = git(root, &["rev-parse", "--is-inside-work-tree"])?;
    if !inside.status.success() {
        return Err(dubious_ownership(&inside.stderr, root)
            .unwrap_or_else(|| GitError::NotARepository(root.display().to_string())));
    }
    let shallow = git_text(root, &["rev-parse", "--is-shallow-repository"]).is_ok_and(|s| s == "true");
    Err(GitError::UnknownRevision {
        rev: rev.to_owned(),
        shallow,
    })
}

/// Every blob of the tree `tree` names (`<commit>:<prefix>`, or
/// `<commit>:./`), recursively, but for the folders in `leave_out`: those
/// are not even listed (the rendered tree is most of a platform's blobs).
/// One level of folders is asked at a time.
fn list_tree(batch: &mut Batch, commit: &str, tree: String, leave_out: &[&str]) -> Result<Vec<TreeEntry>, GitError> {
    // The id's length in bytes: SHA-1's, or SHA-256's in such a repository.
    let id_len = commit.len() / 2;
    let mut entries = Vec::new();
    let kept = |path: &str| !leave_out.iter().any(|out| path == *out || super::below(path, out));
    let mut level = vec![(String::new(), tree)];
    while !level.is_empty() {
        let names: Vec<&str> = level.iter().map(|(_, name)| name.as_str()).collect();
        let answers = batch.ask(&names, MAX_TREE_BYTES)?;
        let mut next = Vec::new();
        for ((dir, _), answer) in level.iter().zip(answers) {
            let bytes = match answer {
                Answer::Object { kind, bytes, .. } if kind == "tree" => bytes,
                // A root that did not exist then is an empty tree.
                Answer::Missing if dir.is_empty() => return Ok(Vec::new()),
                Answer::TooLarge => return Err(batch_failed(format!("the folder `{dir}` is too large to list"))),
                _ => return Err(batch_failed(format!("the folder `{dir}` is not a tree"))),
            };
            let (folders, blobs) = parse_tree(&bytes, id_len, dir)
                .ok_or_else(|| batch_failed(format!("the tree of `{dir}` cannot be read")))?;
            next.extend(folders.into_iter().filter(|(path, _)| kept(path)));
            entries.extend(blobs.into_iter().filter(|e| kept(&e.path)));
        }
        level = next;
    }
    Ok(entries)
}

/// The working tree's bytes of a regular file whose git object id is the
/// entry's: then they are the blob's bytes. Read as the writer reads its
/// own files: no link followed, no pipe waited on, nothing over the size.
fn unchanged_in_work_tree(
    root: &Path,
    entry: &TreeEntry,
    known: &(dyn Fn(&str) -> Option<Arc<str>> + Sync),
) -> Option<Vec<u8>> {
    if entry.link {
        return None;
    }
    if let Some(text) = known(&entry.path)
        && blob_id(text.as_bytes(), entry.oid.len()).is_some_and(|id| id == entry.oid)
    {
        return Some(text.as_bytes().to_vec());
    }
    let bytes = crate::world::disk::read_regular(&root.join(&entry.path), MAX_INPUT_BYTES as u64).ok()?;
    (blob_id(&bytes, entry.oid.len())? == entry.oid).then_some(bytes)
}

/// The id git gives a blob of these bytes: SHA-1 (40 hex digits) or, in a
/// SHA-256 repository, SHA-256 (64), of a `blob <size>` header and them.
fn blob_id(bytes: &[u8], hex_len: usize) -> Option<String> {
    use crate::world::disk::hex;
    let header = format!("blob {}\0", bytes.len());
    match hex_len {
        40 => {
            use sha1::Digest;
            let mut h = sha1::Sha1::new();
            h.update(header.as_bytes());
            h.update(bytes);
            Some(hex(&h.finalize()))
        }
        64 => {
            use sha2::Digest;
            let mut h = sha2::Sha256::new();
            h.update(header.as_bytes());
            h.update(bytes);
            Some(hex(&h.finalize()))
        }
        _ => None,
    }
}

/// A blob that is not the file the working tree has, because a clean
/// filter changed it on commit: a Git LFS pointer, or a git-crypt blob.
/// `git cat-file` gives blobs as stored, and strata runs no filters.
fn filtered(path: &str, bytes: &[u8], rev: &str) -> Option<super::WorldError> {
    use super::checkout::{Stored, stored_form};
    Some(match stored_form(bytes)? {
        Stored::LfsPointer => super::WorldError::Filtered {
            message: format!(
                "`{path}` is a Git LFS pointer in {rev}, not the file: strata reads a revision as git stores it and runs no LFS filter"
            ),
            help: "keep strata's inputs out of Git LFS: `git lfs untrack` their pattern in .gitattributes and commit the files themselves".into(),
        },
        Stored::GitCrypt => super::WorldError::Filtered {
            message: format!(
                "`{path}` is encrypted by git-crypt in {rev}: strata reads a revision as git stores it and cannot decrypt it"
            ),
            help: "keep strata's inputs out of git-crypt's patterns in .gitattributes; strata needs no secrets \
                   (sensitive contract outputs are dropped), so deliver secrets through SOPS or External Secrets"
                .into(),
        },
    })
}

/// The largest tree object listed: about a hundred thousand names in one
/// folder.
const MAX_TREE_BYTES: usize = 4 * MAX_INPUT_BYTES;

/// How many objects are asked of `cat-file` before their answers are read:
/// the names asked stay far below what a pipe holds, so git never waits on
/// strata to read while strata waits on git to take more names.
const ASKED_AT_ONCE: usize = 32;

/// One `git cat-file --batch` for the whole read of a revision.
struct Batch {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    out: BufReader<std::process::ChildStdout>,
}

/// What `cat-file` answered for one object name.
enum Answer {
    Missing,
    /// Larger than the limit asked with: its bytes were read and dropped.
    TooLarge,
    Object {
        /// The object's id, as git gave it.
        id: String,
        kind: String,
        bytes: Vec<u8>,
    },
}

fn batch_failed(what: String) -> GitError {
    GitError::Failed {
        command: "git cat-file --batch".into(),
        stderr: what,
    }
}

impl Batch {
    fn start(root: &Path) -> Result<Batch, GitError> {
        let mut child = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| GitError::NoGit(e.to_string()))?;
        let stdin = child.stdin.take();
        let out = child.stdout.take().ok_or_else(|| GitError::NoGit("no stdout".into()))?;
        Ok(Batch {
            child,
            stdin,
            out: BufReader::new(out),
        })
    }

    /// The commit `rev` names (`<rev>^{commit}`): `None` when git finds
    /// none, an error when the batch itself failed (it is then stopped).
    fn commit(&mut self, rev: &str) -> Result<Option<String>, GitError> {
        if rev.is_empty() || rev.contains(['\n', '\r']) {
            return Ok(None);
        }
        let name = format!("{rev}^{{commit}}");
        match self.ask(&[&name], MAX_TREE_BYTES)?.pop() {
            Some(Answer::Object { id, kind, .. }) if kind == "commit" => Ok(Some(id)),
            _ => Ok(None),
        }
    }

    /// The objects `names` name, in order; one over `limit` bytes is not
    /// kept.
    fn ask(&mut self, names: &[&str], limit: usize) -> Result<Vec<Answer>, GitError> {
        let mut answers = Vec::with_capacity(names.len());
        for chunk in names.chunks(ASKED_AT_ONCE) {
            let mut request = String::new();
            for name in chunk {
                if name.contains('\n') {
                    return Err(batch_failed(format!(
                        "the object name `{}` holds a line break",
                        name.trim()
                    )));
                }
                request.push_str(name);
                request.push('\n');
            }
            let stdin = self
                .stdin
                .as_mut()
                .ok_or_else(|| batch_failed("asked after the end".into()))?;
            if let Err(e) = stdin.write_all(request.as_bytes()).and_then(|()| stdin.flush()) {
                return Err(self.failure(format!("asking for objects: {e}")));
            }
            for name in chunk {
                answers.push(self.answer(name, limit)?);
            }
        }
        Ok(answers)
    }

    fn answer(&mut self, name: &str, limit: usize) -> Result<Answer, GitError> {
        let mut header = String::new();
        match self.out.read_line(&mut header) {
            Ok(0) => return Err(self.failure(format!("no answer for {name}"))),
            Ok(_) => {}
            Err(e) => return Err(self.failure(format!("reading {name}: {e}"))),
        }
        let fields: Vec<&str> = header.split_whitespace().collect();
        let parsed = match fields[..] {
            [_, "missing" | "ambiguous"] => return Ok(Answer::Missing),
            [id, kind, size] => size
                .parse::<usize>()
                .ok()
                .map(|size| (id.to_owned(), kind.to_owned(), size)),
            _ => None,
        };
        let Some((id, kind, size)) = parsed else {
            return Err(batch_failed(format!("bad header for {name}: {}", header.trim())));
        };
        // The object and the line end after it.
        let mut object = (&mut self.out).take(size as u64 + 1);
        if size > limit {
            // Read past, never held whole.
            return match std::io::copy(&mut object, &mut std::io::sink()) {
                Ok(n) if n == size as u64 + 1 => Ok(Answer::TooLarge),
                _ => Err(self.failure(format!("reading {name}: cut short"))),
            };
        }
        let mut bytes = Vec::with_capacity(size + 1);
        match object.read_to_end(&mut bytes) {
            Ok(n) if n == size + 1 && bytes.pop() == Some(b'\n') => Ok(Answer::Object { id, kind, bytes }),
            Ok(_) => Err(self.failure(format!("reading {name}: cut short"))),
            Err(e) => Err(self.failure(format!("reading {name}: {e}"))),
        }
    }

    /// Ends the batch: git's own error, if it failed.
    fn finish(mut self) -> Result<(), GitError> {
        drop(self.stdin.take());
        let status = self.child.wait().map_err(|e| batch_failed(e.to_string()))?;
        if status.success() {
            Ok(())
        } else {
            Err(self.failure("git cat-file failed".into()))
        }
    }

    /// An error with what git said on its way out. git is stopped first:
    /// it may be waiting to write an answer no one will read.
    fn failure(&mut self, what: String) -> GitError {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut said = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut said);
        }
        batch_failed(if said.trim().is_empty() { what } else { said })
    }
}

impl Drop for Batch {
    /// A batch left unfinished (an error elsewhere) is ended, not left to
    /// run.
    fn drop(&mut self) {
        if self.stdin.take().is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Which of `paths` (relative to `dir`) git tracks; `None` when git cannot
/// say (no repository, no git).
pub fn tracked(dir: &Path, paths: &[String]) -> Option<BTreeSet<String>> {
    if paths.is_empty() {
        return Some(BTreeSet::new());
    }
    let mut args = vec!["ls-files", "-z", "--"];
    args.extend(paths.iter().map(String::as_str));
    let out = git(dir, &args).ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        out.stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect(),
    )
}

/// The top of the git repository holding `dir`, from the user's own git;
/// `None` outside a repository or without git. When git refuses a
/// repository another user owns ("dubious ownership"), the top is the
/// nearest folder upwards with a `.git`, as git itself would find it: where
/// the tree says the engines find it must not change with who runs strata.
pub fn toplevel(dir: &Path) -> Option<PathBuf> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--show-toplevel"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        dubious_ownership(&out.stderr, dir)?;
        let start = dir.canonicalize().ok()?;
        return start
            .ancestors()
            .find(|d| d.join(".git").exists())
            .map(Path::to_path_buf);
    }
    String::from_utf8(out.stdout)
        .ok()
        .map(|s| s.trim_end_matches(['\n', '\r']).to_owned())
        .filter(|s| !s.is_empty())
        .and_then(|s| PathBuf::from(s).canonicalize().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_keeps_folders_regular_blobs_and_links() {
        let mut tree = Vec::new();
        for (mode, name, id) in [
            ("100644", &b"b.yaml"[..], 1u8),
            ("40000", b"folder", 2),
            ("120000", b"link", 3),
            ("160000", b"sub", 4),
            ("100755", b"x y.sh", 5),
            ("100644", b"not-utf8-\xff", 6),
        ] {
            tree.extend_from_slice(mode.as_bytes());
            tree.push(b' ');
            tree.extend_from_slice(name);
            tree.push(0);
            tree.extend_from_slice(&[id; 20]);
        }
        let (folders, blobs) = parse_tree(&tree, 20, "a").unwrap();
        assert_eq!(folders, [("a/folder".to_owned(), "02".repeat(20))]);
        let blobs: Vec<_> = blobs
            .iter()
            .map(|e| (e.path.as_str(), e.oid.as_str(), e.link))
            .collect();
        let (one, three, five) = ("01".repeat(20), "03".repeat(20), "05".repeat(20));
        assert_eq!(
            blobs,
            [
                ("a/b.yaml", one.as_str(), false),
                ("a/link", three.as_str(), true),
                ("a/x y.sh", five.as_str(), false)
            ]
        );
        // Cut short, or with no mode: not a tree.
        assert!(parse_tree(&tree[..tree.len() - 1], 20, "a").is_none());
        assert!(parse_tree(b"nothing", 20, "a").is_none());
    }

    #[test]
    fn filtered_blobs_are_named() {
        let lfs = b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 12345\n";
        assert!(filtered("v.yaml", lfs, "main").is_some_and(|e| e.to_string().contains("Git LFS pointer")));
        assert!(
            filtered("v.yaml", b"\0GITCRYPT\0\x01\x02", "main").is_some_and(|e| e.to_string().contains("git-crypt"))
        );
        assert!(filtered("v.yaml", b"a: 1\n", "main").is_none());
        let refused = b"fatal: detected dubious ownership in repository at '/srv/repo'\nTo add an exception...";
        assert_eq!(
            dubious_ownership(refused, Path::new("/x")),
            Some(GitError::DubiousOwnership("/srv/repo".into()))
        );
    }

    #[test]
    fn blob_ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin`, and with
        // `--object-format=sha256`.
        assert_eq!(
            blob_id(b"hello\n", 40).as_deref(),
            Some("ce013625030ba8dba906f756967f9e9ca394464a")
        );
        assert_eq!(
            blob_id(b"hello\n", 64).as_deref(),
            Some("2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4")
        );
        assert_eq!(
            blob_id(b"", 40).as_deref(),
            Some("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
        );
        assert_eq!(blob_id(b"x", 12), None);
    }

    #[test]
    fn a_revision_leaves_the_rendered_tree_unlisted_and_marks_what_the_work_tree_holds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let run = |args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(root)
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        };
        run(&["init", "-q"]);
        for (path, text) in [
            ("same.yaml", "a: 1\n"),
            ("edited.yaml", "a: 1\n"),
            ("odd*name/x.yaml", "b: 2\n"),
            ("rendered/env/x.yaml", "c: 3\n"),
        ] {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        run(&["add", "-A"]);
        run(&["commit", "-qm", "base"]);
        std::fs::write(root.join("edited.yaml"), "a: 2\n").unwrap();

        let rev = list_revision(root, "HEAD", &["rendered"])
            .unwrap()
            .read(root, "2026-01-01", &|_| None)
            .unwrap();
        use crate::world::World;
        assert_eq!(rev.world.read("edited.yaml").unwrap(), b"a: 1\n");
        assert_eq!(rev.world.read("odd*name/x.yaml").unwrap(), b"b: 2\n");
        assert!(!rev.world.is_file("rendered/env/x.yaml") && !rev.world.dir_exists("rendered"));
        let marked: Vec<&str> = rev.as_in_work_tree.iter().map(String::as_str).collect();
        assert_eq!(marked, ["odd*name/x.yaml", "same.yaml"]);
    }

    /// A repository in a temporary folder, with `files` committed.
    fn committed(object_format: &str, files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        };
        run(&["init", "-q", &format!("--object-format={object_format}")]);
        for (path, bytes) in files {
            let file = dir.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, bytes).unwrap();
        }
        run(&["add", "-A"]);
        run(&["commit", "-qm", "base"]);
        dir
    }

    #[test]
    fn a_blob_over_the_limit_is_skipped_and_a_nested_output_left_out() {
        let big = vec![b'#'; MAX_INPUT_BYTES + 1];
        let dir = committed(
            "sha1",
            &[
                ("root/big.yaml", &big),
                ("root/a/b.yaml", b"a: 1\n"),
                ("root/out/rendered/x.yaml", b"x: 1\n"),
                ("root/out/kept.yaml", b"k: 1\n"),
                ("beside.yaml", b"b: 1\n"),
            ],
        );
        let root = dir.path().join("root");
        // Changed in the working tree: the base's copy must come from git.
        std::fs::write(root.join("big.yaml"), "small now\n").unwrap();
        std::fs::write(root.join("a/b.yaml"), "a: 2\n").unwrap();
        let rev = list_revision(&root, "HEAD", &["out/rendered"])
            .unwrap()
            .read(&root, "2026-01-01", &|_| None)
            .unwrap();
        use crate::world::World;
        assert_eq!(rev.skipped, ["big.yaml"]);
        assert!(!rev.world.is_file("big.yaml"));
        assert_eq!(rev.world.read("a/b.yaml").unwrap(), b"a: 1\n");
        assert_eq!(rev.world.read("out/kept.yaml").unwrap(), b"k: 1\n");
        assert!(!rev.world.is_file("out/rendered/x.yaml") && !rev.world.is_file("beside.yaml"));
        assert!(rev.as_in_work_tree.contains("out/kept.yaml") && !rev.as_in_work_tree.contains("a/b.yaml"));
    }

    #[test]
    fn a_sha256_repository_is_read() {
        let dir = committed("sha256", &[("a.yaml", b"a: 1\n"), ("f/b.yaml", b"b: 1\n")]);
        std::fs::write(dir.path().join("a.yaml"), "a: 2\n").unwrap();
        let rev = list_revision(dir.path(), "HEAD", &[])
            .unwrap()
            .read(dir.path(), "2026-01-01", &|_| None)
            .unwrap();
        use crate::world::World;
        assert_eq!(rev.commit.len(), 64);
        assert_eq!(rev.world.read("a.yaml").unwrap(), b"a: 1\n");
        assert_eq!(rev.world.read("f/b.yaml").unwrap(), b"b: 1\n");
        assert_eq!(rev.as_in_work_tree.iter().collect::<Vec<_>>(), ["f/b.yaml"]);
    }

    #[test]
    fn the_commit_is_found_by_cat_file_as_rev_parse_finds_it() {
        let dir = committed("sha1", &[("sub/a.yaml", b"a: 1\n"), ("b.yaml", b"b: 1\n")]);
        let head = git_text(dir.path(), &["rev-parse", "HEAD"]).unwrap();
        let root = dir.path().join("sub");
        for rev in ["HEAD", head.as_str(), &head[..12], "HEAD^{commit}", "@"] {
            let listing = list_revision(&root, rev, &[]).unwrap();
            assert_eq!(listing.commit, head, "{rev}");
            let names: Vec<&str> = listing.wanted.iter().map(|e| e.path.as_str()).collect();
            assert_eq!(names, ["a.yaml"], "{rev}");
        }
        for rev in ["", "HEAD~1", "HEAD:b.yaml", "no such", "-h", "a\nb"] {
            assert!(
                list_revision(&root, rev, &[]).is_err_and(|e| matches!(e, GitError::UnknownRevision { .. })),
                "{rev:?}"
            );
        }
        // Outside any repository (unless the temporary folder is in one).
        let plain = tempfile::tempdir().unwrap();
        if git_text(plain.path(), &["rev-parse", "--git-dir"]).is_err() {
            let e = list_revision(plain.path(), "HEAD", &[]);
            assert!(e.is_err_and(|e| matches!(e, GitError::NotARepository(_))));
        }
    }

    #[test]
    fn a_root_that_did_not_exist_then_is_empty() {
        let dir = committed("sha1", &[("a.yaml", b"a: 1\n")]);
        std::fs::create_dir(dir.path().join("later")).unwrap();
        let listing = list_revision(&dir.path().join("later"), "HEAD", &[]).unwrap();
        let rev = listing
            .read(&dir.path().join("later"), "2026-01-01", &|_| None)
            .unwrap();
        assert!(rev.as_in_work_tree.is_empty() && rev.skipped.is_empty());
        assert!(
            list_revision(dir.path(), "no-such-branch", &[])
                .is_err_and(|e| matches!(e, GitError::UnknownRevision { .. }))
        );
    }

    #[test]
    fn unchanged_files_come_from_the_work_tree_and_others_from_git() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("same.yaml"), "hello\n").unwrap();
        std::fs::write(dir.path().join("edited.yaml"), "hellO\n").unwrap();
        let entry = |path: &str, link| TreeEntry {
            oid: "ce013625030ba8dba906f756967f9e9ca394464a".into(),
            path: path.into(),
            link,
        };
        assert_eq!(
            unchanged_in_work_tree(dir.path(), &entry("same.yaml", false), &|_| None),
            Some(b"hello\n".to_vec())
        );
        assert_eq!(
            unchanged_in_work_tree(dir.path(), &entry("edited.yaml", false), &|_| None),
            None
        );
        assert_eq!(
            unchanged_in_work_tree(dir.path(), &entry("gone.yaml", false), &|_| None),
            None
        );
        assert_eq!(
            unchanged_in_work_tree(dir.path(), &entry("same.yaml", true), &|_| None),
            None
        );
        // A text the load read is taken when it is the blob, else the disk is read.
        let known = |text: &'static str| move |_: &str| Some(Arc::from(text));
        assert_eq!(
            unchanged_in_work_tree(dir.path(), &entry("gone.yaml", false), &known("hello\n")),
            Some(b"hello\n".to_vec())
        );
        assert_eq!(
            unchanged_in_work_tree(dir.path(), &entry("same.yaml", false), &known("hellO\n")),
            Some(b"hello\n".to_vec())
        );
        assert_eq!(
            unchanged_in_work_tree(dir.path(), &entry("edited.yaml", false), &known("hellO\n")),
            None
        );
    }
}
