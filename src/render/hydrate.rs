//! Hydrated output: the objects a component's chart renders, written into
//! the tree for the engines to apply as they are (`components/<c>/`, every
//! CRD in `crds/`), instead of a Helm release the engine renders itself.
//! What strata validated, judged and diffed is then byte for byte what is
//! applied. A hydrated tree is committed to git, so a chart that renders a
//! `Secret`, any object holding key material (a private key, a token: see
//! [`crate::secrets::material`]), or values it generates at random, cannot
//! be hydrated (E024).
//!
//! Helm hooks in a hydrated tree: Argo CD reads `helm.sh/hook` from any
//! object it syncs and runs pre-/post-install and -upgrade hooks as PreSync
//! and PostSync hooks, ignoring test and rollback hooks (argo-cd,
//! `gitops-engine/pkg/sync/hook/helm`); Flux's kustomize-controller reads no
//! hook annotation and applies a hook as an ordinary object, beside the
//! rest (fluxcd/pkg `ssa`, which stages only CRDs, namespaces and classes
//! first). strata renders with `--skip-tests`, so test hooks never reach the
//! tree, and notes each hook a Flux environment would apply unordered.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value as J, json};

use super::{EnvRender, Object, Source};
use crate::diag::{Diagnostic, Severity, codes};
use crate::load::{Chart, Component, Environment, Platform, Target};
use crate::profiles::version_origin;

/// The folder of every CRD a hydrated environment ships, applied first.
pub const CRDS: &str = "crds";
/// The Flux Kustomization and Argo CD Application that apply [`CRDS`].
pub const CRDS_APP: &str = "strata-crds";

/// How an environment's engines get a component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// A Helm release the engine renders: a HelmRelease, or an Application
    /// with a Helm source.
    Release,
    /// The objects strata rendered from the chart, applied as they are.
    Hydrated,
    /// Its manifests alone: a component without a chart.
    Plain,
}

/// How each component of an environment is delivered.
pub fn deliveries(platform: &Platform, env: &Environment) -> BTreeMap<String, Delivery> {
    let hydrated = env
        .engines
        .hydrate
        .as_ref()
        .map_or(platform.project.hydrate.0, |(h, _)| *h);
    platform
        .components_in(env)
        .map(|c| {
            let d = match &c.chart {
                _ if !has_chart(c) => Delivery::Plain,
                _ if hydrated && c.hydrate != Some(false) => Delivery::Hydrated,
                _ => Delivery::Release,
            };
            (c.name.clone(), d)
        })
        .collect()
}

fn has_chart(c: &Component) -> bool {
    !matches!(c.chart, Chart::None)
}

/// Checks the hydrated components' chart objects and gives each its folder;
/// returns the notes (hooks a Flux environment applies unordered).
pub fn place(
    platform: &Platform,
    env: &Environment,
    r: &mut EnvRender,
    delivery: &BTreeMap<String, Delivery>,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut notes = Vec::new();
    let flux = platform.targets(env).contains(&Target::Flux);
    for (name, _) in delivery.iter().filter(|(_, d)| **d == Delivery::Hydrated) {
        let c = &platform.components[name];
        let Some(objects) = r.charts.get_mut(name) else {
            errors.push(not_rendered(c, env));
            continue;
        };
        // Judged by content, whatever the kind: a ConfigMap may hold a
        // private key as readily as a Secret.
        for o in objects.iter() {
            let held = crate::secrets::material::held(&o.value);
            if o.kind() == "Secret" || held.is_some() {
                errors.push(secret_in_tree(c, env, o, held.as_ref()));
            }
        }
        if let Some(unstable) = r.unstable.get(name).filter(|u| !u.is_empty()) {
            errors.push(random_in_tree(c, env, unstable));
        }
        let hooks: Vec<String> = objects.iter().filter(|o| hook(o).is_some()).map(described).collect();
        if flux && !hooks.is_empty() {
            notes.push(hooks_note(c, env, &hooks));
        }
        for o in objects.iter_mut() {
            o.folder = if o.kind() == "CustomResourceDefinition" {
                CRDS.to_owned()
            } else {
                format!("components/{name}")
            };
        }
    }
    if errors.is_empty() { Ok(notes) } else { Err(errors) }
}

/// The hook annotation of a chart object, if it is a Helm hook.
fn hook(o: &Object) -> Option<&str> {
    o.value["metadata"]["annotations"]["helm.sh/hook"].as_str()
}

/// `Kind/name (template)` of a chart object.
fn described(o: &Object) -> String {
    match &o.source {
        Source::Chart { template } => format!("{} ({template})", o.id()),
        _ => o.id(),
    }
}

fn not_rendered(c: &Component, env: &Environment) -> Diagnostic {
    Diagnostic::error(
        codes::CHART_RENDER,
        version_origin(c),
        format!(
            "environment {} is hydrated, but the chart of {} was not rendered here, so its objects cannot be written",
            env.name, c.name
        ),
    )
    .with_label("this chart")
    .with_help(format!(
        "install helm v4 and run `strata charts pull`, or set `hydrate: false` in {} to keep the component a Helm release",
        c.config_path()
    ))
    .in_env(&env.name)
}

fn secret_in_tree(
    c: &Component,
    env: &Environment,
    o: &Object,
    held: Option<&crate::secrets::material::Held>,
) -> Diagnostic {
    let holding = held.map_or_else(String::new, |h| format!(", which holds {} at {},", h.what, h.at));
    Diagnostic::error(
        codes::HYDRATED_SECRET,
        version_origin(c),
        format!(
            "environment {} is hydrated: {}{holding} would be committed to git in the rendered tree",
            env.name,
            described(o)
        ),
    )
    .with_label("this chart renders it")
    .with_help(format!(
        "set `hydrate: false` in {} (the component stays a Helm release, and the Secret stays out of git), or have the chart read a Secret that an ExternalSecret creates",
        c.config_path()
    ))
    .in_env(&env.name)
}

fn random_in_tree(c: &Component, env: &Environment, unstable: &[String]) -> Diagnostic {
    Diagnostic::error(
        codes::HYDRATED_SECRET,
        version_origin(c),
        format!(
            "environment {} is hydrated: the chart of {} generates values at random ({}), which would be committed to git and change on every render",
            env.name,
            c.name,
            unstable.join(", ")
        ),
    )
    .with_label("this chart")
    .with_help(format!(
        "set `hydrate: false` in {}, or give the chart fixed values for what it generates (an existing Secret, a cert-manager certificate)",
        c.config_path()
    ))
    .in_env(&env.name)
}

fn hooks_note(c: &Component, env: &Environment, hooks: &[String]) -> Diagnostic {
    let mut d = Diagnostic::warning(
        codes::HYDRATED_HOOK,
        version_origin(c),
        format!(
            "Flux applies the Helm hooks of {} as ordinary objects, beside the rest and without Helm's order: {}",
            c.name,
            hooks.join(", ")
        ),
    )
    .with_label("this chart")
    .with_note("Argo CD runs pre- and post-install and -upgrade hooks as PreSync and PostSync hooks, on every sync")
    .with_help(format!(
        "set `hydrate: false` in {} if a hook must run before the release (a migration Job), so that helm-controller runs it",
        c.config_path()
    ))
    .in_env(&env.name);
    d.severity = Severity::Note;
    d
}

/// What the component's objects need in one engine's tree: Flux recreates
/// a changed Job (its template is immutable) and never prunes a CRD; Argo
/// CD never prunes a CRD either.
pub fn for_target(o: &mut Object, target: Target) {
    let crd = o.kind() == "CustomResourceDefinition";
    let job = o.kind() == "Job";
    let annotations: &[(&str, &str)] = match target {
        Target::Flux if crd => &[("kustomize.toolkit.fluxcd.io/prune", "disabled")],
        Target::Flux if job => &[("kustomize.toolkit.fluxcd.io/force", "enabled")],
        Target::Argo if crd => &[("argocd.argoproj.io/sync-options", "Prune=false")],
        _ => &[],
    };
    if annotations.is_empty() {
        return;
    }
    let Some(meta) = o.value.get_mut("metadata").and_then(J::as_object_mut) else {
        return;
    };
    let into = meta.entry("annotations").or_insert_with(|| json!({}));
    if !into.is_object() {
        *into = json!({});
    }
    if let Some(m) = into.as_object_mut() {
        for (k, v) in annotations {
            m.entry(*k).or_insert_with(|| json!(v));
        }
    }
}

/// The components that are never cascade-deleted, whatever their tier:
/// those that ship CRDs (deleting them deletes every custom resource of
/// the kind) and the GitOps engine itself.
pub fn kept(platform: &Platform, env: &Environment, r: &EnvRender) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = r
        .charts
        .iter()
        .filter(|(_, objects)| objects.iter().any(|o| o.kind() == "CustomResourceDefinition"))
        .map(|(c, _)| c.clone())
        .collect();
    out.extend(
        r.workload_objects()
            .filter(|o| o.kind() == "CustomResourceDefinition")
            .filter_map(|o| o.component.clone()),
    );
    out.extend(
        platform
            .components_in(env)
            .filter(|c| is_engine(c))
            .map(|c| c.name.clone()),
    );
    out
}

/// Whether a component is a GitOps engine (Argo CD, Flux): deleting it
/// with its objects would delete the engine that manages everything else.
pub fn is_engine(c: &Component) -> bool {
    ["argo-cd", "flux2", "flux"].contains(&c.chart.name()) || ["argo-cd", "flux2"].contains(&c.profile_name())
}
