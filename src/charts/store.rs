//! The content-addressed chart store, `.strata/charts/`: every archive is
//! kept under the sha256 of its bytes, written the way the tree is (a temp
//! file in the target folder, then a rename), so concurrent runs and crashes
//! never leave a half-written archive under a digest.

use std::path::{Path, PathBuf};

use crate::world::disk::{digest, write_atomic};

/// The store folder.
#[derive(Clone, Debug)]
pub struct Store {
    pub dir: PathBuf,
}

/// What is wrong with a stored archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    Missing,
    /// The bytes on disk hash to another digest.
    Mismatch {
        found: String,
    },
    Io(String),
}

/// Largest chart archive strata reads.
pub const MAX_ARCHIVE: u64 = 64 * 1024 * 1024;

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    /// Where the archive with `digest` lives.
    pub fn path(&self, digest: &str) -> PathBuf {
        let name = digest.replace(':', "-");
        // A digest from a hostile lock file must not name a path elsewhere.
        let safe: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        self.dir.join(format!("{safe}.tgz"))
    }

    /// Reads the archive with `digest`, checking its bytes hash to it.
    pub fn read(&self, digest: &str) -> Result<Vec<u8>, StoreError> {
        let path = self.path(digest);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(StoreError::Missing),
            Err(e) => return Err(StoreError::Io(format!("{}: {e}", path.display()))),
        };
        if !meta.is_file() {
            return Err(StoreError::Io(format!("{} is not a regular file", path.display())));
        }
        if meta.len() > MAX_ARCHIVE {
            return Err(StoreError::Io(format!(
                "{} is {} bytes, over the limit of {MAX_ARCHIVE}",
                path.display(),
                meta.len()
            )));
        }
        let bytes = std::fs::read(&path).map_err(|e| StoreError::Io(format!("{}: {e}", path.display())))?;
        let found = crate::world::disk::digest(&bytes);
        if found != digest {
            return Err(StoreError::Mismatch { found });
        }
        Ok(bytes)
    }

    /// Adds an archive; returns its digest.
    pub fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let d = digest(bytes);
        match (self.dir.parent(), self.dir.file_name()) {
            (Some(state), Some(name)) if state.file_name().is_some_and(|n| n == super::STATE_DIR) => {
                crate::world::ensure_state_dir(state, Path::new(name)).map(|_| ())
            }
            _ => crate::world::real_dir(&self.dir),
        }
        .map_err(|e| std::io::Error::other(e.to_string()))?;
        let path = self.path(&d);
        if std::fs::read(&path).is_ok_and(|b| b == bytes) {
            return Ok(d);
        }
        write_atomic(&path, bytes)?;
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_round_trip_and_tamper() {
        let tmp = tempfile::tempdir().unwrap();
        let s = Store::new(tmp.path());
        let d = s.put(b"chart").unwrap();
        assert_eq!(s.read(&d).unwrap(), b"chart");
        std::fs::write(s.path(&d), b"other").unwrap();
        assert!(matches!(s.read(&d), Err(StoreError::Mismatch { .. })));
        assert_eq!(s.read("sha256:00"), Err(StoreError::Missing));
        assert!(s.path("sha256:../../etc/passwd").starts_with(tmp.path()));
    }
}
