//! The render cache, `.strata/cache/inflate/`: helm's output for one release,
//! keyed by a digest of everything that decides it (the helm binary, the
//! chart's bytes, the values, release, namespace, Kubernetes and API
//! versions). A warm run starts no helm at all; a changed values layer of one
//! component in one environment re-renders exactly that release.
//!
//! Entries are written like the tree (a temp file, then a rename), so
//! concurrent runs share the cache safely; each carries its own key and the
//! digest of its body, so a corrupt or truncated entry is ignored and
//! replaced, and one copied under another key's name is never read for it.
//! The cache is bounded: past [`MAX_BYTES`] the least recently used
//! entries go.
//!
//! Trust: an entry is helm's output, taken as it is. Whoever can write
//! `.strata/cache/inflate/` can therefore choose what strata judges for a
//! release (a forged entry needs only the key, which the inputs give), as
//! whoever can write the working tree can. A cache restored in CI from a
//! run of less trusted code is such a writer: `--no-cache` renders every
//! release with helm and neither reads nor writes the cache.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use sha2::{Digest, Sha256};

use crate::world::disk::{hex, write_atomic};

/// Most bytes the cache keeps.
pub const MAX_BYTES: u64 = 512 * 1024 * 1024;

const MAGIC: &str = "strata-inflate-cache 1";

/// One cached render.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// helm's standard output.
    pub output: String,
    /// Objects that differed between two renders of the same input.
    pub unstable: Vec<String>,
}

pub struct Cache {
    dir: PathBuf,
    wrote: AtomicBool,
    /// Off with `--no-cache`: nothing is read or written.
    reuse: bool,
}

/// Builds a cache key from its parts, each length-prefixed so that no two
/// different inputs give the same bytes.
#[derive(Default)]
pub struct Key(Sha256);

impl Key {
    pub fn new() -> Key {
        let mut k = Key(Sha256::new());
        k.part(MAGIC.as_bytes());
        k
    }
    pub fn part(&mut self, bytes: &[u8]) -> &mut Key {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }
    pub fn finish(self) -> String {
        hex(&self.0.finalize())
    }
}

impl Cache {
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            dir: dir.into(),
            wrote: AtomicBool::new(false),
            reuse: true,
        }
    }

    /// A cache that is used (`true`), or one that reads and writes nothing.
    pub fn reused(mut self, reuse: bool) -> Cache {
        self.reuse = reuse;
        self
    }

    fn path(&self, key: &str) -> PathBuf {
        let k: String = key.chars().filter(char::is_ascii_hexdigit).collect();
        let fan = k.get(..2).unwrap_or("00");
        self.dir.join(fan).join(format!("{k}.cache"))
    }

    /// The entry for `key`, if there is a sound one.
    pub fn get(&self, key: &str) -> Option<Entry> {
        if !self.reuse {
            return None;
        }
        let path = self.path(key);
        // Only a regular file: a pipe planted here would hang the read.
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > (crate::helm::MAX_OUTPUT as u64) * 2 {
            return None;
        }
        let bytes = std::fs::read(&path).ok()?;
        let entry = decode(key, &bytes)?;
        // Mark it used, for the least-recently-used bound.
        if let Ok(f) = std::fs::File::options().append(true).open(&path) {
            let _ = f.set_modified(std::time::SystemTime::UNIX_EPOCH + since_epoch_now());
        }
        Some(entry)
    }

    pub fn put(&self, key: &str, entry: &Entry) {
        if !self.reuse {
            return;
        }
        let path = self.path(key);
        if write_atomic(&path, &encode(key, entry)).is_ok() {
            self.wrote.store(true, Ordering::Relaxed);
        }
    }

    /// Keeps the cache under [`MAX_BYTES`] after a run that added to it.
    pub fn bound(&self) {
        if self.wrote.load(Ordering::Relaxed) {
            prune(&self.dir, MAX_BYTES);
        }
    }
}

/// Now, for the modification time of a used entry. The cache's own
/// bookkeeping is the only place strata reads the clock outside `World`: it
/// decides what is evicted, never what is rendered.
#[allow(clippy::disallowed_methods)]
fn since_epoch_now() -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

fn encode(key: &str, e: &Entry) -> Vec<u8> {
    let meta = serde_json::json!({"unstable": e.unstable}).to_string();
    let body = format!("{meta}\n{}", e.output);
    let sum = hex(&Sha256::digest(body.as_bytes()));
    format!("{MAGIC} {key} {} {sum}\n{body}", body.len()).into_bytes()
}

fn decode(key: &str, bytes: &[u8]) -> Option<Entry> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (header, body) = text.split_once('\n')?;
    let mut parts = header.rsplitn(4, ' ');
    let sum = parts.next()?;
    let len: usize = parts.next()?.parse().ok()?;
    let k = parts.next()?;
    if parts.next()? != MAGIC || k != key || body.len() != len || hex(&Sha256::digest(body.as_bytes())) != sum {
        return None;
    }
    let (meta, output) = body.split_once('\n')?;
    let meta: serde_json::Value = serde_json::from_str(meta).ok()?;
    let unstable = meta["unstable"]
        .as_array()?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    Some(Entry {
        output: output.to_owned(),
        unstable,
    })
}

/// Removes the least recently used entries until the cache holds at most
/// three quarters of `max` bytes. Entries another run removes meanwhile are
/// skipped.
fn prune(dir: &Path, max: u64) {
    let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
    let Ok(fans) = std::fs::read_dir(dir) else { return };
    for fan in fans.filter_map(Result::ok) {
        let Ok(files) = std::fs::read_dir(fan.path()) else {
            continue;
        };
        for f in files.filter_map(Result::ok) {
            if let Ok(m) = f.metadata()
                && m.is_file()
            {
                entries.push((m.modified().unwrap_or(std::time::UNIX_EPOCH), m.len(), f.path()));
            }
        }
    }
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    if total <= max {
        return;
    }
    entries.sort();
    for (_, len, path) in entries {
        if total <= max / 4 * 3 {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_corruption_is_a_miss() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        let mut k = Key::new();
        k.part(b"a").part(b"b");
        let key = k.finish();
        let e = Entry {
            output: "---\nkind: X\n".into(),
            unstable: vec!["Secret/ns/x".into()],
        };
        assert_eq!(cache.get(&key), None);
        cache.put(&key, &e);
        assert_eq!(cache.get(&key), Some(e));
        let path = cache.path(&key);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 2;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(cache.get(&key), None);
        std::fs::write(&path, b"").unwrap();
        assert_eq!(cache.get(&key), None);
    }

    #[test]
    fn an_entry_is_bound_to_its_key_and_no_cache_reads_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        let key = |b: &[u8]| {
            let mut k = Key::new();
            k.part(b);
            k.finish()
        };
        let (a, b) = (key(b"a"), key(b"b"));
        let e = Entry {
            output: "kind: A\n".into(),
            unstable: vec![],
        };
        cache.put(&a, &e);
        // The entry of `a`, copied to where `b`'s would be, is not `b`'s.
        std::fs::create_dir_all(cache.path(&b).parent().unwrap()).unwrap();
        std::fs::copy(cache.path(&a), cache.path(&b)).unwrap();
        assert_eq!(cache.get(&b), None);
        assert_eq!(cache.get(&a), Some(e.clone()));
        let off = Cache::new(tmp.path()).reused(false);
        assert_eq!(off.get(&a), None);
        off.put(&b, &e);
        assert_eq!(cache.get(&b), None);
    }

    #[test]
    fn keys_separate_their_parts() {
        let mut a = Key::new();
        a.part(b"ab").part(b"c");
        let mut b = Key::new();
        b.part(b"a").part(b"bc");
        assert_ne!(a.finish(), b.finish());
    }

    #[test]
    fn prune_keeps_the_newest() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        for i in 0..8u8 {
            let mut k = Key::new();
            k.part(&[i]);
            cache.put(
                &k.finish(),
                &Entry {
                    output: "x".repeat(1000),
                    unstable: vec![],
                },
            );
        }
        prune(tmp.path(), 4000);
        let left: usize = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|f| std::fs::read_dir(f.unwrap().path()).unwrap().count())
            .sum();
        assert!(left <= 3, "{left}");
    }
}
