//! Flux 2.7 `ExternalArtifact`s that an `ArtifactGenerator`
//! (`source.extensions.fluxcd.io`) makes from this repository, laid out as
//! the source-watcher lays them out, so that a Kustomization reading one
//! is built from the same files the controller would give it
//! (fluxcd/source-watcher `docs/spec/v1beta1/artifactgenerators.md`, and
//! `internal/builder/builder.go`, `applyCopyOperation`):
//!
//! - copies run in order, a later one overwriting an earlier one;
//! - `@alias/path` without a glob copies a file (into `to` when it ends
//!   in `/` or is a folder already, else as `to`), or a folder as a
//!   subfolder of `to`;
//! - a glob is matched one path segment per pattern segment (Go's
//!   `fs.Glob`, where `**` is no more than `*`); a pattern ending in `/**`
//!   strips its folder from each match, any other keeps the whole match;
//! - `exclude` globs (doublestar: `**` spans segments) are matched against
//!   the path from the source's top and from the pattern's literal folder,
//!   and a pattern without `/` against the file name alone;
//! - `strategy: Merge` merges a YAML file into the one already there, maps
//!   key by key and lists replaced, as Helm merges values files.
//!
//! Only sources that are this repository (the GitRepository the root
//! reads) or another artifact of the tree can be laid out; `Extract` and
//! `pathPattern` are not supported and are said to be.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::super::glob::glob;
use super::super::values;

/// The most files and bytes one artifact may hold.
const MAX_FILES: usize = 50_000;
const MAX_BYTES: u64 = 512 * 1024 * 1024;

/// Where each alias of a generator is on disk.
pub type Sources<'a> = &'a dyn Fn(&Value) -> Result<PathBuf, String>;

/// Lays out artifact `name` of the generator `generator` into `dest`. `source`
/// gives the folder of a generator source (`{alias, kind, name,
/// namespace}`), or why it cannot be had.
pub fn lay_out(generator: &Value, name: &str, dest: &Path, source: Sources<'_>) -> Result<(), String> {
    let spec = &generator["spec"];
    if spec.get("pathPattern").is_some_and(|p| !p.is_null()) {
        return Err("its generator uses pathPattern, which the import does not follow".into());
    }
    let artifact = spec["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["name"].as_str() == Some(name))
        .ok_or_else(|| format!("the generator has no artifact named {name}"))?;
    let mut budget = Budget::default();
    for op in artifact["copy"].as_array().into_iter().flatten() {
        let from = op["from"].as_str().unwrap_or("");
        let to = op["to"].as_str().unwrap_or("");
        apply(spec, op, dest, source, &mut budget).map_err(|e| format!("copy from {from} to {to}: {e}"))?;
    }
    Ok(())
}

#[derive(Default)]
struct Budget {
    files: usize,
    bytes: u64,
}

fn apply(spec: &Value, op: &Value, dest: &Path, source: Sources<'_>, budget: &mut Budget) -> Result<(), String> {
    let from = op["from"].as_str().unwrap_or("");
    let to = op["to"].as_str().unwrap_or("");
    let strategy = op["strategy"].as_str().unwrap_or("Overwrite");
    if strategy == "Extract" {
        return Err("the Extract strategy is not supported".into());
    }
    let (alias, pattern) = from
        .strip_prefix('@')
        .and_then(|f| f.split_once('/'))
        .ok_or("a source must be `@alias/path`")?;
    let dest_rel = to
        .strip_prefix("@artifact/")
        .ok_or("a destination must start with `@artifact/`")?;
    let dest_rel = if dest_rel.is_empty() {
        String::new()
    } else {
        crate::world::normalize(dest_rel).map_err(|e| e.to_string())?
    };
    let src = spec["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["alias"].as_str() == Some(alias))
        .ok_or_else(|| format!("no source has alias {alias}"))?;
    let root = source(src)?;
    let excludes: Vec<String> = op["exclude"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str().map(str::to_owned))
        .collect();
    let copy = Copy {
        root: &root,
        dest,
        excludes: &excludes,
        merge: strategy == "Merge",
    };
    if !pattern.contains(['*', '?', '[', ']']) {
        return copy.single(pattern, &dest_rel, to.ends_with('/'), budget);
    }
    let matches = glob_matches(&root, pattern)?;
    let base = literal_prefix(pattern);
    let kept: Vec<String> = matches
        .into_iter()
        .filter(|m| m != "." && !excluded(m, &base, &excludes))
        .collect();
    if kept.is_empty() {
        return Err(format!("no file matches {pattern}"));
    }
    for m in kept {
        let target = match pattern.strip_suffix("/**") {
            Some(prefix) => match m.strip_prefix(&format!("{prefix}/")) {
                Some(rest) => crate::world::join(&dest_rel, rest),
                None => crate::world::join(&dest_rel, &m),
            },
            None => crate::world::join(&dest_rel, &m),
        };
        copy.entry(&m, &target, &base, budget)?;
    }
    Ok(())
}

struct Copy<'a> {
    root: &'a Path,
    dest: &'a Path,
    excludes: &'a [String],
    merge: bool,
}

impl Copy<'_> {
    /// A path without a glob: a file or a folder.
    fn single(&self, pattern: &str, dest_rel: &str, into: bool, budget: &mut Budget) -> Result<(), String> {
        let src = crate::world::normalize(pattern).map_err(|e| e.to_string())?;
        let at = self.root.join(&src);
        let meta = std::fs::symlink_metadata(&at).map_err(|_| format!("{pattern} does not exist"))?;
        let base = src.rsplit('/').next().unwrap_or(&src).to_owned();
        if meta.is_dir() {
            return self.entry(&src, &crate::world::join(dest_rel, &base), &src, budget);
        }
        if excluded(&src, ".", self.excludes) {
            return Ok(());
        }
        let target = if into || self.dest.join(dest_rel).is_dir() {
            crate::world::join(dest_rel, &base)
        } else {
            dest_rel.to_owned()
        };
        self.entry(&src, &target, ".", budget)
    }

    /// Copies a file, or a folder recursively, to `target`.
    fn entry(&self, src: &str, target: &str, base: &str, budget: &mut Budget) -> Result<(), String> {
        let at = self.root.join(src);
        let meta = std::fs::symlink_metadata(&at).map_err(|e| format!("{src}: {e}"))?;
        if meta.file_type().is_symlink() {
            return Ok(());
        }
        if !meta.is_dir() {
            return self.file(&at, target, budget);
        }
        for e in walkdir::WalkDir::new(&at).follow_links(false).sort_by_file_name() {
            let e = e.map_err(|e| e.to_string())?;
            let rel = e
                .path()
                .strip_prefix(&at)
                .unwrap_or(e.path())
                .to_string_lossy()
                .replace('\\', "/");
            let full = crate::world::join(src, &rel);
            if !rel.is_empty() && excluded(&full, base, self.excludes) {
                continue;
            }
            let to = crate::world::join(target, &rel);
            if e.file_type().is_dir() {
                std::fs::create_dir_all(self.dest.join(&to)).map_err(|e| e.to_string())?;
            } else if e.file_type().is_file() {
                self.file(e.path(), &to, budget)?;
            }
        }
        Ok(())
    }

    fn file(&self, from: &Path, target: &str, budget: &mut Budget) -> Result<(), String> {
        let to = self.dest.join(target);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let bytes =
            crate::world::disk::read_regular(from, MAX_BYTES).map_err(|e| format!("{}: {e}", from.display()))?;
        budget.files += 1;
        budget.bytes += bytes.len() as u64;
        if budget.files > MAX_FILES || budget.bytes > MAX_BYTES {
            return Err(format!(
                "the artifact would hold more than {MAX_FILES} files or {} MiB",
                MAX_BYTES >> 20
            ));
        }
        if self.merge && to.is_file() {
            let merged = merge_yaml(&to, &bytes)?;
            return std::fs::write(&to, merged).map_err(|e| e.to_string());
        }
        std::fs::write(&to, bytes).map_err(|e| e.to_string())
    }
}

/// The file at `to` with the YAML `over` merged into it, Helm's way.
fn merge_yaml(to: &Path, over: &[u8]) -> Result<String, String> {
    let name = std::sync::Arc::from("artifact");
    let read = |bytes: &[u8]| -> Result<Value, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())?;
        crate::yaml::parse(&name, text)
            .map(|n| n.to_json())
            .map_err(|e| e.message)
    };
    let mut base = read(&std::fs::read(to).map_err(|e| e.to_string())?)?;
    values::merge(&mut base, &read(over)?);
    Ok(crate::yaml::to_sorted_yaml(&base))
}

/// Every path below `root` whose segments match the pattern's, one for one.
fn glob_matches(root: &Path, pattern: &str) -> Result<Vec<String>, String> {
    let segs: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let mut level: Vec<String> = vec![String::new()];
    for (i, seg) in segs.iter().enumerate() {
        let mut next = Vec::new();
        for dir in &level {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            for n in names {
                // `**` is `*` to Go's path.Match.
                let one = if *seg == "**" { "*" } else { seg };
                if glob(one, &n) {
                    let p = crate::world::join(dir, &n);
                    if i + 1 == segs.len() || root.join(&p).is_dir() {
                        next.push(p);
                    }
                }
            }
            if next.len() > MAX_FILES {
                return Err(format!("{pattern} matches more than {MAX_FILES} paths"));
            }
        }
        level = next;
    }
    Ok(level)
}

/// The part of a pattern before its first glob segment (`.` if none).
fn literal_prefix(pattern: &str) -> String {
    let parts: Vec<&str> = pattern
        .split('/')
        .filter(|s| !s.is_empty())
        .take_while(|s| !s.contains(['*', '?', '[', ']']))
        .collect();
    if parts.is_empty() { ".".into() } else { parts.join("/") }
}

/// Whether an exclude pattern drops `path` (relative to the source's top).
fn excluded(path: &str, base: &str, excludes: &[String]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let rel = if base == "." || base.is_empty() {
        None
    } else {
        path.strip_prefix(&format!("{base}/"))
    };
    excludes
        .iter()
        .any(|p| glob(p, path) || rel.is_some_and(|r| glob(p, r)) || (!p.contains('/') && glob(p, name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn copies_follow_the_source_watchers_rules() {
        let repo = tempfile::tempdir().unwrap();
        let w = |p: &str, t: &str| {
            let p = repo.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        w("apps/base/podinfo/release.yaml", "a: 1\n");
        w("apps/base/podinfo/README.md", "x\n");
        w("apps/staging/kustomization.yaml", "resources: [../base/podinfo]\n");
        w("values/prod.yaml", "b: {c: 2}\n");
        w("charts/app/values.yaml", "b: {d: 1}\n");
        let generator = json!({"spec": {
        "sources": [{"alias": "repo", "kind": "GitRepository", "name": "flux-system"}],
        "artifacts": [{"name": "apps", "copy": [
            {"from": "@repo/apps/base/**", "to": "@artifact/base/", "exclude": ["*.md"]},
            {"from": "@repo/apps/staging/**", "to": "@artifact/staging/"},
            {"from": "@repo/charts/app", "to": "@artifact/"},
            {"from": "@repo/values/prod.yaml", "to": "@artifact/app/values.yaml", "strategy": "Merge"},
        ]}]}});
        let dest = tempfile::tempdir().unwrap();
        let root = repo.path().to_path_buf();
        lay_out(&generator, "apps", dest.path(), &|_| Ok(root.clone())).unwrap();
        let d = dest.path();
        assert!(d.join("base/podinfo/release.yaml").is_file());
        assert!(!d.join("base/podinfo/README.md").exists());
        assert!(d.join("staging/kustomization.yaml").is_file());
        let values = std::fs::read_to_string(d.join("app/values.yaml")).unwrap();
        assert!(values.contains("c: 2") && values.contains("d: 1"), "{values}");
        assert!(lay_out(&generator, "nope", d, &|_| Ok(root.clone())).is_err());
    }
}
