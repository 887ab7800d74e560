//! A component's `manifests/`: each document checked to be a Kubernetes
//! object, given the component's namespace where it takes one.

use std::sync::Arc;

use minijinja::Environment as Engine;
use serde_json::Value as J;

use super::generate::component_json;
use super::{Object, Source, templates};
use crate::diag::{Diagnostic, codes};
use crate::load::{Component, Environment};
use crate::merge::Merged;
use crate::yaml::{self, Origin};

/// A manifest object, its origin, and its spanned document when it is not a template.
pub(super) type ManifestDoc = (J, Origin, Option<yaml::Node>);

/// The objects of one manifest file, each checked to be a Kubernetes object.
pub(super) fn manifest_objects(
    path: &Arc<str>,
    text: &str,
    template: bool,
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
        // The component's namespace is written into objects of namespaced
        // kinds once every CRD's scope is known (see `scopes`).
        out.push((doc.to_json(), origin, (!template).then_some(doc)));
    }
    if diags.is_empty() { Ok(out) } else { Err(diags) }
}

/// The objects of one component's manifests, templates rendered with the
/// environment, the contract's non-sensitive outputs and the component's
/// merged values.
pub(super) fn render_manifests(
    engine: &Engine<'_>,
    env: &Environment,
    contract: &J,
    c: &Component,
    merged: &Merged,
) -> (Vec<Object>, Vec<Diagnostic>) {
    let mut objects = Vec::new();
    let mut diags = Vec::new();
    // Built once per component, and only for one with templates: the
    // values are looked up where a template reads them, not copied.
    let mut ctx: Option<minijinja::Value> = None;
    for m in &c.manifests {
        let text = if m.template {
            let ctx = ctx.get_or_insert_with(|| {
                minijinja::context! {
                    env => &env.name,
                    substrate => env.substrate.0.as_str(),
                    contract => minijinja::Value::from(minijinja::value::Serde(contract)),
                    values => templates::values(&merged.values),
                    component => minijinja::Value::from(minijinja::value::Serde(component_json(c))),
                }
            });
            match templates::render(engine, &m.path, ctx.clone()) {
                Ok(t) => t,
                Err(e) => {
                    diags.push(templates::template_error(&m.path, &e).in_env(&env.name));
                    continue;
                }
            }
        } else {
            m.text.clone()
        };
        match manifest_objects(&m.path, &text, m.template) {
            Ok(objs) => objects.extend(objs.into_iter().map(|(value, origin, node)| Object {
                folder: format!("components/{}", c.name),
                value,
                origin,
                component: Some(c.name.clone()),
                source: Source::Manifest,
                node,
                values: None,
            })),
            Err(d) => diags.extend(d.into_iter().map(|d| d.in_env(&env.name))),
        }
    }
    (objects, diags)
}
