//! The client of `strata-helm-renderer` (built from `renderer/`), a long-lived
//! process on Helm's own Go SDK that renders releases byte for byte as
//! `helm template` does, without a process per release. `renderer/README.md`
//! describes the wire protocol this file speaks.
//!
//! One renderer serves a whole run: it is started on the first render (a
//! run whose releases all come from the render cache starts none), renders
//! as many releases at once as strata has worker threads, and is killed
//! when the run drops it. A writer thread sends requests and a reader thread
//! matches responses to their requests by id, so that neither side ever
//! waits on a full pipe; a third thread drains the renderer's standard
//! error and keeps its last lines for messages. The renderer runs as
//! hermetically as the helm binary (see [`super`]): a cleared environment,
//! helm's folders and `HOME` in strata's own folder, `KUBECONFIG` pointing
//! nowhere, `LC_ALL=C`; and as confined: its own process group, killed
//! whole when the run drops it or a request passes its deadline (a wrapper
//! script's children included), a bounded data segment and `GOMEMLIMIT`.
//!
//! A renderer that dies of its memory bound takes every render under way
//! with it, and cannot say which one needed the memory: each of those, and
//! every later one, is rendered again alone, on a renderer of its own that
//! renders one release at a time ([`Renderer::template_alone`]), so that
//! the error names the chart that is over the bound and the others
//! render. Every other way the renderer fails is named as the renderer's,
//! with its cause: what it printed that is not the protocol, the signal
//! that killed it, its last words.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::{Bounds, HelmError, Limits, MAX_OUTPUT};
use crate::world::process;

/// The program's name, on the `PATH` and in its hello frame.
pub const NAME: &str = "strata-helm-renderer";

/// The protocol version this client speaks.
pub const PROTOCOL: u64 = 1;

/// Longest header line the renderer writes (its own bound).
const MAX_HEADER: u64 = 1 << 20;

/// How long the renderer may take to start and say hello, or to print its
/// version: it loads no chart then, so this is generous.
const START: Duration = Duration::from_secs(30);

/// How long past a request's own deadline the client waits for its answer
/// before it takes the renderer for stuck (it answers a late render itself).
const GRACE: Duration = Duration::from_secs(10);

/// Bytes of the renderer's standard error kept for messages.
const STDERR_TAIL: usize = 4096;

/// A renderer program, identified, and its process once started.
pub struct Renderer {
    pub path: PathBuf,
    /// For cache keys: the protocol, the sha256 of the program and the helm
    /// build it reports (the text `helm version` prints for that build).
    pub identity: String,
    /// The helm version it renders as, e.g. `v4.3`, for messages.
    pub version: String,
    helm_line: String,
    home: PathBuf,
    /// Each render's timeout, and the deadline of all renders of the
    /// command, as for the helm binary (`STRATA_HELM_TIMEOUT`,
    /// `STRATA_HELM_DEADLINE`).
    bounds: Bounds,
    process: OnceLock<Result<Process, String>>,
    /// The renderer of one render at a time, after the shared one died of
    /// its memory bound.
    alone: Mutex<Option<Process>>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Renderer {
    /// Identifies the renderer at `path`, to run in `home`. Its digest and
    /// helm build are worked out once (`-version`, and a read of the
    /// program) and remembered in `home`, keyed by the program's path, size,
    /// modification time and inode, so that a warm run starts no process.
    pub fn new(path: &Path, home: &Path) -> Result<Renderer, HelmError> {
        let spawn_err = |p: &Path, e: std::io::Error| HelmError::Spawn(format!("{}: {e}", p.display()));
        std::fs::create_dir_all(home).map_err(|e| spawn_err(home, e))?;
        let meta = std::fs::metadata(path).map_err(|e| spawn_err(path, e))?;
        let remembered = home.join(format!("renderer-{}.txt", stamp(path, &meta)));
        let (digest, helm_line) = match std::fs::read_to_string(&remembered) {
            Ok(text) if text.lines().count() == 2 => {
                let mut lines = text.lines();
                (
                    lines.next().unwrap_or("").to_owned(),
                    lines.next().unwrap_or("").to_owned(),
                )
            }
            _ => {
                let digest = file_sha256(path).map_err(|e| spawn_err(path, e))?;
                let line = version_line(path, home)?;
                crate::world::disk::write_atomic(&remembered, format!("{digest}\n{line}\n").as_bytes())
                    .map_err(|e| spawn_err(&remembered, e))?;
                (digest, line)
            }
        };
        Ok(Renderer {
            path: path.to_path_buf(),
            identity: format!("{NAME} protocol={PROTOCOL} sha256={digest} helm={helm_line}"),
            version: super::short_version(&helm_line),
            helm_line,
            home: home.to_path_buf(),
            bounds: Bounds::from_now(Limits::default()),
            process: OnceLock::new(),
            alone: Mutex::new(None),
        })
    }

    /// The same bounds as the helm binary's: each render, and all renders
    /// of the command from now.
    pub fn with_limits(mut self, limits: Limits) -> Renderer {
        self.bounds = Bounds::from_now(limits);
        self
    }

    /// The running renderer, started on the first call; `Err` says why it
    /// could not start (every later call gets the same answer).
    pub fn process(&self) -> Result<&Process, &str> {
        self.process
            .get_or_init(|| {
                Process::start(
                    &self.path,
                    &self.home,
                    &self.helm_line,
                    rayon::current_num_threads(),
                    self.bounds,
                )
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// Whether it was started, and how that went: `None` before the first
    /// render.
    pub fn started(&self) -> Option<Result<&Process, &str>> {
        self.process.get().map(|r| r.as_ref().map_err(String::as_str))
    }

    /// Renders `t` on a renderer of its own that renders one release at a
    /// time (started when there is none, or the last one died): its
    /// memory error is this chart's.
    pub fn template_alone(&self, t: &Template<'_>) -> Result<String, HelmError> {
        let mut alone = lock(&self.alone);
        if alone.as_ref().is_none_or(Process::is_gone) {
            *alone = None;
            let p =
                Process::start(&self.path, &self.home, &self.helm_line, 1, self.bounds).map_err(HelmError::Renderer)?;
            *alone = Some(p);
        }
        match alone.as_ref() {
            Some(p) => p.template(t),
            None => Err(HelmError::Renderer(format!("{NAME} could not be started"))),
        }
    }
}

/// `<path, size, mtime, inode>` of a program, as a short digest.
fn stamp(path: &Path, meta: &std::fs::Metadata) -> String {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    let text = format!("{}\n{}\n{mtime}\n{inode}", path.display(), meta.len());
    crate::world::disk::hex(&Sha256::digest(text.as_bytes())[..12])
}

fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(crate::world::disk::hex(&h.finalize()))
}

/// The command line of the renderer, run as the helm binary is: a cleared
/// environment, helm's folders in `home`, no cluster, the C locale; in a
/// process group of its own, with the memory of `bounds`.
fn hermetic(path: &Path, home: &Path, bounds: &Bounds) -> Command {
    let mut cmd = Command::new(path);
    cmd.current_dir(home)
        .env_clear()
        .env("HOME", home)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("KUBECONFIG", home.join("no-kubeconfig"))
        .env("HELM_NAMESPACE", "default")
        .env("LC_ALL", "C")
        .env("GOMEMLIMIT", bounds.go_memory_limit());
    process::confine(&mut cmd, Some(bounds.memory()));
    cmd
}

/// What `<renderer> -version` prints: helm's build information.
fn version_line(path: &Path, home: &Path) -> Result<String, HelmError> {
    let mut cmd = hermetic(path, home, &Bounds::from_now(Limits::default()));
    cmd.arg("-version");
    let done = process::run(cmd, None, START, 64 * 1024).map_err(|e| match e {
        process::Stopped::Timeout => HelmError::Renderer(format!(
            "{NAME} ({}) did not print its version within {} s",
            path.display(),
            START.as_secs()
        )),
        process::Stopped::Spawn(e) | process::Stopped::Wait(e) => HelmError::Spawn(format!("{}: {e}", path.display())),
    })?;
    let line = String::from_utf8_lossy(done.stdout.as_deref().unwrap_or_default())
        .trim()
        .to_owned();
    if !done.status.success() || !line.starts_with("version.BuildInfo{") {
        return Err(HelmError::Spawn(format!(
            "{} -version printed no helm build information ({})",
            path.display(),
            done.status
        )));
    }
    Ok(line)
}

/// One release to render, as `helm template` takes it.
#[derive(Clone, Copy, Debug)]
pub struct Template<'a> {
    pub release: &'a str,
    /// The chart archive or folder.
    pub chart: &'a Path,
    pub namespace: &'a str,
    /// `v1.35.0`.
    pub kube_version: &'a str,
    /// `--api-versions`, when the chart asks for them.
    pub api_versions: Option<&'a [String]>,
    /// The values, given as `--values -`.
    pub values: &'a [u8],
}

impl Template<'_> {
    /// The `helm template` command line (without the program).
    pub fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = [
            "template",
            self.release,
            &self.chart.to_string_lossy(),
            "--namespace",
            self.namespace,
            "--kube-version",
            self.kube_version,
            "--include-crds",
            "--skip-tests",
            "--values",
            "-",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        for v in self.api_versions.unwrap_or_default() {
            args.push("--api-versions".to_owned());
            args.push(v.clone());
        }
        args
    }
}

/// A response, or why none will come.
type Reply = Result<Response, String>;

struct Response {
    /// `None`: the body is the manifest; else the `error_kind`.
    error: Option<String>,
    body: Vec<u8>,
}

/// Requests sent and not yet answered, and whether the renderer is gone.
#[derive(Default)]
struct Waiting {
    by_id: BTreeMap<u64, SyncSender<Reply>>,
    /// Why the renderer can take no more requests.
    gone: Option<String>,
}

impl Waiting {
    /// The renderer is gone: every request under way fails with `why`.
    fn fail_all(&mut self, why: String) {
        for (_, tx) in std::mem::take(&mut self.by_id) {
            let _ = tx.send(Err(why.clone()));
        }
        self.gone.get_or_insert(why);
    }
}

/// A running renderer.
pub struct Process {
    requests: Mutex<Option<Sender<Vec<u8>>>>,
    waiting: Arc<Mutex<Waiting>>,
    next: AtomicU64,
    child: Mutex<Child>,
    stderr: Arc<Mutex<Tail>>,
    /// Releases rendered, for `--verbose`.
    pub rendered: AtomicU64,
    /// Workers the renderer runs (`-j`).
    pub jobs: usize,
    bounds: Bounds,
    /// Dropped last: the thread that started the renderer, kept alive while
    /// it runs (the kernel kills the renderer when that thread ends).
    keeper: Option<Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Process {
    fn start(path: &Path, home: &Path, helm_line: &str, jobs: usize, bounds: Bounds) -> Result<Process, String> {
        let jobs = jobs.max(1);
        let mut cmd = hermetic(path, home, &bounds);
        cmd.args([
            "-j",
            &jobs.to_string(),
            "-timeout",
            &format!("{}s", bounds.timeout().as_secs().max(1)),
            // Unpacked charts kept in memory take a quarter of its bound at
            // most, leaving the rest to the renders.
            "-cache-mib",
            &((bounds.memory() / 4) >> 20).to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let (mut child, keeper) =
            spawn_kept(cmd).map_err(|e| format!("{NAME} ({}) cannot start: {e}", path.display()))?;
        let (stdin, stdout, stderr_pipe) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => (i, o, e),
            _ => return Err(format!("{NAME}'s pipes could not be opened")),
        };
        let stderr = Arc::new(Mutex::new(Tail::default()));
        let waiting = Arc::new(Mutex::new(Waiting::default()));
        let (hello_tx, hello_rx) = mpsc::channel();
        let (req_tx, req_rx) = mpsc::channel::<Vec<u8>>();
        let threads = vec![
            thread("renderer-stderr", {
                let tail = Arc::clone(&stderr);
                move || drain_stderr(stderr_pipe, &tail)
            }),
            thread("renderer-reader", {
                let waiting = Arc::clone(&waiting);
                move || read_responses(stdout, &hello_tx, &waiting)
            }),
            thread("renderer-writer", {
                let waiting = Arc::clone(&waiting);
                move || write_requests(stdin, &req_rx, &waiting)
            }),
        ];
        let process = Process {
            requests: Mutex::new(Some(req_tx)),
            waiting,
            next: AtomicU64::new(1),
            child: Mutex::new(child),
            stderr,
            rendered: AtomicU64::new(0),
            jobs,
            bounds,
            keeper: Some(keeper),
            threads,
        };
        let shown = || format!("{NAME} ({})", path.display());
        let hello = match hello_rx.recv_timeout(START) {
            Ok(Ok(h)) => h,
            // Its output ended, or was no frame of the protocol, before a
            // hello: that is the cause, however soon.
            Ok(Err(why)) => return Err(format!("{}: {}{}", shown(), process.ended(&why), process.stderr_note())),
            Err(RecvTimeoutError::Disconnected) => {
                return Err(format!(
                    "{}: {}{}",
                    shown(),
                    process.ended("its output ended"),
                    process.stderr_note()
                ));
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "{} did not say hello within {} s{}",
                    shown(),
                    START.as_secs(),
                    process.stderr_note()
                ));
            }
        };
        check_hello(&hello, helm_line).map_err(|e| format!("{}: {e}{}", shown(), process.stderr_note()))?;
        Ok(process)
    }

    /// Renders one release; blocks until its response comes.
    pub fn template(&self, t: &Template<'_>) -> Result<String, HelmError> {
        let (limit, late) = self.bounds.next()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::sync_channel(1);
        {
            let mut w = lock(&self.waiting);
            if let Some(why) = w.gone.clone() {
                drop(w);
                return Err(self.gone(&why));
            }
            w.by_id.insert(id, tx);
        }
        let sent = lock(&self.requests)
            .as_ref()
            .is_some_and(|s| s.send(frame(id, t, limit)).is_ok());
        if !sent {
            lock(&self.waiting).by_id.remove(&id);
            return Err(self.gone("it takes no more requests"));
        }
        let reply = receive(&rx, limit + GRACE);
        match reply {
            Ok(Ok(r)) => self.answer(r, late),
            Ok(Err(why)) => Err(self.gone(&why)),
            Err(()) => {
                // No answer past the deadline and the grace: the renderer is
                // stuck. Stop it; every request under way fails.
                lock(&self.waiting).by_id.remove(&id);
                self.kill("it did not answer a request within its deadline, and was stopped");
                Err(late)
            }
        }
    }

    /// Whether the renderer can take no more requests.
    fn is_gone(&self) -> bool {
        lock(&self.waiting).gone.is_some()
    }

    /// The error of a request the renderer can no longer answer: its
    /// memory bound, when that is what ended it, else why it is gone.
    fn gone(&self, why: &str) -> HelmError {
        if self.died_of_memory() {
            return HelmError::Memory {
                program: NAME,
                bound: self.bounds.memory(),
            };
        }
        HelmError::Renderer(format!("{NAME} {}{}", self.ended(why), self.stderr_note()))
    }

    /// Whether the renderer ended for want of memory: its runtime said so
    /// (its standard error read to the end, for a moment at most).
    fn died_of_memory(&self) -> bool {
        let until = Instant::now() + Duration::from_millis(500);
        loop {
            let t = lock(&self.stderr);
            if t.out_of_memory || t.closed || Instant::now() >= until {
                return t.out_of_memory;
            }
            drop(t);
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A response, as the helm binary's run would have ended.
    fn answer(&self, r: Response, late: HelmError) -> Result<String, HelmError> {
        let body = String::from_utf8_lossy(&r.body).into_owned();
        match r.error.as_deref() {
            None => {
                self.rendered.fetch_add(1, Ordering::Relaxed);
                Ok(body)
            }
            Some("helm") => Err(HelmError::Failed(super::clean_error(&format!("Error: {body}")))),
            Some("timeout") => Err(late),
            Some("too_large") => Err(HelmError::TooLarge),
            Some("internal") => Err(HelmError::Failed(format!(
                "helm crashed rendering this chart (the helm binary would crash too): {}",
                body.lines().next().unwrap_or("")
            ))),
            Some(kind) => Err(HelmError::Renderer(format!(
                "{NAME} refused the request ({kind}): {}; this is a bug in strata",
                body.trim()
            ))),
        }
    }

    /// How the renderer ended, and `why` it is taken for gone: `exited
    /// with status 3: its output ended`, `was killed by signal 9: …`.
    fn ended(&self, why: &str) -> String {
        let status = {
            let mut child = lock(&self.child);
            let until = Instant::now() + Duration::from_millis(500);
            loop {
                match child.try_wait() {
                    Ok(Some(s)) => break Some(s),
                    Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                    _ => break None,
                }
            }
        };
        let how = match status {
            None => "stopped answering".to_owned(),
            Some(s) => match (s.code(), signal(&s)) {
                (_, Some(sig)) => format!("was killed by signal {sig}"),
                (Some(c), _) => format!("exited with status {c}"),
                _ => format!("ended ({s})"),
            },
        };
        format!("{how}: {why}")
    }

    /// The last lines the renderer wrote on standard error, as a clause.
    fn stderr_note(&self) -> String {
        let tail = String::from_utf8_lossy(&lock(&self.stderr).bytes).into_owned();
        let lines: Vec<&str> = tail.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        let last = &lines[lines.len().saturating_sub(4)..];
        if last.is_empty() {
            String::new()
        } else {
            format!("; it said: {}", last.join(" / "))
        }
    }

    /// Stops the renderer with its whole process group; every request
    /// under way fails with `why`.
    fn kill(&self, why: &str) {
        lock(&self.waiting).fail_all(why.to_owned());
        process::stop(&mut lock(&self.child));
    }
}

/// The signal that ended a process, if one did.
fn signal(s: &std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    return std::os::unix::process::ExitStatusExt::signal(s);
    #[cfg(not(unix))]
    None
}

/// The end of the renderer's standard error, for messages, and whether it
/// ever said it ran out of memory (Go's runtime says so first, then dumps
/// every goroutine).
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    out_of_memory: bool,
    closed: bool,
}

impl Drop for Process {
    fn drop(&mut self) {
        // Every request has its answer by now: close the input and stop it,
        // with whatever it started.
        lock(&self.requests).take();
        process::stop(&mut lock(&self.child));
        self.keeper.take();
        // The pipes end with the group; a process that left the group may
        // hold them open, and is not waited for past a moment.
        let until = Instant::now() + process::GRACE;
        for t in self.threads.drain(..) {
            while !t.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(2));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn receive(rx: &Receiver<Reply>, wait: Duration) -> Result<Reply, ()> {
    match rx.recv_timeout(wait) {
        Ok(r) => Ok(r),
        Err(RecvTimeoutError::Timeout) => Err(()),
        Err(RecvTimeoutError::Disconnected) => Ok(Err("its answer was lost".to_owned())),
    }
}

fn thread(name: &str, f: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .unwrap_or_else(|e| panic!("cannot start a thread: {e}"))
}

/// Starts `cmd` from a thread that lives until the returned sender is
/// dropped: the renderer asks the kernel to kill it when the thread that
/// started it ends, so that thread must not be a short-lived worker.
fn spawn_kept(mut cmd: Command) -> std::io::Result<(Child, Sender<()>)> {
    let (child_tx, child_rx) = mpsc::channel();
    let (keep_tx, keep_rx) = mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("renderer-parent".to_owned())
        .spawn(move || {
            let spawned = cmd.spawn();
            let ok = spawned.is_ok();
            let _ = child_tx.send(spawned);
            if ok {
                // Returns when the sender is dropped.
                let _ = keep_rx.recv();
            }
        })?;
    let child = child_rx
        .recv()
        .map_err(|_| std::io::Error::other("the starting thread ended"))??;
    Ok((child, keep_tx))
}

/// One request frame: the header line, then the values.
fn frame(id: u64, t: &Template<'_>, limit: Duration) -> Vec<u8> {
    let chart = std::path::absolute(t.chart).unwrap_or_else(|_| t.chart.to_path_buf());
    let mut header = serde_json::json!({
        "id": id.to_string(),
        "chart": chart.to_string_lossy(),
        "release": t.release,
        "namespace": t.namespace,
        "kube_version": t.kube_version,
        "include_crds": true,
        "skip_tests": true,
        "timeout_ms": limit.as_millis().max(1) as u64,
        "len": t.values.len(),
    });
    if let Some(a) = t.api_versions {
        header["api_versions"] = serde_json::json!(a);
    }
    let mut out = header.to_string().into_bytes();
    out.push(b'\n');
    out.extend_from_slice(t.values);
    out
}

/// Checks the hello frame: this program, this protocol, the helm build
/// that was identified.
fn check_hello(h: &serde_json::Value, helm_line: &str) -> Result<(), String> {
    if h["hello"] != NAME {
        return Err(format!("it is not {NAME} (its first frame was {h})"));
    }
    if h["protocol"].as_u64() != Some(PROTOCOL) {
        return Err(format!(
            "it speaks protocol {}, strata speaks {PROTOCOL}; rebuild it from this strata's renderer/",
            h["protocol"]
        ));
    }
    if h["helm"] != helm_line {
        return Err(format!(
            "it renders as {}, but was identified as {helm_line}: the program changed while strata ran",
            h["helm"]
        ));
    }
    Ok(())
}

/// The writer thread: sends each request as it comes; closes the renderer's
/// input when the requests' sender is dropped.
fn write_requests(mut stdin: ChildStdin, requests: &Receiver<Vec<u8>>, waiting: &Mutex<Waiting>) {
    for frame in requests {
        if let Err(e) = stdin.write_all(&frame).and_then(|()| stdin.flush()) {
            lock(waiting).fail_all(format!("its input could not be written: {e}"));
            return;
        }
    }
}

/// The reader thread: the hello frame first, then each response to its
/// request; at the end of the output, every request still waiting fails.
fn read_responses(stdout: ChildStdout, hello: &Sender<Result<serde_json::Value, String>>, waiting: &Mutex<Waiting>) {
    let mut r = BufReader::with_capacity(1 << 16, stdout);
    let mut first = true;
    let why = loop {
        let (header, body) = match read_frame(&mut r) {
            Ok(Some(f)) => f,
            Ok(None) => break "its output ended".to_owned(),
            Err(e) => break format!("it printed what is not its protocol: {e}"),
        };
        if std::mem::take(&mut first) {
            let _ = hello.send(Ok(header));
            continue;
        }
        let id = header["id"].as_str().and_then(|s| s.parse::<u64>().ok());
        let waiter = id.and_then(|id| lock(waiting).by_id.remove(&id));
        let Some(tx) = waiter else {
            break format!(
                "it answered a request strata did not send: {header} {}",
                String::from_utf8_lossy(&body)
            );
        };
        let error = (header["ok"] != true).then(|| header["error_kind"].as_str().unwrap_or("internal").to_owned());
        let _ = tx.send(Ok(Response { error, body }));
    };
    if first {
        let _ = hello.send(Err(why.clone()));
    }
    lock(waiting).fail_all(why);
}

/// One frame: a JSON header line and its `len` bytes; `None` at a clean end.
fn read_frame(r: &mut impl BufRead) -> Result<Option<(serde_json::Value, Vec<u8>)>, String> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = r
            .by_ref()
            .take(MAX_HEADER + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(None);
        }
        if line.len() as u64 > MAX_HEADER || line.last() != Some(&b'\n') {
            return Err("a header line is too long or cut off".to_owned());
        }
        if !line.trim_ascii().is_empty() {
            break;
        }
    }
    let header: serde_json::Value = serde_json::from_slice(line.trim_ascii()).map_err(|e| {
        let text = String::from_utf8_lossy(line.trim_ascii());
        let shown: String = text
            .chars()
            .take(60)
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        let more = if text.chars().count() > 60 { "…" } else { "" };
        format!("the line `{shown}{more}` is no JSON frame header ({e})")
    })?;
    let len = header["len"].as_u64().ok_or("a header has no len")?;
    // A manifest is at most MAX_OUTPUT bytes; an error message far less.
    if len > MAX_OUTPUT as u64 + (1 << 20) {
        return Err(format!("a frame of {len} bytes is over the bound"));
    }
    let mut body = vec![0u8; len as usize];
    r.read_exact(&mut body)
        .map_err(|e| format!("a frame ends early: {e}"))?;
    Ok(Some((header, body)))
}

/// The stderr thread: keeps the last [`STDERR_TAIL`] bytes, and whether
/// the renderer said it ran out of memory.
fn drain_stderr(mut pipe: impl Read, tail: &Mutex<Tail>) {
    let mut chunk = [0u8; 8192];
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let mut t = lock(tail);
                // The last bytes kept, then the new ones: a line cut
                // between two reads is still seen whole.
                let seam = t.bytes.len().saturating_sub(64);
                t.bytes.extend_from_slice(&chunk[..n]);
                let said = super::out_of_memory(&String::from_utf8_lossy(&t.bytes[seam..]));
                t.out_of_memory |= said;
                let over = t.bytes.len().saturating_sub(STDERR_TAIL);
                t.bytes.drain(..over);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    lock(tail).closed = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_read_whole_and_bounded() {
        let input = b"\n{\"id\":\"1\",\"ok\":true,\"len\":3}\nabc{\"id\":\"2\",\"ok\":false,\"error_kind\":\"helm\",\"len\":0}\n";
        let mut r = std::io::Cursor::new(&input[..]);
        let (h, b) = read_frame(&mut r).unwrap().unwrap();
        assert_eq!((h["id"].as_str(), b.as_slice()), (Some("1"), &b"abc"[..]));
        let (h, b) = read_frame(&mut r).unwrap().unwrap();
        assert_eq!((h["error_kind"].as_str(), b.len()), (Some("helm"), 0));
        assert!(read_frame(&mut r).unwrap().is_none());
        let cut = b"{\"id\":\"1\",\"ok\":true,\"len\":9}\nabc";
        assert!(read_frame(&mut std::io::Cursor::new(&cut[..])).is_err());
        let huge = format!("{{\"len\":{}}}\n", u64::MAX / 2);
        assert!(read_frame(&mut std::io::Cursor::new(huge.as_bytes())).is_err());
        assert!(read_frame(&mut std::io::Cursor::new(&b"not json\n"[..])).is_err());
    }

    #[test]
    fn requests_carry_the_helm_template_arguments() {
        let api = vec!["example.com/v1".to_owned()];
        let t = Template {
            release: "web",
            chart: Path::new("/store/web-1.0.0.tgz"),
            namespace: "apps",
            kube_version: "v1.35.0",
            api_versions: Some(&api),
            values: b"replicas: 2\n",
        };
        let f = frame(7, &t, Duration::from_millis(2500));
        let text = String::from_utf8(f).unwrap();
        let (header, body) = text.split_once('\n').unwrap();
        let h: serde_json::Value = serde_json::from_str(header).unwrap();
        assert_eq!(h["id"], "7");
        assert_eq!(h["len"], body.len());
        assert_eq!(h["api_versions"][0], "example.com/v1");
        assert_eq!(h["timeout_ms"], 2500);
        assert_eq!(body, "replicas: 2\n");
        assert_eq!(
            t.args().join(" "),
            "template web /store/web-1.0.0.tgz --namespace apps --kube-version v1.35.0 --include-crds --skip-tests --values - --api-versions example.com/v1"
        );
    }

    #[test]
    fn a_hello_from_another_program_or_protocol_is_refused() {
        let line = "version.BuildInfo{Version:\"v4.3\"}";
        let ok = serde_json::json!({"hello": NAME, "protocol": 1, "helm": line, "len": 0});
        assert!(check_hello(&ok, line).is_ok());
        let mut other = ok.clone();
        other["protocol"] = 2.into();
        assert!(check_hello(&other, line).unwrap_err().contains("protocol 2"));
        assert!(check_hello(&ok, "version.BuildInfo{Version:\"v4.2\"}").is_err());
        assert!(check_hello(&serde_json::json!({"len": 0}), line).is_err());
    }
}
