//! `strata import flux|argo PATH [--out DIR]`: write a platform from an
//! existing Flux tree or Argo CD Applications, then prove it: compile it
//! and compare every release's values with the source's. Needs no
//! repository: it makes one.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::init::refusal;
use super::{cli_path, exit};
use crate::diag::{self, Diagnostic, Severity, Sources};
use crate::import::{self, Engine, Tools};
use crate::scaffold;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The engine whose tree is read: flux (clusters/<name>/ folders and
    /// the HelmReleases they apply) or argo (Applications and ApplicationSets)
    #[arg(value_enum)]
    pub engine: EngineArg,
    /// The tree to read: a checkout of the GitOps repository
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// The folder to write the platform into, created if missing (default:
    /// the working directory); it must not hold a platform already
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
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
    let tools = Tools {
        kubectl: find_kubectl(),
    };
    let shown = args.path.display().to_string();
    let read = match import::read(engine, &cli_path(&args.path), &shown, &tools, &sources) {
        Ok(r) => r,
        Err(mut errors) => {
            print(&mut errors);
            return exit::INPUT;
        }
    };
    let mut planned = import::plan(&read);
    if let Err(r) = scaffold::write_new(&out, &planned.files) {
        print(&mut vec![refusal(&r)]);
        return exit::INPUT;
    }
    let mut notes = read.notes;
    notes.append(&mut planned.notes);
    let converted = notes.len();
    match import::verify(&out, super::today(), &planned.expected, &sources) {
        Ok(mut differs) => {
            let failed = differs.len();
            notes.append(&mut differs);
            print(&mut notes);
            summary(&out_given, &planned, converted, failed, quiet);
            if failed == 0 { exit::OK } else { exit::FINDINGS }
        }
        Err(mut errors) => {
            notes.append(&mut errors);
            print(&mut notes);
            eprintln!(
                "error: the platform written in {} does not compile; the values could not be compared",
                out_given.display()
            );
            exit::FINDINGS
        }
    }
}

fn summary(out: &Path, planned: &import::Imported, not_converted: usize, differ: usize, quiet: bool) {
    if quiet && differ == 0 {
        return;
    }
    let listed = if not_converted == 0 {
        "everything was converted".to_owned()
    } else {
        format!("{not_converted} thing(s) not converted, listed above")
    };
    let verdict = if differ == 0 {
        format!(
            "every release's values equal the source's in all {} case(s)",
            planned.expected.len()
        )
    } else {
        format!("{differ} release(s) have other values than the source's, listed above")
    };
    eprintln!(
        "wrote {} component(s) in {} environment(s) to {}: {listed}; {verdict}",
        planned.components.len(),
        planned.envs.len(),
        out.display()
    );
}
