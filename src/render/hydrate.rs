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
//! `gitops-engine/pkg/sync/hook/helm`). Flux's kustomize-controller reads no
//! hook annotation and applies a hook as an ordinary object, beside the
//! rest (fluxcd/pkg `ssa/manager_apply.go` `ApplyAllStaged` stages only
//! CRDs, ClusterRoles, namespaces and classes first), where helm-controller
//! would have run it through Helm's install and upgrade actions, pre-hooks
//! before the release's objects and post-hooks after them
//! (fluxcd/helm-controller `internal/action/install.go`). So a Flux tree
//! gives each phase a folder and a Kustomization of its own: pre-install and
//! pre-upgrade hooks in `components/<c>/pre-hooks/`, applied and waited for
//! before the component's Kustomization; post-install and post-upgrade
//! hooks in `post-hooks/`, after it. A hook of no install or upgrade phase
//! (delete, rollback, test) would run at install as an ordinary object —
//! Longhorn's pre-delete uninstall Job would uninstall Longhorn — so the
//! Flux tree leaves it out, and a note names it.

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
        if flux {
            notes.extend(hooks_notes(c, env, objects));
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

/// Where a Flux tree puts a chart's Helm hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookPhase {
    /// pre-install or pre-upgrade: before the component's objects.
    Pre,
    /// post-install or post-upgrade: after them.
    Post,
    /// Only delete, rollback or test phases: never applied.
    LeftOut,
}

/// The folders of a component's pre- and post-hooks, under its own.
pub const PRE_HOOKS: &str = "pre-hooks";
pub const POST_HOOKS: &str = "post-hooks";

/// A chart object's place in a Flux tree, if it is a Helm hook. A hook of
/// a pre- and a post-phase (`pre-install,post-upgrade`) runs before, as a
/// first install needs it.
pub fn hook_phase(o: &Object) -> Option<HookPhase> {
    let phases: Vec<&str> = hook(o)?.split(',').map(str::trim).collect();
    let has = |p: &[&str]| phases.iter().any(|x| p.contains(x));
    Some(if has(&["pre-install", "pre-upgrade"]) {
        HookPhase::Pre
    } else if has(&["post-install", "post-upgrade"]) {
        HookPhase::Post
    } else {
        HookPhase::LeftOut
    })
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

/// The notes on a hydrated chart's hooks in a Flux tree: those ordered
/// into their own Kustomizations, and those left out.
fn hooks_notes(c: &Component, env: &Environment, objects: &[Object]) -> Vec<Diagnostic> {
    let of = |want: HookPhase| -> Vec<String> {
        objects
            .iter()
            .filter(|o| hook_phase(o) == Some(want))
            .map(|o| format!("{} [{}]", described(o), hook(o).unwrap_or("")))
            .collect()
    };
    let (pre, post, out) = (of(HookPhase::Pre), of(HookPhase::Post), of(HookPhase::LeftOut));
    let mut notes = Vec::new();
    if !pre.is_empty() || !post.is_empty() {
        let mut parts = Vec::new();
        if !pre.is_empty() {
            parts.push(format!(
                "before it, by Kustomization {}-{PRE_HOOKS}: {}",
                c.name,
                pre.join(", ")
            ));
        }
        if !post.is_empty() {
            parts.push(format!(
                "after it, by Kustomization {}-{POST_HOOKS}: {}",
                c.name,
                post.join(", ")
            ));
        }
        notes.push(
            note(
                codes::HYDRATED_HOOK,
                c,
                env,
                format!("Flux applies the Helm hooks of {} in Helm's order, {}", c.name, parts.join("; ")),
            )
            .with_note("each phase's hooks are applied together: Helm's `helm.sh/hook-weight` order within a phase is not kept, and a hook runs again only when it changes")
            .with_help(format!(
                "set `hydrate: false` in {} if the hooks need Helm's own lifecycle (weights, delete policies)",
                c.config_path()
            )),
        );
    }
    if !out.is_empty() {
        notes.push(
            note(
                codes::HOOK_LEFT_OUT,
                c,
                env,
                format!(
                    "the Flux tree leaves out the Helm hooks of {} that belong to no install or upgrade: {}",
                    c.name,
                    out.join(", ")
                ),
            )
            .with_note("kustomize-controller reads no `helm.sh/hook`: a delete, rollback or test hook in the tree would run at install as an ordinary object")
            .with_help(format!(
                "run such a hook by hand when it is due (`helm template` renders it), or set `hydrate: false` in {} so that helm-controller runs it",
                c.config_path()
            )),
        );
    }
    notes
}

fn note(code: &'static str, c: &Component, env: &Environment, message: String) -> Diagnostic {
    let mut d = Diagnostic::warning(code, version_origin(c), message)
        .with_label("this chart")
        .in_env(&env.name);
    d.severity = Severity::Note;
    d
}

/// A chart object as one engine's tree holds it, or `None` where it has no
/// place there (a delete, rollback or test hook in Flux). Flux puts pre-
/// and post-hooks in their own folders, recreates a changed Job (its
/// template is immutable) and never prunes a CRD; Argo CD never prunes a
/// CRD either.
pub fn for_target(mut o: Object, target: Target) -> Option<Object> {
    if target == Target::Flux
        && let Some(phase) = hook_phase(&o)
    {
        let sub = match phase {
            HookPhase::LeftOut => return None,
            HookPhase::Pre => PRE_HOOKS,
            HookPhase::Post => POST_HOOKS,
        };
        o.folder = format!("{}/{sub}", o.folder);
    }
    annotate(&mut o, target);
    Some(o)
}

fn annotate(o: &mut Object, target: Target) {
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
