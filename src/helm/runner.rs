//! What renders a release: [`Runner`], implemented by the helm binary and by
//! the [`Engine`] of a run, which prefers the renderer (see [`super::sdk`])
//! and falls back to the binary when there is no renderer or it cannot
//! start.
//!
//! A render cache keyed by [`Runner::identity`] never serves one program's
//! output for the other's: the binary's identity is its version line, size
//! and modification time; the renderer's is its protocol, the sha256 of the
//! program and the helm build it reports. The renderer is tested byte for
//! byte against the binary of the same helm version on every test chart,
//! but two programs that print the same version line need not be the same
//! build (a patched helm prints what the release it came from prints), so
//! the keys stay apart: switching from one to the other renders once, cold.

use std::sync::atomic::{AtomicU64, Ordering};

use super::sdk::{NAME, Renderer, Template};
use super::{Helm, HelmError};

/// Renders releases as `helm template` does.
pub trait Runner: Sync {
    /// What decides the output besides the release's own inputs, for cache
    /// keys. It may change once, as the run falls back to the binary.
    fn identity(&self) -> String;
    /// The manifest `helm template` prints for `t`.
    fn template(&self, t: &Template<'_>) -> Result<String, HelmError>;
}

impl Runner for Helm {
    fn identity(&self) -> String {
        self.identity.clone()
    }

    fn template(&self, t: &Template<'_>) -> Result<String, HelmError> {
        let args = t.args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&args, Some(t.values), false)
            .map(|out| String::from_utf8_lossy(&out).into_owned())
    }
}

/// The chart renderer of one run: the renderer program when there is one,
/// started on first use, else (or when it cannot start) the helm binary.
#[derive(Debug)]
pub struct Engine {
    renderer: Option<Renderer>,
    binary: Option<Helm>,
    /// Why there is no renderer, for `--verbose`.
    absent: Option<String>,
    /// Releases the binary rendered.
    by_binary: AtomicU64,
}

impl Engine {
    /// `None` when there is neither a renderer nor a binary. `absent` says
    /// why there is no renderer (not found, or it could not be identified).
    pub fn new(renderer: Option<Renderer>, binary: Option<Helm>, absent: Option<String>) -> Option<Engine> {
        (renderer.is_some() || binary.is_some()).then(|| Engine {
            renderer,
            binary,
            absent,
            by_binary: AtomicU64::new(0),
        })
    }

    /// The renderer, unless it was tried and failed to start.
    fn usable_renderer(&self) -> Option<&Renderer> {
        self.renderer.as_ref().filter(|r| !matches!(r.started(), Some(Err(_))))
    }

    /// Which program rendered the run's charts, and how many, for `--verbose`.
    pub fn describe(&self) -> String {
        let binary = |why: &str| match &self.binary {
            Some(h) => format!(
                "charts: {} release(s) rendered by the helm binary {} ({}){why}",
                self.by_binary.load(Ordering::Relaxed),
                h.path.display(),
                h.version
            ),
            None => format!("charts: no helm binary{why}"),
        };
        match (&self.renderer, self.renderer.as_ref().and_then(Renderer::started)) {
            (Some(r), Some(Ok(p))) => format!(
                "charts: {} release(s) rendered by {} (helm {}, {} at once)",
                p.rendered.load(Ordering::Relaxed),
                r.path.display(),
                r.version,
                p.jobs
            ),
            (Some(r), None) => format!(
                "charts: no release needed rendering (none to render, or each from the render cache); {} (helm {}) was not started",
                r.path.display(),
                r.version
            ),
            (Some(_), Some(Err(why))) => binary(&format!("; {NAME} failed to start: {why}")),
            (None, _) => binary(&format!("; {}", self.absent.as_deref().unwrap_or("no renderer"))),
        }
    }
}

impl Runner for Engine {
    fn identity(&self) -> String {
        match (self.usable_renderer(), &self.binary) {
            (Some(r), _) => r.identity.clone(),
            (None, Some(h)) => h.identity.clone(),
            (None, None) => String::new(),
        }
    }

    fn template(&self, t: &Template<'_>) -> Result<String, HelmError> {
        if let Some(r) = &self.renderer {
            match r.process() {
                // A renderer that died of its memory bound cannot say which
                // render needed it: this one is rendered again alone.
                Ok(p) => {
                    return match p.template(t) {
                        Err(HelmError::Memory { .. }) => r.template_alone(t),
                        other => other,
                    };
                }
                Err(why) if self.binary.is_none() => return Err(HelmError::Renderer(why.to_owned())),
                Err(_) => {}
            }
        }
        let Some(h) = &self.binary else {
            return Err(HelmError::Spawn("no helm binary".to_owned()));
        };
        let out = h.template(t);
        self.by_binary.fetch_add(1, Ordering::Relaxed);
        out
    }
}
