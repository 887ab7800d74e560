//! Fetching from Helm repositories over HTTP(S), for `strata charts pull`
//! only: bounded reads, and the caller's proxy and certificate settings as
//! Go programs such as helm read them, so that a pull from a Helm
//! repository and one from an OCI registry (which helm does) take the same
//! way out:
//!
//! - `HTTPS_PROXY` for `https://` URLs, `HTTP_PROXY` for `http://` URLs
//!   (the upper-case name first, then the lower-case one); a value without
//!   a scheme is an `http://` proxy;
//! - `NO_PROXY`: a comma-separated list of host names (each matching
//!   itself and its subdomains; with a leading `.`, only subdomains), IP
//!   addresses, CIDR ranges, any of them with `:port`, or `*` for every
//!   host; `localhost` and loopback addresses never go through a proxy;
//! - `SSL_CERT_FILE` replaces the system's CA bundle and `SSL_CERT_DIR`
//!   (folders separated by `:`) its CA folders; without either, the
//!   system's (the first of the bundles Go looks for, and `/etc/ssl/certs`),
//!   and if it has none, Mozilla's roots built into strata.

use std::net::IpAddr;
use std::time::Duration;

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

/// How long a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one download may take in all.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(600);

/// The system CA bundles Go looks for on Linux, in its order.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/tls/cacert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];
const SYSTEM_DIRS: &[&str] = &["/etc/ssl/certs", "/etc/pki/tls/certs"];

/// Largest CA bundle or CA file read.
const MAX_CA_FILE: u64 = 16 * 1024 * 1024;

/// An HTTP client for chart repositories.
pub struct Http {
    direct: ureq::Agent,
    http_proxy: Option<ureq::Agent>,
    https_proxy: Option<ureq::Agent>,
    no_proxy: Vec<NoProxy>,
}

/// One entry of `NO_PROXY`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum NoProxy {
    All,
    /// A host name: `suffix_only` for a leading `.` (subdomains only).
    Host {
        name: String,
        port: Option<u16>,
        suffix_only: bool,
    },
    Ip(IpAddr, Option<u16>),
    Cidr(IpAddr, u8),
}

fn var<'a>(vars: &'a [(String, String)], names: &[&str]) -> Option<&'a str> {
    names.iter().find_map(|n| {
        vars.iter()
            .find(|(k, v)| k == n && !v.is_empty())
            .map(|(_, v)| v.as_str())
    })
}

impl Http {
    /// A client with the proxy and CA settings among `vars` (name, value).
    pub fn new(vars: &[(String, String)]) -> Result<Http, String> {
        let tls = TlsConfig::builder().root_certs(roots(vars)?).build();
        let agent = |proxy: Option<ureq::Proxy>| {
            ureq::Agent::config_builder()
                .timeout_connect(Some(CONNECT_TIMEOUT))
                .timeout_global(Some(DOWNLOAD_TIMEOUT))
                .http_status_as_error(false)
                .tls_config(tls.clone())
                .proxy(proxy)
                .build()
                .new_agent()
        };
        let proxied = |names: &[&str]| -> Result<Option<ureq::Agent>, String> {
            match var(vars, names) {
                None => Ok(None),
                Some(url) => ureq::Proxy::new(url)
                    .map(|p| Some(agent(Some(p))))
                    .map_err(|e| format!("{}={url} is not a proxy URL: {e}", names[0])),
            }
        };
        Ok(Http {
            direct: agent(None),
            http_proxy: proxied(&["HTTP_PROXY", "http_proxy"])?,
            https_proxy: proxied(&["HTTPS_PROXY", "https_proxy"])?,
            no_proxy: var(vars, &["NO_PROXY", "no_proxy"])
                .map(parse_no_proxy)
                .unwrap_or_default(),
        })
    }

    /// The body of `url`, which must answer 200 within `limit` bytes;
    /// `what` names it in messages (`index.yaml`, `the archive`).
    pub fn get(&self, url: &str, limit: u64, what: &str) -> Result<Vec<u8>, String> {
        let mut resp = self
            .agent_for(url)
            .get(url)
            .call()
            .map_err(|e| format!("cannot fetch {what} from {url}: {e}"))?;
        let status = resp.status().as_u16();
        if status != 200 {
            return Err(format!("{url} answered HTTP {status} for {what}"));
        }
        resp.body_mut()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => {
                    format!("{what} at {url} is larger than {} MiB, the limit", limit >> 20)
                }
                e => format!("cannot read {what} from {url}: {e}"),
            })
    }

    fn agent_for(&self, url: &str) -> &ureq::Agent {
        let https = url.starts_with("https://");
        let proxy = if https { &self.https_proxy } else { &self.http_proxy };
        match proxy {
            Some(p) if !bypass(url, &self.no_proxy) => p,
            _ => &self.direct,
        }
    }
}

/// The CA roots: from `SSL_CERT_FILE` and `SSL_CERT_DIR` when set, else
/// the system's, else Mozilla's.
fn roots(vars: &[(String, String)]) -> Result<RootCerts, String> {
    let file = var(vars, &["SSL_CERT_FILE"]);
    let dirs = var(vars, &["SSL_CERT_DIR"]);
    let mut certs = Vec::new();
    match file {
        Some(f) => certs.extend(read_certs(std::path::Path::new(f)).map_err(|e| format!("SSL_CERT_FILE={f}: {e}"))?),
        None if dirs.is_none() => {
            if let Some(found) = SYSTEM_BUNDLES
                .iter()
                .find_map(|b| read_certs(std::path::Path::new(b)).ok())
            {
                certs.extend(found);
            }
        }
        None => {}
    }
    let dir_list: Vec<&str> = match dirs {
        Some(d) => d.split(':').filter(|s| !s.is_empty()).collect(),
        None if file.is_none() && certs.is_empty() => SYSTEM_DIRS.to_vec(),
        None => Vec::new(),
    };
    for d in dir_list {
        let Ok(entries) = std::fs::read_dir(d) else {
            if dirs.is_some() {
                return Err(format!("SSL_CERT_DIR: cannot read the folder {d}"));
            }
            continue;
        };
        let mut paths: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            // Files that are not PEM certificates are skipped, as Go does.
            if let Ok(c) = read_certs(&p) {
                certs.extend(c);
            }
        }
    }
    if certs.is_empty() {
        if file.is_some() || dirs.is_some() {
            return Err("SSL_CERT_FILE and SSL_CERT_DIR hold no PEM certificate".into());
        }
        return Ok(RootCerts::WebPki);
    }
    Ok(RootCerts::new_with_certs(&certs))
}

/// The PEM certificates of one file.
fn read_certs(path: &std::path::Path) -> Result<Vec<Certificate<'static>>, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() || meta.len() > MAX_CA_FILE {
        return Err("not a file of at most 16 MiB".into());
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(&bytes)
        .filter_map(Result::ok)
        .filter_map(|item| match item {
            PemItem::Certificate(c) => Some(c),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        Err("no PEM certificate in it".into())
    } else {
        Ok(certs)
    }
}

fn parse_no_proxy(value: &str) -> Vec<NoProxy> {
    value
        .split(',')
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .filter_map(|e| no_proxy_entry(&e))
        .collect()
}

/// One entry of `NO_PROXY`; a range that does not parse is skipped, as Go
/// skips it.
fn no_proxy_entry(e: &str) -> Option<NoProxy> {
    if e == "*" {
        return Some(NoProxy::All);
    }
    if let Some((ip, bits)) = e.split_once('/') {
        return Some(NoProxy::Cidr(ip.parse().ok()?, bits.parse().ok()?));
    }
    let (host, port) = split_port(e);
    if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Some(NoProxy::Ip(ip, port));
    }
    let suffix_only = host.starts_with('.') || host.starts_with("*.");
    let name = host.trim_start_matches('*').trim_start_matches('.').to_owned();
    Some(NoProxy::Host {
        name,
        port,
        suffix_only,
    })
}

/// `host:port` into its parts; an IPv6 address without brackets is all host.
fn split_port(s: &str) -> (&str, Option<u16>) {
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') || h.ends_with(']') => match p.parse() {
            Ok(port) => (h, Some(port)),
            Err(_) => (s, None),
        },
        _ => (s, None),
    }
}

/// The host and port of a URL (the default port of its scheme when none
/// is written).
fn host_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let hostport = authority.rsplit('@').next()?;
    let default = if scheme == "https" { 443 } else { 80 };
    let (host, port) = split_port(hostport);
    Some((
        host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase(),
        port.unwrap_or(default),
    ))
}

/// Whether a request to `url` goes straight to the host.
fn bypass(url: &str, list: &[NoProxy]) -> bool {
    let Some((host, port)) = host_port(url) else {
        return true;
    };
    let ip = host.parse::<IpAddr>().ok();
    if host == "localhost" || ip.is_some_and(|i| i.is_loopback()) {
        return true;
    }
    list.iter().any(|e| match e {
        NoProxy::All => true,
        NoProxy::Ip(want, p) => ip == Some(*want) && p.is_none_or(|p| p == port),
        NoProxy::Cidr(net, bits) => ip.is_some_and(|i| in_cidr(i, *net, *bits)),
        NoProxy::Host {
            name,
            port: p,
            suffix_only,
        } => {
            let sub = host.ends_with(&format!(".{name}"));
            let hit = if *suffix_only { sub } else { sub || host == *name };
            hit && p.is_none_or(|p| p == port)
        }
    })
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) if bits <= 32 => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) if bits <= 128 => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_proxy_matches_as_go_does() {
        let list = parse_no_proxy("example.com, .internal, 10.0.0.0/8, 192.168.1.5, mirror.test:8443");
        let direct = |u: &str| bypass(u, &list);
        assert!(direct("https://example.com/charts"));
        assert!(direct("https://charts.example.com/x"));
        assert!(!direct("https://notexample.com/x"));
        assert!(direct("https://a.internal/x") && !direct("https://internal/x"));
        assert!(direct("http://10.1.2.3:8080/x") && !direct("http://11.1.2.3/x"));
        assert!(direct("http://192.168.1.5/x"));
        assert!(direct("https://mirror.test:8443/x") && !direct("https://mirror.test/x"));
        // Loopback never goes through a proxy.
        assert!(bypass("http://127.0.0.1:1234/x", &[]) && bypass("http://localhost/x", &[]));
        assert!(!bypass("http://charts.strata.test/x", &[]));
        assert!(bypass("http://anything/x", &parse_no_proxy("*")));
    }

    #[test]
    fn proxies_are_chosen_by_scheme_and_bad_settings_are_named() {
        let vars = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
        };
        let h = Http::new(&vars(&[("HTTP_PROXY", "127.0.0.1:3128")])).unwrap();
        assert!(h.http_proxy.is_some() && h.https_proxy.is_none());
        let h = Http::new(&vars(&[("https_proxy", "http://p:1"), ("HTTPS_PROXY", "")])).unwrap();
        assert!(h.https_proxy.is_some());
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("none.pem").display().to_string();
        let e = Http::new(&vars(&[("SSL_CERT_FILE", &missing)])).err().unwrap();
        assert!(e.starts_with("SSL_CERT_FILE="), "{e}");
        std::fs::write(tmp.path().join("junk.pem"), "not a certificate").unwrap();
        let e = Http::new(&vars(&[("SSL_CERT_DIR", &tmp.path().display().to_string())]))
            .err()
            .unwrap();
        assert!(e.contains("no PEM certificate"), "{e}");
    }
}
