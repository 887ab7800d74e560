//! The tree strata wrote before, read through the [`World`] as its record
//! (`.strata-manifest.json`) lists it: a render of the working tree reads
//! the folder on disk, a diff's base reads it from the revision. A file
//! whose bytes are not those the record hashed was edited by hand and is
//! not taken for strata's (see [`crate::render::handover`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value as J;
use sha2::{Digest, Sha256};

use super::MANIFEST;
use super::manifest::{Manifest, bad_path};
use crate::render::handover::Tree;
use crate::world::World;

/// The recorded files of one output folder.
pub struct Recorded<'w> {
    world: &'w dyn World,
    /// The output folder, relative to the repository root.
    dir: String,
    /// Recorded path (relative to `dir`) → the SHA-256 of its bytes.
    files: BTreeMap<String, String>,
}

impl std::fmt::Debug for Recorded<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorded")
            .field("dir", &self.dir)
            .field("files", &self.files.len())
            .finish()
    }
}

impl<'w> Recorded<'w> {
    /// The record of `dir` (repository-relative), if it has a readable one.
    pub fn read(world: &'w dyn World, dir: &str) -> Option<Recorded<'w>> {
        let text = world.read_text(&crate::world::join(dir, MANIFEST)).ok()?;
        let manifest: Manifest = serde_json::from_str(&text).ok()?;
        let files = manifest
            .files
            .into_iter()
            .filter(|(p, _)| bad_path(p).is_none() && p != MANIFEST)
            .collect();
        Some(Recorded {
            world,
            dir: dir.to_owned(),
            files,
        })
    }
}

impl Tree for Recorded<'_> {
    fn has(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    fn files_in(&self, dir: &str) -> Vec<String> {
        let prefix = format!("{dir}/");
        self.files
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, _)| Some(p[prefix.len()..].to_owned()).filter(|rest| !rest.contains('/')))
            .collect()
    }

    fn has_under(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        self.files
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(p, _)| p.starts_with(&prefix))
    }

    fn mentions(&self, path: &str, needle: &str) -> bool {
        self.files.contains_key(path)
            && self
                .world
                .read(&crate::world::join(&self.dir, path))
                .is_ok_and(|bytes| std::str::from_utf8(&bytes).is_ok_and(|text| text.contains(needle)))
    }

    fn objects(&self, path: &str) -> Option<Vec<J>> {
        let hash = self.files.get(path)?;
        let bytes = self.world.read(&crate::world::join(&self.dir, path)).ok()?;
        if crate::world::disk::hex(&Sha256::digest(&bytes)) != *hash {
            return None;
        }
        let text = String::from_utf8(bytes).ok()?;
        crate::yaml::parse_plain_multi(&Arc::from(path), &text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::MemWorld;

    #[test]
    fn only_files_as_strata_wrote_them_are_read() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";
        let hash = crate::world::disk::hex(&Sha256::digest(text.as_bytes()));
        let record = format!(
            "{{\"version\": 1, \"files\": {{\"dev/flux/components/a/configmap-a.yaml\": \"{hash}\", \
             \"dev/flux/components/a/edited.yaml\": \"{hash}\", \"../x\": \"{hash}\"}}}}"
        );
        let world = MemWorld::new("2026-01-01")
            .with("out/.strata-manifest.json", record)
            .with("out/dev/flux/components/a/configmap-a.yaml", text)
            .with("out/dev/flux/components/a/edited.yaml", format!("{text}# mine\n"));
        let tree = Recorded::read(&world, "out").unwrap();
        assert!(tree.has("dev/flux/components/a/configmap-a.yaml"));
        assert!(!tree.has("../x"));
        assert_eq!(
            tree.files_in("dev/flux/components/a"),
            ["configmap-a.yaml", "edited.yaml"]
        );
        assert!(tree.files_in("dev/flux/components").is_empty());
        assert!(tree.has_under("dev/flux/components"));
        assert!(!tree.has_under("dev/flux/component"));
        assert_eq!(
            tree.objects("dev/flux/components/a/configmap-a.yaml").unwrap()[0]["metadata"]["name"],
            "a"
        );
        assert!(tree.objects("dev/flux/components/a/edited.yaml").is_none());
        assert!(tree.mentions("dev/flux/components/a/configmap-a.yaml", "ConfigMap"));
        assert!(!tree.mentions("dev/flux/components/a/configmap-a.yaml", "Secret"));
        assert!(!tree.mentions("dev/flux/components/a/gone.yaml", "ConfigMap"));
    }
}
