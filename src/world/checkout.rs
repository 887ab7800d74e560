//! What git says about a file of the working tree: whether it ignores it
//! (it is never committed), which filter `.gitattributes` runs on it, and
//! whether the bytes are what a filter stores rather than the file (a Git
//! LFS pointer, a git-crypt blob) — in a revision, as git stores it; in the
//! working tree, when the filter's smudge step did not run.

use std::path::Path;
use std::process::{Command, Stdio};

use super::WorldError;

/// What a filter stores in place of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    LfsPointer,
    GitCrypt,
}

/// Whether `bytes` are what a filter stores in place of a file.
pub fn stored_form(bytes: &[u8]) -> Option<Stored> {
    if bytes.starts_with(b"version https://git-lfs.github.com/spec/") {
        Some(Stored::LfsPointer)
    } else if bytes.starts_with(b"\0GITCRYPT\0") {
        Some(Stored::GitCrypt)
    } else {
        None
    }
}

/// The error for a working-tree file whose bytes are what a filter
/// stores: its smudge step did not run in this checkout.
pub fn not_smudged(path: &str, bytes: &[u8]) -> Option<WorldError> {
    Some(match stored_form(bytes)? {
        Stored::LfsPointer => WorldError::Filtered {
            message: format!(
                "`{path}` is a Git LFS pointer, not the file: Git LFS did not fetch it into this checkout"
            ),
            help: "run `git lfs pull` (in CI, check out with LFS), or keep strata's inputs out of Git LFS: \
                   `git lfs untrack` their pattern in .gitattributes and commit the files themselves"
                .into(),
        },
        Stored::GitCrypt => WorldError::Filtered {
            message: format!("`{path}` is encrypted by git-crypt: this checkout is locked"),
            help: "run `git-crypt unlock`, or keep strata's inputs out of git-crypt's patterns in .gitattributes; \
                   strata needs no secrets (write the contract with `strata contract import`)"
                .into(),
        },
    })
}

fn git(root: &Path, args: &[&str]) -> Option<std::process::Output> {
    Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()
}

/// Whether git ignores the root-relative `path` of the repository at
/// `root`: a file it ignores is never committed. Not in a repository, or
/// without git, nothing is ignored.
pub fn ignored(root: &Path, path: &str) -> bool {
    git(root, &["check-ignore", "-q", "--", path]).is_some_and(|o| o.status.code() == Some(0))
}

/// The filter `.gitattributes` runs on `path` (`lfs`, `git-crypt`, a
/// repository's own), if any.
pub fn filter(root: &Path, path: &str) -> Option<String> {
    let out = git(root, &["check-attr", "filter", "--", path])?;
    if !out.status.success() {
        return None;
    }
    // `<path>: filter: <value>`; `unspecified` and `unset` name none.
    let text = String::from_utf8_lossy(&out.stdout);
    let value = text.trim_end().rsplit(": ").next()?.to_owned();
    (!matches!(value.as_str(), "unspecified" | "unset" | "set" | "")).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_forms_are_told_from_files() {
        let lfs = b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 12\n";
        assert_eq!(stored_form(lfs), Some(Stored::LfsPointer));
        assert_eq!(stored_form(b"\0GITCRYPT\0\x01"), Some(Stored::GitCrypt));
        assert_eq!(stored_form(b"version: 1\n"), None);
        let e = not_smudged("contracts/c.json", lfs).unwrap().to_string();
        assert!(e.contains("contracts/c.json") && e.contains("Git LFS pointer"), "{e}");
    }

    #[test]
    fn git_names_ignored_files_and_filters() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let run = |args: &[&str]| {
            let ok = Command::new("git").arg("-C").arg(root).args(args).output().unwrap();
            assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
        };
        run(&["init", "-q"]);
        std::fs::write(root.join(".gitignore"), "contracts/local.json\n").unwrap();
        std::fs::write(root.join(".gitattributes"), "contracts/*.json filter=vault\n").unwrap();
        assert!(ignored(root, "contracts/local.json"));
        assert!(!ignored(root, "contracts/staging.json"));
        assert_eq!(filter(root, "contracts/staging.json").as_deref(), Some("vault"));
        assert_eq!(filter(root, "values.yaml"), None);
        // Outside a repository nothing is ignored and nothing filtered.
        let bare = tempfile::tempdir().unwrap();
        assert!(!ignored(bare.path(), "x.json"));
        assert_eq!(filter(bare.path(), "x.json"), None);
    }
}
