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
//! a deadline (default [`RUN_DEADLINE`] from when helm is set up). It runs in a process group of its own, which strata kills
//! whole when a bound passes; on Linux it is also told to die with the
//! thread that started it (`PR_SET_PDEATHSIG`), so a strata killed with
//! SIGKILL leaves no `helm template` running. Only pulls see any of the
//! caller's environment: the proxy and CA variables of [`NETWORK_VARS`].

pub mod args;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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

/// How long helm may run: each run, and all runs of one command together
/// (counted from when helm is set up; `None`, no such bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub run: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: TIMEOUT,
            run: Some(RUN_DEADLINE),
        }
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
}

impl Bounds {
    /// `limits` counted from now.
    pub fn from_now(limits: Limits) -> Bounds {
        Bounds {
            timeout: limits.timeout,
            deadline: limits.run.map(|d| Instant::now() + d),
        }
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
            HelmError::Failed(e) => f.write_str(e),
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
        let limit = self.bounds.next()?;
        let mut cmd = self.command(args, stdin.is_some(), pull);
        let mut child = cmd
            .spawn()
            .map_err(|e| HelmError::Spawn(format!("{}: {e}", self.path.display())))?;
        let feeder = match (stdin, child.stdin.take()) {
            (Some(bytes), Some(mut pipe)) => {
                let bytes = bytes.to_vec();
                Some(std::thread::spawn(move || {
                    let _ = pipe.write_all(&bytes);
                }))
            }
            _ => None,
        };
        let out = child
            .stdout
            .take()
            .map(|s| std::thread::spawn(move || crate::world::disk::drain_bounded(s, MAX_OUTPUT)));
        let err = child
            .stderr
            .take()
            .map(|s| std::thread::spawn(move || crate::world::disk::drain_bounded(s, MAX_OUTPUT)));
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() > limit.0 => {
                    stop(&mut child);
                    return Err(limit.1);
                }
                Ok(None) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(4));
                }
                Err(e) => {
                    stop(&mut child);
                    return Err(HelmError::Spawn(e.to_string()));
                }
            }
        };
        if let Some(f) = feeder {
            let _ = f.join();
        }
        let stdout = out.and_then(|h| h.join().ok()).unwrap_or(Ok(Vec::new()));
        let stderr = err.and_then(|h| h.join().ok()).unwrap_or(Ok(Vec::new()));
        if !status.success() {
            let text = String::from_utf8_lossy(&stderr.unwrap_or_default()).into_owned();
            return Err(HelmError::Failed(clean_error(&text)));
        }
        Ok((
            stdout.map_err(|_| HelmError::TooLarge)?,
            stderr.map_err(|_| HelmError::TooLarge)?,
        ))
    }

    /// The command for one run: hermetic environment, own process group,
    /// and on Linux death with strata.
    fn command(&self, args: &[&str], stdin: bool, pull: bool) -> Command {
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
            .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if pull {
            if let Some(c) = &self.user_config {
                cmd.env("HELM_REGISTRY_CONFIG", c.join("registry/config.json"))
                    .env("HELM_REPOSITORY_CONFIG", c.join("repositories.yaml"));
            }
            cmd.envs(self.network_env.iter().map(|(k, v)| (k, v)));
        }
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        #[cfg(target_os = "linux")]
        die_with_parent(&mut cmd);
        cmd
    }
}

/// Tells the child, between fork and exec, to be killed when the thread
/// that started it ends (strata exiting or killed, even with SIGKILL).
/// The thread that spawns helm waits for it, so it outlives every run that
/// ends normally.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe functions (prctl, getppid, raise); it
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // strata died before the prctl took effect.
            if libc::getppid() as u32 != parent {
                libc::raise(libc::SIGKILL);
            }
            Ok(())
        });
    }
}

/// Kills a run that passed its bound, with every process it started (its
/// process group), and reaps it.
fn stop(child: &mut std::process::Child) {
    #[cfg(target_os = "linux")]
    kill_group(child.id());
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn kill_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: sends a signal to the process group the child leads (it
        // was started with `process_group(0)`, so its group id is its pid,
        // and the group exists while the child is not reaped).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
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
