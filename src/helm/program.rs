//! strata's other Go programs, run once per request: `strata-admission`
//! and `strata-kyverno` (built from `admission/`), which judge one
//! environment's objects with Kubernetes' and Kyverno's own admission code.
//! Each runs as helm does: a cleared environment, `HOME` in strata's own
//! folder, no cluster (`KUBECONFIG` pointing nowhere), the C locale, its own
//! process group, killed with strata; bounded in time and output. The
//! request goes in on standard input, the answer comes out on standard
//! output.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::MAX_OUTPUT;

/// A program found, and the folder it runs in.
#[derive(Clone, Debug)]
pub struct Program {
    pub path: PathBuf,
    pub home: PathBuf,
}

/// Finds a program: the file `explicit` names (`Err` when it is none, or
/// says `off`), else `name` on the `PATH`, else `name` beside `beside` (the
/// chart renderer, which `.ci/run` and a release put in the same folder).
pub fn find(
    name: &str,
    explicit: Option<&std::ffi::OsStr>,
    path_var: Option<&std::ffi::OsStr>,
    beside: Option<&Path>,
) -> Result<PathBuf, String> {
    if let Some(v) = explicit.filter(|v| !v.is_empty()) {
        if v == "off" {
            return Err("turned off".to_owned());
        }
        let p = PathBuf::from(v);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{} is not a file", p.display()))
        };
    }
    let on_path = path_var.and_then(|path| std::env::split_paths(path).map(|d| d.join(name)).find(|p| p.is_file()));
    on_path
        .or_else(|| {
            beside
                .and_then(Path::parent)
                .map(|d| d.join(name))
                .filter(|p| p.is_file())
        })
        .ok_or_else(|| format!("no {name} on the PATH or beside the chart renderer"))
}

impl Program {
    /// Runs the program once with `request` on its standard input, at most
    /// `limit`; its standard output, or why there is none (with the last
    /// lines of its standard error).
    pub fn run(&self, request: &[u8], limit: Duration) -> Result<Vec<u8>, String> {
        use crate::world::process::{self, Stopped};
        std::fs::create_dir_all(&self.home).map_err(|e| format!("{}: {e}", self.home.display()))?;
        let mut cmd = Command::new(&self.path);
        cmd.current_dir(&self.home)
            .env_clear()
            .env("HOME", &self.home)
            .env("KUBECONFIG", self.home.join("no-kubeconfig"))
            .env("LC_ALL", "C");
        // Its own process group, killed at the bound and when it ends.
        process::confine(&mut cmd, None);
        let done = process::run(cmd, Some(request), limit, MAX_OUTPUT).map_err(|e| match e {
            Stopped::Timeout => format!(
                "{} ran for more than {} s and was stopped",
                self.path.display(),
                limit.as_secs()
            ),
            Stopped::Spawn(e) => format!("cannot run {}: {e}", self.path.display()),
            Stopped::Wait(e) => e.to_string(),
        })?;
        if !done.status.success() {
            let stderr = done.stderr.unwrap_or_default();
            let text = String::from_utf8_lossy(&stderr);
            let last: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            let last = last[last.len().saturating_sub(4)..].join(" / ");
            return Err(format!("{} failed ({}): {last}", self.path.display(), done.status));
        }
        done.stdout
            .ok_or_else(|| format!("{} printed more than {} MiB", self.path.display(), MAX_OUTPUT >> 20))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_found_as_named_on_the_path_or_beside_the_renderer() {
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("strata-admission");
        std::fs::write(&prog, "").unwrap();
        let renderer = dir.path().join("strata-helm-renderer");
        assert_eq!(find("strata-admission", None, None, Some(&renderer)).unwrap(), prog);
        let path = std::env::join_paths([dir.path()]).unwrap();
        assert_eq!(find("strata-admission", None, Some(&path), None).unwrap(), prog);
        assert!(find("strata-admission", None, None, None).is_err());
        assert!(find("x", Some(std::ffi::OsStr::new("off")), Some(&path), None).is_err());
        assert_eq!(find("x", Some(prog.as_os_str()), None, None).unwrap(), prog);
    }
}
