//! The admission preview's programs for tests: found as `strata check`
//! finds them (`STRATA_ADMISSION`, `STRATA_KYVERNO`, else the `PATH`).
//! Missing, a test fails under `CI=true` (`.ci/run` builds both) and skips
//! elsewhere, saying so.

use std::path::PathBuf;
use std::time::Duration;

use strata::admission::{ADMISSION, KYVERNO, Settings};
use strata::helm::program::{self, Program};

#[allow(clippy::disallowed_methods)]
fn find(name: &str, var: &str) -> Option<PathBuf> {
    let found = program::find(
        name,
        std::env::var_os(var).as_deref(),
        std::env::var_os("PATH").as_deref(),
        None,
    );
    match found {
        Ok(p) => Some(p),
        Err(why) => {
            if std::env::var_os("CI").is_some() {
                panic!("{name} is required in CI ({why}): .ci/run builds it from admission/");
            }
            super::skipped(&format!("{name} is not found ({why}; set {var})"));
            None
        }
    }
}

/// Settings with both programs, or `None` (the caller returns).
pub fn settings(home: &std::path::Path) -> Option<Settings> {
    let admission = find(ADMISSION, "STRATA_ADMISSION")?;
    let kyverno = find(KYVERNO, "STRATA_KYVERNO")?;
    let program = |path| Program {
        path,
        home: home.join("admission-home"),
    };
    Some(Settings {
        admission: Ok(program(admission)),
        kyverno: Ok(program(kyverno)),
        timeout: Duration::from_secs(120),
    })
}
