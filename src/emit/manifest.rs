//! The manifest, `.strata-manifest.json`: every file strata wrote in the
//! output folder with its hash. It is input from disk like any other, so an
//! entry naming a path outside the folder is dropped, never followed.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use super::MANIFEST;
use super::write::WriteError;
use crate::world::disk;

#[derive(serde::Serialize, serde::Deserialize, Default)]
pub struct Manifest {
    pub version: u32,
    pub files: BTreeMap<String, String>,
}

/// A manifest's text, of its entries given in path order: pretty JSON, as
/// serde_json writes it, and a newline. Written by hand: tens of thousands
/// of entries through the generic writer were a serial pause at the end of
/// every render.
pub fn text<'a>(version: u32, files: impl Iterator<Item = (&'a str, &'a str)> + Clone) -> String {
    let mut text = String::with_capacity(64 + files.clone().map(|(p, h)| p.len() + h.len() + 12).sum::<usize>());
    text.push_str("{\n  \"version\": ");
    text.push_str(&version.to_string());
    text.push_str(",\n  \"files\": {");
    let mut empty = true;
    for (path, hash) in files {
        text.push_str(if empty { "\n    " } else { ",\n    " });
        empty = false;
        json_string(&mut text, path);
        text.push_str(": ");
        json_string(&mut text, hash);
    }
    text.push_str(if empty { "}\n}\n" } else { "\n  }\n}\n" });
    text
}

/// A JSON string, escaped as serde_json escapes it.
fn json_string(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
    }
}

/// Manifests bigger than this are not strata's.
const MANIFEST_LIMIT: u64 = 256 << 20;

/// Why a path from a manifest or from the layout may not be used, if so: it
/// must be relative, `/`-separated, with no empty, `.` or `..` part.
pub fn bad_path(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("it is empty");
    }
    if path.starts_with('/') || Path::new(path).is_absolute() || Path::new(path).has_root() {
        return Some("it is absolute");
    }
    if path.contains(['\\', '\0']) || path.contains(':') && cfg!(windows) {
        return Some("it holds a backslash, a colon or a NUL");
    }
    if path.split('/').any(|p| p.is_empty() || p == "." || p == "..") {
        return Some("it has an empty, `.` or `..` part");
    }
    None
}

/// What [`read_manifest`] found: the manifest, if there is one strata can
/// use, and its text, to tell whether a new manifest changes it.
pub type Read = (Option<Manifest>, Option<String>);

/// The manifest of `out`, with every entry that is not a plain path inside
/// the folder dropped (and reported in `warnings`). A manifest that is
/// missing, not a regular file, too large or not valid is none; one that
/// cannot be read is an error.
pub fn read_manifest(out: &Path, warnings: &mut Vec<String>) -> Result<Read, WriteError> {
    let path = out.join(MANIFEST);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Ok((None, None)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((None, None)),
        Err(error) => return Err(WriteError::Io { path, error }),
    }
    let bytes = match disk::read_regular(&path, MANIFEST_LIMIT) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => return Ok((None, None)),
        Err(error) => return Err(WriteError::Io { path, error }),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok((None, None));
    };
    let Ok(mut manifest) = serde_json::from_str::<Manifest>(&text) else {
        return Ok((None, Some(text)));
    };
    let mut dropped = Vec::new();
    manifest.files.retain(|p, _| match bad_path(p) {
        Some(why) => {
            dropped.push(format!("`{p}` ({why})"));
            false
        }
        None if p == MANIFEST => {
            dropped.push(format!("`{p}` (the manifest itself)"));
            false
        }
        None => true,
    });
    if !dropped.is_empty() {
        let shown = dropped.len().min(10);
        let more = dropped.len() - shown;
        warnings.push(format!(
            "{} lists {} path(s) that are not files inside the folder; they are ignored (never read, \
             compared or removed), and a render rewrites the manifest without them: {}{}",
            path.display(),
            dropped.len(),
            dropped[..shown].join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    Ok((Some(manifest), Some(text)))
}

/// Whether a path belongs to the units being written. An empty unit stands
/// for the whole tree (a render of every environment and target).
pub fn in_scope(path: &str, scope: &[String]) -> bool {
    scope
        .iter()
        .any(|u| u.is_empty() || path.strip_prefix(u.as_str()).is_some_and(|rest| rest.starts_with('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_serde_jsons_pretty_json() {
        let mut manifest = Manifest {
            version: 1,
            files: BTreeMap::new(),
        };
        let pretty = |m: &Manifest| serde_json::to_string_pretty(m).unwrap() + "\n";
        let written = |m: &Manifest| text(m.version, m.files.iter().map(|(p, h)| (p.as_str(), h.as_str())));
        assert_eq!(written(&manifest), pretty(&manifest));
        for path in [
            "dev/a.yaml",
            "dev/q\"uote.yaml",
            "dev/back\\slash",
            "dev/tab\there",
            "dev/é.yaml",
            "dev/\u{7f}",
        ] {
            manifest.files.insert(path.to_owned(), "sha256:00ff".to_owned());
        }
        assert_eq!(written(&manifest), pretty(&manifest));
    }

    #[test]
    fn paths_outside_the_folder_are_bad() {
        for p in [
            "../../etc/passwd",
            "/etc/passwd",
            "a/../../x",
            "a//b",
            "./a",
            "",
            "a/",
            "a\\b",
        ] {
            assert!(bad_path(p).is_some(), "{p}");
        }
        for p in ["a", "staging/flux/kustomization.yaml", "a..b/.c"] {
            assert!(bad_path(p).is_none(), "{p}");
        }
    }

    #[test]
    fn scope_prefixes_are_whole_units() {
        let scope = vec!["staging/flux".to_owned()];
        assert!(in_scope("staging/flux/a.yaml", &scope));
        assert!(!in_scope("staging/fluxx/a.yaml", &scope));
        assert!(in_scope("anything", &[String::new()]));
        assert!(!in_scope("anything", &[]));
    }
}
