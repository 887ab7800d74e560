//! RFC 6902 patches from config.yaml and the environment: on the objects
//! strata generates for a component, and on the objects its chart renders.
//! A patch on chart output is applied to what helm rendered here, so the
//! rules, validation and the diff judge the patched objects; a hydrated
//! tree carries them as patched, and a Flux HelmRelease carries the patch
//! as a post-renderer (helm-controller's `spec.postRenderers[].kustomize
//! .patches`), so that Flux applies the same. Argo CD renders a Helm
//! source itself with no post-renderer: such a patch needs the environment
//! hydrated.

use std::collections::BTreeSet;
use std::sync::Mutex;

use serde_json::{Value as J, json};

use super::hydrate::Delivery;
use super::{EnvRender, Object};
use crate::diag::{Diagnostic, codes};
use crate::load::component::Patch;
use crate::load::{Component, Environment, Platform, Target};
use crate::yaml::{self, Origin};

/// The patches that matched an object, by where they are written.
pub(super) type Matched = Mutex<BTreeSet<Origin>>;

fn matched(into: &Matched, p: &Patch) {
    into.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(p.origin.clone());
}

/// The patches of a component: its config.yaml's, then the environment's
/// for it (or for every component).
pub fn of<'a>(c: &'a Component, env: &'a Environment) -> impl Iterator<Item = &'a Patch> {
    c.patches.iter().chain(
        env.patches
            .iter()
            .filter(move |p| p.component.as_deref().is_none_or(|x| c.name == x)),
    )
}

/// Applies each component's patches on chart output to the objects its
/// chart rendered here; a patch Argo CD could not apply (when `target`
/// renders Argo CD's tree) is an error.
pub(super) fn patch_charts(
    platform: &Platform,
    env: &Environment,
    target: Option<Target>,
    r: &mut EnvRender,
    seen: &Matched,
) -> Result<(), Vec<Diagnostic>> {
    let argo = platform.targets(env).contains(&Target::Argo) && target.is_none_or(|t| t == Target::Argo);
    let mut errors = Vec::new();
    for c in platform.components_in(env) {
        let patches: Vec<&Patch> = of(c, env).filter(|p| !p.on_generated()).collect();
        if patches.is_empty() {
            continue;
        }
        if argo && r.plan.of(&c.name) == Delivery::Release {
            errors.push(argo_cannot(c, env, patches[0]));
            continue;
        }
        let Some(objects) = r.charts.get_mut(&c.name) else {
            continue;
        };
        for o in objects.iter_mut() {
            let (kind, name) = (o.kind().to_owned(), o.name().to_owned());
            let namespace = o.namespace().map(str::to_owned);
            for p in patches.iter().filter(|p| p.targets(&kind, &name, namespace.as_deref())) {
                matched(seen, p);
                if let Err(d) = apply_one(p, &mut o.value, env) {
                    errors.push(d);
                }
            }
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

/// A component's patches on chart output as Flux post-renderer patches:
/// each a target and its JSON 6902 operations as YAML text.
pub(super) fn post_renderers(c: &Component, env: &Environment) -> J {
    let patches: Vec<J> = of(c, env)
        .filter(|p| !p.on_generated())
        .map(|p| {
            let mut target = json!({"kind": p.kind});
            if let Some(n) = &p.name {
                target["name"] = json!(n);
            }
            if let Some(ns) = &p.namespace {
                target["namespace"] = json!(ns);
            }
            json!({"target": target, "patch": yaml::to_canonical_yaml(&p.ops)})
        })
        .collect();
    J::Array(patches)
}

fn argo_cannot(c: &Component, env: &Environment, p: &Patch) -> Diagnostic {
    Diagnostic::error(
        codes::PATCH,
        p.origin.clone(),
        format!(
            "the patch on {} reaches what the chart of {} renders, and Argo CD renders a Helm source itself, with no post-renderer to apply it",
            p.kind, c.name
        ),
    )
    .with_label("a patch on chart output")
    .with_help(format!(
        "hydrate environment {} (`hydrate: true`), so that the patched objects are written as they are, or set the value the chart reads instead",
        env.name
    ))
    .in_env(&env.name)
}

/// Applies one patch to an object's value; an operation that cannot apply
/// is an error at that operation.
fn apply_one(p: &Patch, value: &mut J, env: &Environment) -> Result<(), Diagnostic> {
    let (kind, name) = (
        value["kind"].as_str().unwrap_or("").to_owned(),
        value["metadata"]["name"].as_str().unwrap_or("").to_owned(),
    );
    let patch: json_patch::Patch = serde_json::from_value(p.ops.clone()).map_err(|e| {
        Diagnostic::error(codes::PATCH, p.origin.clone(), format!("not an RFC 6902 patch: {e}"))
            .with_help("each operation is {op: add|remove|replace|move|copy|test, path: /json/pointer, value|from: …}")
    })?;
    json_patch::patch(value, &patch).map_err(|e| {
        let at = match &p.node.value {
            yaml::Value::Seq(items) => items
                .get(e.operation)
                .map_or_else(|| p.origin.clone(), |n| n.origin.clone()),
            _ => p.origin.clone(),
        };
        Diagnostic::error(
            codes::PATCH,
            at,
            format!("the patch cannot be applied to {kind}/{name}: {}", e.kind),
        )
        .with_label("this operation")
        .with_help("check the JSON pointer against the object: `strata render` writes it under rendered/")
        .in_env(&env.name)
    })
}

/// Applies the RFC 6902 patches of a component (its config.yaml and the
/// environment's) to one object strata generated for it. A patch may
/// change the values: an object with deferred values gets them first.
/// An object of no component (the environment's own: its GitRepository,
/// its root) takes the environment's patches that name no component.
pub(super) fn apply_patches(
    c: Option<&Component>,
    env: &Environment,
    object: &mut Object,
    seen: &Matched,
) -> Result<(), Diagnostic> {
    let (kind, name) = (object.kind().to_owned(), object.name().to_owned());
    let namespace = object.namespace().map(str::to_owned);
    let candidates: Box<dyn Iterator<Item = &Patch>> = match c {
        Some(c) => Box::new(of(c, env).filter(|p| p.on_generated())),
        None => Box::new(env.patches.iter().filter(|p| p.component.is_none())),
    };
    let mut patches = candidates
        .filter(|p| p.targets(&kind, &name, namespace.as_deref()))
        .peekable();
    if patches.peek().is_some() {
        object.materialize();
    }
    for p in patches {
        matched(seen, p);
        apply_one(p, &mut object.value, env)?;
    }
    Ok(())
}

/// A warning at each patch of the environment that matched no object it
/// could apply to: a kind, name or namespace that nothing has (a typo, an
/// object the chart no longer renders, a kind the environment's engines do
/// not get). Patches on what a chart renders are judged only where the
/// chart was rendered.
pub(super) fn unmatched(platform: &Platform, env: &Environment, r: &EnvRender, seen: &Matched) -> Vec<Diagnostic> {
    let seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let judged =
        |p: &Patch, c: Option<&Component>| p.on_generated() || c.is_some_and(|c| r.charts.contains_key(&c.name));
    let mut out = Vec::new();
    let mut told = BTreeSet::new();
    let mut check = |p: &Patch, c: Option<&Component>| {
        if !seen.contains(&p.origin) && judged(p, c) && told.insert(p.origin.clone()) {
            out.push(no_match(p, env));
        }
    };
    for c in platform.components_in(env) {
        c.patches.iter().for_each(|p| check(p, Some(c)));
    }
    for p in &env.patches {
        match &p.component {
            Some(name) => check(p, platform.components.get(name).filter(|c| env.takes(&c.name))),
            // A patch for every component is judged on what it could reach
            // anywhere: generated objects, or a chart rendered here.
            None if p.on_generated() || platform.components_in(env).any(|c| r.charts.contains_key(&c.name)) => {
                check(p, None);
            }
            None => {}
        }
    }
    out
}

fn no_match(p: &Patch, env: &Environment) -> Diagnostic {
    let mut target = p.kind.clone();
    if let Some(n) = &p.name {
        target.push_str(&format!(" named {n}"));
    }
    if let Some(ns) = &p.namespace {
        target.push_str(&format!(" in namespace {ns}"));
    }
    Diagnostic::warning(
        codes::PATCH_UNMATCHED,
        p.origin.clone(),
        format!(
            "this patch matches no object in environment {}: nothing strata writes or the chart renders is a {target}",
            env.name
        ),
    )
    .with_label("matches nothing")
    .with_help("check its kind, name and namespace against `strata render`'s output under rendered/, or remove it")
    .in_env(&env.name)
}
