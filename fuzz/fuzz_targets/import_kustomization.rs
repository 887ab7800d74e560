//! Importing a Flux tree whose cluster folder is a kustomization: any
//! `kustomization.yaml` (resources, components, patches, generators,
//! namespace and name changes) and the files it names, built by the real
//! kubectl as kustomize-controller builds it, must import or fail with
//! errors placed in the tree. Never a panic, a hang or unbounded memory.
//! The text before the first `#- PATH` line is
//! `clusters/dev/kustomization.yaml` (see `common/tree.rs`).

#![no_main]

#[path = "common/tree.rs"]
mod tree;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let files = tree::files(text, "clusters/dev/kustomization.yaml");
    let dir = tree::write(&files);
    tree::import(strata::import::Engine::Flux, dir.path());
});
