//! Reading a chart archive (`strata charts add`, the store): any bytes must
//! read as a chart or fail with a message. Never a panic, a hang or
//! unbounded memory. The first byte chooses what the rest is: the archive
//! itself; a tar stream, gzip-compressed here so that the fuzzer reaches
//! the tar reader; or files (`path\0content\0…`) packed into a chart
//! archive under `c/`, so that it reaches Chart.yaml, values and subcharts.

#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use strata::charts::archive;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).expect("in memory");
    gz.finish().expect("in memory")
}

/// A tar of `path\0content\0…`, each path written into the header as it is
/// (so that `..`, `/` and the like reach the reader).
fn packed(data: &[u8]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    let mut parts = data.split(|b| *b == 0);
    while let (Some(path), Some(content)) = (parts.next(), parts.next()) {
        let mut name = b"c/".to_vec();
        name.extend_from_slice(&path[..path.len().min(90)]);
        let mut h = tar::Header::new_gnu();
        h.set_size(content.len() as u64);
        h.set_mode(0o644);
        h.as_old_mut().name[..name.len()].copy_from_slice(&name);
        h.set_cksum();
        let _ = tar.append(&h, content);
    }
    gzip(&tar.into_inner().unwrap_or_default())
}

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = data.split_first() else { return };
    let bytes = match mode % 3 {
        0 => rest.to_vec(),
        1 => gzip(rest),
        _ => packed(rest),
    };
    let loose = archive::read_archive(&bytes);
    let strict = archive::verify_archive(&bytes);
    // The strict reader accepts nothing the store's reader refuses.
    if strict.is_ok() {
        assert!(loose.is_ok(), "verify_archive accepted what read_archive refuses");
    }
    if let Ok(info) = loose {
        assert!(!info.name.is_empty(), "a chart without a name");
        let _ = info.values();
        let _ = info.all_unstable();
        let _ = info.any_uses_api_versions();
    }
    if let Err(e) = strict {
        assert!(!e.is_empty());
    }
});
