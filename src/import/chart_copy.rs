//! A chart kept in the imported tree, copied into the platform with the
//! charts it depends on through `file://` (Helm's `Chart.yaml`
//! `dependencies[].repository: file://../other`, resolved against the
//! chart's folder, helm `pkg/downloader/manager.go`): each such chart is
//! put under the copy's own `charts/<name>/`, where helm finds a
//! dependency already there (helm `pkg/chart/v2/util/dependencies.go`,
//! subcharts loaded from `charts/`), so the copied chart renders wherever
//! it is. A dependency from a repository stays for `strata charts pull`.

use std::path::Path;

use crate::scaffold::NewFile;

/// The most files and bytes a copied chart (with its dependencies) may
/// have, and how deep `file://` dependencies may nest.
const MAX_FILES: usize = 2_000;
const MAX_BYTES: u64 = 64 * 1024 * 1024;
const MAX_DEPTH: usize = 8;

/// The files of the chart in `dir` (relative to `root`), to write under
/// `to` (a platform-relative folder).
pub fn copy_chart(root: &Path, dir: &str, to: &str) -> Result<Vec<NewFile>, String> {
    let mut out = Vec::new();
    let mut total = 0u64;
    copy_one(root, dir, to, 0, &mut out, &mut total)?;
    Ok(out)
}

fn copy_one(
    root: &Path,
    dir: &str,
    to: &str,
    depth: usize,
    out: &mut Vec<NewFile>,
    total: &mut u64,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("file:// dependencies nest more than {MAX_DEPTH} deep at {dir}"));
    }
    let from = root.join(dir);
    let mut own: Vec<String> = Vec::new();
    for e in walkdir::WalkDir::new(&from).follow_links(false).sort_by_file_name() {
        let e = e.map_err(|e| e.to_string())?;
        if e.file_type().is_symlink() {
            return Err(format!("{} is a symbolic link", e.path().display()));
        }
        if !e.file_type().is_file() {
            continue;
        }
        let bytes = crate::world::disk::read_regular(e.path(), MAX_BYTES)
            .map_err(|err| format!("{}: {err}", e.path().display()))?;
        *total += bytes.len() as u64;
        if out.len() >= MAX_FILES || *total > MAX_BYTES {
            return Err(format!("more than {MAX_FILES} files or {} MiB", MAX_BYTES >> 20));
        }
        let rel = e
            .path()
            .strip_prefix(&from)
            .unwrap_or(e.path())
            .to_string_lossy()
            .replace('\\', "/");
        if encrypted(&rel, &bytes) {
            return Err(format!(
                "{dir}/{rel} holds SOPS-encrypted values, which strata never writes"
            ));
        }
        own.push(rel.clone());
        out.push(NewFile {
            path: format!("{to}/{rel}"),
            bytes,
        });
    }
    for (name, rel) in file_dependencies(&from)? {
        // A dependency the chart already carries in charts/ is used as is.
        let vendored = own.iter().any(|p| {
            p.starts_with(&format!("charts/{name}/"))
                || (p.starts_with(&format!("charts/{name}-")) && p.ends_with(".tgz"))
        });
        if vendored {
            continue;
        }
        let dep = dependency_dir(dir, &name, &rel)?;
        if !root.join(&dep).join("Chart.yaml").is_file() {
            return Err(format!(
                "dependency {name} at file://{rel} has no Chart.yaml in the tree"
            ));
        }
        copy_one(root, &dep, &format!("{to}/charts/{name}"), depth + 1, out, total)?;
    }
    Ok(())
}

/// Whether a chart file outside `templates/` is YAML holding SOPS
/// ciphertext (a values file encrypted in git).
fn encrypted(rel: &str, bytes: &[u8]) -> bool {
    let yaml = rel.ends_with(".yaml") || rel.ends_with(".yml");
    if !yaml || rel.starts_with("templates/") || !bytes.windows(4).any(|w| w == b"ENC[") {
        return false;
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    crate::yaml::parse_plain_multi(&std::sync::Arc::from(rel), text)
        .is_ok_and(|docs| docs.iter().any(super::sops::is_encrypted))
}

/// The tree folder of a `file://` dependency of the chart in `dir`: the
/// path joined to the chart's folder, or taken as it is when absolute
/// (helm `pkg/downloader/resolver.go`, `GetLocalPath`).
fn dependency_dir(dir: &str, name: &str, rel: &str) -> Result<String, String> {
    let out = || format!("dependency {name} at file://{rel} is outside the imported tree");
    if rel.starts_with('/') {
        return Err(out());
    }
    crate::world::normalize(&crate::world::join(dir, rel)).map_err(|_| out())
}

/// Every `file://` dependency of the chart in `dir` (relative to `root`),
/// and theirs, that leads out of the tree: what helm would read from
/// elsewhere on the disk.
pub fn outside_dependencies(root: &Path, dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![(dir.to_owned(), 0)];
    let mut seen = std::collections::BTreeSet::new();
    while let Some((at, depth)) = todo.pop() {
        if depth > MAX_DEPTH || !seen.insert(at.clone()) {
            continue;
        }
        let Ok(deps) = file_dependencies(&root.join(&at)) else {
            continue;
        };
        for (name, rel) in deps {
            match dependency_dir(&at, &name, &rel) {
                Ok(dep) => todo.push((dep, depth + 1)),
                Err(why) => out.push(format!("the chart in {at}: {why}")),
            }
        }
    }
    out.sort();
    out
}

/// The `file://` dependencies of the chart in `dir`: name and path.
fn file_dependencies(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let bytes = crate::world::disk::read_regular(&dir.join("Chart.yaml"), crate::yaml::MAX_INPUT_BYTES as u64)
        .map_err(|e| format!("Chart.yaml: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| "Chart.yaml is not UTF-8 text".to_owned())?;
    let node = crate::yaml::parse(&std::sync::Arc::from("Chart.yaml"), &text).map_err(|e| e.message)?;
    let chart = node.to_json();
    Ok(chart["dependencies"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| {
            let rel = d["repository"].as_str()?.strip_prefix("file://")?;
            let name = d["name"].as_str()?;
            Some((name.to_owned(), rel.to_owned()))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_dependencies_come_along() {
        let tmp = tempfile::tempdir().unwrap();
        let w = |p: &str, t: &str| {
            let p = tmp.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        w(
            "apps/web/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 0.1.0\ndependencies:\n- name: lib\n  version: 0.1.0\n  repository: file://../../libs/lib\n",
        );
        w("apps/web/templates/cm.yaml", "kind: ConfigMap\n");
        w("libs/lib/Chart.yaml", "apiVersion: v2\nname: lib\nversion: 0.1.0\n");
        w("libs/lib/templates/x.yaml", "kind: Secret\n");
        let files = copy_chart(tmp.path(), "apps/web", "charts/web").unwrap();
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "charts/web/Chart.yaml",
                "charts/web/templates/cm.yaml",
                "charts/web/charts/lib/Chart.yaml",
                "charts/web/charts/lib/templates/x.yaml"
            ]
        );
        w(
            "apps/bad/Chart.yaml",
            "apiVersion: v2\nname: bad\nversion: 0.1.0\ndependencies:\n- name: x\n  repository: file://../../../x\n",
        );
        assert!(
            copy_chart(tmp.path(), "apps/bad", "charts/bad")
                .unwrap_err()
                .contains("outside")
        );
        assert_eq!(
            outside_dependencies(tmp.path(), "apps/bad"),
            ["the chart in apps/bad: dependency x at file://../../../x is outside the imported tree"]
        );
        assert_eq!(outside_dependencies(tmp.path(), "apps/web"), Vec::<String>::new());
        // Ciphertext is not copied, nor the chart that holds it.
        w(
            "apps/sealed/Chart.yaml",
            "apiVersion: v2\nname: sealed\nversion: 0.1.0\n",
        );
        w(
            "apps/sealed/values.yaml",
            "password: ENC[AES256_GCM,data:abc=,iv:x,tag:y,type:str]\nsops:\n  mac: ENC[AES256_GCM,data:m,iv:x,tag:y,type:str]\n",
        );
        assert!(
            copy_chart(tmp.path(), "apps/sealed", "charts/sealed")
                .unwrap_err()
                .contains("apps/sealed/values.yaml holds SOPS-encrypted values")
        );
        // An absolute path is read as it is, wherever it leads.
        w(
            "libs/lib/Chart.yaml",
            "apiVersion: v2\nname: lib\nversion: 0.1.0\ndependencies:\n- name: tools\n  repository: file:///srv/tools\n",
        );
        assert_eq!(
            outside_dependencies(tmp.path(), "apps/web"),
            ["the chart in libs/lib: dependency tools at file:///srv/tools is outside the imported tree"]
        );
    }
}
