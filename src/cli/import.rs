//! `strata import flux|argo PATH [--out DIR] [--offline]`: write a
//! platform from an existing Flux tree or Argo CD Applications, pull its
//! charts, then prove it: compile it with its charts rendered and compare
//! every release's values and objects with the source's. Needs no
//! repository: it makes one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::init::refusal;
use super::{cli_path, exit};
use crate::charts::{State, pull};
use crate::diag::{self, Diagnostic, Severity, Sources, codes};
use crate::import::{self, Engine, Tools};
use crate::scaffold;
use crate::yaml::Origin;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The engine whose tree is read: flux (every folder Flux syncs from,
    /// and the HelmReleases it applies) or argo (Applications and
    /// ApplicationSets)
    #[arg(value_enum)]
    pub engine: EngineArg,
    /// The tree to read: a checkout of the GitOps repository
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// The folder to write the platform into, created if missing (default:
    /// the working directory); it must not hold a platform already
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not fetch the charts of the written platform (as `strata charts
    /// pull` does) before rendering them: releases whose charts are not at
    /// hand are listed as not proven
    #[arg(long)]
    pub offline: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineArg {
    Flux,
    Argo,
}

/// kubectl: `STRATA_KUBECTL` if set, else `kubectl` on the `PATH`.
#[allow(clippy::disallowed_methods)]
fn find_kubectl() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("STRATA_KUBECTL").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
}

pub fn run(color: bool, quiet: bool, args: &ImportArgs) -> i32 {
    let engine = match args.engine {
        EngineArg::Flux => Engine::Flux,
        EngineArg::Argo => Engine::Argo,
    };
    let out_given = args.out.clone().unwrap_or_else(|| PathBuf::from("."));
    let out = cli_path(&out_given);
    let sources = Sources::default();
    let print = |diags: &mut Vec<Diagnostic>| {
        diag::normalize(diags);
        let shown: Vec<Diagnostic> = diags
            .iter()
            .filter(|d| !quiet || d.severity == Severity::Error)
            .cloned()
            .collect();
        eprint!("{}", diag::render_text(&shown, &sources, color));
    };
    if let Err(r) = scaffold::check_empty_of_platform(&out) {
        print(&mut vec![refusal(&r)]);
        return exit::INPUT;
    }
    let helm_limits = match super::charts::helm_limits() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::INPUT;
        }
    };
    let (helm, user_helm_config) = super::find_helm();
    let renderer = super::find_renderer();
    let tools = Tools {
        kubectl: find_kubectl(),
        helm: helm.clone(),
    };
    let shown = args.path.display().to_string();
    let mut read = match import::read(engine, &cli_path(&args.path), &shown, &tools, &sources) {
        Ok(r) => r,
        Err(mut errors) => {
            print(&mut errors);
            return exit::INPUT;
        }
    };
    let mut resolved = if args.offline {
        import::resolve::unpinned(&read)
    } else {
        pin_ranges(&mut read, &tools, helm_limits)
    };
    let mut planned = import::plan(&read);
    if let Err(r) = scaffold::write_new(&out, &planned.files) {
        print(&mut vec![refusal(&r)]);
        return exit::INPUT;
    }
    let mut notes = read.notes;
    notes.append(&mut resolved);
    notes.append(&mut planned.notes);
    let converted = notes.len();
    let inflate = crate::inflate::Settings {
        helm,
        user_helm_config,
        helm_limits,
        renderer_absent: renderer.as_ref().err().cloned(),
        renderer: renderer.ok(),
        ..Default::default()
    };
    if !args.offline {
        let (failed, not_pulled) = pull(&out, &inflate, &sources);
        notes.extend(failed);
        planned.not_pulled = not_pulled;
    }
    match import::verify(&out, super::today(), &planned, &inflate, &sources) {
        Ok(verdict) => {
            let equal = verdict.equal();
            notes.extend(verdict.blocked.iter().cloned());
            notes.extend(verdict.differ.iter().cloned());
            notes.extend(verdict.unproven.iter().cloned());
            print(&mut notes);
            summary(&out_given, &planned, converted, &verdict, quiet);
            if equal { exit::OK } else { exit::FINDINGS }
        }
        Err(mut errors) => {
            notes.append(&mut errors);
            print(&mut notes);
            eprintln!(
                "error: the platform written in {} does not compile with its charts rendered; no release could be compared",
                out_given.display()
            );
            exit::FINDINGS
        }
    }
}

/// What a pull could not fetch: the warnings, and per component the reason
/// its chart is not at hand.
type Failed = (Vec<Diagnostic>, BTreeMap<String, String>);

/// Fetches the written platform's remote charts into its store and writes
/// its `strata.lock`, as `strata charts pull` does; what cannot be pulled
/// comes back as warnings (those releases are then not rendered), and as
/// the reason each component whose chart it is goes unrendered.
fn pull(root: &Path, inflate: &crate::inflate::Settings, sources: &Sources) -> Failed {
    let mut not_pulled = BTreeMap::new();
    let warnings = fetch(root, inflate, sources, &mut not_pulled);
    (warnings, not_pulled)
}

/// The pull of [`pull`]; `not_pulled` gets each component's reason.
fn fetch(
    root: &Path,
    inflate: &crate::inflate::Settings,
    sources: &Sources,
    not_pulled: &mut BTreeMap<String, String>,
) -> Vec<Diagnostic> {
    let at = |m: String, help: &str| {
        Diagnostic::warning(codes::CHART_STORE, Origin::file_start(crate::charts::lock::FILE), m).with_help(help)
    };
    let world = match crate::world::FsWorld::new(root, super::today()) {
        Ok(w) => w,
        Err(e) => return vec![at(format!("cannot open {}: {e}", root.display()), "check the folder")],
    };
    let platform = match crate::load::load(&world, sources, None) {
        Ok(p) => p,
        Err(errors) => return errors,
    };
    let state = State::new(world.root(), crate::charts::Lock::default());
    let prepared = ["", "helm", "charts"]
        .iter()
        .try_for_each(|sub| crate::world::ensure_state_dir(&state.dir, Path::new(sub)).map(|_| ()));
    if let Err(e) = prepared {
        return vec![at(
            format!("cannot create {}: {e}", state.dir.display()),
            "remove what is in the way",
        )];
    }
    let vars = super::charts::network_env();
    let http = match crate::charts::http::Http::new(&vars) {
        Ok(h) => h,
        Err(e) => {
            return vec![at(
                e.to_string(),
                "fix or unset the variable; strata reads proxies and CAs as helm does",
            )];
        }
    };
    let helm = inflate.helm.as_ref().and_then(|path| {
        crate::helm::Helm::new(path, &state.dir.join("helm"), inflate.user_helm_config.clone())
            .ok()
            .map(|h| h.with_limits(inflate.helm_limits).with_network_env(vars.clone()))
    });
    let net = pull::Net {
        http: &http,
        helm: helm.as_ref(),
        mirrors: &platform.project.charts,
    };
    let outcome = pull::pull(&world, &platform, &state, &net, false);
    *not_pulled = reasons(&platform, &outcome.errors);
    // A version range the import could not pin is already said (E033, and
    // E027 where the compile meets it); its failed pull is not said again.
    let ranges: Vec<String> = platform
        .components
        .values()
        .filter_map(|c| unpinned(&c.chart))
        .map(|(name, version)| pulled_as(name, version))
        .collect();
    let mut out: Vec<Diagnostic> = outcome
        .errors
        .iter()
        .filter(|e| !ranges.iter().any(|r| e.chart.starts_with(r)))
        .map(|e| at(format!("cannot pull {}: {}", e.chart, e.message), &e.help))
        .collect();
    if let Some(text) = &outcome.lock_text
        && let Err(e) = crate::world::disk::write_atomic(&world.root().join(crate::charts::lock::FILE), text.as_bytes())
    {
        out.push(at(
            format!("cannot write {}: {e}", crate::charts::lock::FILE),
            "check the folder",
        ));
    }
    out
}

/// Per component, the first failure to pull its chart or a dependency of
/// it: a remote chart is named `<name> <version> from …`, a dependency of
/// the chart kept in `<path>` `… (dependency of <path>)`.
fn reasons(platform: &crate::load::Platform, errors: &[pull::PullError]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (name, c) in &platform.components {
        if let Some((_, version)) = unpinned(&c.chart) {
            out.insert(
                name.clone(),
                format!("its version `{version}` {} (see E033 above)", import::UNPINNED),
            );
            continue;
        }
        let hit = errors.iter().find(|e| match &c.chart {
            crate::load::Chart::Remote { name, version, .. } => e.chart.starts_with(&pulled_as(name, version)),
            crate::load::Chart::Local { path } => {
                e.chart == *path || e.chart.ends_with(&format!("(dependency of {path})"))
            }
            crate::load::Chart::None => false,
        });
        if let Some(e) = hit {
            out.insert(name.clone(), format!("cannot pull {}: {}", e.chart, e.message));
        }
    }
    out
}

/// How a failed pull of a remote chart begins to name it.
fn pulled_as(name: &str, version: &str) -> String {
    format!("{name} {version} from ")
}

/// A remote chart's name and version when the version is a range (or
/// anything else that is not one version), which the import could not pin.
fn unpinned(chart: &crate::load::Chart) -> Option<(&str, &str)> {
    match chart {
        crate::load::Chart::Remote { name, version, .. } if !import::one_version(version) => Some((name, version)),
        _ => None,
    }
}

/// Pins the chart version ranges of the tree to what they resolve to now
/// (see [`import::resolve`]).
fn pin_ranges(read: &mut import::Read, tools: &Tools, limits: crate::helm::Limits) -> Vec<Diagnostic> {
    let vars = super::charts::network_env();
    let Ok(http) = crate::charts::http::Http::new(&vars) else {
        return Vec::new();
    };
    let home = read.kept.as_ref().and_then(|k| k.scratch("helm-pull").ok());
    let helm = match (&tools.helm, home) {
        (Some(path), Some(home)) => crate::helm::Helm::new(path, &home, None)
            .ok()
            .map(|h| h.with_limits(limits).with_network_env(vars.clone())),
        _ => None,
    };
    import::resolve::ranges(read, &http, helm.as_ref())
}

fn summary(out: &Path, planned: &import::Imported, not_converted: usize, verdict: &import::Verdict, quiet: bool) {
    if quiet && verdict.equal() {
        return;
    }
    let listed = if not_converted == 0 {
        "everything was converted".to_owned()
    } else {
        format!("{not_converted} thing(s) not converted, listed above")
    };
    let verdict_text = if verdict.equal() {
        format!(
            "every release renders, and its values and objects equal the source's, in all {} case(s)",
            verdict.total
        )
    } else {
        format!(
            "{} release(s) differ from the source's and {} could not be proven, listed above ({} of {} rendered)",
            verdict.differing, verdict.not_proven, verdict.rendered, verdict.total
        )
    };
    eprintln!(
        "wrote {} component(s) in {} environment(s) to {}: {listed}; {verdict_text}",
        planned.components.len(),
        planned.envs.len(),
        out.display()
    );
}
