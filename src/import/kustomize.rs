//! Building a folder of a Flux tree as kustomize-controller does: with the
//! real `kubectl kustomize` where the folder has a kustomization, else as
//! the controller's generator does (every YAML file, recursively, a
//! subfolder with a kustomization built as a whole); then a Flux
//! Kustomization's own patches, namespace and name changes, applied by
//! kustomize too.
//!
//! kubectl runs with a cleared environment, in a folder of its own, with a
//! time limit and a bound on its output; it never reaches a cluster. It
//! runs on the import's copy of the tree, whose kustomizations
//! [`super::refs`] has checked name nothing outside it; like
//! kustomize-controller (fluxcd/pkg `kustomize/kustomize_generator.go`,
//! `Build`: `LoadRestrictionsNone` inside a file system confined to the
//! root), a kustomization may then read files beside its own folder.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

/// How long one kustomize build may take.
const TIMEOUT: Duration = Duration::from_secs(120);
/// The most output one build may give.
const MAX_OUTPUT: usize = 64 * 1024 * 1024;
/// The most folders one generated build may walk.
const MAX_FOLDERS: usize = 10_000;

/// The kubectl binary.
pub struct Kubectl {
    pub path: PathBuf,
}

impl Kubectl {
    /// `kubectl kustomize DIR`: the YAML stream it prints.
    pub fn build(&self, dir: &Path) -> Result<String, String> {
        let scratch = tempfile::tempdir().map_err(|e| format!("cannot make a temporary folder: {e}"))?;
        let mut cmd = Command::new(&self.path);
        cmd.arg("kustomize")
            .arg("--load-restrictor=LoadRestrictionsNone")
            .arg(dir)
            .current_dir(scratch.path())
            .env_clear()
            .env("HOME", scratch.path())
            .env("KUBECONFIG", scratch.path().join("no-kubeconfig"))
            .env("LC_ALL", "C");
        // Its own process group, killed at the bound and when it ends.
        crate::world::process::confine(&mut cmd, None);
        let done = crate::world::process::run(cmd, None, TIMEOUT, MAX_OUTPUT).map_err(|e| match e {
            crate::world::process::Stopped::Timeout => {
                format!("kubectl kustomize took longer than {}s", TIMEOUT.as_secs())
            }
            crate::world::process::Stopped::Spawn(e) => format!("cannot run {}: {e}", self.path.display()),
            crate::world::process::Stopped::Wait(e) => e.to_string(),
        })?;
        let (status, stdout, stderr) = (done.status, done.stdout.ok_or(()), done.stderr.ok_or(()));
        if !status.success() {
            let text = String::from_utf8_lossy(&stderr.unwrap_or_default()).into_owned();
            let text: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(8).collect();
            return Err(format!("kubectl kustomize failed: {}", text.join("\n")));
        }
        let bytes = stdout.map_err(|_| format!("kubectl kustomize printed more than {MAX_OUTPUT} bytes"))?;
        String::from_utf8(bytes).map_err(|_| "kubectl kustomize printed text that is not UTF-8".into())
    }
}

/// Whether a folder has a kustomization of its own.
pub fn has_kustomization(dir: &Path) -> bool {
    super::refs::kustomization_file(dir).is_some()
}

/// The YAML stream of a folder, as kustomize-controller builds it.
pub fn build_folder(k: &Kubectl, dir: &Path) -> Result<String, String> {
    if has_kustomization(dir) {
        return k.build(dir);
    }
    let mut out = String::new();
    let mut folders = 0;
    generated(k, dir, &mut out, &mut folders)?;
    Ok(out)
}

/// The generator: every YAML file of the folder in name order, and each
/// subfolder, built whole if it has a kustomization.
fn generated(k: &Kubectl, dir: &Path, out: &mut String, folders: &mut usize) -> Result<(), String> {
    *folders += 1;
    if *folders > MAX_FOLDERS {
        return Err(format!("more than {MAX_FOLDERS} folders below {}", dir.display()));
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(ft) = e.file_type() else { continue };
        if name.starts_with('.') || ft.is_symlink() {
            continue;
        }
        let path = e.path();
        if ft.is_dir() {
            if has_kustomization(&path) {
                push_stream(out, &k.build(&path)?);
            } else {
                generated(k, &path, out, folders)?;
            }
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            let bytes = crate::world::disk::read_regular(&path, crate::yaml::MAX_INPUT_BYTES as u64)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
            push_stream(out, &text);
        }
    }
    Ok(())
}

fn push_stream(out: &mut String, text: &str) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push_str("---\n");
    }
    out.push_str(text);
}

/// A folder's kustomization file as it was, to put back after a build.
pub struct Kept {
    file: PathBuf,
    text: Vec<u8>,
}

impl Kept {
    /// Writes the file back as it was.
    pub fn restore(self) -> Result<(), String> {
        std::fs::write(&self.file, &self.text).map_err(|e| format!("{}: {e}", self.file.display()))
    }
}

/// Adds a Flux Kustomization's `components` to the kustomization file of
/// the folder it builds, after those the file lists, as kustomize-controller
/// does (fluxcd/pkg `kustomize/kustomize_generator.go`: the spec's
/// components are appended to the folder's own, relative to it), so that
/// the folder's patches see what the components add. `None`: the folder
/// has no kustomization file, and nothing was changed.
pub fn add_components(dir: &Path, components: &[Value]) -> Result<Option<Kept>, String> {
    let Some(name) = super::refs::kustomization_file(dir) else {
        return Ok(None);
    };
    let file = dir.join(name);
    let text = crate::world::disk::read_regular(&file, crate::yaml::MAX_INPUT_BYTES as u64)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let shown: std::sync::Arc<str> = std::sync::Arc::from(file.display().to_string());
    let node = crate::yaml::parse(&shown, &String::from_utf8_lossy(&text)).map_err(|e| e.message)?;
    let mut kz = node.to_json();
    let Some(map) = kz.as_object_mut() else {
        return Err(format!("{} is not a mapping", file.display()));
    };
    let listed = map.entry("components").or_insert_with(|| json!([]));
    if !listed.is_array() {
        *listed = json!([]);
    }
    if let Some(list) = listed.as_array_mut() {
        list.extend(components.iter().cloned());
    }
    let written = serde_json::to_string(&kz).map_err(|e| e.to_string())?;
    std::fs::write(&file, written).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(Some(Kept { file, text }))
}

/// What of a Flux Kustomization's spec kustomize applies on top of the
/// built folder: `patches`, `targetNamespace`, `namePrefix`, `nameSuffix`,
/// `images`. The stream unchanged when it has none.
pub fn overlay(k: &Kubectl, stream: &str, spec: &Value) -> Result<String, String> {
    let mut kz = serde_json::Map::new();
    for (from, to) in [
        ("patches", "patches"),
        ("targetNamespace", "namespace"),
        ("namePrefix", "namePrefix"),
        ("nameSuffix", "nameSuffix"),
        ("images", "images"),
    ] {
        if let Some(v) = spec.get(from).filter(|v| !v.is_null()) {
            kz.insert(to.into(), v.clone());
        }
    }
    if kz.is_empty() {
        return Ok(stream.to_owned());
    }
    let scratch = tempfile::tempdir().map_err(|e| format!("cannot make a temporary folder: {e}"))?;
    kz.insert("resources".into(), json!(["resources.yaml"]));
    std::fs::write(scratch.path().join("resources.yaml"), stream).map_err(|e| e.to_string())?;
    std::fs::write(
        scratch.path().join("kustomization.yaml"),
        serde_json::to_string(&Value::Object(kz)).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    k.build(scratch.path())
}
