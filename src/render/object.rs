//! One rendered object and where it goes: its folder, its value, the input
//! that produced it, and the merged values it carries without a copy.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value as J;

use crate::yaml::{self, Origin};

/// What produced an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A built-in (or overridden) template of strata's.
    Generated,
    /// A component's `manifests/` file.
    Manifest,
    /// The substrate type's generated cluster objects.
    Cluster,
    /// A component's chart, rendered by helm (never written to the tree:
    /// the engines render charts themselves). `template` is helm's
    /// `# Source:` path, e.g. `traefik/templates/deployment.yaml`.
    Chart { template: String },
    /// A file the substrate stack applies before any engine runs (not a
    /// Kubernetes object), by its file name: see [`super::substrate`].
    Substrate { file: String },
}

/// One rendered object and where it goes.
#[derive(Clone, Debug)]
pub struct Object {
    /// The folder under `rendered/<env>/<target>/`, `/`-separated; empty for the top.
    pub folder: String,
    pub value: J,
    /// The input that produced it: a manifest file, or the component's config.yaml.
    pub origin: Origin,
    pub component: Option<String>,
    pub source: Source,
    /// The spanned document of a plain (not templated) manifest, so that
    /// rules can point at a field inside it.
    pub node: Option<yaml::Node>,
    /// The merged values the object carries, when they are not copied into
    /// `value` (see [`Deferred`]).
    pub values: Option<Arc<Deferred>>,
}

/// A component's merged values held by an object without a copy: `value`
/// holds a marker string at `at` (a HelmRelease's `spec.values`), and the
/// file is written with `text` there. Copying each component's values into
/// JSON, writing that copy out and freeing it was a quarter of a render.
/// Only a compile that keeps no objects (`render`, `check`) defers: what
/// reads an object's values (validation, the secrets rule) reads
/// [`Object::full`] or the values themselves.
#[derive(Clone, Debug)]
pub struct Deferred {
    /// The keys from the object's root to the values.
    pub at: Vec<String>,
    pub node: yaml::Node,
    /// `node` as [`yaml::node_to_sorted_yaml_quick`] writes it.
    pub text: Arc<str>,
}

impl Object {
    /// The object with its values in place.
    pub fn full(&self) -> Cow<'_, J> {
        match &self.values {
            None => Cow::Borrowed(&self.value),
            Some(d) => {
                let mut value = self.value.clone();
                put_at(&mut value, &d.at, d.node.to_json());
                Cow::Owned(value)
            }
        }
    }

    /// Copies deferred values into `value`, for what changes or keeps it.
    pub fn materialize(&mut self) {
        if let Some(d) = self.values.take() {
            put_at(&mut self.value, &d.at, d.node.to_json());
        }
    }

    /// The object as written to its file: [`yaml::to_canonical_yaml`] of
    /// [`Object::full`], byte for byte.
    pub fn canonical_yaml(&self) -> String {
        let Some(d) = &self.values else {
            return yaml::to_canonical_yaml(&self.value);
        };
        match yaml::to_canonical_yaml_spliced(&self.value, &d.at, &d.text) {
            Some(text) => {
                debug_assert_eq!(text, yaml::to_canonical_yaml(&self.full()), "spliced values");
                text
            }
            None => yaml::to_canonical_yaml(&self.full()),
        }
    }

    pub fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or("")
    }
    pub fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or("")
    }
    pub fn namespace(&self) -> Option<&str> {
        self.value["metadata"]["namespace"].as_str()
    }
    pub fn api_version(&self) -> &str {
        self.value["apiVersion"].as_str().unwrap_or("")
    }
    /// The origin of a field of the object: exact for a plain manifest, the
    /// object's start otherwise.
    pub fn field_origin(&self, path: &str) -> Origin {
        self.field_node(path)
            .map_or_else(|| self.origin.clone(), |n| n.origin.clone())
    }

    /// The spanned node of a field of a plain manifest.
    pub fn field_node(&self, path: &str) -> Option<&yaml::Node> {
        self.node.as_ref().and_then(|n| n.get_path(path))
    }

    /// The file name of the object within its folder: `<kind>-<name>.yaml`,
    /// with its namespace in the middle where two objects share a name.
    pub fn file_name(&self, with_namespace: bool) -> String {
        if let Source::Substrate { file } = &self.source {
            return file.clone();
        }
        let kind = sanitize(self.kind());
        let name = sanitize(self.name());
        match (with_namespace, self.namespace()) {
            (true, Some(ns)) => format!("{kind}-{}-{name}.yaml", sanitize(ns)),
            _ => format!("{kind}-{name}.yaml"),
        }
    }

    /// `Kind/namespace/name` or `Kind/name`.
    pub fn id(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{}/{ns}/{}", self.kind(), self.name()),
            None => format!("{}/{}", self.kind(), self.name()),
        }
    }
}

/// The file name of each object as the tree writes it: plain where it is
/// the only one of its name in its folder, else with the namespace. Each
/// plain name is made once (this runs for every object of a render).
pub fn file_names<'a, I>(objects: I) -> Vec<String>
where
    I: IntoIterator<Item = &'a Object>,
    I::IntoIter: Clone,
{
    let objects = objects.into_iter();
    let plain: Vec<String> = objects.clone().map(|o| o.file_name(false)).collect();
    let mut count: std::collections::BTreeMap<(&str, &str), usize> = std::collections::BTreeMap::new();
    for (o, name) in objects.clone().zip(&plain) {
        *count.entry((o.folder.as_str(), name.as_str())).or_default() += 1;
    }
    let shared: Vec<bool> = objects
        .clone()
        .zip(&plain)
        .map(|(o, name)| count[&(o.folder.as_str(), name.as_str())] > 1)
        .collect();
    objects
        .zip(plain)
        .zip(shared)
        .map(|((o, name), shared)| if shared { o.file_name(true) } else { name })
        .collect()
}

/// Sets the value at a key path that exists (deferral found its marker
/// there).
pub(super) fn put_at(value: &mut J, at: &[String], new: J) {
    let mut here = Some(value);
    for key in at {
        here = here.and_then(|v| v.as_object_mut()).and_then(|m| m.get_mut(key));
    }
    if let Some(here) = here {
        *here = new;
    }
}

/// A name as a file name takes it: lower case, and `-` for anything but
/// letters, digits, `-`, `.` and `_`.
pub(super) fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '.' | '_' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect()
}
