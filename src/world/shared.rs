//! Schema locations: shared, read-only data (a Kubernetes schema package, a
//! CRD catalog, what `strata schemas pull` fetched into `.strata/schemas/`)
//! that need not live in the repository, and need not be committed. They
//! are read where they lie, by one rule for every world: a path may be
//! absolute or climb out of the root, and a relative one is taken from the
//! repository's root on disk. A revision read from git reads a schema file
//! it holds itself, and any other where the working tree does, so that both
//! sides of a diff validate against the same schemas.

use std::path::Path;

use super::{MAX_SCHEMA_BYTES, WorldError};

/// The text of the schema file at `path`, from `root`.
pub fn read_schema_at(root: &Path, path: &str) -> Result<String, WorldError> {
    let real = root.join(path);
    let meta = std::fs::metadata(&real).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => WorldError::NotFound,
        _ => WorldError::Io(e.to_string()),
    })?;
    if !meta.is_file() {
        return Err(WorldError::Io(format!("`{path}` is not a regular file")));
    }
    if meta.len() > MAX_SCHEMA_BYTES {
        return Err(WorldError::Io(format!(
            "schema file is {} bytes, over the limit of {MAX_SCHEMA_BYTES} bytes",
            meta.len()
        )));
    }
    std::fs::read_to_string(&real).map_err(|e| WorldError::Io(format!("{}: {e}", real.display())))
}

/// Whether the schema folder `path` exists, from `root`.
pub fn schema_dir_at(root: &Path, path: &str) -> bool {
    root.join(path).is_dir()
}
