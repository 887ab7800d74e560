//! The tree strata wrote before, read through the [`World`] as its record
//! (`.strata-manifest.json`) lists it: a render of the working tree reads
//! the folder on disk, a diff's base reads it from the revision. A file
//! whose bytes are not those the record hashed was edited by hand and is
//! not taken for strata's (see [`crate::render::handover`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use serde_json::Value as J;
use sha2::{Digest, Sha256};

use super::MANIFEST;
use super::manifest::bad_path;
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
    /// The record of `dir` (repository-relative), if it has a readable one,
    /// with the files of the environments in `envs` only (all when `None`):
    /// a diff compiles one environment, and the record lists every
    /// environment's files, tens of thousands at a large platform, which
    /// are skipped without being copied.
    pub fn read(world: &'w dyn World, dir: &str, envs: Option<&BTreeSet<String>>) -> Option<Recorded<'w>> {
        let text = world.read_text(&crate::world::join(dir, MANIFEST)).ok()?;
        let keep = |p: &str| {
            bad_path(p).is_none()
                && p != MANIFEST
                && envs.is_none_or(|envs| p.split_once('/').is_some_and(|(env, _)| envs.contains(env)))
        };
        let mut de = serde_json::Deserializer::from_str(&text);
        let files = de.deserialize_map(Record { keep: &keep }).ok()?;
        de.end().ok()?;
        Some(Recorded {
            world,
            dir: dir.to_owned(),
            files,
        })
    }
}

/// Reads a record (`{"version": 1, "files": {path: hash, ...}}`, see
/// [`super::manifest::Manifest`]) into its files that `keep` accepts.
struct Record<'k> {
    keep: &'k dyn Fn(&str) -> bool,
}

impl<'de> Visitor<'de> for Record<'_> {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a record of written files")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut files = None;
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match key.0.as_ref() {
                "files" => files = Some(map.next_value_seed(Files { keep: self.keep })?),
                "version" => {
                    map.next_value::<u32>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        files.ok_or_else(|| serde::de::Error::missing_field("files"))
    }
}

/// The `files` of a record, those `keep` accepts.
struct Files<'k> {
    keep: &'k dyn Fn(&str) -> bool,
}

impl<'de> DeserializeSeed<'de> for Files<'_> {
    type Value = BTreeMap<String, String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Files<'_> {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a map of paths to hashes")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(path) = map.next_key::<Key<'de>>()? {
            if (self.keep)(&path.0) {
                let hash: String = map.next_value()?;
                out.insert(path.0.into_owned(), hash);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}

/// A key, borrowed from the text where it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
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
        let tree = Recorded::read(&world, "out", None).unwrap();
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

    #[test]
    fn a_compile_of_some_environments_reads_their_files_only() {
        // Keys with escapes are read too; a record that is not one reads as none.
        let record = r#"{"version": 1, "files": {"dev/flux/a.yaml": "1", "prod/flux/a.yaml": "2", "dev/argo/b.yaml": "3", "dev": "4"}}"#;
        let world = MemWorld::new("2026-01-01").with("out/.strata-manifest.json", record);
        let dev = BTreeSet::from(["dev".to_owned()]);
        let tree = Recorded::read(&world, "out", Some(&dev)).unwrap();
        assert_eq!(
            tree.files.keys().collect::<Vec<_>>(),
            ["dev/argo/b.yaml", "dev/flux/a.yaml"]
        );
        let all = Recorded::read(&world, "out", None).unwrap();
        assert_eq!(all.files.len(), 4);
        let broken = MemWorld::new("2026-01-01").with("out/.strata-manifest.json", r#"{"version": 1}"#);
        assert!(Recorded::read(&broken, "out", None).is_none());
        let trailing = MemWorld::new("2026-01-01").with("out/.strata-manifest.json", r#"{"files": {}} x"#);
        assert!(Recorded::read(&trailing, "out", None).is_none());
    }
}
