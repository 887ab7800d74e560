//! Stage 6, emit: the rendered tree on disk. strata owns its output folder:
//! it records what it wrote (with a hash of each file) in
//! `.strata-manifest.json`, replaces the whole folder in one atomic step (a
//! crash or an error leaves the previous tree whole), removes only files it
//! wrote itself, and refuses to overwrite a file someone edited by hand
//! unless told to. It writes nothing outside the output folder but its lock
//! and copies in the repository's `.strata/`, and follows no links there.

mod check;
pub mod layout;
mod manifest;
mod place;
mod recorded;
mod write;

pub use check::{Checker, Stale, StaleKind, check};
pub use layout::{Files, kustomization, layout, unit};
pub use place::{Placement, STATE_DIR, place};
pub use recorded::Recorded;
pub use write::{WriteError, WriteOptions, WriteOutcome, Writer, write};

/// The file inside the output folder that records what strata wrote.
pub const MANIFEST: &str = ".strata-manifest.json";
