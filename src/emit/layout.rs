//! From rendered objects to files: one object per file, named from its kind
//! and name, and a `kustomization.yaml` in every folder listing its files.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use crate::diag::{Diagnostic, codes};
use crate::render::{EnvRender, Object};
use crate::yaml;

/// The files of the tree, by path relative to the output directory.
pub type Files = BTreeMap<String, String>;

/// The unit prefix of an environment and target: `<env>/<target>`.
pub fn unit(env: &str, target: &str) -> String {
    format!("{env}/{target}")
}

/// Lays out every environment's objects.
pub fn layout(renders: &[EnvRender]) -> Result<Files, Vec<Diagnostic>> {
    let mut files = Files::new();
    let mut diags = Vec::new();
    for r in renders {
        match layout_env(r, None) {
            Ok(f) => files.extend(f),
            Err(d) => diags.extend(d),
        }
    }
    if diags.is_empty() { Ok(files) } else { Err(diags) }
}

/// Lays out one environment's objects, serialising them in parallel (it is
/// most of the work). A folder's own `kustomization.yaml` (it has objects)
/// wins over the list of its subfolders. With `only`, the objects of other
/// components are left out (a diff compares only those a change reaches;
/// their folders are their own).
pub fn layout_env(r: &EnvRender, only: Option<&BTreeSet<String>>) -> Result<Files, Vec<Diagnostic>> {
    // Gathered in a list and built into the map at once, in (nearly) path
    // order: inserting thousands of long paths one by one compares their
    // common prefixes over and over. A later entry for a path wins, as an
    // insert would.
    let mut files: Vec<(String, String)> = Vec::new();
    let mut diags = Vec::new();
    let mut folders: Vec<(String, Vec<&Object>)> = Vec::new();
    let kept = |o: &&Object| only.is_none_or(|only| o.component.as_ref().is_none_or(|c| only.contains(c)));
    for (target, objects) in &r.targets {
        let objects: Vec<&Object> = objects.iter().filter(kept).collect();
        let prefix = unit(&r.env, target.name());
        let mut by_folder: BTreeMap<&str, Vec<&Object>> = BTreeMap::new();
        for o in &objects {
            by_folder.entry(o.folder.as_str()).or_default().push(o);
        }
        for (folder, objs) in by_folder {
            let dir = if folder.is_empty() {
                prefix.clone()
            } else {
                format!("{prefix}/{folder}")
            };
            folders.push((dir, objs));
        }
        // A folder that only holds folders (`components/`) lists them, so
        // that every folder of the tree builds with kustomize.
        let mut parents: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for o in &objects {
            if let Some((parent, child)) = o.folder.rsplit_once('/') {
                parents.entry(parent.to_owned()).or_default().push(child.to_owned());
            }
        }
        for (parent, mut children) in parents {
            children.sort();
            children.dedup();
            files.push((
                format!("{prefix}/{parent}/kustomization.yaml"),
                kustomization(&children),
            ));
        }
    }
    // The substrate's files: no Kubernetes objects, so no kustomization.
    for o in &r.substrate {
        files.push((
            format!("{}/{}", unit(&r.env, o.folder.as_str()), o.file_name(false)),
            o.canonical_yaml(),
        ));
    }
    // Each folder's names and list, then every object serialised in one
    // loop, a few at a time on each thread: a folder of hundreds of objects
    // (`argo/`) does not end the loop on one thread while the other waits.
    let laid: Vec<Named<'_>> = folders
        .par_iter()
        .with_max_len(1)
        .map(|(dir, objs)| {
            let mut diags = Vec::new();
            let names = name_folder(&r.env, dir, objs, &mut diags);
            let resources: Vec<String> = names.keys().cloned().collect();
            let named = names
                .into_iter()
                .map(|(name, o)| (format!("{dir}/{name}"), o))
                .collect();
            Named {
                list_path: format!("{dir}/kustomization.yaml"),
                list: kustomization(&resources),
                objects: named,
                diags,
            }
        })
        .collect();
    let mut named: Vec<(String, &Object)> = Vec::new();
    for folder in laid {
        files.push((folder.list_path, folder.list));
        named.extend(folder.objects);
        diags.extend(folder.diags);
    }
    let texts: Vec<String> = named
        .par_iter()
        .with_max_len(4)
        .map(|(_, o)| o.canonical_yaml())
        .collect();
    files.extend(named.into_iter().map(|(path, _)| path).zip(texts));
    if diags.is_empty() {
        Ok(Files::from_iter(files))
    } else {
        Err(diags)
    }
}

/// One folder, its files named: its `kustomization.yaml` and the path of
/// each object's file.
struct Named<'a> {
    list_path: String,
    list: String,
    objects: Vec<(String, &'a Object)>,
    diags: Vec<Diagnostic>,
}

/// The file names of one folder's objects: plain where they are unique in
/// the folder, else with the namespace. Two objects for one name are
/// reported, and the second left out.
fn name_folder<'a>(
    env: &str,
    dir: &str,
    objs: &[&'a Object],
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, &'a Object> {
    let mut names: BTreeMap<String, &Object> = BTreeMap::new();
    let file_names = crate::render::file_names(objs.iter().copied());
    for (o, name) in objs.iter().zip(file_names) {
        if let Some(prev) = names.get(&name) {
            let same = prev.id() == o.id() && prev.api_version() == o.api_version();
            let d = if same {
                Diagnostic::error(
                    codes::OBJECT,
                    o.origin.clone(),
                    format!("{} is defined twice in environment {env}", o.id()),
                )
                .with_label("second definition")
                .with_related(prev.origin.clone(), "first definition")
                .with_help("each object may be defined once per environment; remove one of them")
            } else {
                // Different objects whose kinds and names map to one file
                // name (`system:x` and `system-x`, or two spellings of a
                // kind): one would overwrite the other.
                Diagnostic::error(
                    codes::OBJECT,
                    o.origin.clone(),
                    format!(
                        "{} and {} would both be written to {dir}/{name} in environment {env}",
                        prev.id(),
                        o.id()
                    ),
                )
                .with_label(format!("{} ({})", o.id(), o.api_version()))
                .with_related(prev.origin.clone(), format!("{} ({})", prev.id(), prev.api_version()))
                .with_note(
                    "a file is named from the object's kind and name in lower case, every character \
                     other than a-z, 0-9, `.`, `_` and `-` replaced by `-`",
                )
                .with_help("rename one of the two objects so that their file names differ")
            };
            diags.push(d);
            continue;
        }
        names.insert(name, o);
    }
    names
}

/// A kustomize `kustomization.yaml` listing `resources`.
pub fn kustomization(resources: &[String]) -> String {
    let value = serde_json::json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    });
    yaml::to_canonical_yaml(&value)
}
