//! Importing an Argo CD tree (`strata import argo`): any files of
//! Applications (Helm sources, multiple sources with `$ref` value files,
//! `valuesObject`, `values`, parameters) and ApplicationSets (list,
//! cluster, git and matrix generators, Go and fasttemplate templates),
//! beside values files, must import or fail with errors placed in the tree.
//! Never a panic, a hang or unbounded memory. The text before the first
//! `#- PATH` line is `apps/app.yaml` (see `common/tree.rs`).

#![no_main]

#[path = "common/tree.rs"]
mod tree;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let files = tree::files(text, "apps/app.yaml");
    let dir = tree::write(&files);
    tree::import(strata::import::Engine::Argo, dir.path());
});
