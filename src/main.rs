//! The `strata` binary: parse the arguments, run, exit with the code.

use clap::Parser;

// A compile allocates millions of small values from several threads;
// mimalloc's per-thread heaps keep that from serialising on one lock.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = strata::cli::Cli::parse();
    std::process::exit(strata::cli::run(cli));
}
