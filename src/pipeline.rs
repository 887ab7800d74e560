//! The stages of one compile. [`prepare`] loads the platform and checks the
//! inputs; [`Prepared::run`] then compiles one environment at a time —
//! merge and render, inflate, lay out, validate, the rules — drops its
//! objects, and hands its files to an [`Emit`] (the writer's staging tree,
//! or the checker) beside the next environment's compile, so that memory
//! holds one environment's objects, not the whole tree's. Within an
//! environment the work runs per component in parallel, each parallel loop
//! handing out its items one (or a few) at a time (`with_max_len`): rayon
//! otherwise runs up to a quarter of a list as one piece, and the last piece
//! keeps one thread busy while the other waits at the end of the loop.
//! Commands call [`compile`] when they want everything in memory (diff,
//! gates, explain) and decide what to do with the outcome.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::diag::{Diagnostic, Severity, Sources};
use crate::emit::{self, Files, WriteError};
use crate::load::{self, Environment, Platform, Target};
use crate::render::{self, EnvRender};
use crate::validate;
use crate::world::World;

/// What to compile.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub env: Option<String>,
    /// Only the environments of this share (`--shard K/N`).
    pub shard: Option<load::Shard>,
    pub target: Option<Target>,
    /// Schema locations and strictness for rendered objects.
    pub schemas: validate::Settings,
    /// Whether and how charts are rendered with helm.
    pub inflate: crate::inflate::Settings,
    /// Where the engines find the tree in the git repository.
    pub layout: render::RepoLayout,
    /// Only what a change can reach (see [`Reach`]); everything when `None`.
    pub reach: Option<Reach>,
    /// Read the values layers of these environments only (of every selected
    /// one when `None`); see [`Platform::read_layers`].
    pub layers_of: Option<BTreeSet<String>>,
    /// What this compile shares with the other side of a diff: what the
    /// components its change does not reach merge and render.
    pub shared: Option<Arc<render::Shared>>,
    /// Preview the cluster's admission of each environment's objects
    /// (`strata check`); not run when `None`.
    pub admission: Option<crate::admission::Settings>,
    /// Keep every environment's rendered objects in [`Compiled::renders`]
    /// (diff, gates and explain read them); otherwise each environment's
    /// objects are dropped once its files are out.
    pub keep_renders: bool,
}

/// The environments, and in each the components, whose objects a compile
/// generates. In a reached environment every component is still merged,
/// rendered and judged — the rules see the whole environment — but only
/// the reached components' Flux and Argo CD objects are generated and laid
/// out, and the environment's own objects (namespaces, repositories, the
/// cluster application, bootstrap). Rules that judge one component at a
/// time judge only what the change can reach there (see
/// [`EnvRender::reachable`](render::EnvRender::reachable)): the others
/// read the same inputs on both sides, so their findings cancel out. A
/// reach is for two sides that search for the same secrets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    /// Environment → the components reached there (`None`: all of them).
    pub envs: BTreeMap<String, Option<BTreeSet<String>>>,
}

/// Receives the files of each environment as soon as they are laid out:
/// the writer's staging tree, or the checker.
pub trait Emit: Sync {
    fn put(&self, path: &str, content: &[u8]) -> Result<(), WriteError>;
}

impl Emit for emit::Writer {
    fn put(&self, path: &str, content: &[u8]) -> Result<(), WriteError> {
        emit::Writer::put(self, path, content)
    }
}

impl Emit for emit::Checker {
    fn put(&self, path: &str, content: &[u8]) -> Result<(), WriteError> {
        emit::Checker::put(self, path, content)
    }
}

/// Why a compile stopped.
#[derive(Debug)]
pub enum Failure {
    /// Input errors (exit code 2): nothing could be compiled.
    Input(Vec<Diagnostic>),
    /// The files could not be handed on.
    Emit(WriteError),
}

/// A finished compile: the inputs, the rendered objects when kept, the
/// files when no [`Emit`] took them, and every finding of the checks.
pub struct Compiled {
    pub platform: Platform,
    /// Every compiled environment's objects, with [`Options::keep_renders`].
    pub renders: Vec<EnvRender>,
    /// The files, when [`compile`] collected them.
    pub files: Files,
    /// How many files the compile laid out.
    pub file_count: usize,
    /// `<env>/<target>` units the compile owns (`""`: the whole tree).
    pub scope: Vec<String>,
    pub findings: Vec<Diagnostic>,
    /// Wall time of each stage, summed over environments, for `--verbose`.
    pub timings: Vec<(&'static str, Duration)>,
}

impl Compiled {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|d| d.severity == Severity::Error)
    }

    /// For a command about to exit: its memory goes back to the system
    /// with the process. Freeing a platform's millions of small values one
    /// by one took a tenth of a render, after the work was done.
    pub fn leave(self) {
        std::mem::forget(self);
    }
}

/// A loaded platform whose inputs passed their schemas, ready to compile.
pub struct Prepared {
    pub platform: Platform,
    /// `<env>/<target>` units the compile owns (`""`: the whole tree).
    pub scope: Vec<String>,
    timings: Timings,
}

/// Wall time per stage, summed, in the order stages first ran.
#[derive(Default)]
struct Timings {
    stages: Vec<(&'static str, Duration)>,
    clock: Option<Instant>,
}

impl Timings {
    fn start(&mut self) {
        self.clock = Some(Instant::now());
    }
    /// Adds the time since the last lap (or start) to `stage`.
    fn lap(&mut self, stage: &'static str) {
        let now = Instant::now();
        let spent = self.clock.map_or(Duration::ZERO, |c| now - c);
        self.clock = Some(now);
        add_time(&mut self.stages, stage, spent);
    }
}

/// Adds `spent` to `stage` in a list of stage times, in the order stages
/// first ran.
pub fn add_time(stages: &mut Vec<(&'static str, Duration)>, stage: &'static str, spent: Duration) {
    match stages.iter_mut().find(|(s, _)| *s == stage) {
        Some((_, t)) => *t += spent,
        None => stages.push((stage, spent)),
    }
}

/// Loads the platform and checks its inputs against their schemas. `Err`
/// holds input errors, scrubbed of the contracts' secrets.
pub fn prepare(world: &dyn World, sources: &Sources, opts: &Options) -> Result<Prepared, Vec<Diagnostic>> {
    let mut timings = Timings::default();
    timings.start();
    let (loaded, ()) = rayon::join(
        || load::load_selected(world, sources, opts.env.as_deref(), opts.shard, opts.layers_of.as_ref()),
        || {
            validate::schemas::warm_up();
            crate::profiles::warm_up();
        },
    );
    let loaded = loaded.and_then(|platform| {
        // Inputs that break their schemas are input errors; rendered
        // objects that break theirs are findings.
        let errors = validate::inputs(world, sources, &platform);
        if errors.is_empty() { Ok(platform) } else { Err(errors) }
    });
    let platform = loaded.map_err(|mut diags| {
        crate::diag::scrub(&mut diags, sources);
        diags
    })?;
    timings.lap("load");
    let scope = scope(&platform, opts);
    Ok(Prepared {
        platform,
        scope,
        timings,
    })
}

/// The units a compile owns: the whole tree when nothing is selected, else
/// each selected environment's selected targets (a shard owns its
/// environments only: it never removes another shard's files).
fn scope(platform: &Platform, opts: &Options) -> Vec<String> {
    if opts.env.is_none() && opts.target.is_none() && opts.shard.is_none() {
        return vec![String::new()];
    }
    let mut scope = Vec::new();
    for env in platform.environments.values() {
        // A shard owns its environments' whole folders, so that a target
        // an environment no longer has goes too.
        if opts.shard.is_some() && opts.target.is_none() {
            scope.push(env.name.clone());
            continue;
        }
        for t in platform.targets(env) {
            if opts.target.is_none_or(|only| only == t) {
                scope.push(emit::unit(&env.name, t.name()));
            }
        }
        // The substrate's files belong to no engine: written with all of them.
        if opts.target.is_none() {
            scope.push(emit::unit(&env.name, render::substrate::SUBSTRATE));
        }
    }
    scope
}

/// Runs every stage, keeping the rendered objects and collecting the files
/// in memory. `Err` holds input errors (exit code 2): nothing could be
/// compiled. Check findings are in [`Compiled::findings`]. Either way, every
/// diagnostic comes back scrubbed of the contracts' secrets.
pub fn compile(world: &dyn World, sources: &Sources, opts: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let opts = Options {
        keep_renders: true,
        ..opts.clone()
    };
    let prepared = prepare(world, sources, &opts)?;
    prepared.collect(world, sources, &opts)
}

/// A failure to hand files on, as a diagnostic, for callers without an
/// emitter of their own (it cannot happen there).
fn emit_error(e: &WriteError) -> Diagnostic {
    Diagnostic::error(
        crate::diag::codes::IO,
        crate::yaml::Origin::file_start(crate::load::project::FILE),
        e.to_string(),
    )
    .with_help(e.help())
}

/// Takes files and keeps none: for a compile whose findings are all that
/// matters (`strata check`).
struct Discard;

impl Emit for Discard {
    fn put(&self, _path: &str, _content: &[u8]) -> Result<(), WriteError> {
        Ok(())
    }
}

/// Runs every stage and keeps only the findings, environment by
/// environment: memory holds no more than one environment's objects.
pub fn judge(world: &dyn World, sources: &Sources, opts: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let prepared = prepare(world, sources, opts)?;
    match prepared.run(world, sources, opts, Some(&Discard)) {
        Ok(c) => Ok(c),
        Err(Failure::Input(d)) => Err(d),
        Err(Failure::Emit(e)) => Err(vec![emit_error(&e)]),
    }
}

impl Prepared {
    /// Compiles every selected environment in turn and hands its files to
    /// `emit` (or collects them, when `None`). An emitter that has already
    /// taken some files must be abandoned when this returns an error or
    /// findings at error level: the tree is incomplete.
    pub fn run(
        self,
        world: &dyn World,
        sources: &Sources,
        opts: &Options,
        emit: Option<&dyn Emit>,
    ) -> Result<Compiled, Failure> {
        let Prepared {
            platform,
            scope,
            mut timings,
        } = self;
        let mut result = run_envs(world, sources, opts, &platform, emit, &mut timings);
        match &mut result {
            Ok(c) => crate::diag::scrub(&mut c.3, sources),
            Err(Failure::Input(diags)) => crate::diag::scrub(diags, sources),
            Err(Failure::Emit(_)) => {}
        }
        let (renders, files, file_count, findings) = result?;
        Ok(Compiled {
            platform,
            renders,
            files,
            file_count,
            scope,
            findings,
            timings: timings.stages,
        })
    }

    /// [`Prepared::collect`] on a copy of the platform, for a caller that
    /// compiles it more than once (the diff, one environment at a time).
    pub fn collect_copy(
        &self,
        world: &dyn World,
        sources: &Sources,
        opts: &Options,
    ) -> Result<Compiled, Vec<Diagnostic>> {
        let copy = Prepared {
            platform: self.platform.clone(),
            scope: self.scope.clone(),
            timings: Timings::default(),
        };
        copy.collect(world, sources, opts)
    }

    /// [`Prepared::run`] keeping the rendered objects and collecting the
    /// files in memory, as [`compile`] does.
    pub fn collect(self, world: &dyn World, sources: &Sources, opts: &Options) -> Result<Compiled, Vec<Diagnostic>> {
        let opts = Options {
            keep_renders: true,
            ..opts.clone()
        };
        match self.run(world, sources, &opts, None) {
            Ok(c) => Ok(c),
            Err(Failure::Input(d)) => Err(d),
            // Nothing was emitted: the files went into memory.
            Err(Failure::Emit(e)) => Err(vec![emit_error(&e)]),
        }
    }
}

type Output = (Vec<EnvRender>, Files, usize, Vec<Diagnostic>);

/// What the stages of a run keep from one environment to the next.
struct Stages<'p, 'w> {
    platform: &'p Platform,
    opts: &'w Options,
    depths: BTreeMap<String, u32>,
    profiles: crate::profiles::Profiles,
    inflater: crate::inflate::Inflater<'p>,
    objects: validate::Objects<'w>,
    settings: crate::invariants::Settings,
    today: String,
    values_schemas: validate::ValuesSchemas,
    typos_seen: BTreeSet<crate::yaml::Origin>,
    engines: render::Engines<'p>,
    /// The tree strata wrote before, as its record lists it.
    previous: Option<emit::Recorded<'w>>,
    findings: Vec<Diagnostic>,
    input_errors: Vec<Diagnostic>,
}

/// The environments a compile is limited to, by its reach or `--env`
/// (all when `None`).
fn compiled_envs(opts: &Options) -> Option<BTreeSet<String>> {
    match (&opts.reach, &opts.env) {
        (Some(reach), _) => Some(reach.envs.keys().cloned().collect()),
        (None, Some(env)) => Some(BTreeSet::from([env.clone()])),
        (None, None) => None,
    }
}

impl<'p, 'w> Stages<'p, 'w> {
    fn new(
        world: &'w dyn World,
        sources: &Sources,
        opts: &'w Options,
        platform: &'p Platform,
    ) -> Result<Stages<'p, 'w>, Failure>
    where
        'p: 'w,
    {
        let depths = render::depths(platform).map_err(Failure::Input)?;
        let profiles = crate::profiles::load(world, sources, &platform.project.profiles).map_err(Failure::Input)?;
        let (inflater, mut findings) =
            crate::inflate::prepare(world, sources, platform, &opts.inflate).map_err(Failure::Input)?;
        let (objects, notes) = validate::Objects::new(world, platform, &opts.schemas);
        findings.extend(notes);
        findings.extend(crate::profiles::coverage(platform, &profiles));
        Ok(Stages {
            platform,
            opts,
            depths,
            profiles,
            inflater,
            objects,
            settings: crate::invariants::Settings::default(),
            today: world.today(),
            values_schemas: validate::ValuesSchemas::new(),
            typos_seen: BTreeSet::new(),
            engines: render::Engines::sharing(opts.shared.clone()),
            previous: emit::Recorded::read(
                world,
                opts.layout.output.as_deref().unwrap_or(&platform.project.output),
                compiled_envs(opts).as_ref(),
            ),
            findings,
            input_errors: Vec::new(),
        })
    }

    /// Runs every stage on one environment and lays out its files; the
    /// render, when the compile keeps it. Input errors of one environment
    /// do not hide another's: they are collected, and `None` comes back.
    fn env(
        &mut self,
        env: &'p Environment,
        only: Option<&BTreeSet<String>>,
        timings: &mut Timings,
    ) -> Option<(Files, Option<EnvRender>)> {
        let r = self.render(env, only, timings);
        let mut r = match r {
            Ok(r) => r,
            Err(d) => {
                self.input_errors.extend(d);
                return None;
            }
        };
        let laid = match emit::layout::layout_env(&r, only) {
            Ok(f) => f,
            Err(d) => {
                self.input_errors.extend(d);
                return None;
            }
        };
        timings.lap("layout");
        self.findings.append(&mut r.notes);
        self.findings.extend(self.objects.env(&r));
        timings.lap("validate");
        let judged = self.judge(&r, only);
        timings.lap("invariants");
        if let Some(settings) = &self.opts.admission {
            self.findings
                .extend(crate::admission::check(self.platform, &r, settings, &self.today));
            timings.lap("admission");
        }
        let kept = if self.opts.keep_renders {
            if let (Some(only), Some(kept)) = (only, &judged) {
                compact(&mut r, only, kept);
            }
            Some(r)
        } else {
            drop_render(r);
            None
        };
        self.engines.forget_unheld();
        Some((laid, kept))
    }

    /// Merge and render, inflate, and the engines' objects.
    fn render(
        &mut self,
        env: &'p Environment,
        only: Option<&BTreeSet<String>>,
        timings: &mut Timings,
    ) -> Result<EnvRender, Vec<Diagnostic>> {
        let platform = self.platform;
        let mut r = render::prepare_env(platform, env, &mut self.engines)?;
        let value_errors = validate::values_with(platform, std::slice::from_ref(&r), &mut self.values_schemas);
        timings.lap("merge+manifests");
        if !value_errors.is_empty() {
            return Err(value_errors);
        }
        let notes = self.inflater.env(&mut r)?;
        self.findings.extend(notes);
        timings.lap("inflate");
        if !self.input_errors.is_empty() {
            return Err(Vec::new());
        }
        let env_opts = render::EnvOptions {
            depths: &self.depths,
            target: self.opts.target,
            layout: &self.opts.layout,
            only,
            // Values are deferred where no object is kept.
            defer_values: !self.opts.keep_renders,
            previous: self.previous.as_ref().map(|p| p as &dyn render::handover::Tree),
        };
        render::finish_env(platform, env, &mut r, &env_opts, &mut self.engines)?;
        timings.lap("render");
        Ok(r)
    }

    /// The typo check and the rules; the components a diff's rules judged.
    fn judge(&mut self, r: &EnvRender, only: Option<&BTreeSet<String>>) -> Option<BTreeSet<String>> {
        let one = std::slice::from_ref(r);
        self.findings.extend(crate::validate::typos::check_with(
            self.platform,
            &self.profiles,
            one,
            &mut self.typos_seen,
        ));
        let judged = only.map(|o| r.reachable(o));
        self.findings.extend(crate::invariants::check(
            self.platform,
            &self.profiles,
            one,
            &self.today,
            &self.settings,
            judged.as_ref(),
            Some(&self.inflater),
        ));
        judged
    }
}

/// Compiles the environments one after another. Each environment's files
/// are handed to the emitter beside the next environment's compile
/// (`rayon::join`), so that neither the write's last files nor the
/// compile's serial steps leave a thread waiting; at most two environments'
/// files are held at once, and `--jobs 1` does one after the other. The
/// `emit` stage time is the writes' own, spent beside the other stages.
fn run_envs(
    world: &dyn World,
    sources: &Sources,
    opts: &Options,
    platform: &Platform,
    emit: Option<&dyn Emit>,
    timings: &mut Timings,
) -> Result<Output, Failure> {
    timings.start();
    let mut stages = Stages::new(world, sources, opts, platform)?;
    timings.lap("prepare");
    let mut renders = Vec::new();
    let mut files = Files::new();
    let mut file_count = 0;
    let mut writing = Duration::ZERO;
    // The previous environment's files, written beside this one's compile.
    let mut pending: Option<Files> = None;
    for env in platform.environments.values() {
        let only = match &opts.reach {
            None => None,
            Some(reach) => match reach.envs.get(&env.name) {
                None => continue,
                Some(only) => only.as_ref(),
            },
        };
        let previous = pending.take();
        let (written, done) = rayon::join(|| write(emit, previous), || stages.env(env, only, timings));
        writing += written.map_err(Failure::Emit)?;
        // A write that outlasted the compile is counted in `emit` only.
        timings.start();
        let Some((laid, kept)) = done else { continue };
        renders.extend(kept);
        file_count += laid.len();
        match emit {
            Some(_) => pending = Some(laid),
            None => files.extend(laid),
        }
    }
    let Stages {
        engines,
        inflater,
        objects,
        mut findings,
        input_errors,
        ..
    } = stages;
    // The last environment's files go out as the engines are dropped.
    let (written, ()) = rayon::join(|| write(emit, pending), || engines.drop_in_parallel());
    writing += written.map_err(Failure::Emit)?;
    add_time(&mut timings.stages, "emit", writing);
    inflater.finish();
    if !input_errors.is_empty() {
        return Err(Failure::Input(input_errors));
    }
    findings.extend(objects.finish());
    crate::diag::normalize(&mut findings);
    Ok((renders, files, file_count, findings))
}

/// Hands one environment's files to the emitter, a few at a time on each
/// thread, then drops them; returns the time it took.
fn write(emit: Option<&dyn Emit>, files: Option<Files>) -> Result<Duration, WriteError> {
    let (Some(emit), Some(files)) = (emit, files) else {
        return Ok(Duration::ZERO);
    };
    let start = Instant::now();
    let each: Vec<(&String, &String)> = files.iter().collect();
    each.par_iter()
        .with_max_len(8)
        .try_for_each(|(path, content)| emit.put(path, content.as_bytes()))?;
    Ok(start.elapsed())
}

/// Drops an environment's objects and merged values on every thread, before
/// the next environment's compile makes its own: freeing their millions of
/// small values one by one is a tenth of a render.
fn drop_render(r: EnvRender) {
    let EnvRender {
        merged,
        targets,
        charts,
        ..
    } = r;
    let objects: Vec<Vec<render::Object>> = targets.into_values().chain(charts.into_values()).collect();
    let merged: Vec<crate::merge::Merged> = merged.into_values().collect();
    rayon::join(
        || {
            objects
                .into_par_iter()
                .for_each(|objects| objects.into_par_iter().with_max_len(32).for_each(drop))
        },
        || merged.into_par_iter().with_max_len(1).for_each(drop),
    );
}

/// Keeps of an environment's render only what a diff compares: the
/// environment's own objects and those of the components `only` reaches,
/// and the merged values and chart objects of the components in `kept`
/// (its [`EnvRender::reachable`]). A chart kept because it asks for the API
/// versions reads the same inputs on both sides, so only what the API
/// versions changed shows.
///
/// Every CRD and custom resource is kept too (the same on both sides, so
/// no change): the review of a diff judges a CRD change against the custom
/// resources still written in a version it drops, and a custom resource
/// against the fields its CRD declares immutable.
fn compact(r: &mut EnvRender, only: &BTreeSet<String>, kept: &BTreeSet<String>) {
    let reached = |c: &Option<String>| c.as_ref().is_none_or(|c| only.contains(c));
    let groups: BTreeSet<String> = r
        .charts
        .values()
        .flatten()
        .chain(r.targets.values().flatten())
        .filter(|o| o.kind() == "CustomResourceDefinition")
        .filter_map(|o| o.value["spec"]["group"].as_str().map(str::to_owned))
        .collect();
    let custom = |o: &render::Object| {
        o.kind() == "CustomResourceDefinition"
            || o.api_version()
                .rsplit_once('/')
                .is_some_and(|(g, _)| groups.contains(g))
    };
    for objects in r.targets.values_mut() {
        objects.retain(|o| reached(&o.component) || custom(o));
    }
    r.merged.retain(|c, _| kept.contains(c));
    r.charts.retain(|c, objects| {
        if kept.contains(c) {
            return true;
        }
        objects.retain(|o| custom(o));
        !objects.is_empty()
    });
}
