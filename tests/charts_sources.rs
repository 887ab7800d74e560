//! Charts from anywhere: `strata charts pull` through a mirror of
//! strata.yaml, through a proxy the environment names, when some charts
//! cannot be had, and `strata charts add` of an archive at hand, offline.
//! Every repository here is ours, served on 127.0.0.1; upstream hosts are
//! names under `.test`, which never resolve, so a pull that reaches one
//! went through the mirror or the proxy.

#[macro_use]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use common::charts::{self, Repo, platform, remote};
use common::{stderr, write};

/// Runs strata with a given helm (or none) and extra environment; the
/// caller's proxy and CA variables are never inherited.
fn strata_env(root: &Path, helm: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.arg("--root")
        .arg(root)
        .args(["--color", "never"])
        .args(args)
        .env("STRATA_TODAY", "2026-12-02")
        .env_remove("NO_COLOR")
        .env("PATH", charts::path_without_helm());
    for k in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "NO_PROXY",
        "no_proxy",
        "ALL_PROXY",
        "all_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    ] {
        cmd.env_remove(k);
    }
    match helm {
        Some(h) => cmd.env("STRATA_HELM", h),
        None => cmd.env_remove("STRATA_HELM"),
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run strata")
}

fn lock_of(root: &Path) -> String {
    std::fs::read_to_string(root.join("strata.lock")).unwrap_or_default()
}

fn digest_of(chart: &str) -> String {
    format!(
        "sha256:{}",
        charts::sha256_hex(&charts::package(&charts::chart_dir(chart)).2)
    )
}

/// Every file of the rendered tree, as one text.
fn tree_text(root: &Path) -> String {
    common::snapshot_tree(&root.join("rendered"))
        .into_iter()
        .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

// --- Mirrors -----------------------------------------------------------------

#[test]
fn a_mirror_is_fetched_from_and_the_lock_and_the_tree_keep_the_upstream_url() {
    let helm = need_helm!();
    let upstream = "http://charts.upstream.test/charts";
    let mirror = Repo::serve(&["web-1"]);
    let tmp = platform(&[("web", &remote(upstream, "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();

    // No mirror: the upstream does not resolve, and the pull says which chart.
    let out = strata_env(root, Some(&helm), &["charts", "pull"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("cannot pull web 1.0.0 from {upstream}")), "{err}");

    let strata_yaml = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(
        root,
        "strata.yaml",
        &format!("{strata_yaml}\ncharts:\n  mirrors:\n    {upstream}: {}\n", mirror.url),
    );
    let out = strata_env(root, Some(&helm), &["charts", "pull"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(mirror.hits() >= 2, "index and archive come from the mirror");
    let lock = lock_of(root);
    assert!(lock.contains(&format!("repoURL: {upstream}")), "{lock}");
    assert!(lock.contains(&digest_of("web-1")), "{lock}");
    assert!(!lock.contains(&mirror.url), "{lock}");

    // Offline, the tree names the upstream, never the mirror.
    drop(mirror);
    let out = strata_env(root, Some(&helm), &["--inflate", "helm", "render"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tree = tree_text(root);
    assert!(tree.contains(upstream), "the tree lost the upstream URL");
    assert!(!tree.contains("127.0.0.1"), "the tree names the mirror");
}

/// A mirror key is compared with a repoURL as a URL: a trailing slash, the
/// host's case and the scheme's default port make no difference; a key
/// nothing goes through is named, for the pull and for an environment.
#[test]
fn a_mirror_key_is_compared_as_a_url_and_one_nothing_goes_through_is_named() {
    let helm = need_helm!();
    let upstream = "http://charts.upstream.test/charts";
    let mirror = Repo::serve(&["web-1"]);
    let tmp = platform(&[("web", &remote(upstream, "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();
    let strata_yaml = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(
        root,
        "strata.yaml",
        &format!(
            "{strata_yaml}\ncharts:\n  mirrors:\n    HTTP://Charts.Upstream.TEST:80/charts/: {}\n    http://charts.upstream.test/chart: {}\n",
            mirror.url, mirror.url
        ),
    );
    let out = strata_env(root, Some(&helm), &["charts", "pull"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(mirror.hits() >= 2, "index and archive come from the mirror");
    assert!(lock_of(root).contains(&format!("repoURL: {upstream}")));
    // `.../chart` is no prefix of `.../charts` at a `/`: unused, and named.
    assert_eq!(err.matches("warning[E060]").count(), 1, "{err}");
    assert!(
        err.contains("the mirror for `http://charts.upstream.test/chart` is not used"),
        "{err}"
    );
    assert!(err.contains(&format!("the platform uses `{upstream}`")), "{err}");

    // An environment's mirror, written with a trailing slash, rewrites the
    // URL written for it; one for a repository no chart uses is named.
    write(root, "strata.yaml", &strata_yaml);
    let env = std::fs::read_to_string(root.join("environments/staging.yaml")).unwrap();
    write(
        root,
        "environments/staging.yaml",
        &format!(
            "{env}charts:\n  mirrors:\n    http://charts.upstream.test/charts/: https://mirror.example.org/charts\n    https://unused.example.org: https://mirror.example.org/unused\n"
        ),
    );
    let out = strata_env(root, Some(&helm), &["--inflate", "helm", "render"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let repo = std::fs::read_to_string(root.join("rendered/staging/flux/components/web/helmrepository-web.yaml"))
        .unwrap_or_else(|e| panic!("{e}: {}", tree_text(root)));
    assert!(repo.contains("url: https://mirror.example.org/charts\n"), "{repo}");
    let production =
        std::fs::read_to_string(root.join("rendered/production/flux/components/web/helmrepository-web.yaml")).unwrap();
    assert!(production.contains(upstream), "{production}");
    assert_eq!(err.matches("warning[E060]").count(), 1, "{err}");
    assert!(
        err.contains("the mirror for `https://unused.example.org` is not used: no chart of environment staging"),
        "{err}"
    );
}

#[test]
fn an_index_that_names_archives_on_the_upstream_host_is_fetched_from_the_mirror_too() {
    let helm = need_helm!();
    let upstream = "http://charts.upstream.test/charts";
    let mirror = Repo::serve(&["web-1"]);
    // A mirror that copied the index verbatim: absolute URLs upstream.
    let index = std::fs::read_to_string(mirror.path_of("index.yaml")).unwrap();
    std::fs::write(
        mirror.path_of("index.yaml"),
        index.replace("urls: [web-1.0.0.tgz]", &format!("urls: [{upstream}/web-1.0.0.tgz]")),
    )
    .unwrap();
    let tmp = platform(&[("web", &remote(upstream, "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();
    let strata_yaml = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    write(
        root,
        "strata.yaml",
        &format!("{strata_yaml}\ncharts:\n  mirrors:\n    {upstream}: {}\n", mirror.url),
    );
    let out = strata_env(root, Some(&helm), &["charts", "pull"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(lock_of(root).contains(&digest_of("web-1")));
}

// --- Proxies -----------------------------------------------------------------

/// A forward proxy on 127.0.0.1, written for these tests: it serves
/// absolute-form requests and CONNECT tunnels for the hosts it is given
/// (each to an address on 127.0.0.1), answers 502 for any other, and
/// records every request line.
struct Proxy {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start(routes: &[(&str, &str)]) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let routes: Vec<(String, String)> = routes.iter().map(|(h, a)| ((*h).into(), (*a).into())).collect();
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let routes = routes.clone();
                let log = Arc::clone(&log);
                std::thread::spawn(move || proxy_one(stream, &routes, &log));
            }
        });
        Proxy { url, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn proxy_one(client: TcpStream, routes: &[(String, String)], log: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(client.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() || line.is_empty() {
        return;
    }
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
            break;
        }
        if !h.to_ascii_lowercase().starts_with("proxy-") {
            headers.push(h);
        }
    }
    log.lock().unwrap().push(line.trim().to_owned());
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let mut client = client;
    let route = |hostport: &str| {
        let host = hostport.split(':').next().unwrap_or("");
        routes.iter().find(|(h, _)| h == host).map(|(_, a)| a.clone())
    };
    if method == "CONNECT" {
        let Some(addr) = route(target) else {
            let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
            return;
        };
        let Ok(upstream) = TcpStream::connect(addr) else { return };
        let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
        pipe(reader, client, upstream);
        return;
    }
    let Some(rest) = target.strip_prefix("http://") else {
        let _ = client.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let (hostport, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Some(addr) = route(hostport) else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let Ok(mut upstream) = TcpStream::connect(addr) else {
        return;
    };
    let mut request = format!("{method} /{path} HTTP/1.1\r\n");
    for h in headers
        .iter()
        .filter(|h| !h.to_ascii_lowercase().starts_with("connection"))
    {
        request.push_str(h);
    }
    request.push_str("Connection: close\r\n\r\n");
    let _ = upstream.write_all(request.as_bytes());
    let mut response = Vec::new();
    let _ = upstream.read_to_end(&mut response);
    let _ = client.write_all(&response);
}

/// Copies both ways until either side closes.
fn pipe(from_client: BufReader<TcpStream>, mut client: TcpStream, upstream: TcpStream) {
    let mut up_write = upstream.try_clone().unwrap();
    let mut up_read = upstream;
    let t = std::thread::spawn(move || {
        let buffered = from_client.buffer().to_vec();
        let _ = up_write.write_all(&buffered);
        let mut inner = from_client.into_inner();
        let _ = std::io::copy(&mut inner, &mut up_write);
        let _ = up_write.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut up_read, &mut client);
    let _ = client.shutdown(std::net::Shutdown::Write);
    let _ = t.join();
}

#[test]
fn pulls_go_through_the_proxy_the_environment_names_and_no_proxy_goes_around_it() {
    let helm = need_helm!();
    let repo = Repo::serve(&["web-1"]);
    let host = "charts.strata.test";
    let proxy = Proxy::start(&[(host, repo.url.trim_start_matches("http://"))]);
    let tmp = platform(&[("web", &remote(&format!("http://{host}"), "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();

    let out = strata_env(root, Some(&helm), &["charts", "pull"], &[("HTTP_PROXY", &proxy.url)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = proxy.seen();
    assert!(seen.len() >= 2, "index and archive through the proxy: {seen:?}");
    assert!(seen.iter().all(|l| l.contains(host)), "{seen:?}");
    assert!(lock_of(root).contains(&digest_of("web-1")));

    // NO_PROXY sends the request straight to the host, which does not resolve.
    std::fs::remove_dir_all(root.join(".strata")).unwrap();
    let before = proxy.seen().len();
    let out = strata_env(
        root,
        Some(&helm),
        &["charts", "pull"],
        &[("HTTP_PROXY", &proxy.url), ("NO_PROXY", ".test")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(proxy.seen().len(), before, "NO_PROXY went through the proxy");
}

#[test]
fn helm_pulls_from_an_oci_registry_through_the_proxy_and_renders_see_no_proxy() {
    let helm = need_helm!();
    let proxy = Proxy::start(&[]);
    // A wrapper around the real helm that records the environment of each run.
    let scratch = tempfile::tempdir().unwrap();
    let envlog = scratch.path().join("env.log");
    let wrapper = scratch.path().join("helm");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"== $1 [${{HTTPS_PROXY:-}}] [${{SSL_CERT_FILE:-}}]\" >> '{}'\nexec '{}' \"$@\"\n",
            envlog.display(),
            helm.display()
        ),
    )
    .unwrap();
    make_executable(&wrapper);
    let tmp = platform(&[
        (
            "edge",
            "chart:\n  repoURL: oci://registry.strata.test/charts\n  name: web\n  version: 1.0.0\n  oci: true\n",
            "{}\n",
        ),
        ("local", "chart:\n  path: charts/web\n", "{}\n"),
    ]);
    let root = tmp.path();
    common::copy_dir(&charts::chart_dir("web-1"), &root.join("charts/web"));
    let env = [
        ("HTTPS_PROXY", proxy.url.as_str()),
        ("SSL_CERT_FILE", "/dev/null/none.pem"),
    ];
    // SSL_CERT_FILE names nothing: strata's own client refuses it at once.
    let out = strata_env(root, Some(&wrapper), &["charts", "pull"], &env);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("SSL_CERT_FILE=/dev/null/none.pem"),
        "{}",
        stderr(&out)
    );

    // The system's CA bundle, where there is one, passed on as given.
    let bundle = [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/cert.pem",
    ]
    .into_iter()
    .find(|p| Path::new(p).is_file())
    .unwrap_or("");
    let mut env = vec![("HTTPS_PROXY", proxy.url.as_str())];
    if !bundle.is_empty() {
        env.push(("SSL_CERT_FILE", bundle));
    }
    let out = strata_env(root, Some(&wrapper), &["charts", "pull"], &env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot pull web 1.0.0 from oci://registry.strata.test/charts"),
        "{err}"
    );
    assert!(
        proxy
            .seen()
            .iter()
            .any(|l| l.starts_with("CONNECT registry.strata.test:443")),
        "helm did not go through the proxy: {:?}",
        proxy.seen()
    );
    let out = strata_env(
        root,
        Some(&wrapper),
        &["--inflate", "helm", "check", "--env", "dev"],
        &env,
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "the OCI chart is not pulled: {}",
        stderr(&out)
    );
    let out = strata_env(
        root,
        Some(&wrapper),
        &["--inflate", "auto", "check", "--env", "dev"],
        &env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = std::fs::read_to_string(&envlog).unwrap();
    let pull = format!("== pull [{}] [{bundle}]", proxy.url);
    assert!(
        log.lines().any(|l| l == pull),
        "helm pull did not get the variables: {log}"
    );
    let template: Vec<&str> = log.lines().filter(|l| l.starts_with("== template")).collect();
    assert!(!template.is_empty(), "{log}");
    assert!(
        template.iter().all(|l| *l == "== template [] []"),
        "a render saw the caller's environment: {log}"
    );
}

fn make_executable(p: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

// --- Partial pulls -------------------------------------------------------------

#[test]
fn a_pull_locks_what_resolved_names_what_did_not_and_keeps_old_pins() {
    let helm = need_helm!();
    let repo = Repo::serve(&["web-1", "widget"]);
    let tmp = platform(&[
        ("web", &remote(&repo.url, "web", "1.0.0"), "{}\n"),
        ("widget", &remote(&repo.url, "widget", "0.1.0"), "{}\n"),
    ]);
    let root = tmp.path();
    let out = strata_env(root, Some(&helm), &["charts", "pull"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = lock_of(root);

    // widget is gone from the repository and the store; a new component
    // pins a chart that never existed, another a host that does not resolve.
    repo.publish(&["web-1"]);
    std::fs::remove_dir_all(root.join(".strata/charts")).unwrap();
    write(
        root,
        "gitops/platform/ghost/config.yaml",
        &format!(
            "component: ghost\nnamespace: ghost\nsync: automated\ntier: addon\n{}",
            remote(&repo.url, "ghost", "9.9.9")
        ),
    );
    write(root, "gitops/platform/ghost/values.yaml", "{}\n");
    write(
        root,
        "gitops/platform/far/config.yaml",
        &format!(
            "component: far\nnamespace: far\nsync: automated\ntier: addon\n{}",
            remote("http://charts.nowhere.test", "far", "1.0.0")
        ),
    );
    write(root, "gitops/platform/far/values.yaml", "{}\n");
    let out = strata_env(root, Some(&helm), &["charts", "pull"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot pull widget 0.1.0"), "{err}");
    assert!(err.contains("lists no chart `widget`"), "{err}");
    assert!(
        err.contains("cannot pull ghost 9.9.9") && err.contains("lists no chart `ghost`"),
        "{err}"
    );
    assert!(
        err.contains("cannot pull far 1.0.0 from http://charts.nowhere.test"),
        "{err}"
    );
    assert!(err.contains("3 could not be pulled"), "{err}");
    let lock = lock_of(root);
    // web resolved again; widget keeps the pin it had; the others have none.
    assert!(lock.contains(&digest_of("web-1")), "{lock}");
    assert!(lock.contains(&digest_of("widget")), "{lock}");
    assert!(!lock.contains("name: ghost") && !lock.contains("name: far"), "{lock}");
    assert_eq!(lock, first, "the lock changed for charts that did not resolve");
    assert!(
        root.join(".strata/charts")
            .join(format!("{}.tgz", digest_of("web-1").replace(':', "-")))
            .is_file()
    );

    // A version the repository does not have is named with some it has.
    write(
        root,
        "gitops/platform/web/config.yaml",
        &format!(
            "component: web\nnamespace: web\nsync: automated\ntier: addon\n{}",
            remote(&repo.url, "web", "7.0.0")
        ),
    );
    let out = strata_env(root, Some(&helm), &["charts", "pull"], &[]);
    let err = stderr(&out);
    assert!(
        err.contains("lists no version 7.0.0 of `web` (some it lists: 1.0.0)"),
        "{err}"
    );
}

// --- charts add ------------------------------------------------------------------

/// A chart archive of `chart` (a folder under tests/charts) in `dir`.
fn archive_file(dir: &Path, chart: &str) -> PathBuf {
    let (name, version, bytes) = charts::package(&charts::chart_dir(chart));
    let p = dir.join(format!("{name}-{version}.tgz"));
    std::fs::write(&p, bytes).unwrap();
    p
}

fn add(root: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["charts", "add"];
    all.extend_from_slice(args);
    let out = strata_env(root, None, &all, &[]);
    (out.status.code(), stderr(&out))
}

#[test]
fn charts_add_pins_an_archive_offline_for_the_component_that_pins_it() {
    let helm = need_helm!();
    let files = tempfile::tempdir().unwrap();
    let web = archive_file(files.path(), "web-1");
    let upstream = "https://charts.upstream.test/charts";
    let tmp = platform(&[("web", &remote(upstream, "web", "1.0.0"), "replicas: 2\n")]);
    let root = tmp.path();

    let (code, err) = add(root, &[web.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("pinned in strata.lock"), "{err}");
    let lock = lock_of(root);
    assert!(lock.contains(&format!("repoURL: {upstream}")), "{lock}");
    assert!(lock.contains(&digest_of("web-1")), "{lock}");
    // Offline: no network anywhere, and helm renders it.
    let out = strata_env(root, Some(&helm), &["--inflate", "helm", "check", "--env", "dev"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Again: nothing changes.
    let (code, err) = add(root, &[web.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("strata.lock pinned it already"), "{err}");
    assert_eq!(lock_of(root), lock);
    // A pull afterwards keeps it without the network.
    let out = strata_env(root, Some(&helm), &["charts", "pull"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(lock_of(root), lock);
}

#[test]
fn charts_add_says_which_repository_it_needs_and_never_replaces_a_pin() {
    let files = tempfile::tempdir().unwrap();
    let widget = archive_file(files.path(), "widget");
    let web = archive_file(files.path(), "web-1");
    let tmp = platform(&[
        ("a", &remote("https://one.test/charts", "web", "1.0.0"), "{}\n"),
        ("b", &remote("https://two.test/charts", "web", "1.0.0"), "{}\n"),
    ]);
    let root = tmp.path();
    let w = widget.to_str().unwrap();

    // Pinned by no config.yaml: which repository?
    let (code, err) = add(root, &[w]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("cannot add {w}")), "{err}");
    assert!(err.contains("no config.yaml pins chart widget 0.1.0"), "{err}");
    assert!(err.contains("--repo URL"), "{err}");
    assert!(lock_of(root).is_empty());
    // With --repo: pinned, with a note.
    let (code, err) = add(root, &[w, "--repo", "https://three.test/charts/"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("note: no config.yaml pins chart widget 0.1.0 from https://three.test/charts"),
        "{err}"
    );
    assert!(lock_of(root).contains("repoURL: https://three.test/charts\n"));
    // Pinned from two repositories: which one?
    let (code, err) = add(root, &[web.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("from 2 repositories: https://one.test/charts, https://two.test/charts"),
        "{err}"
    );
    let (code, err) = add(root, &[web.to_str().unwrap(), "--repo", "https://two.test/charts"]);
    assert_eq!(code, Some(0), "{err}");
    // Another archive for a pinned version is refused, naming the remedy.
    let changed = tempfile::tempdir().unwrap();
    common::copy_dir(&charts::chart_dir("web-1"), changed.path());
    write(changed.path(), "templates/extra.yaml", "# extra\n");
    let (_, _, bytes) = charts::package(changed.path());
    let other = files.path().join("other-web.tgz");
    std::fs::write(&other, bytes).unwrap();
    let before = lock_of(root);
    let (code, err) = add(root, &[other.to_str().unwrap(), "--repo", "https://two.test/charts"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("already pins web 1.0.0 from https://two.test/charts"),
        "{err}"
    );
    assert!(err.contains("delete that entry from strata.lock"), "{err}");
    assert_eq!(lock_of(root), before);
    // --repo must be a repository URL.
    let (code, err) = add(root, &[w, "--repo", "charts"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--repo charts is not an http(s):// or oci:// URL"),
        "{err}"
    );
}

#[test]
fn charts_add_refuses_what_is_not_a_sound_chart_archive() {
    let files = tempfile::tempdir().unwrap();
    let tmp = platform(&[("web", &remote("https://one.test/charts", "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();
    let tar_gz = |entries: &[(&str, &[u8], tar::EntryType)]| -> Vec<u8> {
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (path, data, kind) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            // Written into the header as is, so that `..` survives.
            h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            if *kind == tar::EntryType::Symlink {
                h.set_link_name("values.yaml").unwrap();
            }
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    };
    let chart = b"apiVersion: v2\nname: web\nversion: 1.0.0\n".as_slice();
    let reg = tar::EntryType::Regular;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("text.tgz", b"not a chart".to_vec(), "not a gzip-compressed tar"),
        (
            "nochart.tgz",
            tar_gz(&[("web/README.md", b"x", reg)]),
            "no <chart>/Chart.yaml",
        ),
        (
            "climbs.tgz",
            tar_gz(&[("web/Chart.yaml", chart, reg), ("web/../../evil.yaml", b"x", reg)]),
            "climbs out of the archive",
        ),
        (
            "absolute.tgz",
            tar_gz(&[("web/Chart.yaml", chart, reg), ("/etc/evil.yaml", b"x", reg)]),
            "has an absolute path",
        ),
        (
            "link.tgz",
            tar_gz(&[
                ("web/Chart.yaml", chart, reg),
                ("web/templates/l.yaml", b"", tar::EntryType::Symlink),
            ]),
            "is not a file or a folder",
        ),
        (
            "flag.tgz",
            tar_gz(&[(
                "web/Chart.yaml",
                b"apiVersion: v2\nname: --post-renderer=x\nversion: 1.0.0\n",
                reg,
            )]),
            "is not a chart name",
        ),
        (
            "outside.tgz",
            tar_gz(&[("web/Chart.yaml", chart, reg), ("other/x.yaml", b"x", reg)]),
            "lies outside the chart folder",
        ),
    ];
    for (file, bytes, why) in cases {
        let p = files.path().join(file);
        std::fs::write(&p, bytes).unwrap();
        let (code, err) = add(root, &[p.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{file}: {err}");
        assert!(err.contains(&format!("cannot add {}", p.display())), "{file}: {err}");
        assert!(err.contains(why), "{file}: {err}");
        assert!(err.contains("help:"), "{file}: {err}");
    }
    // Too large: refused before it is read.
    let big = files.path().join("big.tgz");
    std::fs::File::create(&big).unwrap().set_len(65 << 20).unwrap();
    let (code, err) = add(root, &[big.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("over the limit of 64 MiB"), "{err}");
    let (code, err) = add(root, &["/nonexistent/web.tgz"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot add /nonexistent/web.tgz: cannot read it"), "{err}");
    assert!(lock_of(root).is_empty(), "a refused archive reached the lock");
    let stored = std::fs::read_dir(root.join(".strata/charts")).map_or(0, |d| d.count());
    assert_eq!(stored, 0, "a refused archive reached the store");
}

// --- OCI manifest digests ----------------------------------------------------------

#[test]
fn the_oci_manifest_digest_the_lock_pins_reaches_the_tree_in_every_mode() {
    let helm = need_helm!();
    let files = tempfile::tempdir().unwrap();
    let web = archive_file(files.path(), "web-1");
    let registry = "oci://registry.strata.test/charts";
    let tmp = platform(&[(
        "edge",
        &format!("chart:\n  repoURL: {registry}\n  name: web\n  version: 1.0.0\n  oci: true\n"),
        "{}\n",
    )]);
    let root = tmp.path();
    let (code, err) = add(root, &[web.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("has no OCI manifest digest"), "{err}");
    let out = strata_env(root, Some(&helm), &["render"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tree = tree_text(root);
    assert!(
        tree.contains("kind: OCIRepository") && !tree.contains("digest: sha256"),
        "{tree}"
    );

    // What `strata charts pull` records from helm's `Digest:` line.
    let manifest = format!("sha256:{}", "5e".repeat(32));
    let lock = lock_of(root);
    let at = lock.find("  name: web").unwrap();
    std::fs::write(
        root.join("strata.lock"),
        format!("{}  manifest_digest: {manifest}\n{}", &lock[..at], &lock[at..]),
    )
    .unwrap();
    for mode in ["helm", "auto", "off"] {
        std::fs::remove_dir_all(root.join("rendered")).unwrap();
        let out = strata_env(root, Some(&helm), &["--inflate", mode, "render"], &[]);
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", stderr(&out));
        let tree = tree_text(root);
        assert!(
            tree.contains(&format!("digest: {manifest}")),
            "{mode}: the pin is not in the tree"
        );
    }
    // A manifest digest that is not one is an error at its line.
    let lock = lock_of(root).replace(&manifest, "sha256:short");
    std::fs::write(root.join("strata.lock"), lock).unwrap();
    let out = strata_env(root, Some(&helm), &["render"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`sha256:short` is not a digest") && err.contains("--> strata.lock:"),
        "{err}"
    );
}
