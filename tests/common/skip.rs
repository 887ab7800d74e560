//! Tests that skip a check because a tool or a data set is missing say so
//! where it shows: a line on the terminal as it happens (written past the
//! test harness's capture, which would hide it for a passing test), and,
//! after the harness's `test result:` line, a count of the skipped checks
//! and why, for the whole test binary. libtest has no "skipped" outcome on
//! stable Rust, and `#[ignore]` is decided at compile time, where the tools
//! of the machine that runs the tests are not known; so a skipping test
//! passes, and the summary says what it did not check.
//!
//! Under `CI=true` nothing skips: the helpers fail the test instead.

use std::io::Write;
use std::sync::Mutex;

/// Every skip of this test binary: (test, why).
static SKIPPED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

#[allow(unsafe_code)]
mod at_exit {
    unsafe extern "C" {
        fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
    }

    /// Runs `f` when the process exits, after the test harness's summary
    /// (it returns from `main`, or calls `exit` when a test failed).
    pub fn register(f: extern "C" fn()) {
        // SAFETY: `atexit` is the C library's, with this exact signature;
        // `f` takes nothing, returns nothing and does not unwind (it only
        // writes to standard error, ignoring failures).
        unsafe {
            atexit(f);
        }
    }
}

extern "C" fn summary() {
    let skipped = SKIPPED.lock().map(|s| s.clone()).unwrap_or_default();
    let mut out = std::io::stderr().lock();
    let _ = writeln!(
        out,
        "note: {} check(s) in the tests above were skipped, each in a test that passed without it:",
        skipped.len()
    );
    for (test, why) in &skipped {
        let _ = writeln!(out, "  - {test}: {why}");
    }
    let _ = writeln!(out, "  run .ci/run (it installs every tool) to run them all\n");
}

/// Records that the running test skips a check, and why; prints it now
/// and again in the summary at the end of the test binary.
pub fn skipped(why: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let Ok(mut all) = SKIPPED.lock() else { return };
    if all.is_empty() {
        at_exit::register(summary);
    }
    all.push((test.clone(), why.to_owned()));
    drop(all);
    let _ = writeln!(std::io::stderr().lock(), "note: {test} skips a check: {why}");
}
