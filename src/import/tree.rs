//! The tree being imported, read as YAML documents with the file, line and
//! column of each: every `.yaml` and `.yml` file under a folder, in name
//! order, without following symbolic links, within the input size limits.
//! A chart's own templates (below a folder with a `Chart.yaml`) are not
//! manifests and are left alone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::diag::{Diagnostic, Sources, codes};
use crate::yaml::{Node, Origin};

/// The most files read from one tree.
pub const MAX_FILES: usize = 20_000;

/// One YAML document of the tree.
#[derive(Clone, Debug)]
pub struct Doc {
    pub value: Value,
    pub node: Node,
}

impl Doc {
    pub fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or("")
    }

    pub fn namespace(&self) -> Option<&str> {
        self.value["metadata"]["namespace"].as_str()
    }

    /// Where the document starts.
    pub fn origin(&self) -> Origin {
        self.node.origin.clone()
    }

    /// Where the value at a `/`-separated path is written, or the document's
    /// start.
    pub fn origin_of(&self, path: &str) -> Origin {
        let mut node = &self.node;
        for key in path.split('/').filter(|k| !k.is_empty()) {
            let next = match key.parse::<usize>() {
                Ok(i) => match &node.value {
                    crate::yaml::Value::Seq(l) => l.get(i),
                    _ => None,
                },
                Err(_) => node.get(key),
            };
            match next {
                Some(n) => node = n,
                None => break,
            }
        }
        node.origin.clone()
    }
}

/// The documents of a tree, and what could not be read (warnings: a file
/// that does not parse is left out, and said so).
#[derive(Debug, Default)]
pub struct Tree {
    /// The folder as the user named it, for messages.
    pub shown: String,
    pub root: PathBuf,
    pub docs: Vec<Doc>,
    pub notes: Vec<Diagnostic>,
}

impl Tree {
    /// The name a file of the tree has in messages: below the folder as
    /// the user named it.
    pub fn shown_path(&self, rel: &str) -> String {
        crate::world::join(&self.shown, rel)
    }

    /// The first document of `kind` named `name` (in `namespace`, when one
    /// is given and the document names one), for pointing at where the
    /// source tree defines an object.
    pub fn find(&self, kind: &str, name: &str, namespace: Option<&str>) -> Option<&Doc> {
        self.docs.iter().find(|d| {
            d.kind() == kind
                && d.name() == name
                && (namespace.is_none() || d.namespace().is_none() || d.namespace() == namespace)
        })
    }
}

/// Whether a folder entry is a chart's own folder (its templates are Go
/// templates, not manifests) or a hidden one (`.git`).
fn skipped(dir: &Path) -> bool {
    dir.join("Chart.yaml").is_file()
        || dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.') && n != ".")
}

/// Reads every YAML document under `root`, shown in messages as `shown`;
/// the file texts go into `sources` so that messages can quote them.
pub fn read(root: &Path, shown: &str, sources: &Sources) -> Result<Tree, Diagnostic> {
    let meta = std::fs::metadata(root).map_err(|e| {
        Diagnostic::error(
            codes::IMPORT_SOURCE,
            Origin::file_start(shown),
            format!("cannot read {shown}: {e}"),
        )
        .with_help("name the folder that holds the Flux or Argo CD tree (a clone of its git repository)")
    })?;
    if !meta.is_dir() {
        return Err(Diagnostic::error(
            codes::IMPORT_SOURCE,
            Origin::file_start(shown),
            format!("{shown} is not a folder"),
        )
        .with_help("name the folder that holds the Flux or Argo CD tree (a clone of its git repository)"));
    }
    let mut tree = Tree {
        shown: shown.trim_end_matches('/').to_owned(),
        root: root.to_path_buf(),
        ..Tree::default()
    };
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.depth() > 0 && skipped(e.path())));
    let mut count = 0;
    for entry in walk.filter_map(Result::ok) {
        let is_yaml = entry.path().extension().is_some_and(|x| x == "yaml" || x == "yml");
        if !entry.file_type().is_file() || !is_yaml {
            continue;
        }
        count += 1;
        if count > MAX_FILES {
            return Err(Diagnostic::error(
                codes::IMPORT_SOURCE,
                Origin::file_start(shown),
                format!("{shown} holds more than {MAX_FILES} YAML files"),
            )
            .with_help("import a smaller folder: the one with the clusters, or the Applications"));
        }
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .replace('\\', "/");
        read_file(&mut tree, entry.path(), &rel, sources);
    }
    Ok(tree)
}

fn read_file(tree: &mut Tree, path: &Path, rel: &str, sources: &Sources) {
    let name: Arc<str> = Arc::from(tree.shown_path(rel));
    let text = match crate::world::disk::read_regular(path, crate::yaml::MAX_INPUT_BYTES as u64) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(_) => return unread(tree, &name, "it is not UTF-8 text".into()),
        },
        Err(e) => return unread(tree, &name, e.to_string()),
    };
    sources.insert(&name, &text);
    match crate::yaml::parse_multi(&name, &text) {
        Ok(nodes) => {
            for node in nodes {
                let value = node.to_json();
                if value.is_object() {
                    tree.docs.push(Doc { value, node });
                }
            }
        }
        Err(e) => tree.notes.push(
            Diagnostic::warning(
                codes::NOT_CONVERTED,
                e.origin,
                format!("{name} was not read: {}; the objects in it are not imported", e.message),
            )
            .with_help("fix the file, or ignore this if it holds no Flux or Argo CD object"),
        ),
    }
}

fn unread(tree: &mut Tree, name: &Arc<str>, why: String) {
    tree.notes.push(
        Diagnostic::warning(
            codes::NOT_CONVERTED,
            Origin::file_start(&**name),
            format!("{name} was not read: {why}; the objects in it are not imported"),
        )
        .with_help("fix the file, or ignore this if it holds no Flux or Argo CD object"),
    );
}
