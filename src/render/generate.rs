//! The objects strata generates from its own templates for one environment:
//! the generator, the template render of one object, and the context every
//! template shares.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use minijinja::Environment as Engine;
use serde_json::{Value as J, json};

use super::plan::Plan;
use super::{Deferred, NamespaceSpec, Object, RepoLayout, Source, apply_patches, output, substitute_values, templates};
use crate::diag::{Diagnostic, codes};
use crate::load::{Chart, Component, Environment, Platform, SyncMode, Tier};
use crate::merge::Merged;
use crate::yaml::{self, Origin};

pub(super) fn labels() -> J {
    json!({"app.kubernetes.io/managed-by": "strata"})
}

/// The config.yaml as templates see it.
pub(super) fn component_json(c: &Component) -> J {
    let chart = match &c.chart {
        Chart::Remote {
            repo_url,
            name,
            version,
            oci,
        } => {
            json!({"repoURL": repo_url, "name": name, "version": version, "oci": oci})
        }
        Chart::Local { path } => json!({"path": path, "name": c.chart.name(), "oci": false}),
        Chart::None => J::Null,
    };
    json!({
        "component": c.name,
        "namespace": c.namespace,
        "namespace_labels": c.namespace_labels,
        "namespace_annotations": c.namespace_annotations,
        "chart": chart,
        "sync": if c.sync == SyncMode::Manual { "manual" } else { "automated" },
        "tier": if c.tier == Tier::Core { "core" } else { "addon" },
        "requires": c.requires.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>(),
        "profile": c.profile_name(),
    })
}

/// Everything the object templates of one environment need.
pub(super) struct Gen<'a> {
    pub(super) platform: &'a Platform,
    pub(super) env: &'a Environment,
    pub(super) engine: &'a Engine<'a>,
    pub(super) merged: &'a BTreeMap<String, Merged>,
    pub(super) depths: &'a BTreeMap<String, u32>,
    pub(super) layout: &'a RepoLayout,
    pub(super) namespaces: &'a BTreeMap<String, NamespaceSpec>,
    /// The components whose objects are generated (all when `None`): a
    /// diff generates only those a change can reach.
    pub(super) only: Option<&'a BTreeSet<String>>,
    /// Whether the HelmRelease's values may be [`Deferred`].
    pub(super) defer_values: bool,
    /// Each component's values as the quick writer writes them, made for
    /// whichever object takes them first (see [`Values`]).
    pub(super) texts: BTreeMap<&'a str, OnceLock<Option<Arc<str>>>>,
    /// The texts of the values mappings shared between environments.
    pub(super) shared: &'a yaml::Texts,
    /// How each component is delivered, and what follows from it.
    pub(super) plan: &'a Plan,
    /// The OCI manifest digest each OCI chart is pinned to, by component.
    pub(super) pins: &'a BTreeMap<String, String>,
    /// The engines' releases: what they accept of what strata writes.
    pub(super) versions: &'a super::versions::Versions,
    /// The patches that matched an object so far.
    pub(super) patched: &'a super::patches::Matched,
}

/// A component's merged values, as the object templates take them.
#[derive(Clone, Copy)]
pub(super) struct Values<'a> {
    pub(super) node: &'a yaml::Node,
    pub(super) text: &'a OnceLock<Option<Arc<str>>>,
    pub(super) shared: &'a yaml::Texts,
}

impl Values<'_> {
    /// The quick writer's text of the values, made once for both targets'
    /// objects; `None` for an empty mapping, or where only the full writer
    /// writes them.
    pub(super) fn text(&self) -> Option<&Arc<str>> {
        self.text
            .get_or_init(|| yaml::node_to_sorted_yaml_quick(self.node, self.shared).map(Arc::from))
            .as_ref()
    }

    /// The values as one YAML string (Argo CD's `helm.values`).
    pub(super) fn yaml(&self) -> String {
        if self.node.as_map().is_some_and(|m| m.is_empty()) {
            return String::new();
        }
        match self.text() {
            Some(text) => text.to_string(),
            None => yaml::node_to_sorted_yaml(self.node),
        }
    }
}

impl Gen<'_> {
    pub(super) fn values(&self, c: &Component) -> Option<Values<'_>> {
        let node = &self.merged.get(&c.name)?.values;
        let text = self.texts.get(c.name.as_str())?;
        Some(Values {
            node,
            text,
            shared: self.shared,
        })
    }

    /// The repository URL the environment's engines pull a chart from: its
    /// own, or its mirror in the environment's `charts.mirrors`.
    pub(super) fn repo_url(&self, c: &Component) -> String {
        let Chart::Remote { repo_url, .. } = &c.chart else {
            return String::new();
        };
        match self.env.engines.charts.mirrored(repo_url) {
            Some((url, _)) => url,
            None => repo_url.clone(),
        }
    }

    pub(super) fn chosen(&self) -> Vec<&Component> {
        self.platform
            .components_in(self.env)
            .filter(|c| self.only.is_none_or(|o| o.contains(&c.name)))
            .collect()
    }

    pub(super) fn git(&self) -> J {
        let g = &self.env.git;
        json!({
            "url": g.url,
            "ref": g.git_ref.target_revision(),
            "ref_field": g.git_ref.flux_field(),
            "secret": g.secret,
        })
    }

    /// Renders a built-in template into one object for `folder`, with the
    /// component's patches applied.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push(
        &self,
        out: &mut Vec<Object>,
        diags: &mut Vec<Diagnostic>,
        template: &str,
        folder: &str,
        ctx: &J,
        origin: &Origin,
        component: Option<&Component>,
        values: Option<Values<'_>>,
    ) {
        let defer = self.defer_values;
        match render_builtin(self.platform, self.engine, template, ctx, values, defer, origin) {
            Ok((value, deferred)) => {
                let mut object = Object {
                    folder: folder.to_owned(),
                    value,
                    origin: origin.clone(),
                    component: component.map(|c| c.name.clone()),
                    source: Source::Generated,
                    node: None,
                    values: deferred.map(Arc::new),
                };
                if let Err(d) = apply_patches(component, self.env, &mut object, self.patched) {
                    diags.push(d);
                    return;
                }
                out.push(object);
            }
            Err(d) => diags.push(d.in_env(&self.env.name)),
        }
    }
}

/// Where a strata template (built-in or the repository's override) lives,
/// as diagnostics name it.
pub(super) fn template_path(platform: &Platform, name: &str) -> String {
    if platform.templates.contains_key(name) {
        crate::world::join(&platform.project.templates, name)
    } else if templates::BUILTIN.iter().any(|(n, _)| *n == name) {
        format!("<builtin>/templates/{name}")
    } else {
        name.to_owned()
    }
}

pub(super) fn render_builtin(
    platform: &Platform,
    engine: &Engine<'_>,
    name: &str,
    ctx: &J,
    values: Option<Values<'_>>,
    defer: bool,
    origin: &Origin,
) -> Result<(J, Option<Deferred>), Diagnostic> {
    let text = templates::render(engine, name, minijinja::Value::from(minijinja::value::Serde(ctx))).map_err(|e| {
        let mut d = templates::template_error(name, &e);
        d.origin.file = template_path(platform, &d.origin.file).into();
        d.with_related(origin.clone(), "rendering the objects of this input")
    })?;
    let mut docs = parse_objects(name, &text)?;
    // One object per template (checked below): values deferred in one
    // document only.
    let defer = defer && docs.len() == 1;
    let deferred = match values {
        Some(values) => docs
            .iter_mut()
            .map(|d| substitute_values(d, values, defer))
            .fold(None, Option::or),
        None => None,
    };
    if docs.len() != 1 {
        return Err(Diagnostic::error(
            codes::TEMPLATE,
            origin.clone(),
            format!("template {name} must give exactly one object, it gave {}", docs.len()),
        )
        .with_help(format!("fix {}", template_path(platform, name))));
    }
    let doc = docs.remove(0);
    let named = |p: &str| doc.pointer(p).and_then(J::as_str).is_some_and(|s| !s.is_empty());
    if !(named("/apiVersion") && named("/kind") && named("/metadata/name")) {
        return Err(Diagnostic::error(
            codes::TEMPLATE,
            origin.clone(),
            format!("template {name} gave an object without apiVersion, kind or metadata.name"),
        )
        .with_help(format!("fix {}", template_path(platform, name))));
    }
    Ok((doc, deferred))
}

pub(super) fn parse_objects(name: &str, text: &str) -> Result<Vec<J>, Diagnostic> {
    if let Some(doc) = output::read(text) {
        #[cfg(debug_assertions)]
        {
            let full = yaml::parse_plain_multi(&Arc::from(name), text);
            debug_assert_eq!(
                full.ok(),
                Some(vec![doc.clone()]),
                "the quick reader, on {name}:\n{text}"
            );
        }
        return Ok(vec![doc]);
    }
    let file: Arc<str> = Arc::from(name);
    yaml::parse_plain_multi(&file, text).map_err(|e| {
        Diagnostic::error(
            codes::TEMPLATE,
            e.origin,
            format!("the output of template {name} is not YAML: {}", e.message),
        )
        .with_help("the line and column are in the template's output; check the template's indentation and quoting")
    })
}
