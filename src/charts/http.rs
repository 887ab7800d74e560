//! Fetching from Helm repositories over HTTP(S), for `strata charts pull`
//! only: bounded reads, and the caller's proxy and certificate settings as
//! Go programs such as helm read them, so that a pull from a Helm
//! repository and one from an OCI registry (which helm does) take the same
//! way out:
//!
//! - `HTTPS_PROXY` for `https://` URLs, `HTTP_PROXY` for `http://` URLs
//!   (the upper-case name first, then the lower-case one); a value without
//!   a scheme is an `http://` proxy, an `https://` one is spoken to over
//!   TLS. An `http://` URL goes to the proxy as an absolute-form request,
//!   an `https://` one through a CONNECT tunnel, as Go's transport sends
//!   them (see `forward`); a redirect takes the way of the URL it leads to.
//!   No message shows a proxy's or a URL's credentials;
//! - `NO_PROXY`: a comma-separated list of host names (each matching
//!   itself and its subdomains; with a leading `.`, only subdomains), IP
//!   addresses, CIDR ranges, any of them with `:port`, or `*` for every
//!   host; `localhost` and loopback addresses never go through a proxy;
//! - `SSL_CERT_FILE` replaces the system's CA bundle and `SSL_CERT_DIR`
//!   (folders separated by `:`) its CA folders; without either, the
//!   system's (the first of the bundles Go looks for, and `/etc/ssl/certs`),
//!   and if it has none, Mozilla's roots built into strata.

use std::time::Duration;

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

mod forward;
mod proxy;

use proxy::{NoProxy, Proxy, bypass, parse_no_proxy, var};

/// How long a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one download may take in all.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(600);
/// Redirects followed for one download, as Go's client follows them.
const MAX_REDIRECTS: usize = 10;

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
    /// `http://` targets: absolute-form requests to the proxy.
    http_proxy: Option<(Proxy, ureq::Agent)>,
    /// `https://` targets: a CONNECT tunnel through the proxy.
    https_proxy: Option<(Proxy, ureq::Agent)>,
    no_proxy: Vec<NoProxy>,
}

/// A URL for messages: its credentials hidden.
fn shown(url: &str) -> std::borrow::Cow<'_, str> {
    crate::secrets::url::redact_userinfo(url)
}

impl Http {
    /// A client with the proxy and CA settings among `vars` (name, value).
    pub fn new(vars: &[(String, String)]) -> Result<Http, String> {
        let tls = TlsConfig::builder().root_certs(roots(vars)?).build();
        let config = |proxy: Option<ureq::Proxy>| {
            ureq::Agent::config_builder()
                .timeout_connect(Some(CONNECT_TIMEOUT))
                .timeout_global(Some(DOWNLOAD_TIMEOUT))
                .http_status_as_error(false)
                .max_redirects(0)
                .tls_config(tls.clone())
                .proxy(proxy)
                .build()
        };
        let http_proxy = match proxy::from_vars(vars, &["HTTP_PROXY", "http_proxy"])? {
            None => None,
            Some(p) => {
                let (connector, resolver) = forward::Forward::new(&p)?;
                let agent = ureq::Agent::with_parts(config(None), connector, resolver);
                Some((p, agent))
            }
        };
        let https_proxy = match proxy::from_vars(vars, &["HTTPS_PROXY", "https_proxy"])? {
            None => None,
            Some(p) => {
                let agent = config(Some(p.for_connect()?)).new_agent();
                Some((p, agent))
            }
        };
        Ok(Http {
            direct: config(None).new_agent(),
            http_proxy,
            https_proxy,
            no_proxy: var(vars, &["NO_PROXY", "no_proxy"])
                .map(|(_, v)| parse_no_proxy(v))
                .unwrap_or_default(),
        })
    }

    /// The body of `url`, which must answer 200 within `limit` bytes;
    /// `what` names it in messages (`index.yaml`, `the archive`).
    /// Redirects are followed, each by the way its own URL takes.
    pub fn get(&self, url: &str, limit: u64, what: &str) -> Result<Vec<u8>, String> {
        let mut at = url.to_owned();
        for _ in 0..=MAX_REDIRECTS {
            let (agent, via) = self.route(&at);
            let mut resp = agent.get(&at).call().map_err(|e| {
                crate::secrets::url::redact_userinfo(&format!("cannot fetch {what} from {}{via}: {e}", shown(&at)))
                    .into_owned()
            })?;
            let status = resp.status().as_u16();
            if matches!(status, 301 | 302 | 303 | 307 | 308)
                && let Some(next) = resp.headers().get("location").and_then(|l| l.to_str().ok())
            {
                at = follow(&at, next);
                continue;
            }
            if status != 200 {
                return Err(format!("{} answered HTTP {status} for {what}{via}", shown(&at)));
            }
            return resp
                .body_mut()
                .with_config()
                .limit(limit)
                .read_to_vec()
                .map_err(|e| match e {
                    ureq::Error::BodyExceedsLimit(_) => {
                        format!("{what} at {} is larger than {} MiB, the limit", shown(&at), limit >> 20)
                    }
                    e => crate::secrets::url::redact_userinfo(&format!(
                        "cannot read {what} from {}{via}: {e}",
                        shown(&at)
                    ))
                    .into_owned(),
                });
        }
        Err(format!(
            "{} redirected more than {MAX_REDIRECTS} times for {what}",
            shown(url)
        ))
    }

    /// The agent for `url`, and the proxy it goes through as a clause for
    /// messages.
    fn route(&self, url: &str) -> (&ureq::Agent, String) {
        let proxy = if url.starts_with("https://") {
            &self.https_proxy
        } else {
            &self.http_proxy
        };
        match proxy {
            Some((p, agent)) if !bypass(url, &self.no_proxy) => {
                (agent, format!(" through the proxy {} ({})", p.address(), p.var))
            }
            _ => (&self.direct, String::new()),
        }
    }
}

/// Where a redirect from `from` to `location` leads.
fn follow(from: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let (scheme, rest) = from.split_once("://").unwrap_or(("http", from));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if let Some(path) = location.strip_prefix("//") {
        return format!("{scheme}://{path}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{authority}{location}");
    }
    let path = rest[authority.len()..].split(['?', '#']).next().unwrap_or("");
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    format!("{scheme}://{authority}{dir}/{location}")
}

/// The CA roots: from `SSL_CERT_FILE` and `SSL_CERT_DIR` when set, else
/// the system's, else Mozilla's.
fn roots(vars: &[(String, String)]) -> Result<RootCerts, String> {
    let file = var(vars, &["SSL_CERT_FILE"]).map(|(_, v)| v);
    let dirs = var(vars, &["SSL_CERT_DIR"]).map(|(_, v)| v);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
    }

    #[test]
    fn proxies_are_chosen_by_scheme_and_bad_settings_are_named() {
        let h = Http::new(&vars(&[("HTTP_PROXY", "127.0.0.1:3128")])).unwrap();
        assert!(h.http_proxy.is_some() && h.https_proxy.is_none());
        let h = Http::new(&vars(&[("https_proxy", "http://p:1"), ("HTTPS_PROXY", "")])).unwrap();
        assert!(h.https_proxy.is_some());
        assert!(h.route("https://charts.example/x").1.contains("(https_proxy)"));
        assert!(h.route("http://charts.example/x").1.is_empty());
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

    #[test]
    fn a_redirect_leads_where_a_browser_would_go() {
        let from = "https://charts.example/a/index.yaml?x=1";
        assert_eq!(follow(from, "https://cdn.example/i.yaml"), "https://cdn.example/i.yaml");
        assert_eq!(follow(from, "//cdn.example/i.yaml"), "https://cdn.example/i.yaml");
        assert_eq!(follow(from, "/b/i.yaml"), "https://charts.example/b/i.yaml");
        assert_eq!(follow(from, "c.tgz"), "https://charts.example/a/c.tgz");
    }
}
