//! Reading a Helm repository's `index.yaml` and choosing a version: any
//! bytes must read within the bounds or fail with a message, and any
//! version range must match or fail with a message. Never a panic, a hang
//! or unbounded memory. The first line of the input is the range.

#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use strata::charts::index;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (range, body) = text.split_once('\n').unwrap_or((text, ""));
    let want: BTreeSet<String> = ["web".to_owned()].into_iter().collect();
    let Ok(versions) = index::read(body.as_bytes(), &want) else { return };
    assert!(versions.keys().all(|k| k == "web"), "a chart not asked for was kept");
    let releases = versions.get("web").map(Vec::as_slice).unwrap_or_default();
    assert!(releases.len() <= index::MAX_VERSIONS);
    if let Ok(Some(best)) = index::newest(releases, range) {
        let v = index::parse_version(&best.version).expect("the newest parses");
        assert_eq!(index::satisfies(range, &v), Ok(true));
    }
    let _ = index::exact(releases, range);
});
