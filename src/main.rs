//! The `strata` binary: parse the arguments, run, exit with the code.

use clap::Parser;

// A compile allocates millions of small values from several threads;
// mimalloc's per-thread heaps keep that from serialising on one lock.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    leave_memory_to_the_exit();
    let cli = strata::cli::Cli::parse();
    std::process::exit(strata::cli::run(cli));
}

/// mimalloc, linked into a program, gives every page back to the system
/// page by page when the process exits (`mi_process_done` collects and
/// purges with `madvise`, one TLB shootdown each): a few milliseconds of a
/// render, spent on memory the kernel takes back whole a moment later.
/// `destroy_on_exit` above 1 makes its exit hook return at once
/// (`_mi_auto_process_done` in mimalloc 3's `src/init.c`).
#[allow(unsafe_code)]
fn leave_memory_to_the_exit() {
    // mimalloc 3's `mi_option_destroy_on_exit`: the 23rd of `mi_option_e`
    // in `include/mimalloc.h` (the crate's bindings name no constant).
    const DESTROY_ON_EXIT: libmimalloc_sys::mi_option_t = 22;
    // SAFETY: sets one integer option; called first thing, before any
    // thread is started, and read by mimalloc only at the exit.
    unsafe { libmimalloc_sys::mi_option_set(DESTROY_ON_EXIT, 2) };
}
