//! The `strata` binary: parse the arguments, run, exit with the code.

use clap::Parser;

fn main() {
    let cli = strata::cli::Cli::parse();
    std::process::exit(strata::cli::run(cli));
}
