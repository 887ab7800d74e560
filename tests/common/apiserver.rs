//! A real Kubernetes API server for a test: etcd and kube-apiserver of
//! Kubernetes v1.35.4, with that release's kubectl, built by `.ci/run` from
//! the Go module proxy (`tests/apiserver/`) into `target/ci-tools/apiserver`,
//! with the CustomResourceDefinitions of the engines and of the components
//! that register their own at run time beside them (`crds/`).
//!
//! [`ApiServer::start`] runs one etcd and one kube-apiserver on 127.0.0.1
//! (free ports, a temporary folder for data, certificates and a token),
//! and stops both when the value is dropped, also when the test panics;
//! if the test process dies, the servers see their standard input close
//! and exit by themselves. [`ApiServer::apply_tree`] applies an
//! environment's rendered tree as the engines would: the engines' CRDs,
//! the tree's CRDs, Namespaces, then every object, each step first with
//! `kubectl apply --server-side --dry-run=server`, then for real.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as J;

/// The folder the tools are in: `STRATA_TEST_APISERVER`, else
/// `target/ci-tools/apiserver`. Missing, the test fails under `CI=true`
/// and skips, saying so, elsewhere.
#[allow(clippy::disallowed_methods)]
pub fn tools() -> Option<Tools> {
    let dir = std::env::var_os("STRATA_TEST_APISERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::repo().join("target/ci-tools/apiserver"));
    let missing: Vec<&str> = ["etcd", "kube-apiserver", "kubectl", "crds"]
        .into_iter()
        .filter(|t| !dir.join(t).exists())
        .collect();
    if missing.is_empty() {
        return Some(Tools { dir });
    }
    let why = format!(
        "no {} in {} (.ci/run builds them from tests/apiserver with Go; set STRATA_TEST_APISERVER to another folder)",
        missing.join(", "),
        dir.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("a real API server is needed: {why}");
    }
    super::skipped(&format!("a real API server: {why}"));
    None
}

/// The API server's tools, or a return from the test (as [`tools`] decides).
#[allow(unused_macros)]
macro_rules! need_apiserver {
    () => {
        match $crate::common::apiserver::tools() {
            Some(t) => t,
            None => return,
        }
    };
}

/// The built etcd, kube-apiserver and kubectl, and the CRDs of `crds/`.
#[derive(Clone, Debug)]
pub struct Tools {
    pub dir: PathBuf,
}

impl Tools {
    pub fn kubectl(&self) -> PathBuf {
        self.dir.join("kubectl")
    }

    /// Every CRD file under `crds/<part>/`, sorted.
    pub fn crds(&self, part: &str) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = walkdir::WalkDir::new(self.dir.join("crds").join(part))
            .sort_by_file_name()
            .into_iter()
            .filter_map(Result::ok)
            .map(|e| e.into_path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        out.sort();
        out
    }
}

/// A free TCP port on 127.0.0.1 (free when asked: a server that loses it
/// to another process fails to start, and the start is tried again).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// One running server, with standard input held open (its end of the
/// watch) and its output in a log file.
struct Running {
    child: Child,
    _stdin: Option<ChildStdin>,
    log: PathBuf,
}

impl Running {
    fn spawn(cmd: &mut Command, log: PathBuf) -> Running {
        let out = std::fs::File::create(&log).expect("a server log");
        let err = out.try_clone().expect("a server log");
        let mut child = cmd
            .env("STRATA_TEST_EXIT_WITH_STDIN", "1")
            .stdin(Stdio::piped())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("start {:?}: {e}", cmd.get_program()));
        let stdin = child.stdin.take();
        Running {
            child,
            _stdin: stdin,
            log,
        }
    }

    fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// The last lines of the server's log, for a failure message.
    fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An etcd and a kube-apiserver on 127.0.0.1, stopped when dropped.
pub struct ApiServer {
    tools: Tools,
    etcd: Running,
    apiserver: Running,
    pub kubeconfig: PathBuf,
    /// Data, certificates, token and logs; removed after the servers stop.
    dir: tempfile::TempDir,
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.apiserver.stop();
        self.etcd.stop();
    }
}

/// How long a server has to answer `/readyz`: generous, for a loaded machine.
const READY_WITHIN: Duration = Duration::from_secs(240);

impl ApiServer {
    /// Starts etcd and kube-apiserver and waits until the API server is
    /// ready; panics with the servers' logs when it cannot.
    pub fn start(tools: &Tools) -> ApiServer {
        let mut last = String::new();
        for _ in 0..3 {
            match ApiServer::try_start(tools) {
                Ok(s) => return s,
                Err(e) => last = e,
            }
        }
        panic!("the API server did not start:\n{last}");
    }

    fn try_start(tools: &Tools) -> Result<ApiServer, String> {
        let dir = tempfile::Builder::new()
            .prefix("strata-apiserver")
            .tempdir()
            .expect("tempdir");
        let d = dir.path();
        let (client, peer, secure) = (free_port(), free_port(), free_port());
        let etcd_url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let etcd = Running::spawn(
            Command::new(tools.dir.join("etcd"))
                .arg("--name=strata-test")
                .arg(format!("--data-dir={}", d.join("etcd").display()))
                .arg(format!("--listen-client-urls={etcd_url}"))
                .arg(format!("--advertise-client-urls={etcd_url}"))
                .arg(format!("--listen-peer-urls={peer_url}"))
                .arg(format!("--initial-advertise-peer-urls={peer_url}"))
                .arg(format!("--initial-cluster=strata-test={peer_url}"))
                .arg("--unsafe-no-fsync")
                .arg("--log-level=error"),
            d.join("etcd.log"),
        );
        let token = format!("strata-test-{}", std::process::id());
        std::fs::write(d.join("tokens.csv"), format!("{token},strata-test,1,system:masters\n")).expect("token file");
        let certs = d.join("certs");
        let apiserver = Running::spawn(
            Command::new(tools.dir.join("kube-apiserver"))
                .env("STRATA_TEST_SA_KEY", d.join("sa.key"))
                .arg(format!("--etcd-servers={etcd_url}"))
                .arg("--bind-address=127.0.0.1")
                .arg("--advertise-address=127.0.0.1")
                .arg(format!("--secure-port={secure}"))
                .arg(format!("--cert-dir={}", certs.display()))
                .arg(format!("--token-auth-file={}", d.join("tokens.csv").display()))
                .arg("--authorization-mode=RBAC")
                .arg("--service-account-issuer=https://kubernetes.default.svc")
                .arg(format!("--service-account-key-file={}", d.join("sa.key").display()))
                .arg(format!(
                    "--service-account-signing-key-file={}",
                    d.join("sa.key").display()
                ))
                .arg("--service-cluster-ip-range=10.96.0.0/16")
                .arg("--profiling=false")
                .arg("--v=0"),
            d.join("kube-apiserver.log"),
        );
        let kubeconfig = d.join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: https://127.0.0.1:{secure}\n    \
                 certificate-authority: {ca}\nusers:\n- name: test\n  user:\n    token: {token}\ncontexts:\n- name: test\n  \
                 context:\n    cluster: test\n    user: test\ncurrent-context: test\n",
                ca = certs.join("apiserver.crt").display()
            ),
        )
        .expect("kubeconfig");
        let mut server = ApiServer {
            tools: tools.clone(),
            etcd,
            apiserver,
            kubeconfig,
            dir,
        };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if self.etcd.exited() || self.apiserver.exited() {
                return Err(self.logs("a server exited"));
            }
            if self.dir.path().join("certs/apiserver.crt").exists() {
                let out = self.kubectl(&["get", "--raw=/readyz"], None);
                if out.status.success() {
                    return Ok(());
                }
            }
            if started.elapsed() > READY_WITHIN {
                return Err(self.logs(&format!("not ready within {READY_WITHIN:?}")));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn logs(&self, why: &str) -> String {
        format!(
            "{why}\n--- etcd:\n{}\n--- kube-apiserver:\n{}",
            self.etcd.tail(),
            self.apiserver.tail()
        )
    }

    /// Runs kubectl against this server, with `stdin` on its standard input.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut cmd = Command::new(self.tools.kubectl());
        cmd.arg(format!("--kubeconfig={}", self.kubeconfig.display()))
            .arg("--request-timeout=120s")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        let mut child = cmd.spawn().expect("run kubectl");
        if let Some(bytes) = stdin {
            let mut pipe = child.stdin.take().expect("kubectl's stdin");
            let bytes = bytes.to_vec();
            // Written on a thread of its own: kubectl may answer before it has read it all.
            let writer = std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
            let out = child.wait_with_output().expect("kubectl");
            let _ = writer.join();
            return out;
        }
        child.wait_with_output().expect("kubectl")
    }

    /// Applies objects server-side: first as a dry run, then for real.
    /// The error is kubectl's own words, with which of the two refused.
    pub fn apply(&self, objects: &[J]) -> Result<(), String> {
        if objects.is_empty() {
            return Ok(());
        }
        let stream: String = objects
            .iter()
            .map(|o| format!("---\n{}", serde_json::to_string(o).expect("JSON")))
            .collect::<Vec<_>>()
            .join("\n");
        for dry in [true, false] {
            let mut args = vec![
                "apply",
                "--server-side",
                "--field-manager=strata-test",
                "--force-conflicts",
                "-f",
                "-",
            ];
            if dry {
                args.push("--dry-run=server");
            }
            let out = self.kubectl(&args, Some(stream.as_bytes()));
            if !out.status.success() {
                return Err(format!(
                    "kubectl apply --server-side{} refused:\n{}",
                    if dry { " --dry-run=server" } else { "" },
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        Ok(())
    }

    /// Applies CRDs, then waits until each is established (the server
    /// serves its kind): a custom resource applied before that is refused.
    pub fn apply_crds(&self, crds: &[J]) -> Result<(), String> {
        self.apply(crds)?;
        let names: Vec<&str> = crds.iter().filter_map(|c| c["metadata"]["name"].as_str()).collect();
        if names.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        loop {
            let mut args = vec!["get", "crd", "-o", "json"];
            args.extend(names.iter().copied());
            let out = self.kubectl(&args, None);
            let doc: J = serde_json::from_slice(&out.stdout).unwrap_or(J::Null);
            let waiting: Vec<String> = doc["items"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter(|c| {
                            !c["status"]["conditions"].as_array().is_some_and(|cs| {
                                cs.iter().any(|x| x["type"] == "Established" && x["status"] == "True")
                            })
                        })
                        .map(|c| c["metadata"]["name"].as_str().unwrap_or("").to_owned())
                        .collect()
                })
                .unwrap_or_else(|| vec![String::from_utf8_lossy(&out.stderr).into_owned()]);
            if waiting.is_empty() {
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                return Err(format!(
                    "not established within {READY_WITHIN:?}: {}",
                    waiting.join(", ")
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Installs the CRDs of `crds/<part>/` from the tools folder.
    pub fn install_crds(&self, part: &str) {
        let mut objects = Vec::new();
        for p in self.tools.crds(part) {
            objects.extend(read_objects(&p));
        }
        assert!(
            !objects.is_empty(),
            "no CRDs in {}/crds/{part}",
            self.tools.dir.display()
        );
        self.apply_crds(&objects)
            .unwrap_or_else(|e| panic!("the CRDs of {part}: {e}"));
    }

    /// The kinds the server knows as cluster-scoped, as (group, kind).
    fn cluster_scoped(&self) -> BTreeSet<(String, String)> {
        let out = self.kubectl(&["api-resources", "--namespaced=false", "--no-headers"], None);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                // NAME [SHORTNAMES] APIVERSION NAMESPACED KIND
                let words: Vec<&str> = l.split_whitespace().collect();
                let [.., api_version, _, kind] = words.as_slice() else {
                    return None;
                };
                Some((group_of(api_version).to_owned(), (*kind).to_owned()))
            })
            .collect()
    }

    /// Applies the tree of `engine` for environment `env` of the platform
    /// at `root` (rendered at `rendered/`), as the engine reaches it from
    /// its bootstrap folder; `extra_crds` are the CRDs that charts install
    /// at release time, which a tree of Helm releases does not hold.
    pub fn apply_tree(&self, root: &Path, env: &str, engine: Engine, extra_crds: &[J]) -> Result<(), String> {
        let tree = engine_tree(&self.tools, root, env, engine)?;
        let (crds, rest): (Vec<Placed>, Vec<Placed>) = tree
            .objects
            .into_iter()
            .partition(|p| kind_of(&p.object) == "CustomResourceDefinition");
        let mut all_crds: Vec<J> = extra_crds.to_vec();
        all_crds.extend(crds.into_iter().map(|p| p.object));
        self.apply_crds(&all_crds).map_err(|e| format!("the CRDs: {e}"))?;
        // Namespaces: the engine's own, those the engine creates for an
        // Application (`CreateNamespace=true`), then the tree's.
        let (namespaces, rest): (Vec<Placed>, Vec<Placed>) =
            rest.into_iter().partition(|p| kind_of(&p.object) == "Namespace");
        let mut ns: Vec<J> = tree
            .created_namespaces
            .iter()
            .map(|n| serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}))
            .collect();
        ns.extend(namespaces.into_iter().map(|p| p.object));
        self.apply(&ns).map_err(|e| format!("the Namespaces: {e}"))?;
        // Every other object, with the namespace its engine gives it when
        // it names none; admission webhooks and API services last, since
        // no pod runs here to answer them.
        let cluster = self.cluster_scoped();
        let (last, objects): (Vec<J>, Vec<J>) = rest
            .into_iter()
            .map(|p| p.into_object(&cluster))
            .partition(|o| ANSWERED_BY_PODS.contains(&kind_of(o)));
        self.apply(&objects).map_err(|e| format!("the objects: {e}"))?;
        self.apply(&last)
            .map_err(|e| format!("the webhooks and API services: {e}"))
    }
}

/// Kinds that send requests to a Service: applied after everything else.
const ANSWERED_BY_PODS: &[&str] = &[
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "APIService",
];

fn kind_of(o: &J) -> &str {
    o["kind"].as_str().unwrap_or("")
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Every object of a YAML file.
pub fn read_objects(path: &Path) -> Vec<J> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_objects(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse_objects(text: &str) -> Result<Vec<J>, String> {
    let docs = strata::yaml::parse_plain_multi(&std::sync::Arc::from("objects"), text).map_err(|e| e.message)?;
    Ok(docs.into_iter().filter(|d| d.is_object()).collect())
}

/// A GitOps engine whose tree is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Flux,
    Argo,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Flux => "flux",
            Engine::Argo => "argo",
        }
    }

    /// The namespace the engine runs in, which its installation creates.
    fn namespace(self) -> &'static str {
        match self {
            Engine::Flux => "flux-system",
            Engine::Argo => "argocd",
        }
    }
}

/// An object of the tree, and the namespace its engine puts it in when
/// it names none (Flux's `targetNamespace`, an Application's destination).
struct Placed {
    object: J,
    namespace: Option<String>,
}

impl Placed {
    fn into_object(mut self, cluster: &BTreeSet<(String, String)>) -> J {
        let api_version = self.object["apiVersion"].as_str().unwrap_or("").to_owned();
        let key = (group_of(&api_version).to_owned(), kind_of(&self.object).to_owned());
        if let Some(ns) = self.namespace.take()
            && !cluster.contains(&key)
            && self.object["metadata"]["namespace"].is_null()
        {
            self.object["metadata"]["namespace"] = J::String(ns);
        }
        self.object
    }
}

/// What an engine applies of an environment's tree.
struct Tree {
    objects: Vec<Placed>,
    created_namespaces: BTreeSet<String>,
}

/// Follows the engine from `rendered/<env>/<engine>/bootstrap`: each
/// folder is built with `kubectl kustomize`, as both engines build a path;
/// a Flux Kustomization, and an Application with a directory source, lead
/// to the folder at their path (from the repository root, which is the
/// platform's root here). An Application of a Helm chart leads nowhere:
/// the engine renders the chart itself.
fn engine_tree(tools: &Tools, root: &Path, env: &str, engine: Engine) -> Result<Tree, String> {
    let start = format!("rendered/{env}/{}/bootstrap", engine.name());
    let mut queue: Vec<(String, Option<String>)> = vec![(start, None)];
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut tree = Tree {
        objects: Vec::new(),
        created_namespaces: BTreeSet::from([engine.namespace().to_owned()]),
    };
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    while let Some((folder, namespace)) = queue.pop() {
        let folder = folder.trim_start_matches("./").trim_end_matches('/').to_owned();
        if !seen.insert(folder.clone()) {
            continue;
        }
        let dir = root.join(&folder);
        let out = Command::new(tools.kubectl())
            .arg("kustomize")
            .arg(&dir)
            .output()
            .map_err(|e| format!("kubectl kustomize: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "kubectl kustomize {folder}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        for object in parse_objects(&String::from_utf8_lossy(&out.stdout))? {
            let spec = &object["spec"];
            match (object["apiVersion"].as_str().unwrap_or(""), kind_of(&object)) {
                ("kustomize.toolkit.fluxcd.io/v1", "Kustomization") => {
                    if let Some(path) = spec["path"].as_str() {
                        queue.push((path.to_owned(), spec["targetNamespace"].as_str().map(str::to_owned)));
                    }
                }
                ("argoproj.io/v1alpha1", "Application") => {
                    let destination = spec["destination"]["namespace"].as_str().map(str::to_owned);
                    let sources: Vec<&J> = match spec["sources"].as_array() {
                        Some(s) => s.iter().collect(),
                        None => vec![&spec["source"]],
                    };
                    for s in sources {
                        // A chart (from a Helm repository, or a folder with a
                        // Chart.yaml) Argo CD renders itself.
                        let chart = !s["chart"].is_null()
                            || !s["helm"].is_null()
                            || s["path"]
                                .as_str()
                                .is_some_and(|p| root.join(p).join("Chart.yaml").is_file());
                        if chart {
                            continue;
                        }
                        if let Some(path) = s["path"].as_str() {
                            queue.push((path.to_owned(), destination.clone()));
                        }
                    }
                    let creates = spec["syncPolicy"]["syncOptions"]
                        .as_array()
                        .is_some_and(|o| o.iter().any(|x| x == "CreateNamespace=true"));
                    if creates && let Some(d) = destination {
                        tree.created_namespaces.insert(d);
                    }
                }
                _ => {}
            }
            // The same object reached twice is applied once.
            let id = format!(
                "{}/{}/{}/{}",
                object["apiVersion"],
                kind_of(&object),
                object["metadata"]["namespace"]
                    .as_str()
                    .or(namespace.as_deref())
                    .unwrap_or(""),
                object["metadata"]["name"]
            );
            if by_id.contains_key(&id) {
                continue;
            }
            by_id.insert(id, tree.objects.len());
            tree.objects.push(Placed {
                object,
                namespace: namespace.clone(),
            });
        }
    }
    Ok(tree)
}

/// The CRDs among the objects a hydrated render of the same platform wrote
/// into `rendered/<env>/<engine>/crds/`: what the charts install when the
/// engine installs them as Helm releases.
pub fn chart_crds(hydrated_root: &Path, env: &str, engine: Engine) -> Vec<J> {
    let dir = hydrated_root.join(format!("rendered/{env}/{}/crds", engine.name()));
    let mut out = Vec::new();
    if !dir.is_dir() {
        return out;
    }
    for entry in walkdir::WalkDir::new(&dir).sort_by_file_name() {
        let entry = entry.expect("walk");
        let p = entry.path();
        if p.is_file() && p.file_name().is_some_and(|n| n != "kustomization.yaml") {
            out.extend(
                read_objects(p)
                    .into_iter()
                    .filter(|o| kind_of(o) == "CustomResourceDefinition"),
            );
        }
    }
    out
}
