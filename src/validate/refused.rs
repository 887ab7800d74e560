//! What the API server would refuse in an environment's rendered objects,
//! found before any apply: the value checks no JSON Schema states
//! ([`server`](super::server), E050 and E052) on every object, and strata's
//! own engine objects against their schemas ([`engine_kinds`](super::engine_kinds),
//! E051). These run whether or not a schema location is configured. Each
//! finding points at the line that set the value: a namespace's label in
//! config.yaml, a patch operation, a manifest's line, a values layer.

use rayon::prelude::*;

use super::message::{Problem, Seg};
use super::{Item, engine_kinds, locate_object, server};
use crate::diag::{Diagnostic, codes};
use crate::load::Platform;
use crate::render::Source;
use crate::yaml::Origin;

/// The findings of both checks on every item.
pub(super) fn check(platform: &Platform, items: &[Item<'_>]) -> Vec<Diagnostic> {
    items
        .par_iter()
        .with_max_len(4)
        .flat_map_iter(|item| one(platform, item))
        .collect()
}

fn one(platform: &Platform, item: &Item<'_>) -> Vec<Diagnostic> {
    let obj = item.obj;
    // The checks read no release values (a schema takes any `values`), so
    // they read the object as held; its values are put in place only to
    // locate a finding.
    let engine_problems = if obj.source == Source::Generated && engine_kinds::covers(obj.api_version(), obj.kind()) {
        engine_kinds::problems(&obj.value)
    } else {
        Vec::new()
    };
    let refusals = server::refusals(&obj.value);
    if engine_problems.is_empty() && refusals.is_empty() {
        return Vec::new();
    }
    let full = obj.full();
    let mut out = Vec::new();
    for p in engine_problems {
        let (origin, via) = locate_object(platform, item, &full, &p);
        let mut d = Diagnostic::error(
            codes::ENGINE_OBJECT,
            origin,
            format!("{} in {}: {}", obj.id(), item.paths[0], p.message),
        )
        .with_label(p.label.clone());
        if let Some(h) = &p.help {
            d = d.with_help(h.clone());
        }
        if let Some(v) = via {
            d = d.with_note(v);
        }
        out.push(d.with_note(engine_kinds::source(obj.kind())).in_env(item.env));
    }
    for r in refusals {
        let p = &r.problem;
        let d = if r.code == codes::NAMESPACE_METADATA {
            namespace_finding(platform, item, p)
        } else {
            let (origin, via) = locate_object(platform, item, &full, p);
            let mut d = Diagnostic::error(
                r.code,
                origin,
                format!("{} in {}: {}", obj.id(), item.paths[0], p.message),
            );
            if let Some(v) = via {
                d = d.with_note(v);
            }
            d
        };
        let mut d = d.with_label(p.label.clone());
        if let Some(h) = &p.help {
            d = d.with_help(h.clone());
        }
        out.push(d.in_env(item.env));
    }
    out
}

/// A namespace's label or annotation: said once for the namespace whether
/// a Namespace (Flux) or an Application (Argo CD) carries it, at the line
/// of the config.yaml that gives it.
fn namespace_finding(platform: &Platform, item: &Item<'_>, p: &Problem) -> Diagnostic {
    let obj = item.obj;
    let namespace = if obj.kind() == "Namespace" {
        obj.name().to_owned()
    } else {
        obj.value["spec"]["destination"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let origin = config_line(platform, item, &namespace, p).unwrap_or_else(|| obj.origin.clone());
    Diagnostic::error(
        codes::NAMESPACE_METADATA,
        origin,
        format!("namespace {namespace}: {}", p.message),
    )
    .with_note("strata writes it into the Namespace (Flux) and the Application's managedNamespaceMetadata (Argo CD)")
}

/// The line in a config.yaml of the environment's components that gives
/// the namespace this label or annotation: the key for a refused key,
/// else the value.
fn config_line(platform: &Platform, item: &Item<'_>, namespace: &str, p: &Problem) -> Option<Origin> {
    let env = platform.environments.get(item.env)?;
    let (field, key) = match (p.path.as_slice(), &p.key) {
        ([.., Seg::Key(f)], Some(k)) => (f.as_str(), k.as_str()),
        ([.., Seg::Key(f), Seg::Key(k)], None) => (f.as_str(), k.as_str()),
        _ => return None,
    };
    platform
        .components_in(env)
        .filter(|c| c.namespace == namespace)
        .find_map(|c| {
            let e = c.config.get("namespace")?.get(field)?.as_map()?.get(key)?;
            Some(if p.key.is_some() {
                e.key_origin.clone()
            } else {
                e.node.origin.clone()
            })
        })
}
