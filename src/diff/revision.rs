//! `strata diff --base REV` without the printing: the working tree and a
//! git revision compiled side by side, only where the change can reach and
//! one environment at a time, and compared. The command line turns what
//! this gives (the diff, the steps as they go, or why there is nothing to
//! compare) into output and an exit code.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Diff, bump, diff, reach};
use crate::diag::{Diagnostic, Sources};
use crate::load::project;
use crate::pipeline::{self, Compiled, Options, Prepared, Reach};
use crate::render::{self, RepoLayout};
use crate::world::git::{self, GitError, Revision};
use crate::world::{FsWorld, MemWorld, World};

/// The wall time of each stage of a compile.
pub type Timings = Vec<(&'static str, Duration)>;

/// One side's compile of one environment.
type Compile = Result<Compiled, Vec<Diagnostic>>;

/// What to compare.
pub struct Request<'a> {
    /// The working tree.
    pub world: &'a FsWorld,
    /// Its file texts, for diagnostics.
    pub sources: &'a Sources,
    /// The git revision to compare with.
    pub base: &'a str,
    /// The compile asked for: environment, target, schemas, inflation.
    pub opts: Options,
    /// Compile every component on both sides, not only what the change can
    /// reach.
    pub everything: bool,
}

/// A step of the comparison, as it is taken (for `--verbose`).
pub enum Progress<'a> {
    /// git listed and read the revision in this time; `skipped` were over
    /// the input size limit and not read.
    ReadBase { took: Duration, skipped: &'a [String] },
    /// What the change can reach (`None`: every component; both sides are
    /// compiled whole).
    Reach(Option<&'a Reach>),
    /// The two sides' contracts hold other secrets: both sides are
    /// compiled whole.
    OtherSecrets,
    /// The revision has no such platform or environment: every object is
    /// new.
    NoBase,
    /// The working tree's layers were read, and the base loaded, in this
    /// time.
    LayersAndBase(Duration),
    /// The revision lacks these contracts, which git does not track (a CI
    /// job writes them, and git ignores them): the base reads the working
    /// tree's.
    ContractsFromWorkTree(&'a [String]),
}

/// Why there is nothing to compare.
pub enum Failure {
    /// The working tree does not load or compile.
    Head(Vec<Diagnostic>),
    /// git cannot give the revision.
    Revision(GitError),
    /// The base revision does not compile: its diagnostics, with the base's
    /// own file texts.
    Base {
        commit: String,
        sources: Sources,
        diags: Vec<Diagnostic>,
    },
}

/// The two sides compared.
pub struct Compared {
    pub diff: Diff,
    /// Whether the revision has the platform, and the environment asked for.
    pub has_base: bool,
    /// The stage times of the working tree's compiles and of the base's.
    pub timings: [Timings; 2],
    /// The time spent comparing.
    pub comparing: Duration,
    left: Left,
}

impl Compared {
    /// The commit the revision names.
    pub fn commit(&self) -> &str {
        &self.left.inputs.rev.commit
    }

    /// For a command about to exit: the compiles' memory goes back with the
    /// process, rather than value by value (see [`Compiled::leave`]).
    pub fn leave(self) {
        std::mem::forget(self);
    }
}

/// What the compiles leave behind, held only to be left to the exit: the
/// last environment's compiles, the platforms no compile took, and what
/// both sides read.
struct Left {
    inputs: Inputs,
    _prepared: Option<Prepared>,
    _base_prepared: Option<Prepared>,
    _finished: Vec<(Compiled, Option<Compiled>, Options)>,
}

/// What both sides read: the revision from git, and each side's file texts.
struct Inputs {
    rev: Revision,
    sources: Sources,
    /// The base's texts, sharing the working tree's secrets: its
    /// diagnostics hide the secrets of both sides.
    base_sources: Sources,
    /// Both sides' locks and the chart store, for the chart bumps.
    charts: bump::Charts,
}

impl Inputs {
    fn base_failed(&self, diags: Vec<Diagnostic>) -> Failure {
        Failure::Base {
            commit: self.rev.commit.clone(),
            sources: self.base_sources.clone(),
            diags,
        }
    }
}

/// Compiles the working tree and the revision `req.base`, and compares
/// them. `layout` is asked for once the working tree has loaded (git is
/// asked for it meanwhile); `progress` hears of each step as it is taken.
pub fn compare(
    req: Request<'_>,
    layout: impl FnOnce() -> RepoLayout,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Compared, Failure> {
    let Request {
        world,
        sources,
        base,
        mut opts,
        everything,
    } = req;
    // Nothing is written while the two sides are compared: each folder of
    // the working tree is listed once, for the load and for the reach.
    world.remember_lists();
    // The base reads mostly the same files: each is parsed once.
    let sources = sources.clone().keeping_parses();
    let (prepared, rev, read_base) = read_both(world, &sources, base, &opts);
    let mut prepared = prepared.map_err(Failure::Head)?;
    let mut rev = rev.map_err(Failure::Revision)?;
    let borrowed = untracked_contracts(world, &mut rev);
    if !borrowed.is_empty() {
        progress(Progress::ContractsFromWorkTree(&borrowed));
    }
    progress(Progress::ReadBase {
        took: read_base,
        skipped: &rev.skipped,
    });
    // Asked of git while the platform loaded.
    opts.layout = layout();
    // Both sides compile only what the change can reach: the rest is the
    // same on both by construction.
    let has_base = base_has(&rev.world, opts.env.as_deref());
    if has_base && !everything {
        let sides = reach::Sides {
            head: world,
            base: &rev.world,
            known_same: &rev.as_in_work_tree,
        };
        opts.reach = reach::reach(&sides, &prepared.platform);
    }
    progress(Progress::Reach(opts.reach.as_ref()));
    let base_sources = sources.sharing_secrets();
    let charts = chart_sides(world, &sources, &rev, &base_sources, &opts, base);
    let inputs = Inputs {
        rev,
        sources,
        base_sources,
        charts,
    };
    let started = Instant::now();
    let (compiled_envs, base_prepared) = load_layers(world, &inputs, &mut prepared, &mut opts, has_base, progress)?;
    progress(Progress::LayersAndBase(started.elapsed()));
    opts.layers_of = opts.reach.is_some().then(|| compiled_envs.clone());
    // Compiled whole, both sides' environments are.
    let mut envs = compiled_envs;
    if opts.reach.is_none() {
        envs.extend(
            base_prepared
                .iter()
                .flat_map(|p| p.platform.environments.keys().cloned()),
        );
    }
    let (mut prepared, mut base_prepared) = (Some(prepared), base_prepared);
    let run = compile_each(world, &inputs, &opts, envs, &mut prepared, &mut base_prepared)?;
    Ok(Compared {
        diff: run.diff,
        has_base,
        timings: run.spent,
        comparing: run.compared,
        left: Left {
            inputs,
            _prepared: prepared,
            _base_prepared: base_prepared,
            _finished: run.finished,
        },
    })
}

/// The working tree prepared, its values layers not read yet (they wait
/// for the reach: only the environments a change reaches are compiled, so
/// only theirs are read, on both sides), while git lists and reads the
/// revision; and how long the reading took.
fn read_both(
    world: &FsWorld,
    sources: &Sources,
    base: &str,
    opts: &Options,
) -> (Result<Prepared, Vec<Diagnostic>>, Result<Revision, GitError>, Duration) {
    // No compile reads the rendered tree: the base's is left in git.
    let output = output_folder(world, sources);
    let leave_out = [output.as_str()];
    // git lists and reads the base while the working tree loads. A base
    // file the load has read already, unchanged, is taken from its text;
    // the others are read from the working tree and hashed, on the workers
    // the load leaves idle (waiting on git, or on one large component).
    let first = Options {
        layers_of: Some(BTreeSet::new()),
        ..opts.clone()
    };
    let (prepared, (rev, read_base)) = std::thread::scope(|s| {
        let reading = s.spawn(|| {
            let started = Instant::now();
            let rev = git::list_revision(world.root(), base, &leave_out)
                .and_then(|l| l.read(world.root(), &world.today(), &|path| sources.get(path)));
            (rev, started.elapsed())
        });
        let prepared = pipeline::prepare(world, sources, &first);
        let reading = reading.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (prepared, reading)
    });
    (prepared, rev, read_base)
}

/// Both sides' `strata.lock` (a lock that does not read is reported by
/// the compile that reads it) and the working tree's chart store, which
/// holds every archive pulled at any revision.
fn chart_sides(
    world: &FsWorld,
    sources: &Sources,
    rev: &Revision,
    base_sources: &Sources,
    opts: &Options,
    base: &str,
) -> bump::Charts {
    let lock = |w: &dyn World, s: &Sources| crate::charts::lock::read(w, s).ok().flatten().unwrap_or_default();
    let store = opts
        .inflate
        .state_root
        .as_ref()
        .map(|root| crate::charts::State::new(root, Default::default()).store);
    bump::Charts::new(lock(&rev.world, base_sources), lock(world, sources), store, base)
}

/// The contracts the revision's environments name that it lacks and that
/// git does not track (ignored, or never added: the contract a CI job
/// writes with `tofu output -json`, as SEC002 recommends), read from the
/// working tree into the revision; their paths.
fn untracked_contracts(world: &FsWorld, rev: &mut Revision) -> Vec<String> {
    let missing: Vec<String> = crate::load::environment::contract_paths(&rev.world)
        .into_iter()
        .filter(|p| !rev.world.is_file(p) && world.is_file(p))
        .collect();
    let Some(tracked) = git::tracked(world.root(), &missing) else {
        return Vec::new();
    };
    let mut borrowed = Vec::new();
    for p in missing.into_iter().filter(|p| !tracked.contains(p)) {
        if let Ok(bytes) = world.read(&p) {
            rev.world.insert(&p, bytes);
            borrowed.push(p);
        }
    }
    borrowed
}

/// The rendered tree's folder as `strata.yaml` names it (the default when
/// the file cannot be read: the load reports that).
fn output_folder(world: &dyn World, sources: &Sources) -> String {
    let output = project::Project::read(world, sources, &mut Vec::new())
        .map_or_else(|_| project::DEFAULT_OUTPUT.to_owned(), |p| p.output);
    crate::world::normalize(&output).unwrap_or_default()
}

/// Whether the base revision has the platform, and the environment asked for.
fn base_has(world: &MemWorld, env: Option<&str>) -> bool {
    if !world.is_file(project::FILE) {
        return false;
    }
    let Some(env) = env else { return true };
    let Ok(p) = project::Project::read(world, &Sources::default(), &mut Vec::new()) else {
        // Let the compile report it.
        return true;
    };
    world.is_file(&crate::world::join(&p.environments, &format!("{env}.yaml")))
}

/// Reads the values layers of the environments to compile, on the working
/// tree while the base loads, then the base's; returns those environments,
/// and the base when the revision has the platform.
fn load_layers(
    world: &FsWorld,
    inputs: &Inputs,
    prepared: &mut Prepared,
    opts: &mut Options,
    has_base: bool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(BTreeSet<String>, Option<Prepared>), Failure> {
    let mut compiled_envs: BTreeSet<String> = match &opts.reach {
        Some(reach) => reach.envs.keys().cloned().collect(),
        None => prepared.platform.environments.keys().cloned().collect(),
    };
    // A layer git holds as it is in the working tree was read (and hashed)
    // with the base: its bytes are taken from there, not read again.
    let (rev, sources, base_sources) = (&inputs.rev, &inputs.sources, &inputs.base_sources);
    let work_tree = world.knowing(&rev.world, &rev.as_in_work_tree);
    // The base loads while the working tree reads its layers, and reads its
    // own layers after: most are the same texts, parsed once, by the first.
    let base_first = Options {
        layers_of: Some(BTreeSet::new()),
        ..opts.clone()
    };
    let (layers_read, base_prepared) = rayon::join(
        || prepared.platform.read_layers(&work_tree, sources, &compiled_envs),
        || has_base.then(|| pipeline::prepare(&rev.world, base_sources, &base_first)),
    );
    layers_read.map_err(Failure::Head)?;
    let mut base_prepared = base_prepared.transpose().map_err(|d| inputs.base_failed(d))?;
    // Every environment's output is searched for every contract's secrets:
    // with an environment added or removed, or one that takes another
    // contract, the two sides search for other secrets everywhere, and the
    // change reaches everything.
    if opts.reach.is_some()
        && let Some(base) = &base_prepared
        && base.platform.secrets != prepared.platform.secrets
    {
        opts.reach = None;
        progress(Progress::OtherSecrets);
        compiled_envs = prepared.platform.environments.keys().cloned().collect();
        prepared
            .platform
            .read_layers(&work_tree, sources, &compiled_envs)
            .map_err(Failure::Head)?;
    }
    if let Some(base) = &mut base_prepared {
        // Compiled whole, the base reads every environment's layers: it may
        // have environments the working tree does not.
        let envs = match &opts.reach {
            Some(_) => compiled_envs.clone(),
            None => base.platform.environments.keys().cloned().collect(),
        };
        base.platform
            .read_layers(&rev.world, base_sources, &envs)
            .map_err(|d| inputs.base_failed(d))?;
    } else {
        progress(Progress::NoBase);
    }
    Ok((compiled_envs, base_prepared))
}

/// The environments compiled and compared so far.
#[derive(Default)]
struct Run {
    diff: Diff,
    /// The stage times of the working tree's compiles and of the base's.
    spent: [Timings; 2],
    compared: Duration,
    /// The last environment's compiles, left to the exit.
    finished: Vec<(Compiled, Option<Compiled>, Options)>,
}

/// One environment at a time, both sides side by side (a change to one
/// large component is otherwise compiled on one thread at a time): memory
/// holds one environment's objects of each side. The last environment's
/// compile takes each side's platform; the others compile a copy.
fn compile_each(
    world: &FsWorld,
    inputs: &Inputs,
    opts: &Options,
    envs: BTreeSet<String>,
    prepared: &mut Option<Prepared>,
    base_prepared: &mut Option<Prepared>,
) -> Result<Run, Failure> {
    let mut run = Run::default();
    let last = envs.len().saturating_sub(1);
    for (i, env) in envs.into_iter().enumerate() {
        let one = env_options(opts, env, prepared.as_ref());
        let (head, base) = compile_pair(world, inputs, &one, i == last, prepared, base_prepared);
        let head = head.map_err(Failure::Head)?;
        let base = base.transpose().map_err(|d| inputs.base_failed(d))?;
        add_timings(&mut run.spent[0], &head.timings);
        if let Some(b) = &base {
            add_timings(&mut run.spent[1], &b.timings);
        }
        let started = Instant::now();
        let mut this = diff(base.as_ref(), &head);
        if let Some(b) = &base {
            this.bumps = bump::releases(b, &head, &inputs.charts);
        }
        run.diff.absorb(this);
        run.compared += started.elapsed();
        // Only the last environment's compile, and what its two sides
        // shared, are left to the exit.
        if i == last {
            run.finished.push((head, base, one));
        }
    }
    Ok(run)
}

/// The options of one environment's compile, on both sides. What the
/// change does not reach merges and renders the same on both sides: each
/// such component is done once, for both. (A reach, and so `only`, is
/// there only when the base has the platform.)
fn env_options(opts: &Options, env: String, prepared: Option<&Prepared>) -> Options {
    let only = opts.reach.as_ref().and_then(|r| r.envs.get(&env).cloned()).flatten();
    let shared = only
        .as_ref()
        .zip(prepared)
        .map(|(reached, p)| Arc::new(render::Shared::new(&p.platform, &env, reached)));
    Options {
        reach: Some(Reach {
            envs: BTreeMap::from([(env, only)]),
        }),
        shared,
        ..opts.clone()
    }
}

/// One environment compiled on both sides at once; the last takes the
/// platforms (`last`), the others compile copies.
fn compile_pair(
    world: &FsWorld,
    inputs: &Inputs,
    one: &Options,
    last: bool,
    prepared: &mut Option<Prepared>,
    base_prepared: &mut Option<Prepared>,
) -> (Compile, Option<Compile>) {
    let (head_side, base_side) = if last {
        (prepared.take(), base_prepared.take())
    } else {
        (None, None)
    };
    let (prepared, base_prepared) = (prepared.as_ref(), base_prepared.as_ref());
    let (rev, sources, base_sources) = (&inputs.rev, &inputs.sources, &inputs.base_sources);
    rayon::join(
        || match (head_side, prepared) {
            (Some(p), _) => p.collect(world, sources, one),
            (None, Some(p)) => p.collect_copy(world, sources, one),
            // Not reached: only the last compile takes the platform.
            (None, None) => Err(Vec::new()),
        },
        || match base_side {
            Some(p) => Some(p.collect(&rev.world, base_sources, one)),
            None => base_prepared.map(|p| p.collect_copy(&rev.world, base_sources, one)),
        },
    )
}

/// Sums the stage times of one more compile.
fn add_timings(into: &mut Timings, more: &[(&'static str, Duration)]) {
    for (stage, t) in more {
        pipeline::add_time(into, stage, *t);
    }
}
