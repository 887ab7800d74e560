//! Reading input files through the [`World`] into spanned trees, with every
//! failure turned into a diagnostic at the file.

use std::sync::Arc;

use crate::diag::{Diagnostic, Sources, codes};
use crate::world::{World, WorldError};
use crate::yaml::{self, Node, Origin};

/// Reads a text file and records its text for diagnostics.
pub fn read_text(world: &dyn World, sources: &Sources, path: &str) -> Result<(Arc<str>, Arc<str>), Diagnostic> {
    let file: Arc<str> = Arc::from(path);
    match world.read_text(path) {
        Ok(text) => {
            let text = sources.record(&file, text);
            Ok((file, text))
        }
        Err(e) => Err(io_error(&file, &e)),
    }
}

pub fn io_error(file: &Arc<str>, e: &WorldError) -> Diagnostic {
    let (line, col) = match e {
        WorldError::NotUtf8 { line, col } => (*line, *col),
        _ => (1, 1),
    };
    let code = match e {
        WorldError::Filtered { .. } => codes::FILTERED,
        _ => codes::IO,
    };
    let mut d = Diagnostic::error(
        code,
        Origin::new(file, line, col, 0),
        format!("cannot read {file}: {e}"),
    );
    d = match e {
        WorldError::NotFound => d.with_help("create the file, or correct the path that names it"),
        WorldError::Escapes(_) => d.with_help(
            "inputs must live inside the repository: put the file or folder itself in place of the link or path",
        ),
        WorldError::TooLarge(_) => d.with_help("split the file, or keep generated data out of the repository"),
        WorldError::NotUtf8 { .. } => d.with_help("save the file as UTF-8"),
        WorldError::Filtered { help, .. } => d.with_help(help.clone()),
        WorldError::Io(_) => {
            d.with_help("inputs must be regular files inside the repository; replace the link or file with one")
        }
    };
    d
}

/// Reads and parses one YAML (or JSON) document that may be absent: a file
/// that is not there is `None`; one that cannot be read is an error.
pub fn read_yaml_if_exists(world: &dyn World, sources: &Sources, path: &str) -> Result<Option<Node>, Diagnostic> {
    let file: Arc<str> = Arc::from(path);
    let text = match world.read_text(path) {
        Ok(text) => text,
        Err(WorldError::NotFound) => return Ok(None),
        Err(e) => return Err(io_error(&file, &e)),
    };
    let text = sources.record(&file, text);
    sources
        .parse(&file, &text, || yaml::parse(&file, &text))
        .map(Some)
        .map_err(syntax_error)
}

/// Reads and parses one YAML (or JSON) document.
pub fn read_yaml(world: &dyn World, sources: &Sources, path: &str) -> Result<Node, Diagnostic> {
    let (file, text) = read_text(world, sources, path)?;
    sources
        .parse(&file, &text, || yaml::parse(&file, &text))
        .map_err(syntax_error)
}

pub fn syntax_error(e: yaml::ParseError) -> Diagnostic {
    Diagnostic::error(codes::SYNTAX, e.origin, e.message)
        .with_label("here")
        .with_help("fix the YAML syntax at this place")
}
