//! `strata charts pull` through a proxy, as helm goes through one: an
//! `http://` repository as absolute-form requests to the proxy (no
//! CONNECT), an `https://` one through a CONNECT tunnel, the proxy's
//! credentials in `Proxy-Authorization`. The proxy here behaves as Squid
//! does by default: CONNECT only to port 443, and a `407` without the
//! credentials it wants. The HTTPS repository is `openssl s_server`, with
//! a certificate of a CA made for the test. A proxy setting strata cannot
//! use is named by the variable the user set, never with its password.

#[macro_use]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::charts::{Repo, platform, remote};
use common::stderr;

const HOST: &str = "charts.strata.test";

/// Runs strata with only the given proxy and CA variables.
fn pull(root: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.arg("--root")
        .arg(root)
        .args(["--color", "never", "charts", "pull"])
        .env("STRATA_TODAY", "2026-12-02")
        .env("PATH", common::charts::path_without_helm())
        .env_remove("STRATA_HELM");
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
    cmd.envs(env.iter().copied());
    cmd.output().expect("run strata")
}

/// A forward proxy on 127.0.0.1 with Squid's defaults: absolute-form
/// requests to any host it routes, CONNECT to port 443 only, every other
/// CONNECT `403`; with `auth`, a `407` for a request without
/// `Proxy-Authorization: Basic <auth>`. It records each request line.
struct Squidish {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Squidish {
    fn start(routes: Vec<(String, String)>, auth: Option<String>) -> Squidish {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (routes, auth, log) = (routes.clone(), auth.clone(), Arc::clone(&log));
                std::thread::spawn(move || serve(stream, &routes, auth.as_deref(), &log));
            }
        });
        Squidish { url, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn answer(mut client: &TcpStream, status: &str) {
    let _ = write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
}

fn serve(client: TcpStream, routes: &[(String, String)], auth: Option<&str>, log: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(client.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() || line.is_empty() {
        return;
    }
    let mut headers = Vec::new();
    let mut authorized = auth.is_none();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("proxy-authorization")
        {
            authorized |= auth.is_some_and(|a| v.trim() == format!("Basic {a}"));
            continue;
        }
        headers.push(h);
    }
    log.lock().unwrap().push(line.trim().to_owned());
    if !authorized {
        answer(&client, "407 Proxy Authentication Required");
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let route = |hostport: &str| {
        let host = hostport.split(':').next().unwrap_or("");
        routes.iter().find(|(h, _)| h == host).map(|(_, a)| a.clone())
    };
    if method == "CONNECT" {
        // Squid: `http_access deny CONNECT !SSL_ports`, SSL_ports 443.
        if !target.ends_with(":443") {
            answer(&client, "403 Forbidden");
            return;
        }
        let Some(upstream) = route(target).and_then(|a| TcpStream::connect(a).ok()) else {
            answer(&client, "502 Bad Gateway");
            return;
        };
        let mut c = &client;
        let _ = c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
        tunnel(reader, client.try_clone().unwrap(), upstream);
        return;
    }
    let Some(rest) = target.strip_prefix("http://") else {
        // An origin-form request is no proxy request.
        answer(&client, "400 Bad Request");
        return;
    };
    let (hostport, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Some(mut upstream) = route(hostport).and_then(|a| TcpStream::connect(a).ok()) else {
        answer(&client, "502 Bad Gateway");
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
    let mut c = &client;
    let _ = c.write_all(&response);
}

/// Copies both ways until either side closes.
fn tunnel(from_client: BufReader<TcpStream>, mut client: TcpStream, upstream: TcpStream) {
    let mut up_write = upstream.try_clone().unwrap();
    let mut up_read = upstream;
    let t = std::thread::spawn(move || {
        let _ = up_write.write_all(from_client.buffer());
        let mut inner = from_client.into_inner();
        let _ = std::io::copy(&mut inner, &mut up_write);
        let _ = up_write.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut up_read, &mut client);
    let _ = client.shutdown(std::net::Shutdown::Write);
    let _ = t.join();
}

fn lock(root: &Path) -> String {
    std::fs::read_to_string(root.join("strata.lock")).unwrap_or_default()
}

#[test]
fn a_plain_http_repository_goes_through_a_squid_like_proxy_in_absolute_form() {
    let repo = Repo::serve(&["web-1"]);
    let upstream = repo.url.trim_start_matches("http://").to_owned();
    let creds = "YWxpY2U6czNjcjN0IXB3"; // alice:s3cr3t!pw
    let proxy = Squidish::start(vec![(HOST.to_owned(), upstream)], Some(creds.to_owned()));
    let tmp = platform(&[("web", &remote(&format!("http://{HOST}"), "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();

    // The lower-case name, credentials in the URL (`!` percent-encoded).
    let with_creds = format!("http://alice:s3cr3t%21pw@{}", proxy.url);
    let out = pull(root, &[("http_proxy", &with_creds)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = proxy.seen();
    assert!(
        seen.contains(&format!("GET http://{HOST}/index.yaml HTTP/1.1")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|l| l.starts_with(&format!("GET http://{HOST}/web-1.0.0.tgz "))),
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|l| l.starts_with("CONNECT")),
        "a tunnel for plain HTTP: {seen:?}"
    );
    assert!(lock(root).contains("web"), "{}", lock(root));

    // Wrong credentials: the proxy's 407 is named, the password is not.
    std::fs::remove_dir_all(root.join(".strata")).unwrap();
    std::fs::remove_file(root.join("strata.lock")).unwrap();
    let wrong = format!("http://alice:not-the-pw-7731@{}", proxy.url);
    let out = pull(root, &[("HTTP_PROXY", &wrong)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("407") && err.contains("(HTTP_PROXY)"), "{err}");
    assert!(!err.contains("not-the-pw-7731") && !err.contains("alice"), "{err}");
}

/// `openssl s_server -WWW` serving a folder over HTTPS on 127.0.0.1, with
/// a certificate for [`HOST`] from a CA made here; killed when dropped.
struct Https {
    child: Child,
    addr: String,
    ca: std::path::PathBuf,
}

impl Drop for Https {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn openssl(dir: &Path, args: &[&str]) -> bool {
    Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `None` (a skip, or a failure under `CI=true`) without openssl.
fn https_server(files: &Path, keys: &Path) -> Option<Https> {
    let made = openssl(
        keys,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=strata test CA",
        ],
    ) && openssl(
        keys,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "leaf.key",
            "-out",
            "leaf.csr",
            "-subj",
            &format!("/CN={HOST}"),
        ],
    ) && std::fs::write(
        keys.join("ext"),
        format!("subjectAltName=DNS:{HOST}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"),
    )
    .is_ok()
        && openssl(
            keys,
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "leaf.pem",
                "-days",
                "2",
                "-extfile",
                "ext",
            ],
        );
    if !made {
        #[allow(clippy::disallowed_methods)]
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("openssl is required in CI to serve an HTTPS repository");
        }
        common::skipped("openssl cannot make a test certificate");
        return None;
    }
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new("openssl")
        .args(["s_server", "-quiet", "-WWW", "-accept", &addr])
        .arg("-cert")
        .arg(keys.join("leaf.pem"))
        .arg("-key")
        .arg(keys.join("leaf.key"))
        .current_dir(files)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start openssl s_server");
    let server = Https {
        child,
        addr,
        ca: keys.join("ca.pem"),
    };
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(&server.addr).is_err() {
        assert!(Instant::now() < until, "openssl s_server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}

#[test]
fn an_https_repository_goes_through_a_connect_tunnel() {
    let repo = Repo::serve(&["web-1"]);
    let keys = tempfile::tempdir().unwrap();
    let Some(server) = https_server(repo.dir.path(), keys.path()) else {
        return;
    };
    let proxy = Squidish::start(vec![(HOST.to_owned(), server.addr.clone())], None);
    let tmp = platform(&[("web", &remote(&format!("https://{HOST}"), "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();
    let ca = server.ca.display().to_string();
    let out = pull(root, &[("HTTPS_PROXY", &proxy.url), ("SSL_CERT_FILE", &ca)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = proxy.seen();
    assert!(
        !seen.is_empty() && seen.iter().all(|l| l == &format!("CONNECT {HOST}:443 HTTP/1.1")),
        "{seen:?}"
    );
    assert!(lock(root).contains("web"), "{}", lock(root));
}

#[test]
fn a_proxy_setting_strata_cannot_use_names_the_variable_set_and_never_its_password() {
    let tmp = platform(&[("web", &remote(&format!("https://{HOST}"), "web", "1.0.0"), "{}\n")]);
    let root = tmp.path();
    for (var, value, why) in [
        (
            "https_proxy",
            "gopher://alice:Pw-gopher-4471@proxy.example:70",
            "scheme is `gopher`",
        ),
        (
            "HTTPS_PROXY",
            "http://alice:Pw-port-4471@proxy.example:31x8",
            "port `31x8`",
        ),
        ("http_proxy", "http://bob:Pw%40encoded-4471@[::1", "closing `]`"),
    ] {
        let out = pull(root, &[(var, value)]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("error: {var} (set to ")), "{var}: {err}");
        assert!(err.contains(why), "{value}: {err}");
        for secret in [
            "Pw-gopher-4471",
            "Pw-port-4471",
            "Pw%40encoded-4471",
            "Pw@encoded-4471",
            "alice",
            "bob",
        ] {
            assert!(!err.contains(secret), "{value}: {err}");
        }
    }
}
