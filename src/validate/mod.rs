//! Stage 4, validate: inputs and rendered objects against JSON Schemas,
//! offline. Three checks, each mapped back to the line a user wrote:
//!
//! - [`inputs`]: `strata.yaml`, every `config.yaml`, every environment file
//!   and every contract (unwrapped from `tofu output -json`) against the
//!   schemas in `schemas/`, embedded in the binary. Input errors.
//! - [`values`]: a component's merged values, per environment, against its
//!   `values.schema.json`; an error points at the layer line that set the
//!   value. Input errors.
//! - [`objects`]: every rendered object against the Kubernetes and CRD
//!   schemas of the configured locations ([`catalog`]). Findings: a schema
//!   error is at error level (nothing is written), a kind without a schema
//!   is a warning (an error with `--strict-schemas`).
//! - [`refused`]: what the API server refuses that no schema location
//!   states — names, labels, annotations, ports ([`server`]) — and
//!   strata's own engine objects against their schemas ([`engine_kinds`]),
//!   on every rendered object, with or without schema locations.
//! - [`engine_crds`]: those engine objects against the CRDs of the engine
//!   chart the environment renders, which say what its release accepts
//!   (E057); what strata's own schemas refuse is not said again.

pub mod apimachinery;
pub mod catalog;
pub mod crd;
mod engine_crds;
pub mod engine_kinds;
pub mod locate;
pub mod message;
mod patched;
pub mod pull;
mod refdoc;
mod refused;
pub mod schemas;
mod server;
pub mod typos;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value as J;

use crate::diag::{Diagnostic, Severity, Sources, codes};
use crate::load::{Component, Platform, Target, project};
use crate::merge::Merged;
use crate::render::{EnvRender, Object, Source};
use crate::world::World;
use crate::yaml::{self, Node, Origin};
use catalog::{Catalog, Gvk, Lookup};
use message::{Problem, Seg, describe};

/// How rendered objects are validated, beyond what `strata.yaml` says.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Extra schema locations (`--schemas`), absolute or from the repository root.
    pub locations: Vec<String>,
    /// A kind without a schema is an error (`--strict-schemas`).
    pub strict: bool,
}

fn sorted(mut problems: Vec<Problem>) -> Vec<Problem> {
    problems.sort();
    problems.dedup();
    problems
}

fn diagnostic(p: &Problem, origin: Origin, message: String) -> Diagnostic {
    let mut d = Diagnostic::error(codes::SCHEMA, origin, message).with_label(p.label.clone());
    if let Some(h) = &p.help {
        d = d.with_help(h.clone());
    }
    d
}

fn check_node(compiled: &schemas::Compiled, node: &Node, skip: impl Fn(&Problem) -> bool) -> Vec<Diagnostic> {
    let instance = node.to_json();
    let problems: Vec<Problem> = compiled
        .validator
        .iter_errors(&instance)
        .flat_map(|e| describe(&e, |e| compiled.known_fields(e)))
        .filter(|p| !skip(p))
        .collect();
    sorted(problems)
        .iter()
        .map(|p| {
            diagnostic(p, locate::origin_in(node, p), p.message.clone())
                .with_note(format!("checked against {}", compiled.name))
        })
        .collect()
}

fn schema_unusable(origin: Origin, e: &str) -> Diagnostic {
    Diagnostic::error(codes::BAD_SCHEMA, origin, format!("a schema cannot be used: {e}"))
}

/// Validates strata.yaml, config.yaml files, environments and contracts.
pub fn inputs(world: &dyn World, sources: &Sources, platform: &Platform) -> Vec<Diagnostic> {
    let builtin = |file: &str| schemas::get(file).unwrap_or_else(|| Err(format!("no built-in schema {file}")));
    let reparse = |path: &str| -> Option<Node> {
        let text = sources.get(path)?;
        yaml::parse(&Arc::from(path), &text).ok()
    };
    let run = |file: &str, node: &Node| -> Vec<Diagnostic> {
        match builtin(file) {
            Ok(c) => check_node(&c, node, |_| false),
            Err(e) => vec![schema_unusable(node.origin.clone(), &e)],
        }
    };
    let mut out = Vec::new();
    if let Some(node) = reparse(project::FILE) {
        out.extend(run("strata.schema.json", &node));
    }
    // Each component and each environment on its own, side by side; the
    // findings keep their order.
    let components: Vec<&crate::load::Component> = platform.components.values().collect();
    out.par_extend(
        components
            .par_iter()
            .with_max_len(1)
            .flat_map_iter(|c| run("config.schema.json", &c.config)),
    );
    let mut contract_schemas: BTreeMap<String, Result<Arc<schemas::Compiled>, String>> = BTreeMap::new();
    for env in platform.environments.values() {
        if let Some(name) = platform.substrate(env).and_then(|s| s.contract_schema.as_deref()) {
            contract_schemas
                .entry(name.to_owned())
                .or_insert_with(|| contract_schema(world, platform, name));
        }
    }
    let environments: Vec<&crate::load::Environment> = platform.environments.values().collect();
    out.par_extend(environments.par_iter().with_max_len(1).flat_map_iter(|env| {
        let mut out = Vec::new();
        if let Some(node) = reparse(&env.file) {
            out.extend(run("environment.schema.json", &node));
        }
        let Some(name) = platform.substrate(env).and_then(|s| s.contract_schema.as_ref()) else {
            return out;
        };
        let outputs = &env.contract.outputs;
        match &contract_schemas[name] {
            // A required output that is sensitive was dropped at load: it is
            // there, strata only does not keep its value.
            Ok(c) => out.extend(
                check_node(c, outputs, |p| {
                    p.path.is_empty() && p.missing.as_ref().is_some_and(|m| env.contract.sensitive.contains(m))
                })
                .into_iter()
                .map(|d| {
                    d.with_note(format!(
                        "the contract of environment {} (substrate type `{}`)",
                        env.name, env.substrate.0
                    ))
                    .in_env(&env.name)
                }),
            ),
            Err(e) => out.push(schema_unusable(env.substrate.1.clone(), e)),
        }
        out
    }));
    out
}

/// A substrate type's contract schema: a built-in one by file name, or a
/// file of the repository's `substrates/` folder.
fn contract_schema(world: &dyn World, platform: &Platform, name: &str) -> Result<Arc<schemas::Compiled>, String> {
    if let Some(c) = schemas::get(name) {
        return c;
    }
    let path = crate::world::join(&platform.project.substrates, name);
    let text = world
        .read_text(&path)
        .map_err(|e| format!("contract schema {path}: {e}"))?;
    let v: J = serde_json::from_str(&text).map_err(|e| format!("contract schema {path} is not JSON: {e}"))?;
    schemas::compile(&v, &path)
        .map(Arc::new)
        .map_err(|e| format!("contract schema {path}: {e}"))
}

/// Validates each component's merged values against its `values.schema.json`.
pub fn values(platform: &Platform, renders: &[EnvRender]) -> Vec<Diagnostic> {
    values_with(platform, renders, &mut BTreeMap::new())
}

/// Compiled values schemas, by component, kept across environments.
pub type ValuesSchemas = BTreeMap<String, Arc<schemas::Compiled>>;

/// [`values`], for environments compiled one at a time: each component's
/// schema is compiled once into `compiled`.
pub fn values_with(platform: &Platform, renders: &[EnvRender], cache: &mut ValuesSchemas) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for c in platform.components.values() {
        let Some(schema) = &c.values_schema else { continue };
        if !renders.iter().any(|r| r.merged.contains_key(&c.name)) {
            continue;
        }
        let name = crate::world::join(&c.dir, "values.schema.json");
        let compiled = match cache.get(&c.name) {
            Some(v) => Arc::clone(v),
            None => match schemas::compile(&schema.to_json(), &name) {
                Ok(v) => {
                    let v = Arc::new(v);
                    cache.insert(c.name.clone(), Arc::clone(&v));
                    v
                }
                Err(e) => {
                    out.push(
                        Diagnostic::error(
                            codes::BAD_SCHEMA,
                            schema.origin.clone(),
                            format!("{name} is not a valid JSON Schema: {e}"),
                        )
                        .with_help("fix the schema, or remove the file"),
                    );
                    continue;
                }
            },
        };
        for r in renders {
            let Some(merged) = r.merged.get(&c.name) else { continue };
            for d in check_node(&compiled, &merged.values, |_| false) {
                let mut d = d;
                d.message = format!("values of `{}` in environment {}: {}", c.name, r.env, d.message);
                // A field missing at the top has no layer line; point at the lowest layer.
                if d.origin == merged.values.origin
                    && let Some(first) = merged.layers.first()
                {
                    d.origin = Origin::file_start(first.as_str());
                }
                out.push(d.in_env(&r.env));
            }
        }
    }
    out
}

/// One object to validate, with every file it is written to.
struct Item<'a> {
    env: &'a str,
    obj: &'a Object,
    paths: Vec<String>,
    merged: Option<&'a Merged>,
    component: Option<&'a Component>,
}

/// The path of each object's file, as the tree names it.
fn object_paths(output: &str, env: &str, target: Target, objects: &[Object]) -> Vec<String> {
    let top = format!("{output}/{env}/{}", target.name());
    let names = crate::render::file_names(objects);
    objects
        .iter()
        .zip(names)
        .map(|(o, name)| {
            if o.folder.is_empty() {
                format!("{top}/{name}")
            } else {
                format!("{top}/{}/{name}", o.folder)
            }
        })
        .collect()
}

fn pointer(path: &[Seg]) -> String {
    path.iter()
        .map(|s| match s {
            Seg::Key(k) => format!("/{}", k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => format!("/{i}"),
        })
        .collect()
}

fn note(origin: Origin, message: impl Into<String>) -> Diagnostic {
    Diagnostic {
        severity: Severity::Note,
        ..Diagnostic::error(codes::NOT_VALIDATED, origin, message)
    }
}

/// The folders `strata schemas pull` fills, when they exist: the Kubernetes
/// schemas of the pinned version and the CRD schemas of the kinds strata
/// writes, used without any configuration.
fn pulled_locations(world: &dyn World, kubernetes_version: &str) -> Vec<String> {
    let k8s = format!(
        "{}/{}",
        crate::validate::pull::DIR,
        crate::validate::pull::kubernetes_folder(kubernetes_version)
    );
    let crds = format!("{}/crds", crate::validate::pull::DIR);
    [k8s, crds].into_iter().filter(|d| world.is_schema_dir(d)).collect()
}

/// Validates every rendered object against the configured schemas.
pub fn objects(world: &dyn World, platform: &Platform, renders: &[EnvRender], settings: &Settings) -> Vec<Diagnostic> {
    let (mut v, mut out) = Objects::new(world, platform, settings);
    for r in renders {
        out.extend(v.env(r));
    }
    out.extend(v.finish());
    out
}

/// The kinds seen without a schema, for one report each at the end.
#[derive(Default)]
struct Unchecked {
    count: usize,
    /// Where the first object of the kind came from, and its file.
    first: Option<(Origin, String)>,
}

/// Validates rendered objects environment by environment, compiling each
/// kind's schema once for the whole run.
pub struct Objects<'a> {
    world: &'a dyn World,
    platform: &'a Platform,
    settings: &'a Settings,
    catalog: Option<Catalog>,
    /// A schema location is unusable: nothing is validated.
    disabled: bool,
    unchecked: BTreeMap<Gvk, Unchecked>,
}

impl<'a> Objects<'a> {
    /// The validator and what to say up front: that nothing is validated,
    /// or that a schema location cannot be used.
    pub fn new(world: &'a dyn World, platform: &'a Platform, settings: &'a Settings) -> (Objects<'a>, Vec<Diagnostic>) {
        let project = &platform.project;
        let strata_yaml = Origin::file_start(project::FILE);
        let mut locations = project.schemas.clone().unwrap_or_default();
        locations.extend(settings.locations.iter().cloned());
        locations.extend(pulled_locations(world, &project.kubernetes_version));
        // `schemas: []` says so on purpose: no note about it.
        let silent = project.schemas.as_ref().is_some_and(Vec::is_empty);
        let mut out = Vec::new();
        let mut disabled = false;
        let catalog = if locations.is_empty() {
            if !silent {
                out.push(
                    note(
                        strata_yaml.clone(),
                        "rendered objects were not validated against Kubernetes or CRD schemas: no schema locations are configured",
                    )
                    .with_help(
                        "run `strata schemas pull` once (it fetches the schemas into .strata/schemas, used offline afterwards), \
                         list schema folders under `schemas:` in strata.yaml, or pass --schemas DIR; \
                         `schemas: []` turns this note off",
                    ),
                );
            }
            None
        } else {
            match Catalog::new(locations, &project.kubernetes_version) {
                Ok(c) => Some(c),
                Err(e) => {
                    disabled = true;
                    out.push(
                        Diagnostic::error(codes::BAD_SCHEMA, strata_yaml, format!("schema location {e}"))
                            .with_help("variables are .NormalizedKubernetesVersion, .StrictSuffix, .ResourceKind, .ResourceAPIVersion, .Group and .KindSuffix"),
                    );
                    None
                }
            }
        };
        (
            Objects {
                world,
                platform,
                settings,
                catalog,
                disabled,
                unchecked: BTreeMap::new(),
            },
            out,
        )
    }

    /// Validates one environment's objects.
    pub fn env(&mut self, r: &EnvRender) -> Vec<Diagnostic> {
        let (world, platform) = (self.world, self.platform);
        let catalog = self.catalog.as_ref();
        let items = items(platform, r);
        let mut out = refused::check(platform, &items);
        if self.disabled {
            return out;
        }
        // Custom resources are checked first against the CRDs the
        // environment's charts and manifests ship, then against the catalog.
        let crds: BTreeMap<Gvk, Arc<catalog::KindSchema>> =
            crd::registry(r.charts.values().flatten().chain(r.workload_objects()));
        // strata's own engine objects, against the CRDs of the engine the
        // environment runs where its chart is rendered (they, not a
        // catalog, say what that release accepts).
        let engine = engine_crds::EngineCrds::of(platform, r);
        let (engine_items, items): (Vec<Item<'_>>, Vec<Item<'_>>) =
            items.into_iter().partition(|i| engine.covers(i.obj));
        out.extend(engine.check(world, platform, &engine_items));
        if catalog.is_none() && crds.is_empty() {
            // No schema for anything.
            return out;
        }
        let gvk_of = |i: &Item<'_>| (i.obj.api_version().to_owned(), i.obj.kind().to_owned());
        let gvks: BTreeSet<Gvk> = items.iter().map(gvk_of).collect();
        if let Some(catalog) = catalog {
            gvks.par_iter().filter(|g| !crds.contains_key(*g)).for_each(|g| {
                catalog.get(world, g);
            });
        }
        out.par_extend(
            items
                .par_iter()
                .with_max_len(4)
                .flat_map_iter(|item| check_object(world, catalog, platform, item, crds.get(&gvk_of(item)).cloned())),
        );
        // Kinds without a usable schema are reported once, at the end.
        if let Some(catalog) = catalog {
            for item in &items {
                let g = gvk_of(item);
                if crds.contains_key(&g) || matches!(&*catalog.get(world, &g), Lookup::Found(_)) {
                    continue;
                }
                let u = self.unchecked.entry(g).or_default();
                u.count += 1;
                if u.first.is_none() {
                    u.first = Some((item.obj.origin.clone(), item.paths[0].clone()));
                }
            }
        }
        out
    }

    /// One report per kind that had no usable schema.
    pub fn finish(self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        let Some(catalog) = &self.catalog else { return out };
        for (g, u) in &self.unchecked {
            let Some((origin, path)) = &u.first else { continue };
            let count = u.count;
            match &*catalog.get(self.world, g) {
                Lookup::Found(_) => {}
                Lookup::Invalid(why) => out.push(
                    Diagnostic::error(
                        codes::OBJECT,
                        origin.clone(),
                        format!("{why}; {count} object(s) of it were not validated, the first {path}"),
                    )
                    .with_help("give the object the apiVersion and kind of a Kubernetes resource"),
                ),
                Lookup::Missing(tried) => {
                    // The file goes in a note: a file name may carry a
                    // digest of the values (`<component>-values-<hash>`),
                    // and a finding's message is what tells it apart.
                    let message = format!(
                        "no schema for {} ({}): {count} object(s) of this kind were not validated",
                        g.1, g.0
                    );
                    let mut d = if self.settings.strict {
                        Diagnostic::error(codes::NO_SCHEMA, origin.clone(), message)
                    } else {
                        Diagnostic::warning(codes::NO_SCHEMA, origin.clone(), message)
                    };
                    d = d.with_help(
                        "add a folder that has it to `schemas:` in strata.yaml or pass --schemas DIR \
                         (for a custom resource, a CRDs-catalog folder: <group>/<kind>_<version>.json)",
                    );
                    if !tried.is_empty() {
                        let shown: Vec<&str> = tried.iter().take(4).map(String::as_str).collect();
                        d = d.with_note(format!("looked for {}", shown.join(", ")));
                    }
                    d = d.with_note(format!("the first is {path}"));
                    if !self.settings.strict {
                        d = d.with_note("with --strict-schemas this is an error");
                    }
                    out.push(d);
                }
                Lookup::Broken { path, error } => out.push(
                    Diagnostic::error(
                        codes::BAD_SCHEMA,
                        origin.clone(),
                        format!("the schema {path} for {} ({}) cannot be used: {error}", g.1, g.0),
                    )
                    .with_help("replace the file with a valid JSON Schema, or remove it"),
                ),
            }
        }
        out
    }
}

/// Every object of an environment to validate: each target's, the objects
/// shared by every target once, and what each inflated chart renders.
fn items<'r>(platform: &'r Platform, r: &'r EnvRender) -> Vec<Item<'r>> {
    let project = &platform.project;
    // Component manifests and cluster objects are the same in every
    // target: validate them once.
    let mut items: Vec<Item<'_>> = Vec::new();
    let mut shared: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (target, objs) in &r.targets {
        let paths = object_paths(&project.output, &r.env, *target, objs);
        for (o, path) in objs.iter().zip(paths) {
            // A hydrated chart's objects are validated with the chart's.
            if matches!(o.source, Source::Chart { .. }) {
                continue;
            }
            if o.source != Source::Generated {
                // The same object in every target, whatever its folder there.
                let key = (o.component.clone().unwrap_or_default(), o.id());
                if let Some(&i) = shared.get(&key) {
                    items[i].paths.push(path);
                    continue;
                }
                shared.insert(key, items.len());
            }
            let component = o.component.as_ref().and_then(|c| platform.components.get(c));
            items.push(Item {
                env: &r.env,
                obj: o,
                paths: vec![path],
                merged: o.component.as_ref().and_then(|c| r.merged.get(c)),
                component,
            });
        }
    }
    // What each inflated chart renders: validated as users' CI validates
    // `helm template` output, with kubeconform -strict.
    for (component, objs) in &r.charts {
        for o in objs {
            let template = match &o.source {
                Source::Chart { template } => template.as_str(),
                _ => "",
            };
            items.push(Item {
                env: &r.env,
                obj: o,
                paths: vec![format!("chart of {component} ({template})")],
                merged: r.merged.get(component),
                component: platform.components.get(component),
            });
        }
    }
    items
}

fn check_object(
    world: &dyn World,
    catalog: Option<&Catalog>,
    platform: &Platform,
    item: &Item<'_>,
    shipped: Option<Arc<catalog::KindSchema>>,
) -> Vec<Diagnostic> {
    let obj = item.obj;
    let gvk = (obj.api_version().to_owned(), obj.kind().to_owned());
    let lookup;
    let ks: &catalog::KindSchema = match &shipped {
        Some(k) => k,
        None => {
            let Some(catalog) = catalog else { return Vec::new() };
            lookup = catalog.get(world, &gvk);
            match &*lookup {
                Lookup::Found(k) => k,
                _ => return Vec::new(),
            }
        }
    };
    // Deferred values are checked in place, as the file holds them.
    let full = obj.full();
    let problems: Vec<Problem> = ks
        .validator
        .iter_errors(&full)
        .flat_map(|e| describe(&e, |e| schemas::known_fields(&ks.docs, &ks.root, e)))
        .collect();
    // A field strata's own schema of an engine kind already refuses is
    // reported once, by that check (E051, in `refused`); a catalog's or the
    // engine chart's CRD adds only what it refuses beyond it.
    let own = engine_kinds::refused_at(obj);
    let problems = problems
        .into_iter()
        .filter(|p| !own.contains(&(p.path.clone(), p.key.clone())));
    sorted(problems.collect())
        .iter()
        .map(|p| {
            let (origin, via) = locate_object(platform, item, &full, p);
            let mut d = diagnostic(p, origin, format!("{} in {}: {}", obj.id(), item.paths[0], p.message));
            if let Some(v) = via {
                d = d.with_note(v);
            }
            if item.paths.len() > 1 {
                d = d.with_note(format!("the same object is written to {}", item.paths[1..].join(", ")));
            }
            d.with_note(format!("checked against {}", ks.path)).in_env(item.env)
        })
        .collect()
}

/// The source line behind a problem in a rendered object (`full`: the
/// object with its values in place), and how the value got there when it
/// passed through a template.
fn locate_object(platform: &Platform, item: &Item<'_>, full: &J, p: &Problem) -> (Origin, Option<String>) {
    let obj = item.obj;
    let instance = full.pointer(&pointer(&p.path)).cloned().unwrap_or(J::Null);
    match &obj.source {
        Source::Generated => (locate_generated(platform, item, p), None),
        Source::Manifest => locate_in_manifest(item, p, &instance),
        Source::Chart { template } => {
            if let Some(values) = item.merged
                && let Some(o) = locate::in_values(&values.values, p, &instance, "", "values.")
            {
                return (
                    o.clone(),
                    Some(format!(
                        "the value reaches {} through the chart template {template}",
                        obj.id()
                    )),
                );
            }
            (
                obj.origin.clone(),
                Some(format!("{} is rendered by the chart template {template}", obj.id())),
            )
        }
        // Substrate files are no Kubernetes objects: never validated here.
        Source::Substrate { .. } => (obj.origin.clone(), None),
        Source::Cluster => locate_in_cluster_object(platform, item, p, &instance),
    }
}

/// In an object strata generates: the patch operation that wrote the
/// value, the merged values' line for a problem under a release's values,
/// else the component's configuration key.
fn locate_generated(platform: &Platform, item: &Item<'_>, p: &Problem) -> Origin {
    if let Some(o) = patched::origin(platform, item, p) {
        return o;
    }
    let obj = item.obj;
    let prefix: &[&str] = match obj.kind() {
        "HelmRelease" => &["spec", "values"],
        "Application" => &["spec", "source", "helm", "valuesObject"],
        _ => &[],
    };
    let under_values = !prefix.is_empty()
        && p.path.len() >= prefix.len()
        && p.path.iter().zip(prefix).all(|(s, k)| *s == Seg::Key((*k).to_owned()));
    if under_values && let Some(m) = item.merged {
        let sub = Problem {
            path: p.path[prefix.len()..].to_vec(),
            ..p.clone()
        };
        return locate::origin_in(&m.values, &sub);
    }
    let key = p.key.clone().or_else(|| {
        p.path.iter().rev().find_map(|s| match s {
            Seg::Key(k) => Some(k.clone()),
            Seg::Index(_) => None,
        })
    });
    if let (Some(c), Some(k)) = (item.component, key)
        && let Some(o) = locate::find_key(&c.config, &k)
    {
        return o.clone();
    }
    obj.origin.clone()
}

/// In a component's manifest: the line of a plain manifest, or, for a
/// template, the values line the value came from, else the template's.
fn locate_in_manifest(item: &Item<'_>, p: &Problem, instance: &J) -> (Origin, Option<String>) {
    let obj = item.obj;
    let Some(m) = item
        .component
        .and_then(|c| c.manifests.iter().find(|m| *m.path == *obj.origin.file))
    else {
        return (obj.origin.clone(), None);
    };
    if !m.template {
        let doc = yaml::parse_multi(&m.path, &m.text)
            .ok()
            .and_then(|docs| docs.into_iter().find(|d| d.origin.line == obj.origin.line));
        return match doc {
            Some(d) => (locate::origin_in(&d, p), None),
            None => (obj.origin.clone(), None),
        };
    }
    if let Some(values) = item.merged
        && let Some(o) = locate::in_values(&values.values, p, instance, &m.text, "values.")
    {
        return (
            o.clone(),
            Some(format!(
                "the value reaches {} through the template {}",
                obj.id(),
                m.path
            )),
        );
    }
    match locate::in_template(&m.path, &m.text, p) {
        Some(o) => (o, None),
        None => (Origin::file_start(&m.path), None),
    }
}

/// In a cluster object the substrate type generates: the contract output
/// the value came from, through the substrate's templates.
fn locate_in_cluster_object(
    platform: &Platform,
    item: &Item<'_>,
    p: &Problem,
    instance: &J,
) -> (Origin, Option<String>) {
    let obj = item.obj;
    let env = platform.environments.get(item.env);
    let templates: String = env
        .and_then(|e| platform.substrate(e))
        .map(|st| {
            st.generate
                .iter()
                .filter_map(|name| {
                    platform.templates.get(name).map(String::as_str).or_else(|| {
                        crate::load::templates::BUILTIN
                            .iter()
                            .find(|(n, _)| n == name)
                            .map(|(_, t)| *t)
                    })
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    if let Some(e) = env
        && let Some(o) = locate::in_values(&e.contract.outputs, p, instance, &templates, "contract.")
    {
        return (
            o.clone(),
            Some(format!(
                "{} is generated from the contract by substrate type `{}`",
                obj.id(),
                e.substrate.0
            )),
        );
    }
    (obj.origin.clone(), None)
}
