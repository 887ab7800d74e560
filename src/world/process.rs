//! Running a child program within bounds: helm, the chart renderer and
//! kubectl all run this way, so that no program they start can keep strata
//! waiting or outlive it.
//!
//! - The child leads a process group of its own, and every bound (its
//!   time limit, the end of its run) kills the whole group: a wrapper
//!   script's children, a plugin's, die with it. After the child exits,
//!   what is left of its group is killed too, and its pipes are read for
//!   at most [`GRACE`] more (a process that left the group, `setsid`, may
//!   hold them open forever; strata does not wait for it).
//! - On Linux it is told to die with the thread that started it
//!   (`PR_SET_PDEATHSIG`), so a strata killed even with `SIGKILL` leaves
//!   no child running, and its data segment may be bounded
//!   (`RLIMIT_DATA`): a program on Go's runtime that needs more memory
//!   fails with `fatal error: out of memory` instead of taking the
//!   machine's.
//! - Its standard output and error are drained as they come (it never
//!   blocks on a full pipe), and kept up to a bound.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a pipe is still read once the child has exited and its group
/// was killed.
pub const GRACE: Duration = Duration::from_millis(500);

/// What a pipe gave: its bytes, or `None` once they passed the bound (the
/// rest was read and dropped).
pub type Drained = Option<Vec<u8>>;

/// How a bounded run ended.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Drained,
    pub stderr: Drained,
}

/// Why a bounded run gave no exit status.
#[derive(Debug)]
pub enum Stopped {
    /// The program could not be started.
    Spawn(std::io::Error),
    /// It ran past its time limit; it and its group were killed.
    Timeout,
    /// Waiting for it failed; it and its group were killed.
    Wait(std::io::Error),
}

/// Makes `cmd` lead a process group of its own and, on Linux, die with the
/// thread that starts it and get at most `memory` bytes of data segment.
pub fn confine(cmd: &mut Command, memory: Option<u64>) {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    #[cfg(target_os = "linux")]
    linux::before_exec(cmd, memory);
    #[cfg(not(target_os = "linux"))]
    let _ = memory;
}

/// Kills the process group `pid` leads (see [`confine`]), whatever is
/// left of it. Harmless when it is gone.
pub fn kill_group(pid: u32) {
    #[cfg(target_os = "linux")]
    linux::kill_group(pid);
    #[cfg(not(target_os = "linux"))]
    let _ = pid;
}

/// Kills a child's group and the child, and reaps it.
pub fn stop(child: &mut Child) {
    kill_group(child.id());
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs `cmd` (confined by the caller, see [`confine`]) with `stdin` on
/// its standard input, for at most `limit`, keeping at most `max_output`
/// bytes of each of its standard output and error.
pub fn run(mut cmd: Command, stdin: Option<&[u8]>, limit: Duration, max_output: usize) -> Result<Finished, Stopped> {
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(Stopped::Spawn)?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let bytes = bytes.to_vec();
        // A child that exits without reading its input ends this thread
        // with a broken pipe; nothing waits for it.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let out = child.stdout.take().map(|p| Pipe::drain(p, max_output));
    let err = child.stderr.take().map(|p| Pipe::drain(p, max_output));
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > limit => {
                stop(&mut child);
                return Err(Stopped::Timeout);
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(4));
            }
            Err(e) => {
                stop(&mut child);
                return Err(Stopped::Wait(e));
            }
        }
    };
    // What the child left running in its group goes with it.
    kill_group(child.id());
    let until = Instant::now() + GRACE;
    let take = |p: Option<Pipe>| p.map_or(Some(Vec::new()), |p| p.take(until));
    Ok(Finished {
        status,
        stdout: take(out),
        stderr: take(err),
    })
}

/// A pipe drained by a thread of its own into a shared buffer.
pub struct Pipe {
    state: Arc<(Mutex<PipeState>, Condvar)>,
}

#[derive(Default)]
struct PipeState {
    bytes: Vec<u8>,
    over: bool,
    done: bool,
}

impl Pipe {
    /// Starts draining `r`, keeping at most `limit` bytes.
    pub fn drain(mut r: impl Read + Send + 'static, limit: usize) -> Pipe {
        let state = Arc::new((Mutex::new(PipeState::default()), Condvar::new()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 64 * 1024];
            let (lock, done) = &*shared;
            loop {
                match r.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut s = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        if s.over || s.bytes.len() + n > limit {
                            s.over = true;
                            s.bytes = Vec::new();
                        } else {
                            s.bytes.extend_from_slice(&chunk[..n]);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner).done = true;
            done.notify_all();
        });
        Pipe { state }
    }

    /// What was read by the end of the pipe, or by `until` if the pipe is
    /// still open then (a process outside the child's group holds it).
    pub fn take(self, until: Instant) -> Drained {
        let (lock, cv) = &*self.state;
        let mut s = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while !s.done {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = cv
                .wait_timeout(s, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        if s.over {
            None
        } else {
            Some(std::mem::take(&mut s.bytes))
        }
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod linux {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    /// Between fork and exec: die with the starting thread, and bound the
    /// data segment.
    pub(super) fn before_exec(cmd: &mut Command, memory: Option<u64>) {
        let parent = std::process::id();
        // SAFETY: the closure runs in the child between fork and exec and
        // calls only async-signal-safe functions (prctl, setrlimit,
        // getppid, raise); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(bytes) = memory {
                    let limit = libc::rlimit {
                        rlim_cur: bytes as libc::rlim_t,
                        rlim_max: bytes as libc::rlim_t,
                    };
                    if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
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

    pub(super) fn kill_group(pid: u32) {
        if let Ok(pid) = libc::pid_t::try_from(pid)
            && pid > 1
        {
            // SAFETY: sends a signal to the process group the child leads
            // (it was started with `process_group(0)`, so the group's id is
            // its pid; Linux reuses no pid while a group of that id has a
            // member).
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script);
        confine(&mut cmd, None);
        cmd
    }

    #[test]
    fn a_child_left_running_in_the_group_keeps_no_one_waiting() {
        let started = Instant::now();
        let done = run(
            sh("sleep 30 & echo out; echo err >&2"),
            None,
            Duration::from_secs(20),
            1024,
        )
        .unwrap();
        assert!(done.status.success());
        assert_eq!(done.stdout.as_deref(), Some(&b"out\n"[..]));
        assert_eq!(done.stderr.as_deref(), Some(&b"err\n"[..]));
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn a_child_that_leaves_the_group_is_waited_for_a_moment_only() {
        let started = Instant::now();
        let done = run(sh("setsid sleep 30 & echo out"), None, Duration::from_secs(20), 1024).unwrap();
        assert_eq!(done.stdout.as_deref(), Some(&b"out\n"[..]));
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn a_run_past_its_limit_is_stopped_with_its_group_and_output_is_bounded() {
        let started = Instant::now();
        let e = run(sh("sleep 30 & sleep 30"), None, Duration::from_millis(200), 1024).unwrap_err();
        assert!(matches!(e, Stopped::Timeout), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let done = run(sh("head -c 5000 /dev/zero"), Some(b"x"), Duration::from_secs(20), 1024).unwrap();
        assert_eq!(done.stdout, None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_data_segment_is_bounded() {
        let mut cmd = Command::new("sh");
        // A shell that needs more than 8 MiB of data fails to start it.
        cmd.arg("-c")
            .arg("x=$(head -c 50000000 /dev/zero | tr '\\0' a); echo ${#x}");
        confine(&mut cmd, Some(8 << 20));
        let done = run(cmd, None, Duration::from_secs(20), 1024).unwrap();
        assert!(!done.status.success(), "{done:?}");
    }
}
