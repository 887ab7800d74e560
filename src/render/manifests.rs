//! A component's `manifests/`: each document checked to be a Kubernetes
//! object, given the component's namespace where it takes one.

use super::cluster_scoped;
use std::sync::Arc;

use serde_json::Value as J;

use crate::diag::{Diagnostic, codes};
use crate::load::Component;
use crate::yaml::{self, Origin};

/// A manifest object, its origin, and its spanned document when it is not a template.
pub(super) type ManifestDoc = (J, Origin, Option<yaml::Node>);

/// The objects of one manifest file, each checked to be a Kubernetes object.
pub(super) fn manifest_objects(
    path: &Arc<str>,
    text: &str,
    template: bool,
    c: &Component,
) -> Result<Vec<ManifestDoc>, Vec<Diagnostic>> {
    let docs = yaml::parse_multi(path, text).map_err(|e| {
        let mut d = crate::load::files::syntax_error(e);
        if template {
            d = d.with_note("the line and column are in the template's rendered output");
        }
        vec![d]
    })?;
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for doc in docs {
        let origin = doc.origin.clone();
        let mut missing = Vec::new();
        for key in ["apiVersion", "kind"] {
            if doc.get(key).and_then(|n| n.as_str()).is_none() {
                missing.push(key);
            }
        }
        if doc.get_path("metadata.name").and_then(|n| n.as_str()).is_none() {
            missing.push("metadata.name");
        }
        if doc.as_map().is_none() {
            diags.push(
                Diagnostic::error(
                    codes::OBJECT,
                    origin,
                    format!(
                        "a manifest document must be a Kubernetes object, found {}",
                        doc.value.type_name()
                    ),
                )
                .with_help("each YAML document in manifests/ is one object with apiVersion, kind and metadata.name"),
            );
            continue;
        }
        if !missing.is_empty() {
            diags.push(
                Diagnostic::error(
                    codes::OBJECT,
                    origin,
                    format!("manifest object has no {}", missing.join(", ")),
                )
                .with_help("every Kubernetes object needs apiVersion, kind and metadata.name"),
            );
            continue;
        }
        let (api_version, kind) = (doc.get("apiVersion"), doc.get("kind"));
        let names = (
            api_version.and_then(yaml::Node::as_str),
            kind.and_then(yaml::Node::as_str),
        );
        if let (Some(av), Some(k)) = names
            && let Err(why) = crate::load::names::check_names(av, k)
        {
            let at = if crate::load::names::check_names("v1", k).is_err() {
                kind
            } else {
                api_version
            };
            let mut d = Diagnostic::error(
                codes::SHAPE,
                at.map_or_else(|| origin.clone(), |n| n.origin.clone()),
                why,
            )
            .with_label("not a Kubernetes name")
            .with_help("each document in manifests/ is a Kubernetes object: write its resource's apiVersion and kind");
            if template {
                d = d.with_note("the line and column are in the template's rendered output");
            }
            diags.push(d);
            continue;
        }
        let mut value = doc.to_json();
        let kind = value["kind"].as_str().unwrap_or("").to_owned();
        if !cluster_scoped(&kind)
            && value["metadata"].get("namespace").is_none()
            && let Some(meta) = value["metadata"].as_object_mut()
        {
            meta.insert("namespace".into(), J::String(c.namespace.clone()));
        }
        out.push((value, origin, (!template).then_some(doc)));
    }
    if diags.is_empty() { Ok(out) } else { Err(diags) }
}
