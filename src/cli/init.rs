//! `strata init [--substrate kind|talos] [DIR]`: write a platform skeleton
//! that renders and checks clean. Needs no repository: it makes one.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{cli_path, exit};
use crate::diag::{self, Diagnostic, Sources, codes};
use crate::scaffold::{self, Refusal, Substrate};
use crate::yaml::Origin;

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The substrate type of the first environment: kind (a local cluster,
    /// environment `dev`) or talos (Talos on Proxmox, environment `staging`,
    /// ADR 007's rules on, example values in its contract)
    #[arg(long, value_enum, default_value_t = SubstrateArg::Kind)]
    pub substrate: SubstrateArg,
    /// The folder to write into, created if missing (default: the working
    /// directory); it must not hold a platform already
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubstrateArg {
    Kind,
    Talos,
}

impl From<SubstrateArg> for Substrate {
    fn from(s: SubstrateArg) -> Self {
        match s {
            SubstrateArg::Kind => Substrate::Kind,
            SubstrateArg::Talos => Substrate::Talos,
        }
    }
}

/// A refusal to write, as a diagnostic at the path it is about.
pub fn refusal(r: &Refusal) -> Diagnostic {
    Diagnostic::error(
        codes::REFUSED_WRITE,
        Origin::file_start(r.path().display().to_string()),
        format!("{r}; nothing was written"),
    )
    .with_help(r.help())
}

pub fn run(color: bool, quiet: bool, args: &InitArgs) -> i32 {
    let given = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let dir = cli_path(&given);
    let substrate = Substrate::from(args.substrate);
    let written = scaffold::check_empty_of_platform(&dir)
        .and_then(|()| scaffold::write_new(&dir, &scaffold::skeleton(substrate)));
    match written {
        Ok(files) => {
            if !quiet {
                report(&given, &dir, substrate, &files);
            }
            exit::OK
        }
        Err(r) => {
            eprint!("{}", diag::render_text(&[refusal(&r)], &Sources::default(), color));
            exit::INPUT
        }
    }
}

fn report(given: &std::path::Path, dir: &std::path::Path, substrate: Substrate, files: &[PathBuf]) {
    eprintln!(
        "wrote a {} platform in {}: {} file(s)",
        substrate.name(),
        given.display(),
        files.len()
    );
    for f in files {
        eprintln!("  {}", f.strip_prefix(dir).unwrap_or(f).display());
    }
    let env = substrate.env();
    let cd = if given == std::path::Path::new(".") {
        String::new()
    } else {
        format!("cd {} && ", given.display())
    };
    eprintln!(
        "next: {cd}strata render && strata check; then put your stack's outputs in contracts/{env}.yaml \
         (tofu output -json | strata contract import --env {env} -)"
    );
}
