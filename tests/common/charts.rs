//! Charts for the tests: packaging the test charts in `tests/charts/`, a
//! real HTTP chart repository on 127.0.0.1 (an `index.yaml` and archives),
//! the helm binary, and platforms whose components use these charts.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use super::repo;

/// The folder of a test chart.
pub fn chart_dir(name: &str) -> PathBuf {
    repo().join("tests/charts").join(name)
}

/// Packages a chart folder as helm does: a gzip-compressed tar whose entries
/// live under `<chart name>/`, with fixed times so that the bytes are stable.
pub fn package(dir: &Path) -> (String, String, Vec<u8>) {
    let chart_yaml = std::fs::read_to_string(dir.join("Chart.yaml")).expect("Chart.yaml");
    let field = |k: &str| {
        chart_yaml
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}: ")))
            .expect("field")
            .trim()
            .to_owned()
    };
    let (name, version) = (field("name"), field("version"));
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().to_path_buf())
        .collect();
    files.sort();
    for f in files {
        let rel = f.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
        let bytes = std::fs::read(&f).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_cksum();
        tar.append_data(&mut h, format!("{name}/{rel}"), bytes.as_slice())
            .unwrap();
    }
    let bytes = tar.into_inner().unwrap().finish().unwrap();
    (name, version, bytes)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A chart repository served over HTTP on 127.0.0.1 from a folder.
pub struct Repo {
    pub dir: tempfile::TempDir,
    pub url: String,
    /// Requests served so far.
    pub hits: Arc<AtomicUsize>,
}

impl Repo {
    /// Serves the given test charts (folder names under tests/charts).
    pub fn serve(charts: &[&str]) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let (url, hits) = serve_dir(dir.path().to_path_buf());
        let repo = Repo { dir, url, hits };
        repo.publish(charts);
        repo
    }

    /// (Re)publishes charts: archives and a fresh index.yaml.
    pub fn publish(&self, charts: &[&str]) {
        let mut entries: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for c in charts {
            let (name, version, bytes) = package(&chart_dir(c));
            let file = format!("{name}-{version}.tgz");
            std::fs::write(self.dir.path().join(&file), &bytes).unwrap();
            entries.entry(name.clone()).or_default().push(format!(
                "    - apiVersion: v2\n      name: {name}\n      version: {version}\n      urls: [{file}]\n      digest: {}\n      created: \"2026-01-01T00:00:00Z\"\n",
                sha256_hex(&bytes)
            ));
        }
        let mut index = String::from("apiVersion: v1\nentries:\n");
        for (name, versions) in entries {
            index.push_str(&format!("  {name}:\n"));
            for v in versions {
                index.push_str(&v);
            }
        }
        index.push_str("generated: \"2026-01-01T00:00:00Z\"\n");
        std::fs::write(self.dir.path().join("index.yaml"), index).unwrap();
    }

    /// Replaces a published archive's bytes (and its index digest), as a
    /// registry that changed an already-published version would.
    pub fn path_of(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Serves the files of `root` over HTTP on 127.0.0.1; the base URL and a
/// count of the requests served.
pub fn serve_dir(root: PathBuf) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let root = root.clone();
            counter.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                // Skip the headers.
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                        break;
                    }
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/");
                let path = path.split('?').next().unwrap_or("").trim_start_matches('/');
                let file = root.join(path);
                let (status, body) = match std::fs::read(&file) {
                    Ok(b) if !path.contains("..") => ("200 OK", b),
                    _ => ("404 Not Found", b"not found".to_vec()),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(&body);
                let _ = stream.flush();
            });
        }
    });
    (url, hits)
}

/// The helm binary: on the PATH, or `STRATA_HELM`. In CI it must be there.
#[allow(clippy::disallowed_methods)]
pub fn helm() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("STRATA_HELM").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let found =
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("helm")).find(|p| p.is_file()));
    if found.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("helm is required in CI: `.ci/run` installs it with go install helm.sh/helm/v4/cmd/helm@v4.3.2");
        }
        super::skipped("helm is not on the PATH (nor named by STRATA_HELM)");
    }
    found
}

/// A wrapper script around helm that records each run in `log`, then runs
/// the real helm: to count how often strata starts helm.
pub fn counting_helm(dir: &Path, helm: &Path) -> (PathBuf, PathBuf) {
    let log = dir.join("helm-runs.log");
    let script = dir.join("helm");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            helm.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (script, log)
}

/// How many times the counting helm ran `helm template`.
pub fn template_runs(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("template"))
        .count()
}

/// A platform with the example's environments and contracts but only the
/// given components: `(name, config.yaml body after the name, values.yaml)`.
pub fn platform(components: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let tmp = super::scratch("homelab");
    std::fs::remove_dir_all(tmp.path().join("gitops/platform")).unwrap();
    for (name, config, values) in components {
        super::write(
            tmp.path(),
            &format!("gitops/platform/{name}/config.yaml"),
            &format!("component: {name}\nnamespace: {name}\nsync: automated\ntier: addon\n{config}"),
        );
        super::write(tmp.path(), &format!("gitops/platform/{name}/values.yaml"), values);
    }
    tmp
}

/// The PATH with every folder that holds a `helm` left out, so that the only
/// helm strata sees is the one a test gives it.
#[allow(clippy::disallowed_methods)]
pub fn path_without_helm() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| !d.join("helm").exists())
        .collect();
    std::env::join_paths(dirs).unwrap_or_default()
}

/// Runs strata with a given helm (`STRATA_HELM`), or with no helm at all.
pub fn strata_with(root: &Path, helm: Option<&Path>, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.arg("--root")
        .arg(root)
        .arg("--color")
        .arg("never")
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env_remove("NO_COLOR")
        .env("PATH", path_without_helm())
        // The helm given is the one that renders, not a renderer found elsewhere.
        .env("STRATA_HELM_RENDERER", "off");
    match helm {
        Some(h) => cmd.env("STRATA_HELM", h),
        None => cmd.env_remove("STRATA_HELM"),
    };
    cmd.output().expect("run strata")
}

/// Reads a whole file.
pub fn read(p: &Path) -> String {
    let mut s = String::new();
    std::fs::File::open(p).unwrap().read_to_string(&mut s).unwrap();
    s
}

/// Compiles `dir` in process, with its chart store in `dir/.strata` and
/// charts rendered by `helm` when given; the findings `keep` keeps, sorted,
/// and their text.
pub fn compile_findings(
    dir: &Path,
    helm: Option<&Path>,
    keep: impl Fn(&strata::diag::Diagnostic) -> bool,
) -> (Vec<strata::diag::Diagnostic>, String) {
    use strata::diag::{self, Sources};
    let world = strata::world::FsWorld::new(dir, "2026-10-01".to_owned()).unwrap();
    let sources = Sources::default();
    let opts = strata::pipeline::Options {
        inflate: strata::inflate::Settings {
            mode: None,
            helm: helm.map(Path::to_path_buf),
            state_root: Some(dir.to_path_buf()),
            user_helm_config: None,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut diags = match strata::pipeline::compile(&world, &sources, &opts) {
        Ok(c) => c.findings,
        Err(d) => panic!("did not compile:\n{}", diag::render_text(&d, &sources, false)),
    };
    diags.retain(|d| keep(d));
    diag::normalize(&mut diags);
    let text = diag::render_text(&diags, &sources, false);
    (diags, text)
}

/// A component's `chart:` for `name` at `version` in the repository at `url`.
pub fn remote(url: &str, name: &str, version: &str) -> String {
    format!("chart:\n  repoURL: {url}\n  name: {name}\n  version: {version}\n")
}
