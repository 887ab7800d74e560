//! Reading `strata.lock`: any bytes must read as a lock or fail with
//! errors at a place; a lock that reads is written back (`to_text`) to a
//! text that reads to the same lock, and writing that again changes
//! nothing. Never a panic, a hang or unbounded memory.

#![no_main]

use libfuzzer_sys::fuzz_target;
use strata::charts::lock;
use strata::diag::Sources;
use strata::world::MemWorld;

fn read(bytes: &[u8]) -> Result<Option<lock::Lock>, Vec<strata::diag::Diagnostic>> {
    let world = MemWorld::new("2026-01-01").with(lock::FILE, bytes.to_vec());
    lock::read(&world, &Sources::default())
}

fuzz_target!(|data: &[u8]| {
    let first = match read(data) {
        Ok(Some(l)) => l,
        Ok(None) => panic!("a lock file that exists reads as none"),
        Err(diags) => {
            assert!(!diags.is_empty());
            for d in &diags {
                assert!(d.origin.line >= 1 && d.origin.col >= 1, "an error without a place: {d:?}");
            }
            return;
        }
    };
    let text = first.to_text();
    let second = match read(text.as_bytes()) {
        Ok(Some(l)) => l,
        other => panic!("strata's own lock text does not read: {other:?}\n{text}"),
    };
    assert_eq!(second.to_text(), text, "writing the lock again changed it");
    for c in &second.charts {
        assert!(first.charts.iter().any(|f| f.repo_url == c.repo_url
            && f.name == c.name
            && f.version == c.version
            && f.digest == c.digest
            && f.manifest_digest == c.manifest_digest));
    }
});
