//! The one place strata runs the `helm` binary: it builds the command line,
//! feeds values on standard input, bounds the time and the output, and turns
//! a failure into a message. Nothing else in strata knows a process exists.
//!
//! Helm runs hermetically: its cache, configuration and data folders point at
//! a folder strata owns (so a user's repositories or plugins cannot change
//! what a chart renders), `KUBECONFIG` points nowhere (so `lookup` and
//! capabilities never reach a cluster), and the working directory is that
//! folder.
//!
//! Every helm process is bounded in time twice ([`Bounds`]): each run by a
//! timeout (default [`TIMEOUT`]), and all runs of one command together by
//! a deadline (default [`RUN_DEADLINE`] from when helm is set up), and in
//! memory ([`Limits::memory`], default [`MEMORY`]: a data segment of that
//! size, and Go's soft limit `GOMEMLIMIT` at three quarters of it). It
//! runs confined ([`crate::world::process`]): in a process group of its
//! own, which strata kills whole at every bound and when the run ends;
//! on Linux told to die with the thread that started it, so a strata
//! killed with SIGKILL leaves no `helm template` running. Only pulls see
//! any of the caller's environment: the proxy and CA variables of
//! [`NETWORK_VARS`].

pub mod args;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

pub mod program;
pub mod runner;
pub mod sdk;

pub use runner::{Engine, Runner};
pub use sdk::{Renderer, Template};

/// Largest output strata reads from one helm run. The biggest real charts
/// (with their CRDs) render a few MiB.
pub const MAX_OUTPUT: usize = 64 * 1024 * 1024;

/// How long one helm run may take, unless told otherwise.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// How long all helm runs of one command may take together, unless told
/// otherwise.
pub const RUN_DEADLINE: Duration = Duration::from_secs(600);

/// How much memory one render may take, unless told otherwise: a
/// template that builds a gigabyte is stopped, and strata with it stays
/// within 512 MiB.
pub const MEMORY: u64 = 384 << 20;

/// How long helm may run: each run, and all runs of one command together
/// (counted from when helm is set up; `None`, no such bound); and how much
/// memory one helm process, or the renderer, may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub run: Option<Duration>,
    /// Bytes of data segment (`RLIMIT_DATA`); `GOMEMLIMIT` is three
    /// quarters of it.
    pub memory: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: TIMEOUT,
            run: Some(RUN_DEADLINE),
            memory: MEMORY,
        }
    }
}

impl Limits {
    /// `GOMEMLIMIT` for a program bounded to `memory` bytes: Go's collector
    /// works harder as the heap nears it, well before the hard bound.
    pub fn go_memory_limit(&self) -> String {
        format!("{}MiB", (self.memory / 4 * 3) >> 20)
    }
}

/// The variables of strata's environment that pulls pass on to helm (and
/// that strata's own fetching of Helm repositories honours): proxies and
/// certificate authorities. Renders pass none.
pub const NETWORK_VARS: &[&str] = &[
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// How long runs may take: each one, and all of one command's together,
/// counted from when the bounds were set. The helm binary and the chart
/// renderer are held to the same ones.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    timeout: Duration,
    deadline: Option<Instant>,
    memory: u64,
}

impl Bounds {
    /// `limits` counted from now.
    pub fn from_now(limits: Limits) -> Bounds {
        Bounds {
            timeout: limits.timeout,
            deadline: limits.run.map(|d| Instant::now() + d),
            memory: limits.memory,
        }
    }

    /// Bytes of memory one process may take.
    pub fn memory(&self) -> u64 {
        self.memory
    }

    /// `GOMEMLIMIT` for that memory (see [`Limits::go_memory_limit`]).
    pub fn go_memory_limit(&self) -> String {
        Limits {
            memory: self.memory,
            ..Limits::default()
        }
        .go_memory_limit()
    }

    /// How long one run may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How long the next run may take, and the error if it takes longer:
    /// its own timeout, or what is left before the deadline.
    pub fn next(&self) -> Result<(Duration, HelmError), HelmError> {
        let own = (self.timeout, HelmError::Timeout(self.timeout));
        let Some(deadline) = self.deadline else {
            return Ok(own);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(HelmError::Deadline)
        } else if left < self.timeout {
            Ok((left, HelmError::Deadline))
        } else {
            Ok(own)
        }
    }
}

/// A `helm` binary and the folder it runs in.
#[derive(Clone, Debug)]
pub struct Helm {
    pub path: PathBuf,
    /// Identifies the binary for cache keys: its version line, size and
    /// modification time (a rebuilt helm invalidates the cache).
    pub identity: String,
    /// The version helm reports, for messages.
    pub version: String,
    /// Helm's cache/config/data homes and working directory.
    pub home: PathBuf,
    /// A folder holding registry credentials the user configured for helm
    /// (`helm registry login`), passed on for `pull` only.
    pub user_config: Option<PathBuf>,
    /// How long one run, and all runs of this command, may take.
    pub bounds: Bounds,
    /// The [`NETWORK_VARS`] strata was given, passed on for `pull` only.
    pub network_env: Vec<(String, String)>,
}

/// Why a helm run failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HelmError {
    /// helm could not be started.
    Spawn(String),
    /// helm ran longer than its run's timeout ([`Bounds`]) and was killed.
    Timeout(Duration),
    /// The command's deadline ([`Bounds`]) passed, and helm was killed (or
    /// not started).
    Deadline,
    /// helm printed more than [`MAX_OUTPUT`] bytes.
    TooLarge,
    /// The program rendering (`helm`, or the renderer) needed more memory
    /// than its bound (bytes) and was stopped.
    Memory { program: &'static str, bound: u64 },
    /// The chart renderer failed, not the chart: why, starting with the
    /// renderer's name.
    Renderer(String),
    /// helm exited with an error; its standard error, trimmed.
    Failed(String),
}

impl std::fmt::Display for HelmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HelmError::Spawn(e) => write!(f, "cannot run helm: {e}"),
            HelmError::Timeout(t) => write!(
                f,
                "helm ran for more than {} s and was stopped (the limit of one helm run; STRATA_HELM_TIMEOUT sets it)",
                t.as_secs()
            ),
            HelmError::Deadline => f.write_str(
                "the helm runs of this command passed their deadline, and helm was stopped (STRATA_HELM_DEADLINE sets it)",
            ),
            HelmError::TooLarge => write!(f, "helm printed more than {} MiB", MAX_OUTPUT / (1024 * 1024)),
            HelmError::Memory { program, bound } => write!(
                f,
                "{program} needed more than {} MiB rendering this chart and was stopped (the memory bound of a render; STRATA_HELM_MEMORY sets it, in MiB)",
                bound >> 20
            ),
            HelmError::Renderer(e) | HelmError::Failed(e) => f.write_str(e),
        }
    }
}

/// Finds `helm`: the binary `explicit` names, else the first `helm` on `path_var`.
pub fn find(explicit: Option<&Path>, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return p.is_file().then(|| p.to_path_buf());
    }
    let path_var = path_var?;
    std::env::split_paths(path_var)
        .map(|d| d.join("helm"))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

impl Helm {
    /// Prepares a helm binary to run in `home` (created if needed). Its
    /// version is asked once and remembered in `home`, keyed by the binary's
    /// size and modification time, so that a warm run starts no process.
    pub fn new(path: &Path, home: &Path, user_config: Option<PathBuf>) -> Result<Helm, HelmError> {
        std::fs::create_dir_all(home).map_err(|e| HelmError::Spawn(format!("{}: {e}", home.display())))?;
        let meta = std::fs::metadata(path).map_err(|e| HelmError::Spawn(format!("{}: {e}", path.display())))?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let stamp = format!("{}\n{}\n{mtime}", path.display(), meta.len());
        let key = crate::world::disk::hex(&Sha256::digest(stamp.as_bytes())[..12]);
        let remembered = home.join(format!("version-{key}.txt"));
        let mut helm = Helm {
            path: path.to_path_buf(),
            identity: String::new(),
            version: String::new(),
            home: home.to_path_buf(),
            user_config,
            bounds: Bounds::from_now(Limits::default()),
            network_env: Vec::new(),
        };
        let version = match std::fs::read_to_string(&remembered) {
            Ok(v) if !v.trim().is_empty() => v.trim().to_owned(),
            _ => {
                let out = helm.run(&["version"], None, false)?;
                let v = String::from_utf8_lossy(&out).trim().to_owned();
                crate::world::disk::write_atomic(&remembered, v.as_bytes())
                    .map_err(|e| HelmError::Spawn(format!("{}: {e}", remembered.display())))?;
                v
            }
        };
        helm.identity = format!("{version} size={} mtime={mtime}", meta.len());
        helm.version = short_version(&version);
        Ok(helm)
    }

    /// Sets how long one run may take, and how long all runs of this
    /// command may take together from now.
    pub fn with_limits(mut self, limits: Limits) -> Helm {
        self.bounds = Bounds::from_now(limits);
        self
    }

    /// Passes the proxy and CA variables of [`NETWORK_VARS`] on pulls.
    pub fn with_network_env(mut self, vars: Vec<(String, String)>) -> Helm {
        self.network_env = vars
            .into_iter()
            .filter(|(k, _)| NETWORK_VARS.contains(&k.as_str()))
            .collect();
        self
    }

    /// Runs helm with `args`, `stdin` on its standard input; returns its
    /// standard output. `pull` passes the user's helm configuration
    /// (registry credentials) and the network variables through.
    pub fn run(&self, args: &[&str], stdin: Option<&[u8]>, pull: bool) -> Result<Vec<u8>, HelmError> {
        self.run_both(args, stdin, pull).map(|(out, _)| out)
    }

    /// [`Helm::run`], returning standard error too (what helm printed
    /// besides its output, such as a pull's `Digest:` line, may be on
    /// either).
    pub fn run_both(&self, args: &[&str], stdin: Option<&[u8]>, pull: bool) -> Result<(Vec<u8>, Vec<u8>), HelmError> {
        use crate::world::process::{self, Stopped};
        let limit = self.bounds.next()?;
        let cmd = self.command(args, pull);
        let done = process::run(cmd, stdin, limit.0, MAX_OUTPUT).map_err(|e| match e {
            Stopped::Spawn(e) => HelmError::Spawn(format!("{}: {e}", self.path.display())),
            Stopped::Timeout => limit.1.clone(),
            Stopped::Wait(e) => HelmError::Spawn(e.to_string()),
        })?;
        if !done.status.success() {
            let text = String::from_utf8_lossy(done.stderr.as_deref().unwrap_or_default()).into_owned();
            if out_of_memory(&text) {
                return Err(HelmError::Memory {
                    program: "helm",
                    bound: self.bounds.memory(),
                });
            }
            return Err(HelmError::Failed(failed(&text, done.status)));
        }
        Ok((
            done.stdout.ok_or(HelmError::TooLarge)?,
            done.stderr.ok_or(HelmError::TooLarge)?,
        ))
    }

    /// The command for one run: hermetic environment, own process group,
    /// and on Linux death with strata.
    fn command(&self, args: &[&str], pull: bool) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.args(args)
            .current_dir(&self.home)
            .env_clear()
            .env("HOME", &self.home)
            .env("HELM_CACHE_HOME", self.home.join("cache"))
            .env("HELM_DATA_HOME", self.home.join("data"))
            .env("HELM_CONFIG_HOME", self.home.join("config"))
            .env("KUBECONFIG", self.home.join("no-kubeconfig"))
            .env("HELM_NAMESPACE", "default")
            .env("LC_ALL", "C")
            .env("GOMEMLIMIT", self.bounds.go_memory_limit());
        if pull {
            if let Some(c) = &self.user_config {
                cmd.env("HELM_REGISTRY_CONFIG", c.join("registry/config.json"))
                    .env("HELM_REPOSITORY_CONFIG", c.join("repositories.yaml"));
            }
            cmd.envs(self.network_env.iter().map(|(k, v)| (k, v)));
        }
        crate::world::process::confine(&mut cmd, Some(self.bounds.memory()));
        cmd
    }
}

/// Whether a Go program's standard error says it ran out of memory: its
/// runtime's `fatal error: out of memory…` or `runtime: out of memory:`,
/// or that it could not start a thread. Under the data-segment bound
/// ([`crate::world::process::confine`]) a thread's stack is memory like
/// any other, so a program near its bound fails as often for want of a
/// thread as of heap: with cgo, `runtime/cgo: pthread_create failed`
/// (golang/go src/runtime/cgo/gcc_libinit.c), without,
/// `runtime: failed to create new OS thread` (src/runtime/os_linux.go,
/// `newosproc`).
pub(crate) fn out_of_memory(stderr: &str) -> bool {
    [
        "fatal error: out of memory",
        "runtime: out of memory",
        "runtime/cgo: pthread_create failed",
        "runtime: failed to create new OS thread",
    ]
    .iter()
    .any(|said| stderr.contains(said))
}

/// What a failed helm run says: its cleaned standard error, or how it
/// ended when it said nothing (killed by a signal).
fn failed(stderr: &str, status: std::process::ExitStatus) -> String {
    if !stderr.trim().is_empty() {
        return clean_error(stderr);
    }
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("helm was killed by signal {sig}, without a message");
    }
    format!("helm failed without a message ({status})")
}

/// Helm's error text without the `Error: ` prefix and the usage hints, at
/// most a few lines.
fn clean_error(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .filter(|l| !l.starts_with("Use --debug flag") && !l.starts_with("WARNING:"))
        .map(|l| l.strip_prefix("Error: ").unwrap_or(l))
        .take(12)
        .collect();
    if lines.is_empty() {
        "helm failed without a message".to_owned()
    } else {
        lines.join("\n")
    }
}

/// `v4.3.2` out of `version.BuildInfo{Version:"v4.3.2", …}`.
fn short_version(full: &str) -> String {
    full.split("Version:\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .map_or_else(|| full.chars().take(40).collect(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_gets_what_is_left_of_the_command_s_deadline() {
        let own = Bounds {
            timeout: Duration::from_secs(120),
            deadline: None,
            memory: MEMORY,
        };
        assert_eq!(own.next().unwrap().0, Duration::from_secs(120));
        let near = Bounds {
            deadline: Some(Instant::now() + Duration::from_secs(5)),
            ..own
        };
        let (left, late) = near.next().unwrap();
        assert!(left <= Duration::from_secs(5), "{left:?}");
        assert_eq!(late, HelmError::Deadline);
        let past = Bounds {
            deadline: Some(Instant::now()),
            ..own
        };
        assert_eq!(past.next().unwrap_err(), HelmError::Deadline);
    }

    #[test]
    fn a_go_program_at_its_memory_bound_is_recognised_however_it_fails() {
        for said in [
            "fatal error: out of memory allocating heap arena map",
            "runtime: out of memory: cannot allocate 1073741824-byte block (402653184 in use)\nfatal error: out of memory",
            "runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort",
            "runtime: failed to create new OS thread (have 7 already; errno=11)\nfatal error: newosproc",
        ] {
            assert!(out_of_memory(said), "{said}");
        }
        assert!(!out_of_memory(
            "Error: execution error at (c/templates/a.yaml:3:4): out of range"
        ));
    }

    #[test]
    fn versions_and_errors_read_cleanly() {
        assert_eq!(
            short_version("version.BuildInfo{Version:\"v4.3\", GitCommit:\"\"}"),
            "v4.3"
        );
        assert_eq!(
            clean_error(
                "Error: execution error at (c/templates/a.yaml:3:4): need x\nUse --debug flag to render out invalid YAML\n"
            ),
            "execution error at (c/templates/a.yaml:3:4): need x"
        );
    }
}
