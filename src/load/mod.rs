//! Stage 1, load: find and read every input (`strata.yaml`, components,
//! environments, contracts, substrate types) into typed, spanned structures.
//! Nothing here renders or judges; it only reports what cannot be read.

pub mod cidr;
pub mod component;
pub mod contract;
pub mod decode;
pub mod engines;
pub mod environment;
pub mod files;
pub mod graph;
pub mod import_contract;
pub mod names;
pub mod project;
pub mod shard;
pub mod substrate;
pub mod templates;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rayon::prelude::*;

pub use component::{Chart, Component, Manifest, SyncMode, Tier};
pub use contract::Contract;
pub use environment::{EngineSettings, Environment, Git, GitRef, Selection, Topology, Waiver};
pub use project::{ChartSettings, Mirror, Project, Target};
pub use shard::Shard;
pub use substrate::SubstrateType;

use crate::diag::{Diagnostic, Sources, codes};
use crate::world::{World, join};
use crate::yaml::{self, Origin};

/// Everything a compile reads.
#[derive(Clone, Debug)]
pub struct Platform {
    pub project: Project,
    pub components: BTreeMap<String, Component>,
    pub environments: BTreeMap<String, Environment>,
    pub substrates: BTreeMap<String, SubstrateType>,
    /// Templates from the repository's `templates/`, by name.
    pub templates: BTreeMap<String, String>,
    /// The secrets of every environment's contract, including environments
    /// not selected: one environment's secret is no less secret in
    /// another's output.
    pub secrets: contract::Secrets,
}

impl Platform {
    /// The layer file names, lowest first, for an environment.
    pub fn layer_files(&self, env: &Environment) -> Vec<String> {
        layer_names(&self.project.layers, &env.name, &env.substrate.0)
    }

    pub fn substrate(&self, env: &Environment) -> Option<&SubstrateType> {
        self.substrates.get(&env.substrate.0)
    }

    /// The node label that carries the physical host for an environment.
    pub fn host_label(&self, env: &Environment) -> String {
        self.project
            .host_label
            .clone()
            .or_else(|| self.substrate(env).map(|s| s.host_label.clone()))
            .unwrap_or_else(|| "kubernetes.io/hostname".to_owned())
    }

    /// The components an environment takes, in name order.
    pub fn components_in<'p>(&'p self, env: &'p Environment) -> impl Iterator<Item = &'p Component> + 'p {
        self.components.values().filter(move |c| env.takes(&c.name))
    }

    /// The targets written for an environment.
    pub fn targets(&self, env: &Environment) -> Vec<Target> {
        env.targets.clone().unwrap_or_else(|| self.project.targets.clone())
    }
}

fn layer_names(patterns: &[String], env: &str, substrate: &str) -> Vec<String> {
    patterns
        .iter()
        .map(|p| p.replace("{env}", env).replace("{substrate}", substrate))
        .collect()
}

/// Loads the platform. `only_env` restricts loading to one environment.
pub fn load(world: &dyn World, sources: &Sources, only_env: Option<&str>) -> Result<Platform, Vec<Diagnostic>> {
    load_with(world, sources, only_env, None)
}

/// [`load`], reading the values layers of the environments in `layers_of`
/// only (of every loaded environment when `None`); [`Platform::read_layers`]
/// reads the others' later.
pub fn load_with(
    world: &dyn World,
    sources: &Sources,
    only_env: Option<&str>,
    layers_of: Option<&BTreeSet<String>>,
) -> Result<Platform, Vec<Diagnostic>> {
    load_selected(world, sources, only_env, None, layers_of)
}

/// [`load_with`], loading only the environments of `shard` when given (the
/// contracts of the others are still read for their secrets).
pub fn load_selected(
    world: &dyn World,
    sources: &Sources,
    only_env: Option<&str>,
    shard: Option<Shard>,
    layers_of: Option<&BTreeSet<String>>,
) -> Result<Platform, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    // Absent, strata.yaml takes its defaults; present but unreadable (a link
    // out of the repository, a loop) it is an error like any other input.
    let project = Project::read(world, sources, &mut diags).map_err(|d| vec![d])?;
    let substrates = substrate::load_all(world, sources, &project.substrates, &mut diags);
    for (name, text) in templates::BUILTIN {
        sources.insert(&Arc::from(format!("<builtin>/templates/{name}")), text);
    }
    sources.insert(&Arc::from(templates::ARGO_HEALTH.0), templates::ARGO_HEALTH.1);

    // Environments.
    let env_names = list_environments(world, &project, &mut diags);
    let mut selected = match select_environments(&project, &env_names, only_env) {
        Ok(s) => s,
        // The folder could not be listed (a link out of the repository,
        // say): that is why, not a missing file.
        Err(_) if env_names.is_empty() && !diags.is_empty() => return Err(diags),
        Err(d) => return Err(vec![d]),
    };
    if let Some(shard) = shard {
        selected.retain(|e| shard.holds(e));
    }
    let (mut environments, secrets) =
        load_environments(world, sources, &project, &substrates, &env_names, &selected, &mut diags);

    // Components, with every layer file any selected environment needs.
    let wanted = wanted_layers(&project, &environments, layers_of);
    let components = load_components(world, sources, &project, &wanted, &mut diags);

    let templates = templates::load(world, sources, &project.templates, &mut diags);

    for env in environments.values_mut() {
        match environment::resolve_selection(env, &components) {
            Ok(s) => env.selected = s,
            Err(d) => diags.extend(d),
        }
    }

    if diags.iter().any(|d| d.severity == crate::diag::Severity::Error) {
        return Err(diags);
    }
    Ok(Platform {
        project,
        components,
        environments,
        substrates,
        templates,
        secrets,
    })
}

/// The environments to load: `only_env`, which must exist, or all of them.
fn select_environments(
    project: &Project,
    env_names: &[String],
    only_env: Option<&str>,
) -> Result<Vec<String>, Diagnostic> {
    let Some(e) = only_env else {
        return Ok(env_names.to_vec());
    };
    if !env_names.iter().any(|n| n == e) {
        let known: Vec<&str> = env_names.iter().map(String::as_str).collect();
        let d = Diagnostic::error(
            codes::IO,
            Origin::file_start(project.environments.as_str()),
            format!("no environment `{e}`: there is no {}/{e}.yaml", project.environments),
        );
        return Err(match decode::suggest(e, &known) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!("environments: {}", known.join(", "))),
        });
    }
    Ok(vec![e.to_owned()])
}

/// Loads the `selected` environments (of `names`, every one); and the
/// secrets of every environment's contract.
fn load_environments(
    world: &dyn World,
    sources: &Sources,
    project: &Project,
    substrates: &BTreeMap<String, SubstrateType>,
    names: &[String],
    selected: &[String],
    diags: &mut Vec<Diagnostic>,
) -> (BTreeMap<String, Environment>, contract::Secrets) {
    let env_results: Vec<Result<Environment, Vec<Diagnostic>>> = selected
        .par_iter()
        .map(|name| load_environment(world, sources, project, substrates, name))
        .collect();
    let mut environments = BTreeMap::new();
    for r in env_results {
        match r {
            Ok(e) => {
                environments.insert(e.name.clone(), e);
            }
            Err(d) => diags.extend(d),
        }
    }
    // The other environments' contracts are read for their secrets only;
    // their problems are reported when they are compiled.
    let others: Vec<contract::Secrets> = names
        .par_iter()
        .filter(|n| !selected.contains(n))
        .filter_map(|name| contract_secrets(world, sources, project, name))
        .collect();
    let secrets = contract::Secrets::union(
        environments
            .values()
            .map(|e: &Environment| &e.contract.secrets)
            .chain(others.iter()),
    );
    (environments, secrets)
}

/// Loads every component folder of the platform directory, reading the
/// layer files in `wanted`.
fn load_components(
    world: &dyn World,
    sources: &Sources,
    project: &Project,
    wanted: &[String],
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Component> {
    let entries = match world.list(&project.platform) {
        Ok(entries) => entries,
        Err(e) => {
            diags.push(files::io_error(&Arc::from(project.platform.as_str()), &e));
            Vec::new()
        }
    };
    // A folder that looks like a component but cannot be loaded stops the
    // compile: leaving it out would remove its files from the tree, and the
    // engines would then prune it from the cluster. Each folder is looked
    // at and loaded on one thread (see crate::pipeline on the pieces of a
    // parallel loop).
    type Loaded = Option<Result<Component, Vec<Diagnostic>>>;
    let found: Vec<(Vec<Diagnostic>, Loaded)> = entries
        .par_iter()
        .with_max_len(1)
        .map(|e| match component::classify(world, &project.platform, e) {
            component::Folder::Component => {
                let dir = join(&project.platform, &e.name);
                (Vec::new(), Some(component::load(world, sources, &dir, &e.name, wanted)))
            }
            component::Folder::Other(note) => (note.into_iter().collect(), None),
            component::Folder::Refused(d) => (vec![d], None),
        })
        .collect();
    let mut folders = 0;
    let mut components = BTreeMap::new();
    let mut load_diags = Vec::new();
    for (notes, loaded) in found {
        diags.extend(notes);
        let Some(loaded) = loaded else { continue };
        folders += 1;
        match loaded {
            Ok(c) => {
                components.insert(c.name.clone(), c);
            }
            Err(d) => load_diags.extend(d),
        }
    }
    diags.extend(load_diags);
    if folders == 0 && !diags.iter().any(|d| d.severity == crate::diag::Severity::Error) {
        diags.push(
            Diagnostic::error(
                codes::IO,
                Origin::file_start(project.platform.as_str()),
                format!("no components: {} has no component folders", project.platform),
            )
            .with_help(
                "each component is a folder with a config.yaml; set `platform:` in strata.yaml if they live elsewhere",
            ),
        );
    }
    components
}

/// The layer file names that the environments in `of` (every one when
/// `None`) take, each once.
fn wanted_layers(
    project: &Project,
    environments: &BTreeMap<String, Environment>,
    of: Option<&BTreeSet<String>>,
) -> Vec<String> {
    let mut wanted: Vec<String> = environments
        .values()
        .filter(|e| of.is_none_or(|of| of.contains(&e.name)))
        .flat_map(|e| layer_names(&project.layers, &e.name, &e.substrate.0))
        .collect();
    wanted.sort();
    wanted.dedup();
    wanted
}

impl Platform {
    /// Reads the values layers that the environments in `envs` take, for a
    /// platform loaded without them (see [`load_with`]); a component's layer
    /// read already is kept.
    pub fn read_layers(
        &mut self,
        world: &dyn World,
        sources: &Sources,
        envs: &BTreeSet<String>,
    ) -> Result<(), Vec<Diagnostic>> {
        let wanted = wanted_layers(&self.project, &self.environments, Some(envs));
        let read: Vec<(BTreeMap<String, yaml::Node>, Vec<Diagnostic>)> = self
            .components
            .par_iter()
            .map(|(_, c)| {
                let unread: Vec<String> = wanted.iter().filter(|f| !c.layers.contains_key(*f)).cloned().collect();
                let mut diags = Vec::new();
                let layers = component::read_layers(world, sources, &c.dir, &unread, &mut diags);
                (layers, diags)
            })
            .collect();
        let mut diags = Vec::new();
        for (c, (layers, d)) in self.components.values_mut().zip(read) {
            c.layers.extend(layers);
            diags.extend(d);
        }
        if diags.is_empty() { Ok(()) } else { Err(diags) }
    }
}

fn list_environments(world: &dyn World, project: &Project, diags: &mut Vec<Diagnostic>) -> Vec<String> {
    match world.list(&project.environments) {
        Ok(entries) => {
            let names: Vec<String> = entries
                .into_iter()
                .filter(|e| !e.is_dir)
                .filter_map(|e| e.name.strip_suffix(".yaml").map(str::to_owned))
                .collect();
            if names.is_empty() {
                diags.push(
                    Diagnostic::error(
                        codes::IO,
                        Origin::file_start(project.environments.as_str()),
                        format!("no environments: {} holds no <env>.yaml file", project.environments),
                    )
                    .with_help("add environments/<name>.yaml with `substrate`, `contract` and `git`"),
                );
            }
            names
        }
        Err(e) => {
            diags.push(files::io_error(&Arc::from(project.environments.as_str()), &e));
            Vec::new()
        }
    }
}

fn load_environment(
    world: &dyn World,
    sources: &Sources,
    project: &Project,
    substrates: &BTreeMap<String, SubstrateType>,
    name: &str,
) -> Result<Environment, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let file = join(&project.environments, &format!("{name}.yaml"));
    let node = files::read_yaml(world, sources, &file).map_err(|d| vec![d])?;
    let header = environment::decode_header(&node, &file, &mut diags);
    if !names::is_dns_label(name, 63) {
        diags.push(
            Diagnostic::error(
                codes::NAME,
                node.origin.clone(),
                format!("environment name `{name}` is not a DNS-1123 label"),
            )
            .with_help("rename the file: lower-case letters, digits and `-`"),
        );
    }
    let (Some(substrate), Some(contract_ref)) = (header.substrate, header.contract) else {
        return Err(diags);
    };
    if !substrates.contains_key(&substrate.0) {
        let known: Vec<&str> = substrates.keys().map(String::as_str).collect();
        let mut d = Diagnostic::error(
            codes::SHAPE,
            substrate.1.clone(),
            format!("unknown substrate type `{}`", substrate.0),
        )
        .with_label("no substrates/<type>.yaml describes it");
        d = match decode::suggest(&substrate.0, &known) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!(
                "known types: {}; add substrates/{}.yaml to describe a new one",
                known.join(", "),
                substrate.0
            )),
        };
        diags.push(d);
    }
    let contract = match load_contract(world, sources, &contract_ref, &mut diags) {
        Some(c) => c,
        None => return Err(diags),
    };
    match contract.substrate() {
        Some((s, origin)) if s != substrate.0 => diags.push(
            Diagnostic::error(
                codes::CONTRACT,
                substrate.1.clone(),
                format!(
                    "environment `{name}` says substrate `{}`, but its contract {} says `{s}`",
                    substrate.0, contract.file
                ),
            )
            .with_label("the environment's substrate")
            .with_related(origin.clone(), "the contract's substrate output")
            .with_help("point `contract:` at this substrate's `tofu output -json`, or correct `substrate:`"),
        ),
        Some(_) => {}
        None => diags.push(
            Diagnostic::error(
                codes::CONTRACT,
                Origin::file_start(&contract.file),
                format!("contract {} has no `substrate` output", contract.file),
            )
            .with_help("ADR 0032: every substrate stack outputs `substrate` (kind, talos, …)"),
        ),
    }
    if diags.iter().any(|d| d.severity == crate::diag::Severity::Error) {
        return Err(diags);
    }
    Ok(Environment {
        name: name.to_owned(),
        file,
        substrate,
        contract_path: contract_ref,
        topology: header.topology.0,
        topology_origin: header.topology.1,
        targets: header.targets,
        git: header.git,
        waivers: header.waivers,
        components: header.components,
        selected: Default::default(),
        patches: header.patches,
        engines: header.engines,
        contract,
        origin: node.origin.clone(),
    })
}

fn load_contract(
    world: &dyn World,
    sources: &Sources,
    (path, origin): &(String, Origin),
    diags: &mut Vec<Diagnostic>,
) -> Option<Contract> {
    let rel = match crate::world::normalize(path) {
        Ok(p) => p,
        Err(e) => {
            diags.push(
                Diagnostic::error(codes::IO, origin.clone(), format!("contract path: {e}"))
                    .with_help("keep the contract file inside the repository"),
            );
            return None;
        }
    };
    contract::load(world, sources, &rel, origin, diags)
}

/// The secrets of an environment's contract, read without judging the
/// environment; `None` when it cannot be read.
fn contract_secrets(world: &dyn World, sources: &Sources, project: &Project, name: &str) -> Option<contract::Secrets> {
    let file = join(&project.environments, &format!("{name}.yaml"));
    let text = world.read_text(&file).ok()?;
    let node = yaml::parse(&Arc::from(file.as_str()), &text).ok()?;
    let path = node.get("contract")?;
    let named = (path.as_str()?.to_owned(), path.origin.clone());
    load_contract(world, sources, &named, &mut Vec::new()).map(|c| c.secrets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::FsWorld;

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/homelab");

    #[test]
    fn layers_read_after_the_load_are_the_layers_the_load_reads() {
        let world = FsWorld::new(std::path::Path::new(FIXTURE), "2026-01-01".into()).unwrap();
        let whole = load(&world, &Sources::default(), None).unwrap();
        let layers = |p: &Platform| -> BTreeMap<String, Vec<String>> {
            p.components
                .values()
                .map(|c| (c.name.clone(), c.layers.keys().cloned().collect()))
                .collect()
        };

        let mut later = load_with(&world, &Sources::default(), None, Some(&BTreeSet::new())).unwrap();
        assert!(later.components.values().all(|c| c.layers.is_empty()));
        let staging = BTreeSet::from(["staging".to_owned()]);
        later.read_layers(&world, &Sources::default(), &staging).unwrap();
        let staging_only = load_with(&world, &Sources::default(), None, Some(&staging)).unwrap();
        assert_eq!(layers(&later), layers(&staging_only));
        assert!(
            layers(&later)
                .values()
                .any(|l| l.iter().any(|f| f == "values-staging.yaml"))
        );
        assert!(
            !layers(&later)
                .values()
                .any(|l| l.iter().any(|f| f == "values-production.yaml"))
        );

        let every: BTreeSet<String> = whole.environments.keys().cloned().collect();
        later.read_layers(&world, &Sources::default(), &every).unwrap();
        assert_eq!(layers(&later), layers(&whole));
        for (name, c) in &whole.components {
            assert_eq!(c.layers, later.components[name].layers, "{name}");
        }
    }
}
