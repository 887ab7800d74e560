//! `strata completions SHELL` and `strata man`: generated from the same
//! clap definitions as the parser, so they cannot drift from it.

use std::io::Write;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{Cli, exit};

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn completions(args: &CompletionsArgs) -> i32 {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "strata", &mut out);
    write_stdout(&out)
}

pub fn man() -> i32 {
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(Cli::command()).render(&mut out) {
        eprintln!("error: cannot render the man page: {e}");
        return exit::INPUT;
    }
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> i32 {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => exit::OK,
        // A closed pipe (`| head`) is not an error of ours.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit::OK,
        Err(e) => {
            eprintln!("error: cannot write to standard output: {e}");
            exit::INPUT
        }
    }
}
