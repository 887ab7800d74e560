//! Stage 6, emit: the rendered tree on disk. strata owns its output folder:
//! it records what it wrote (with a hash of each file) in
//! `.strata-manifest.json`, replaces the whole folder in one atomic step (a
//! crash or an error leaves the previous tree whole), removes only files it
//! wrote itself, and refuses to overwrite a file someone edited by hand
//! unless told to.

pub mod layout;
mod write;

pub use layout::{Files, kustomization, layout, unit};
pub use write::{Stale, StaleKind, WriteError, WriteOutcome, check, write};

/// The file inside the output folder that records what strata wrote.
pub const MANIFEST: &str = ".strata-manifest.json";
