//! The stages run in order for one compile: load, merge and render, then the
//! checks, then the file layout. Commands call [`compile`] and decide what to
//! do with the outcome.

use crate::diag::{Diagnostic, Severity, Sources};
use crate::emit::{self, Files};
use crate::load::{self, Platform, Target};
use crate::render::{self, EnvRender};
use crate::validate;
use crate::world::World;

/// What to compile.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub env: Option<String>,
    pub target: Option<Target>,
    /// Schema locations and strictness for rendered objects.
    pub schemas: validate::Settings,
    /// Whether and how charts are rendered with helm.
    pub inflate: crate::inflate::Settings,
    /// Where the engines find the tree in the git repository.
    pub layout: render::RepoLayout,
}

/// A finished compile: the inputs, the rendered objects, the files, and
/// every finding of the checks.
pub struct Compiled {
    pub platform: Platform,
    pub renders: Vec<EnvRender>,
    pub files: Files,
    /// `<env>/<target>` units compiled.
    pub scope: Vec<String>,
    pub findings: Vec<Diagnostic>,
    /// Wall time of each stage, for `--verbose`.
    pub timings: Vec<(&'static str, std::time::Duration)>,
}

impl Compiled {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|d| d.severity == Severity::Error)
    }
}

/// Runs every stage. `Err` holds input errors (exit code 2): nothing could
/// be compiled. Check findings are in [`Compiled::findings`]. Either way,
/// every diagnostic comes back scrubbed of the contracts' secrets.
pub fn compile(world: &dyn World, sources: &Sources, opts: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let mut result = stages(world, sources, opts);
    match &mut result {
        Ok(c) => crate::diag::scrub(&mut c.findings, sources),
        Err(diags) => crate::diag::scrub(diags, sources),
    }
    result
}

fn stages(world: &dyn World, sources: &Sources, opts: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let mut timings = Vec::new();
    let mut clock = std::time::Instant::now();
    let mut lap = |name: &'static str, timings: &mut Vec<_>| {
        let now = std::time::Instant::now();
        timings.push((name, now - clock));
        clock = now;
    };
    let platform = load::load(world, sources, opts.env.as_deref())?;
    lap("load", &mut timings);
    // Inputs and merged values that break their schemas are input errors;
    // rendered objects that break theirs are findings.
    let input_errors = validate::inputs(world, sources, &platform);
    if !input_errors.is_empty() {
        return Err(input_errors);
    }
    let mut renders = render::render(&platform, opts.target, &opts.layout)?;
    lap("merge+render", &mut timings);
    let value_errors = validate::values(&platform, &renders);
    if !value_errors.is_empty() {
        return Err(value_errors);
    }
    let inflate_notes = crate::inflate::inflate(world, sources, &platform, &mut renders, &opts.inflate)?;
    lap("inflate", &mut timings);
    let files = emit::layout(&renders)?;
    lap("layout", &mut timings);
    // A render of everything owns the whole tree, so the files of an
    // environment or target that is gone are removed too.
    let mut scope = Vec::new();
    if opts.env.is_none() && opts.target.is_none() {
        scope.push(String::new());
    } else {
        for r in &renders {
            for t in r.targets.keys() {
                scope.push(emit::unit(&r.env, t.name()));
            }
        }
    }
    let mut findings = inflate_notes;
    findings.extend(renders.iter().flat_map(|r| r.notes.iter().cloned()));
    findings.extend(validate::objects(world, &platform, &renders, &opts.schemas));
    lap("validate", &mut timings);
    let profiles = crate::invariants::profile::load(world, sources, &platform.project.profiles)?;
    findings.extend(crate::invariants::profile::coverage(&platform, &profiles));
    findings.extend(crate::merge::typos::check(&platform, &profiles, &renders));
    let settings = crate::invariants::Settings::default();
    findings.extend(crate::invariants::check(
        &platform,
        &profiles,
        &renders,
        &world.today(),
        &settings,
    ));
    lap("invariants", &mut timings);
    crate::diag::normalize(&mut findings);
    Ok(Compiled {
        platform,
        renders,
        files,
        scope,
        findings,
        timings,
    })
}
