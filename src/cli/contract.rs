//! `strata contract import [--env E] FILE|-`: write the environment's
//! contract from `tofu output -json`, without the values of sensitive
//! outputs (see [`crate::load::import_contract`]).

use std::io::Read;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{Context, cli_path, exit};
use crate::diag::{Diagnostic, codes};
use crate::load::import_contract::{self, Request};
use crate::yaml::{MAX_INPUT_BYTES, Origin};

#[derive(Args, Debug)]
pub struct ContractArgs {
    #[command(subcommand)]
    pub command: ContractCommand,
}

#[derive(Subcommand, Debug)]
pub enum ContractCommand {
    /// Write an environment's contract from `tofu output -json`, each
    /// sensitive output kept as its name, type and `sensitive: true`
    Import(ImportArgs),
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The environment whose `contract:` file is written (default: the only one)
    #[arg(long, value_name = "E")]
    pub env: Option<String>,
    /// Replace a file that is not a contract, and write outputs of another substrate type
    #[arg(long)]
    pub force: bool,
    /// `tofu output -json` (or `terraform output -json`): a file, or `-` for standard input
    #[arg(value_name = "FILE|-")]
    pub file: PathBuf,
}

pub fn run(ctx: &Context, args: &ContractArgs) -> i32 {
    let ContractCommand::Import(args) = &args.command;
    let (name, input) = match read_input(&args.file) {
        Ok(read) => read,
        Err(d) => {
            ctx.report(&mut vec![d]);
            return exit::INPUT;
        }
    };
    let req = Request {
        root: &ctx.root,
        world: &ctx.world,
        sources: &ctx.sources,
        env: args.env.as_deref(),
        input_name: &name,
        input: &input,
        force: args.force,
    };
    match import_contract::import(&req) {
        Ok(done) => {
            let what = format!(
                "{} outputs, {} of them sensitive (kept without their values)",
                done.outputs, done.sensitive
            );
            if let Some(s) = &done.substrate_from_env {
                ctx.info(&format!(
                    "note: the outputs have no `substrate`: the contract says `{s}`, the substrate of environment {} (add a `substrate` output to the stack, as ADR 0032 asks, to say it there)",
                    done.env
                ));
            }
            if done.unchanged {
                ctx.info(&format!(
                    "{} for environment {} is up to date: {what}",
                    done.path, done.env
                ));
            } else {
                ctx.info(&format!("wrote {} for environment {}: {what}", done.path, done.env));
            }
            exit::OK
        }
        Err(mut d) => {
            ctx.report(&mut d);
            exit::INPUT
        }
    }
}

/// The input's name for messages and its text, at most an input file's
/// size, as UTF-8.
fn read_input(file: &std::path::Path) -> Result<(String, String), Diagnostic> {
    let stdin = file.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_owned()
    } else {
        file.display().to_string()
    };
    let fail = |what: String, line: u32, col: u32| {
        Diagnostic::error(codes::CONTRACT_IMPORT, Origin::new(name.as_str(), line, col, 0), what)
            .with_help("pipe it in: `tofu output -json | strata contract import --env ENV -`")
    };
    let reader: Box<dyn Read> = if stdin {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(cli_path(file)).map_err(|e| fail(format!("cannot read {name}: {e}"), 1, 1))?)
    };
    let mut bytes = Vec::new();
    reader
        .take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(format!("cannot read {name}: {e}"), 1, 1))?;
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(fail(
            format!("{name} is over the limit of {MAX_INPUT_BYTES} bytes for an input"),
            1,
            1,
        ));
    }
    String::from_utf8(bytes).map(|text| (name.clone(), text)).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = good.iter().filter(|b| **b == b'\n').count() as u32 + 1;
        let col = good.iter().rev().take_while(|b| **b != b'\n').count() as u32 + 1;
        fail(format!("{name} is not UTF-8 text"), line, col)
    })
}
