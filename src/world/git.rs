//! A past revision of the repository as a [`MemWorld`], read with the `git`
//! command (`ls-tree` for the listing, one `cat-file --batch` for every
//! blob), without touching the working tree or the index. Works in a shallow
//! clone as long as the revision itself has been fetched.

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

/// One blob of `ls-tree -r -l -z`: a regular file, or a symbolic link
/// (whose blob is its target).
struct TreeEntry {
    oid: String,
    size: usize,
    path: String,
    link: bool,
}

fn parse_ls_tree(out: &[u8]) -> Vec<TreeEntry> {
    let mut entries = Vec::new();
    for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let Some(tab) = record.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let (meta, path) = (&record[..tab], &record[tab + 1..]);
        let meta = String::from_utf8_lossy(meta);
        let mut fields = meta.split_whitespace();
        let (Some(mode), Some(kind), Some(oid), Some(size)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        // Regular files and symbolic links; submodules are not inputs.
        let link = mode == "120000";
        if kind != "blob" || !(mode == "100644" || mode == "100755" || link) {
            continue;
        }
        // A path that is not UTF-8 cannot be named by an input either.
        let Ok(path) = String::from_utf8(path.to_vec()) else {
            continue;
        };
        entries.push(TreeEntry {
            oid: oid.to_owned(),
            size: size.parse().unwrap_or(usize::MAX),
            path,
            link,
        });
    }
    entries
}

/// A revision's commit, and the blobs below the strata root but for the
/// folders left out: what [`Listing::read`] reads into memory.
pub struct Listing {
    rev: String,
    commit: String,
    wanted: Vec<TreeEntry>,
    skipped: Vec<String>,
}

/// Lists the tree of `rev` below `root`, the strata root (which may be a
/// subfolder of the git work tree), but for the folders in `leave_out`
/// (root-relative: the rendered tree, which no compile reads), without
/// reading a blob: the listing is git's work, the reading strata's, and a
/// caller can read the working tree in between.
pub fn list_revision(root: &Path, rev: &str, leave_out: &[&str]) -> Result<Listing, GitError> {
    let (commit, prefix) = resolve(root, rev)?;

    // The subtree of the strata root at that commit; a root that did not
    // exist then is an empty tree.
    let tree = format!("{commit}:{prefix}");
    let entries = list_tree(root, &tree, leave_out)?;

    let mut skipped = Vec::new();
    let wanted: Vec<TreeEntry> = entries
        .into_iter()
        .filter(|e| !leave_out.iter().any(|dir| super::below(&e.path, dir)))
        .filter(|e| {
            if e.size > MAX_INPUT_BYTES {
                skipped.push(e.path.clone());
                false
            } else {
                true
            }
        })
        .collect();
    Ok(Listing {
        rev: rev.to_owned(),
        commit,
        wanted,
        skipped,
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
            skipped,
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
        let mut fetched = cat_blobs(root, &asked)?.into_iter();
        let mut world = MemWorld::new(today);
        world.set_root(root);
        let mut as_in_work_tree = BTreeSet::new();
        for (entry, kept) in wanted.iter().zip(kept) {
            if kept.is_some() {
                as_in_work_tree.insert(entry.path.clone());
            }
            let Some(bytes) = kept.or_else(|| fetched.next()) else {
                break;
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

/// Every blob of `tree`, recursively, but for the top-level folders in
/// `leave_out`: those are not even listed. Listing a blob's size (`-l`)
/// makes git read its header, and the rendered tree is most of a
/// platform's blobs.
fn list_tree(root: &Path, tree: &str, leave_out: &[&str]) -> Result<Vec<TreeEntry>, GitError> {
    let top = git(root, &["ls-tree", "-z", "--name-only", "--full-tree", tree])?;
    if !top.status.success() {
        // A root that did not exist then is an empty tree.
        return Ok(Vec::new());
    }
    let names: Vec<String> = top
        .stdout
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .filter_map(|n| String::from_utf8(n.to_vec()).ok())
        .filter(|n| !leave_out.contains(&n.as_str()))
        .collect();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    // Literal pathspecs: a name with `*` or `:` is a name, not a pattern.
    let mut args = vec![
        "--literal-pathspecs",
        "ls-tree",
        "-r",
        "-l",
        "-z",
        "--full-tree",
        tree,
        "--",
    ];
    args.extend(names.iter().map(String::as_str));
    let listing = git(root, &args)?;
    if !listing.status.success() {
        return Err(GitError::Failed {
            command: "git ls-tree -r -l".into(),
            stderr: String::from_utf8_lossy(&listing.stderr).into_owned(),
        });
    }
    Ok(parse_ls_tree(&listing.stdout))
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
        && text.len() == entry.size
        && blob_id(text.as_bytes(), entry.oid.len()).is_some_and(|id| id == entry.oid)
    {
        return Some(text.as_bytes().to_vec());
    }
    let bytes = crate::emit::disk::read_regular(&root.join(&entry.path), entry.size as u64).ok()?;
    (blob_id(&bytes, entry.oid.len())? == entry.oid).then_some(bytes)
}

/// The id git gives a blob of these bytes: SHA-1 (40 hex digits) or, in a
/// SHA-256 repository, SHA-256 (64), of a `blob <size>` header and them.
fn blob_id(bytes: &[u8], hex_len: usize) -> Option<String> {
    use crate::charts::store::hex;
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
    if bytes.starts_with(b"version https://git-lfs.github.com/spec/") {
        return Some(super::WorldError::Filtered {
            message: format!(
                "`{path}` is a Git LFS pointer in {rev}, not the file: strata reads a revision as git stores it and runs no LFS filter"
            ),
            help: "keep strata's inputs out of Git LFS: `git lfs untrack` their pattern in .gitattributes and commit the files themselves".into(),
        });
    }
    if bytes.starts_with(b"\0GITCRYPT\0") {
        return Some(super::WorldError::Filtered {
            message: format!(
                "`{path}` is encrypted by git-crypt in {rev}: strata reads a revision as git stores it and cannot decrypt it"
            ),
            help: "keep strata's inputs out of git-crypt's patterns in .gitattributes; strata needs no secrets \
                   (sensitive contract outputs are dropped), so deliver secrets through SOPS or External Secrets"
                .into(),
        });
    }
    None
}

/// The contents of every blob, in order, from one `git cat-file --batch`.
fn cat_blobs(root: &Path, entries: &[&TreeEntry]) -> Result<Vec<Vec<u8>>, GitError> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| GitError::NoGit(e.to_string()))?;
    let mut stdin = child.stdin.take().ok_or_else(|| GitError::NoGit("no stdin".into()))?;
    let request: String = entries.iter().map(|e| format!("{}\n", e.oid)).collect();
    // Write from another thread: git answers while it reads, and a full
    // pipe in both directions would deadlock.
    let writer = std::thread::spawn(move || {
        let r = stdin.write_all(request.as_bytes());
        drop(stdin);
        r
    });
    let stdout = child.stdout.take().ok_or_else(|| GitError::NoGit("no stdout".into()))?;
    let mut reader = BufReader::new(stdout);
    let mut blobs = Vec::with_capacity(entries.len());
    let failed = |what: String| GitError::Failed {
        command: "git cat-file --batch".into(),
        stderr: what,
    };
    for entry in entries {
        let mut header = String::new();
        reader
            .read_line(&mut header)
            .map_err(|e| failed(format!("reading {}: {e}", entry.path)))?;
        let mut fields = header.split_whitespace();
        let (Some(_oid), Some(kind), Some(size)) = (fields.next(), fields.next(), fields.next()) else {
            return Err(failed(format!(
                "object of {} is missing: {}",
                entry.path,
                header.trim()
            )));
        };
        let size: usize = size
            .parse()
            .map_err(|_| failed(format!("bad header for {}: {}", entry.path, header.trim())))?;
        if kind != "blob" {
            return Err(failed(format!("{} is a {kind}, not a blob", entry.path)));
        }
        let mut bytes = vec![0; size];
        reader
            .read_exact(&mut bytes)
            .map_err(|e| failed(format!("reading {}: {e}", entry.path)))?;
        let mut newline = [0u8; 1];
        reader
            .read_exact(&mut newline)
            .map_err(|e| failed(format!("reading {}: {e}", entry.path)))?;
        blobs.push(bytes);
    }
    let _ = writer.join();
    let status = child.wait().map_err(|e| failed(e.to_string()))?;
    if !status.success() {
        let mut err = String::new();
        if let Some(mut s) = child.stderr.take() {
            let _ = s.read_to_string(&mut err);
        }
        return Err(failed(err));
    }
    Ok(blobs)
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
    fn ls_tree_keeps_regular_blobs() {
        let out = b"100644 blob aaaa      12\ta/b.yaml\x00120000 blob bbbb       3\tlink\x00160000 commit cccc       -\tsub\x00100755 blob dddd 7\tx y.sh\x00";
        let e = parse_ls_tree(out);
        let paths: Vec<_> = e.iter().map(|e| (e.path.as_str(), e.size, e.link)).collect();
        assert_eq!(
            paths,
            vec![("a/b.yaml", 12, false), ("link", 3, true), ("x y.sh", 7, false)]
        );
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

    #[test]
    fn unchanged_files_come_from_the_work_tree_and_others_from_git() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("same.yaml"), "hello\n").unwrap();
        std::fs::write(dir.path().join("edited.yaml"), "hellO\n").unwrap();
        let entry = |path: &str, link| TreeEntry {
            oid: "ce013625030ba8dba906f756967f9e9ca394464a".into(),
            size: 6,
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
