//! Charts inside the repository (`chart: {path: …}`): their files, with
//! `file://` dependencies copied in and remote ones taken from the store as
//! `strata.lock` pins them, prepared for helm in
//! `.strata/cache/local/<digest>/<chart>/`, where `<digest>` is the sha256
//! of exactly those files.
//!
//! Nothing of `.strata/` is trusted: every name that becomes a path is
//! checked before anything is written (a `Chart.yaml` naming its chart
//! `..` writes nothing); a folder is prepared in a fresh temporary folder
//! and renamed into place whole; and a prepared folder found on disk is
//! compared, file by file, with what it must hold before helm is given it,
//! and prepared again if anything differs (a file planted in it does not
//! persist). The folder is bounded like the render cache: past
//! [`MAX_BYTES`], the least recently used prepared charts go.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::{Ready, State, Unavailable, archive, read_tree, spec_digest};
use crate::helm::args::{check_chart_name, check_version};
use crate::world::{World, join};

/// Most bytes the prepared local charts keep.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The folder of prepared local charts, under `.strata/`.
pub fn base(state_dir: &Path) -> PathBuf {
    state_dir.join("cache").join("local")
}

/// A local chart, prepared for helm; `prepared` says whether this call
/// wrote a new folder.
pub(super) fn local(world: &dyn World, state: &State, path: &str) -> Result<(Ready, bool), Unavailable> {
    let files = gather(world, state, path)?;
    let info = archive::from_files(&files, 0).map_err(|e| Unavailable::Broken(format!("{path}: {e}")))?;
    let identity = content_digest(&files);
    let (prepared, wrote) = prepare(&state.dir, &identity, &info.name, &files)
        .map_err(|e| Unavailable::Broken(format!("preparing {path} for helm: {e}")))?;
    Ok((
        Ready {
            path: prepared,
            identity,
            info: Arc::new(info),
        },
        wrote,
    ))
}

/// What a local chart's own files say of it, without the dependencies it
/// could not be given (those bundled in its `charts/` are read).
pub(super) fn own_info(world: &dyn World, path: &str) -> Option<archive::ChartInfo> {
    let files = read_tree(world, path).ok()?;
    archive::from_files(&files, 0).ok()
}

/// The chart's files and its dependencies', by path inside the chart,
/// sorted; every name that becomes a path checked first.
fn gather(world: &dyn World, state: &State, path: &str) -> Result<Vec<(String, Vec<u8>)>, Unavailable> {
    let mut files = read_tree(world, path).map_err(Unavailable::Broken)?;
    if !files.iter().any(|(p, _)| p == "Chart.yaml") {
        return Err(Unavailable::Broken(format!("{path} has no Chart.yaml")));
    }
    let first = archive::from_files(&files, 0).map_err(|e| Unavailable::Broken(format!("{path}: {e}")))?;
    let unsafe_name = |e: String| Unavailable::Unsafe(format!("{path}/Chart.yaml: {e}"));
    check_chart_name(&first.name).map_err(unsafe_name)?;
    for d in &first.dependencies {
        check_chart_name(&d.name).map_err(|e| unsafe_name(format!("dependency {e}")))?;
        if let Some(a) = &d.alias {
            check_chart_name(a).map_err(|e| unsafe_name(format!("alias {e}")))?;
        }
    }
    let own: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
    for d in &first.dependencies {
        if vendored(&own, &d.name) {
            continue;
        }
        if let Some(rel) = d.repository.strip_prefix("file://") {
            let dep_dir = crate::world::normalize(&join(path, rel))
                .map_err(|e| Unavailable::Broken(format!("dependency {}: {e}", d.name)))?;
            for (p, b) in read_tree(world, &dep_dir).map_err(Unavailable::Broken)? {
                files.push((format!("charts/{}/{p}", d.name), b));
            }
        } else if !d.repository.is_empty() {
            let locked = state
                .lock
                .local(path)
                .filter(|l| l.spec == spec_digest(&first.dependencies))
                .and_then(|l| {
                    l.dependencies
                        .iter()
                        .find(|x| x.name == d.name && x.alias == d.alias && x.repository == d.repository)
                })
                .ok_or(Unavailable::DependenciesNotLocked)?;
            check_version(&locked.version).map_err(|e| Unavailable::Unsafe(format!("strata.lock: {e}")))?;
            let bytes = stored_dependency(state, &locked.digest, &locked.name, &locked.version)?;
            let file = format!("charts/{}-{}.tgz", d.name, locked.version);
            if !files.iter().any(|(p, _)| *p == file) {
                files.push((file, bytes));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Whether the chart bundles the dependency `name` under `charts/` already.
pub fn vendored(own: &[String], name: &str) -> bool {
    own.iter().any(|p| {
        p.strip_prefix("charts/")
            .is_some_and(|r| r.starts_with(&format!("{name}-")) || r.starts_with(&format!("{name}/")))
    })
}

/// A dependency's archive from the store: the bytes the lock pins, holding
/// the chart and version the lock names.
fn stored_dependency(state: &State, digest: &str, name: &str, version: &str) -> Result<Vec<u8>, Unavailable> {
    let bytes = super::stored(&state.store, digest)?;
    let info = archive::read_archive(&bytes).map_err(Unavailable::Broken)?;
    super::same_chart(name, version, &info, digest, None)?;
    Ok(bytes)
}

/// The digest of a chart's files: each path, length and content.
fn content_digest(files: &[(String, Vec<u8>)]) -> String {
    let mut h = Sha256::new();
    for (p, b) in files {
        h.update(p.as_bytes());
        h.update([0]);
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    }
    format!("sha256:{}", crate::world::disk::hex(&h.finalize()))
}

/// The prepared folder of a chart whose files digest to `identity`: the
/// one on disk when it holds exactly `files`, else a new one. The name has
/// been checked to be one path segment.
fn prepare(
    state_dir: &Path,
    identity: &str,
    name: &str,
    files: &[(String, Vec<u8>)],
) -> std::io::Result<(PathBuf, bool)> {
    check_chart_name(name).map_err(std::io::Error::other)?;
    let base = base(state_dir);
    let dir = base.join(identity.trim_start_matches("sha256:"));
    let chart_dir = dir.join(name);
    if holds_exactly(&dir, name, files) {
        touch(&dir);
        return Ok((chart_dir, false));
    }
    crate::world::ensure_state_dir(state_dir, Path::new("cache/local"))
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    // Whatever is there is not what it must be: set it aside first.
    discard(&base, &dir)?;
    let tmp = tempfile::Builder::new().prefix(".tmp-").tempdir_in(&base)?;
    for (p, b) in files {
        let rel = crate::world::normalize(p).map_err(|e| std::io::Error::other(e.to_string()))?;
        let to = tmp.path().join(name).join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&to, b)?;
    }
    match std::fs::rename(tmp.path(), &dir) {
        // The folder now lives at `dir`; nothing is left to clean up.
        Ok(()) => {
            let _ = tmp.keep();
        }
        // Another run prepared the same content first.
        Err(_) if holds_exactly(&dir, name, files) => {}
        Err(e) => return Err(e),
    }
    Ok((chart_dir, true))
}

/// Moves a folder out of the way (renamed first, so that no reader sees it
/// half removed) and removes it.
fn discard(base: &Path, dir: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    let aside = tempfile::Builder::new().prefix(".old-").tempdir_in(base)?;
    let to = aside.path().join("x");
    std::fs::rename(dir, &to)?;
    // Dropping `aside` removes it and what was moved into it (a link
    // itself, never what it points at).
    Ok(())
}

/// Whether `dir` holds the folder `name` with exactly `files`: no file
/// more, none less, every byte the same, nothing but plain files and
/// folders.
fn holds_exactly(dir: &Path, name: &str, files: &[(String, Vec<u8>)]) -> bool {
    let Ok(top) = std::fs::read_dir(dir) else {
        return false;
    };
    let names: Vec<_> = top.filter_map(Result::ok).map(|e| e.file_name()).collect();
    if names.len() != 1 || names[0] != name {
        return false;
    }
    let mut found = 0;
    // Entries looked at: a planted tree of empty folders stops here too.
    let mut seen = 0;
    let mut stack = vec![(dir.join(name), String::new())];
    while let Some((here, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&here) else {
            return false;
        };
        for e in entries {
            seen += 1;
            if seen > 2 * files.len() + 1000 {
                return false;
            }
            let Ok(e) = e else { return false };
            let Ok(kind) = e.file_type() else { return false };
            let Some(n) = e.file_name().to_str().map(str::to_owned) else {
                return false;
            };
            let r = if rel.is_empty() { n } else { format!("{rel}/{n}") };
            if kind.is_dir() {
                stack.push((e.path(), r));
            } else if kind.is_file() {
                let Some((_, want)) = files.iter().find(|(p, _)| *p == r) else {
                    return false;
                };
                let same_size = e.metadata().is_ok_and(|m| m.len() == want.len() as u64);
                if !same_size || std::fs::read(e.path()).ok().as_ref() != Some(want) {
                    return false;
                }
                found += 1;
            } else {
                return false;
            }
        }
    }
    found == files.len()
}

/// Marks a prepared folder used, for the least-recently-used bound.
fn touch(dir: &Path) {
    if let Ok(f) = std::fs::File::open(dir) {
        let _ = f.set_modified(now());
    }
}

/// Now, for the modification time of a used folder. Like the render
/// cache's, this bookkeeping decides what is evicted, never what is
/// rendered.
#[allow(clippy::disallowed_methods)]
fn now() -> std::time::SystemTime {
    std::time::SystemTime::now()
}

/// Keeps the prepared charts under `max` bytes: the least recently used
/// folders go, down to three quarters of it, except those of `keep` (the
/// digests this run uses).
pub fn bound(state_dir: &Path, max: u64, keep: &[String]) {
    let base = base(state_dir);
    let Ok(entries) = std::fs::read_dir(&base) else { return };
    let mut folders: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(m) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !m.is_dir() || name.starts_with('.') || keep.iter().any(|k| k.trim_start_matches("sha256:") == name) {
            continue;
        }
        let size: u64 = walkdir::WalkDir::new(e.path())
            .into_iter()
            .filter_map(Result::ok)
            .filter_map(|f| f.metadata().ok())
            .filter(std::fs::Metadata::is_file)
            .map(|m| m.len())
            .sum();
        folders.push((m.modified().unwrap_or(std::time::UNIX_EPOCH), size, e.path()));
    }
    let kept: u64 = keep
        .iter()
        .map(|k| base.join(k.trim_start_matches("sha256:")))
        .flat_map(|d| walkdir::WalkDir::new(d).into_iter().filter_map(Result::ok))
        .filter_map(|f| f.metadata().ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .sum();
    let mut total = kept + folders.iter().map(|f| f.1).sum::<u64>();
    if total <= max {
        return;
    }
    folders.sort();
    for (_, size, path) in folders {
        if total <= max / 4 * 3 {
            break;
        }
        if discard(&base, &path).is_ok() {
            total = total.saturating_sub(size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<(String, Vec<u8>)> {
        vec![
            (
                "Chart.yaml".into(),
                b"apiVersion: v2\nname: app\nversion: 1.0.0\n".to_vec(),
            ),
            ("templates/cm.yaml".into(), b"kind: ConfigMap\n".to_vec()),
        ]
    }

    #[test]
    fn a_prepared_folder_is_checked_and_replaced_when_it_differs() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join(".strata");
        let id = content_digest(&files());
        let (dir, wrote) = prepare(&state, &id, "app", &files()).unwrap();
        assert!(wrote);
        assert_eq!(
            std::fs::read(dir.join("templates/cm.yaml")).unwrap(),
            b"kind: ConfigMap\n"
        );
        let (_, wrote) = prepare(&state, &id, "app", &files()).unwrap();
        assert!(!wrote, "a sound folder is used as it is");
        // A planted template, a changed one, a planted sibling: each is
        // prepared again.
        std::fs::write(dir.join("templates/planted.yaml"), "kind: Secret\n").unwrap();
        let (dir, wrote) = prepare(&state, &id, "app", &files()).unwrap();
        assert!(wrote && !dir.join("templates/planted.yaml").exists());
        std::fs::write(dir.join("templates/cm.yaml"), "kind: Secret\n").unwrap();
        let (dir, wrote) = prepare(&state, &id, "app", &files()).unwrap();
        assert!(wrote);
        assert_eq!(
            std::fs::read(dir.join("templates/cm.yaml")).unwrap(),
            b"kind: ConfigMap\n"
        );
        std::fs::create_dir(dir.parent().unwrap().join("other")).unwrap();
        assert!(prepare(&state, &id, "app", &files()).unwrap().1);
        // Nothing but the prepared folder is left in the base.
        let left: Vec<_> = std::fs::read_dir(base(&state))
            .unwrap()
            .filter_map(Result::ok)
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[test]
    fn a_name_that_is_not_one_path_segment_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join(".strata");
        for name in ["..", ".", "a/b", "-x"] {
            assert!(prepare(&state, "sha256:00", name, &files()).is_err(), "{name}");
        }
        assert!(!state.exists());
    }

    #[test]
    fn the_bound_removes_the_least_recently_used_but_not_those_in_use() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join(".strata");
        let mut ids = Vec::new();
        for i in 0..4u8 {
            let mut f = files();
            f.push(("big".into(), vec![i; 1000]));
            let id = content_digest(&f);
            prepare(&state, &id, "app", &f).unwrap();
            let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000 + u64::from(i));
            std::fs::File::open(base(&state).join(id.trim_start_matches("sha256:")))
                .unwrap()
                .set_modified(when)
                .unwrap();
            ids.push(id);
        }
        // The oldest is in use: it stays, the next oldest go, down to
        // three quarters of the bound.
        bound(&state, 3500, &ids[..1]);
        let left = |id: &String| base(&state).join(id.trim_start_matches("sha256:")).exists();
        assert!(left(&ids[0]));
        assert!(!left(&ids[1]));
        assert!(left(&ids[3]));
    }
}
