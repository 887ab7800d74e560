//! Importing a Flux tree (`strata import flux`): any files under a
//! `clusters/<name>/` folder and beside it — HelmReleases, Helm and OCI
//! repositories, Flux Kustomizations with their patches and post-build
//! substitutions, ConfigMaps and Secrets of values — must import or fail
//! with errors placed in the tree. Never a panic, a hang or unbounded
//! memory. The text before the first `#- PATH` line is
//! `clusters/dev/flux.yaml` (see `common/tree.rs`); the real kubectl
//! builds any kustomization the input writes.

#![no_main]

#[path = "common/tree.rs"]
mod tree;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let files = tree::files(text, "clusters/dev/flux.yaml");
    let dir = tree::write(&files);
    tree::import(strata::import::Engine::Flux, dir.path());
});
