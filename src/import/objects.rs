//! The objects of each imported release, compared: what strata's compile
//! rendered for the component, and what the engine's own render of the
//! release gives — the same chart from the store, the values the source
//! tree gives it, under the engine's release name and namespace, with the
//! chart's CRDs only where the engine installs them (a kustomize
//! `helmCharts:` entry without `includeCRDs: true` drops them), and a
//! kustomization's `namespace:` set on every namespaced object. Both sides
//! run through the same helm and the same Kubernetes version, so any
//! difference comes from the import. Objects a chart renders differently
//! each time are left out of the comparison.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde_json::Value;

use super::{Check, Imported};
use crate::charts::{self, Ready, State};
use crate::diag::{Diagnostic, codes};
use crate::pipeline::Compiled;
use crate::render::scopes::Scopes;
use crate::world::World;

/// The most objects named per release.
const MAX_LISTED: usize = 20;

/// What the comparison of objects found.
#[derive(Debug, Default)]
pub struct Objects {
    /// Releases whose chart rendered.
    pub rendered: usize,
    /// Releases whose objects differ, by (environment, component).
    pub differ: Vec<(Key, Diagnostic)>,
    /// Releases whose chart did not render, each with the reason.
    pub unrendered: Vec<(Key, Diagnostic)>,
}

/// A release: (environment, component).
pub type Key = (String, String);

/// One release to render the engine's way.
struct Job<'a> {
    env: &'a str,
    component: &'a str,
    check: &'a Check,
    ready: &'a Ready,
    values: Vec<u8>,
    api_versions: Option<Vec<String>>,
    ours: &'a [crate::render::Object],
    unstable: &'a [String],
    scopes: Scopes,
}

pub fn compare(
    world: &dyn World,
    compiled: &Compiled,
    planned: &Imported,
    settings: &crate::inflate::Settings,
    blocked: bool,
) -> Objects {
    let mut out = Objects::default();
    let platform = &compiled.platform;
    let lock = charts::lock::read(world, &crate::diag::Sources::default())
        .ok()
        .flatten()
        .unwrap_or_default();
    let Some(root) = settings.state_root.clone() else {
        return out;
    };
    let state = State::new(&root, lock);
    let resolved = charts::resolve(world, platform, &state);
    let engine = engine(&state, settings);
    let kube = kube_version(&platform.project.kubernetes_version);
    let mut jobs = Vec::new();
    for r in &compiled.renders {
        let scopes = Scopes::of(r.charts.values().flatten()).unwrap_or_default();
        for ((env, component), check) in planned.checks.iter().filter(|((e, _), _)| *e == r.env) {
            let Some(ours) = r.charts.get(component) else {
                let why = match (resolved.charts.get(component), &engine) {
                    (Some(Err(_)), _) if planned.not_pulled.contains_key(component) => {
                        planned.not_pulled[component].clone()
                    }
                    (Some(Err(u)), _) => u.reason(),
                    _ if blocked => {
                        "the platform does not compile with its charts rendered (the errors above say why)".to_owned()
                    }
                    (_, None) => "helm is not on the PATH (nor named by STRATA_HELM)".to_owned(),
                    _ => "it was not rendered".to_owned(),
                };
                out.unrendered.push((
                    (env.clone(), component.clone()),
                    unrendered(env, component, check, &why),
                ));
                continue;
            };
            out.rendered += 1;
            let Some(Ok(ready)) = resolved.charts.get(component) else {
                continue;
            };
            let values = planned.expected.get(&(env.clone(), component.clone()));
            jobs.push(Job {
                env,
                component,
                check,
                ready,
                values: serde_json::to_vec(values.unwrap_or(&Value::Null)).unwrap_or_default(),
                api_versions: ready.info.any_uses_api_versions().then(|| api_versions(r)),
                ours,
                unstable: r.unstable.get(component).map_or(&[], Vec::as_slice),
                scopes: scopes.clone(),
            });
        }
    }
    let Some(engine) = engine else { return out };
    let done: Vec<Option<(Key, Diagnostic)>> = jobs
        .par_iter()
        .map(|j| one(&engine, &kube, j).map(|d| ((j.env.to_owned(), j.component.to_owned()), d)))
        .collect();
    out.differ.extend(done.into_iter().flatten());
    out
}

fn unrendered(env: &str, component: &str, check: &Check, why: &str) -> Diagnostic {
    Diagnostic::error(
        codes::IMPORT_UNPROVEN,
        check.origin.clone(),
        format!("component {component} in environment {env} cannot be proven equal: its chart could not be rendered: {why}"),
    )
    .with_help(if why.contains(super::UNPINNED) {
        "write the version the cluster runs in config.yaml, then run `strata charts pull` in the platform"
    } else {
        "run `strata charts pull` in the platform (the import pulls unless --offline), with helm on the PATH, then `strata render`"
    })
    .in_env(env)
}

/// Renders one release as the engine does and compares.
fn one(engine: &crate::helm::Engine, kube: &str, j: &Job<'_>) -> Option<Diagnostic> {
    let t = crate::helm::Template {
        release: &j.check.release,
        chart: &j.ready.path,
        namespace: &j.check.namespace,
        kube_version: kube,
        api_versions: j.api_versions.as_deref(),
        values: &j.values,
    };
    let theirs = match crate::helm::Runner::template(engine, &t)
        .map_err(|e| e.to_string())
        .and_then(|text| crate::inflate::output::parse(&text))
    {
        Ok(r) => r,
        Err(why) => {
            return Some(differ(
                j,
                format!("the engine's render of it fails: {}", first_line(&why)),
                Vec::new(),
            ));
        }
    };
    let crds = format!("{}/crds/", j.ready.info.name);
    let mut want: BTreeMap<String, Value> = BTreeMap::new();
    for r in theirs {
        if !j.check.crds && r.template.starts_with(&crds) {
            continue;
        }
        let mut v = r.value;
        j.scopes.default_namespace(&mut v, &j.check.namespace);
        if let Some(ns) = &j.check.force_namespace
            && v["metadata"]["namespace"].is_string()
        {
            v["metadata"]["namespace"] = Value::String(ns.clone());
        }
        want.insert(id(&v), v);
    }
    let mut have: BTreeMap<String, Value> = BTreeMap::new();
    for o in j.ours {
        let mut v = o.value.clone();
        j.scopes.default_namespace(&mut v, &j.check.namespace);
        have.insert(id(&v), v);
    }
    let mut listed = Vec::new();
    for (k, w) in &want {
        if j.unstable.contains(k) {
            continue;
        }
        match have.get(k) {
            None => listed.push(format!("{k}: the engine renders it, strata does not")),
            Some(h) if h != w => {
                let paths = super::values::differences(w, h, 3);
                let at: Vec<String> = paths.into_iter().map(|(p, _, _)| p).collect();
                listed.push(format!("{k}: differs at {}", at.join(", ")));
            }
            Some(_) => {}
        }
    }
    for k in have
        .keys()
        .filter(|k| !want.contains_key(*k) && !j.unstable.contains(k))
    {
        listed.push(format!("{k}: strata renders it, the engine does not"));
    }
    if listed.is_empty() {
        return None;
    }
    Some(differ(
        j,
        format!("{} object(s) differ from the engine's render", listed.len()),
        listed,
    ))
}

fn differ(j: &Job<'_>, what: String, listed: Vec<String>) -> Diagnostic {
    let mut d = Diagnostic::error(
        codes::IMPORT_OBJECTS,
        j.check.origin.clone(),
        format!("component {} in environment {}: {what}", j.component, j.env),
    )
    .with_help(format!(
        "the engine installs release {} in namespace {}; strata installs component {} there: rename the component, or set what differs in its layers or `patches`",
        j.check.release, j.check.namespace, j.component
    ))
    .in_env(j.env);
    let more = listed.len().saturating_sub(MAX_LISTED);
    for l in listed.into_iter().take(MAX_LISTED) {
        d = d.with_note(l);
    }
    if more > 0 {
        d = d.with_note(format!("and {more} more object(s)"));
    }
    d
}

/// `Kind/namespace/name` of an object, as the render cache names the
/// objects of an unstable chart.
fn id(v: &Value) -> String {
    let kind = v["kind"].as_str().unwrap_or("");
    let ns = v["metadata"]["namespace"]
        .as_str()
        .map(|n| format!("{n}/"))
        .unwrap_or_default();
    let name = v["metadata"]["name"].as_str().unwrap_or("");
    format!("{kind}/{ns}{name}")
}

/// The API versions of the custom resources the environment's charts
/// define, as the compile gives them to a chart that asks.
fn api_versions(r: &crate::render::EnvRender) -> Vec<String> {
    let mut out = std::collections::BTreeSet::new();
    for o in r.charts.values().flatten().chain(r.workload_objects()) {
        if o.kind() != "CustomResourceDefinition" {
            continue;
        }
        let spec = &o.value["spec"];
        let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str()) else {
            continue;
        };
        for v in spec["versions"].as_array().into_iter().flatten() {
            if v["served"].as_bool() == Some(false) {
                continue;
            }
            if let Some(name) = v["name"].as_str()
                && crate::load::names::check_names(&format!("{group}/{name}"), kind).is_ok()
            {
                out.insert(format!("{group}/{name}/{kind}"));
                out.insert(format!("{group}/{name}"));
            }
        }
    }
    out.into_iter().collect()
}

/// The helm the compile rendered with: the renderer, else the binary.
fn engine(state: &State, s: &crate::inflate::Settings) -> Option<crate::helm::Engine> {
    let home = state.dir.join("helm");
    let helm = s
        .helm
        .as_ref()
        .and_then(|p| crate::helm::Helm::new(p, &home, None).ok())
        .map(|h| h.with_limits(s.helm_limits));
    let renderer = s
        .renderer
        .as_ref()
        .and_then(|p| crate::helm::Renderer::new(p, &home).ok())
        .map(|r| r.with_limits(s.helm_limits));
    crate::helm::Engine::new(renderer, helm, None)
}

/// `1.35` → `v1.35.0`, as helm's `--kube-version` reads it.
fn kube_version(v: &str) -> String {
    let v = v.trim_start_matches('v');
    if v.matches('.').count() == 1 {
        format!("v{v}.0")
    } else {
        format!("v{v}")
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}
