//! The command line: clap definitions, one file per command, and the only
//! place that prints. Raw arguments ([`Cli`]) are resolved into a
//! [`Context`] once; commands return an exit code.

mod charts;
mod check;
mod completions;
mod contract;
mod diff;
mod explain;
mod gates;
mod import;
mod init;
mod render;
mod rule;
mod schemas;
mod synthetic;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::diag::{self, Diagnostic, Sources};
use crate::load::project;
use crate::world::FsWorld;

/// Exit codes, as the specification gives them.
pub mod exit {
    pub const OK: i32 = 0;
    /// Findings at error level, a stale tree, or changes with `--exit-code`.
    pub const FINDINGS: i32 = 1;
    /// Usage or input error.
    pub const INPUT: i32 = 2;
}

#[derive(Parser, Debug)]
#[command(
    name = "strata",
    version,
    about = "A GitOps manifest compiler: layered Helm values and a substrate contract in, a checked Flux and Argo CD tree out",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Debug, Clone)]
pub struct Global {
    /// The repository root (default: the nearest folder upwards holding strata.yaml)
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// When to colour output
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print only errors
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Print more about what is done
    #[arg(long, short, global = true, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Worker threads (default: one per core; at most four per core)
    #[arg(long, short, global = true, value_name = "N")]
    pub jobs: Option<usize>,
    /// Render charts with helm: auto (charts in the store, when helm is on
    /// the PATH), helm (all; required), off (judge through profiles);
    /// default: `inflate:` of strata.yaml
    #[arg(long, global = true, value_enum)]
    pub inflate: Option<InflateArg>,
    /// Render every chart with helm, neither reading nor writing the render
    /// cache in .strata/cache/inflate (for checks that must not trust a
    /// restored cache)
    #[arg(long, global = true)]
    pub no_cache: bool,
    /// Only the K-th of N shares of the environments (render, check and
    /// diff), for a CI matrix of N jobs: each environment falls in one
    /// share, by a hash of its name
    #[arg(long, global = true, value_name = "K/N")]
    pub shard: Option<crate::load::Shard>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum InflateArg {
    Auto,
    Helm,
    Off,
}

impl From<InflateArg> for crate::inflate::Mode {
    fn from(a: InflateArg) -> Self {
        match a {
            InflateArg::Auto => crate::inflate::Mode::Auto,
            InflateArg::Helm => crate::inflate::Mode::Helm,
            InflateArg::Off => crate::inflate::Mode::Off,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetArg {
    Flux,
    Argo,
}

impl From<TargetArg> for crate::load::Target {
    fn from(t: TargetArg) -> Self {
        match t {
            TargetArg::Flux => crate::load::Target::Flux,
            TargetArg::Argo => crate::load::Target::Argo,
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Compile the platform and write the rendered tree
    Render(render::RenderArgs),
    /// Load, validate and check the invariants; write nothing
    Check(check::CheckArgs),
    /// Write a synthetic platform for benchmarks
    #[command(hide = true)]
    Generate(synthetic::GenerateArgs),
    /// Compare the rendered tree of a git revision with the working tree's
    Diff(diff::DiffArgs),
    /// Show the final value at a values path and every layer's contribution
    Explain(explain::ExplainArgs),
    /// Print a shell completion script
    Completions(completions::CompletionsArgs),
    /// Print the man page (roff)
    Man,
    /// List the invariant rules, or explain one
    Rule(rule::RuleArgs),
    /// Fetch and pin the charts the platform renders with (uses the network)
    Charts(charts::ChartsArgs),
    /// Fetch the schemas of the kinds the platform renders (uses the network)
    Schemas(schemas::SchemasArgs),
    /// Compute the rollout gates of decision records; check or rewrite the records
    Gates(gates::GatesArgs),
    /// Write an environment's substrate contract from `tofu output -json`, without secrets
    Contract(contract::ContractArgs),
    /// Write a platform skeleton that renders and checks clean (default substrate: kind)
    Init(init::InitArgs),
    /// Write a platform from a Flux tree or Argo CD Applications, and check every release's values
    Import(import::ImportArgs),
}

/// How rendered objects are checked against Kubernetes and CRD schemas.
#[derive(Args, Debug, Clone, Default)]
pub struct SchemaArgs {
    /// A schema location added to `schemas:` of strata.yaml: a folder
    /// (kubeconform or CRDs-catalog layout) or a kubeconform template (repeatable)
    #[arg(long = "schemas", value_name = "DIR")]
    pub schemas: Vec<PathBuf>,
    /// A kind with no schema is an error, not a warning
    #[arg(long)]
    pub strict_schemas: bool,
}

impl SchemaArgs {
    /// The settings, with relative folders taken from the working directory.
    pub fn settings(&self) -> crate::validate::Settings {
        crate::validate::Settings {
            locations: self.schemas.iter().map(|p| cli_path(p).display().to_string()).collect(),
            strict: self.strict_schemas,
        }
    }
}

/// The resolved settings every command runs with.
pub struct Context {
    pub root: PathBuf,
    pub world: FsWorld,
    pub sources: Sources,
    /// Colour on standard error (diagnostics).
    pub color: bool,
    /// Colour on standard output (the diff).
    pub stdout_color: bool,
    pub quiet: bool,
    pub verbose: bool,
    /// How charts are rendered: the mode asked for, helm, the store's root.
    pub inflate: crate::inflate::Settings,
    /// The top of the git repository holding the root, if it is in one.
    pub git_top: GitTop,
    /// `--shard K/N`.
    pub shard: Option<crate::load::Shard>,
}

/// The git top, asked of git on a thread of its own as the command starts
/// and waited for where a command first needs it.
pub struct GitTop {
    asking: std::sync::Mutex<Option<std::thread::JoinHandle<Option<PathBuf>>>>,
    answer: std::sync::OnceLock<Option<PathBuf>>,
}

impl GitTop {
    pub fn ask(root: &Path) -> Self {
        let root = root.to_path_buf();
        GitTop {
            asking: std::sync::Mutex::new(Some(std::thread::spawn(move || crate::world::git::toplevel(&root)))),
            answer: std::sync::OnceLock::new(),
        }
    }

    pub fn get(&self) -> Option<&Path> {
        self.answer
            .get_or_init(|| {
                let asking = self.asking.lock().map(|mut a| a.take()).unwrap_or_default();
                asking.and_then(|h| h.join().ok()).flatten()
            })
            .as_deref()
    }
}

impl Context {
    /// Where the engines find the tree in the git repository: the root's
    /// place below the git top, and `out` (a `--out` folder) when given.
    pub fn layout(&self, out: Option<&Path>) -> crate::render::RepoLayout {
        let rel = |p: &Path, base: &Path| -> Option<String> {
            let r = p.strip_prefix(base).ok()?;
            Some(
                r.components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
            )
        };
        let output = out.and_then(|o| {
            let abs = cli_path(o);
            let abs = abs.canonicalize().unwrap_or(abs);
            rel(&abs, &self.root).or_else(|| {
                // Outside the root: as the git repository names it. Outside
                // the repository no engine reads it, and the tree names its
                // paths as if it were at the `output:` of strata.yaml: no
                // path of this machine goes into it.
                self.git_top
                    .get()
                    .and_then(|t| rel(&abs, t))
                    .map(|r| format!("{}{r}", "../".repeat(self.root_depth())))
            })
        });
        crate::render::RepoLayout {
            root_in_repo: self.git_top.get().and_then(|t| rel(&self.root, t)),
            output,
        }
    }

    /// How many folders the root is below the git top.
    fn root_depth(&self) -> usize {
        self.git_top
            .get()
            .and_then(|t| self.root.strip_prefix(t).ok())
            .map_or(0, |r| r.components().count())
    }

    /// Prints diagnostics to standard error, scrubbed of secrets.
    pub fn report(&self, diags: &mut Vec<Diagnostic>) {
        // What rendered the charts, also when the compile failed.
        self.timings(&[]);
        diag::scrub(diags, &self.sources);
        diag::normalize(diags);
        if diags.is_empty() {
            return;
        }
        let mut shown: Vec<&Diagnostic> = diags
            .iter()
            .filter(|d| !self.quiet || d.severity == diag::Severity::Error)
            .collect();
        // A terminal is no place for a million findings: the first errors
        // (then warnings) in print order, and a count of the rest.
        let total = shown.len();
        if total > MAX_SHOWN {
            let errors: Vec<&Diagnostic> = shown
                .iter()
                .copied()
                .filter(|d| d.severity == diag::Severity::Error)
                .take(MAX_SHOWN)
                .collect();
            let room = MAX_SHOWN - errors.len();
            let others = shown
                .iter()
                .copied()
                .filter(|d| d.severity != diag::Severity::Error)
                .take(room);
            let mut keep: Vec<&Diagnostic> = errors.into_iter().chain(others).collect();
            keep.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
            shown = keep;
        }
        let shown: Vec<Diagnostic> = shown.into_iter().cloned().collect();
        eprint!("{}", diag::render_text(&shown, &self.sources, self.color));
        if total > shown.len() {
            eprintln!(
                "note: {} more diagnostic(s) not shown; the first {MAX_SHOWN} are above",
                total - shown.len()
            );
        }
    }

    /// With `--verbose`, the wall time of each stage of a compile, and what
    /// rendered its charts.
    pub fn timings(&self, timings: &[(&'static str, std::time::Duration)]) {
        if self.verbose {
            for used in self.inflate.used.take() {
                eprintln!("{used}");
            }
            for (stage, t) in timings {
                eprintln!("{stage:>14}: {:.1} ms", t.as_secs_f64() * 1000.0);
            }
        }
    }

    /// Says which environments a shard compiles (or that it has none).
    pub fn shard_note<'e>(&self, envs: impl Iterator<Item = &'e String>) {
        let Some(shard) = self.shard else { return };
        let envs: Vec<&str> = envs.map(String::as_str).collect();
        if envs.is_empty() {
            self.info(&format!("shard {shard} holds no environment: nothing to compile"));
        } else {
            self.info(&format!("shard {shard}: {}", envs.join(", ")));
        }
    }

    pub fn info(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }
}

/// Today's date, from the clock or `STRATA_TODAY` (for reproducible runs).
#[allow(clippy::disallowed_methods)]
fn today() -> String {
    if let Ok(d) = std::env::var("STRATA_TODAY")
        && crate::load::environment::is_date(&d)
    {
        return d;
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    crate::world::civil_date(secs.div_euclid(86_400))
}

#[allow(clippy::disallowed_methods)]
fn want_color(choice: ColorChoice, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && terminal,
    }
}

fn resolve_root(global: &Global) -> Result<PathBuf, String> {
    if let Some(root) = &global.root {
        if !root.is_dir() {
            return Err(format!("--root {}: no such directory", root.display()));
        }
        return project::follow_redirect(root);
    }
    let cwd = std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let found = project::discover(&cwd).ok_or_else(|| {
        format!(
            "no {} in {} or any folder above it\n  = help: run strata inside a platform repository, or pass --root DIR",
            project::FILE,
            cwd.display()
        )
    })?;
    project::follow_redirect(&found)
}

/// The helm binary: `STRATA_HELM` if set, else `helm` on the `PATH`; and the
/// user's helm configuration folder (for registry credentials on pull).
#[allow(clippy::disallowed_methods)]
fn find_helm() -> (Option<PathBuf>, Option<PathBuf>) {
    let explicit = std::env::var_os("STRATA_HELM")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let helm = crate::helm::find(explicit.as_deref(), std::env::var_os("PATH").as_deref());
    let config = std::env::var_os("HELM_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CONFIG_HOME").map(|x| PathBuf::from(x).join("helm")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config/helm")));
    (helm, config)
}

/// The renderer program: `STRATA_HELM_RENDERER` if set (`off` turns the
/// renderer off), else `strata-helm-renderer` on the `PATH`; or why there
/// is none, for `--verbose`.
#[allow(clippy::disallowed_methods)]
fn find_renderer() -> Result<PathBuf, String> {
    let name = crate::helm::sdk::NAME;
    match std::env::var_os("STRATA_HELM_RENDERER").filter(|v| !v.is_empty()) {
        Some(v) if v == "off" => Err("STRATA_HELM_RENDERER=off".to_owned()),
        Some(v) => {
            let p = PathBuf::from(v);
            if p.is_file() {
                Ok(p)
            } else {
                Err(format!(
                    "STRATA_HELM_RENDERER names {}, which is not a file",
                    p.display()
                ))
            }
        }
        None => std::env::var_os("PATH")
            .and_then(|path| std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()))
            .ok_or_else(|| {
                format!("no {name} on the PATH (build it: cd renderer && go build -o <a folder on the PATH>/{name} .)")
            }),
    }
}

/// Runs the command line and returns the exit code.
pub fn run(cli: Cli) -> i32 {
    if let Some(e) = shard_misuse(&cli) {
        eprintln!("error: {e}");
        return exit::INPUT;
    }
    // These need no repository.
    match &cli.command {
        Command::Completions(args) => return completions::completions(args),
        Command::Man => return completions::man(),
        Command::Generate(args) => return synthetic::run(cli.global.quiet, args),
        Command::Rule(args) => return rule::run(args),
        Command::Init(args) => {
            let color = want_color(cli.global.color, std::io::stderr().is_terminal());
            return init::run(color, cli.global.quiet, args);
        }
        Command::Schemas(schemas::SchemasArgs {
            command: schemas::SchemasCommand::Export(args),
        }) => return schemas::export(cli.global.quiet, args),
        Command::Import(args) => {
            let color = want_color(cli.global.color, std::io::stderr().is_terminal());
            return import::run(color, cli.global.quiet, args);
        }
        _ => {}
    }
    let (threads, warning) = worker_threads(cli.global.jobs, available_cores());
    if let Some(w) = warning {
        eprintln!("warning: {w}");
    }
    let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
    let root = match resolve_root(&cli.global) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::INPUT;
        }
    };
    let world = match FsWorld::new(&root, today()) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: cannot open {}: {e}", root.display());
            return exit::INPUT;
        }
    };
    let (helm, user_helm_config) = find_helm();
    let helm_limits = match charts::helm_limits() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::INPUT;
        }
    };
    let renderer = find_renderer();
    let git_top = GitTop::ask(world.root());
    let ctx = Context {
        git_top,
        inflate: crate::inflate::Settings {
            mode: cli.global.inflate.map(Into::into),
            helm,
            state_root: Some(world.root().to_path_buf()),
            user_helm_config,
            no_cache: cli.global.no_cache,
            helm_limits,
            renderer_absent: renderer.as_ref().err().cloned(),
            renderer: renderer.ok(),
            used: crate::inflate::Used::default(),
        },
        root: world.root().to_path_buf(),
        world,
        sources: Sources::default(),
        color: want_color(cli.global.color, std::io::stderr().is_terminal()),
        stdout_color: want_color(cli.global.color, std::io::stdout().is_terminal()),
        quiet: cli.global.quiet,
        verbose: cli.global.verbose,
        shard: cli.global.shard,
    };
    match cli.command {
        Command::Render(args) => render::run(&ctx, &args),
        Command::Check(args) => check::run(&ctx, &args),
        Command::Diff(args) => diff::run(&ctx, &args),
        Command::Explain(args) => explain::run(&ctx, &args),
        Command::Charts(args) => charts::run(&ctx, &args),
        Command::Schemas(args) => schemas::run(&ctx, &args),
        Command::Gates(args) => gates::run(&ctx, &args),
        Command::Contract(args) => contract::run(&ctx, &args),
        Command::Generate(_)
        | Command::Completions(_)
        | Command::Man
        | Command::Rule(_)
        | Command::Init(_)
        | Command::Import(_) => exit::INPUT,
    }
}

/// `--shard` where it does not apply: commands other than render, check
/// and diff, or beside `--env`.
fn shard_misuse(cli: &Cli) -> Option<String> {
    let shard = cli.global.shard?;
    let env = match &cli.command {
        Command::Render(a) => a.env.as_deref(),
        Command::Check(a) => a.env.as_deref(),
        Command::Diff(a) => a.env.as_deref(),
        _ => return Some(format!("--shard {shard} applies to render, check and diff only")),
    };
    env.map(|e| format!("--shard {shard} and --env {e} both select environments; give one of them"))
}

/// The most diagnostics printed to a terminal in one run.
pub const MAX_SHOWN: usize = 200;

/// Worker threads per core at most: more only costs memory (every thread
/// has its own stack and allocator arena) and time.
pub const MAX_JOBS_PER_CORE: usize = 4;

fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The worker threads for `--jobs` (one per core when not given), capped at
/// [`MAX_JOBS_PER_CORE`] per core, and a warning when the cap applies. The
/// pool is always sized here, so `RAYON_NUM_THREADS` cannot ask for more.
pub fn worker_threads(jobs: Option<usize>, cores: usize) -> (usize, Option<String>) {
    let cores = cores.max(1);
    let max = cores * MAX_JOBS_PER_CORE;
    match jobs {
        None => (cores, None),
        Some(n) if n > max => (
            max,
            Some(format!(
                "--jobs {n} is more than {MAX_JOBS_PER_CORE} threads per core ({cores} core(s) here); using {max}"
            )),
        ),
        Some(n) => (n.max(1), None),
    }
}

/// A path given on the command line, relative to the working directory.
pub fn cli_path(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| p.to_path_buf(), |d| d.join(p))
    }
}
