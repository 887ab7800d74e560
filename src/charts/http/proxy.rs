//! The proxy settings of the caller's environment, read as Go programs
//! such as helm read them (`golang.org/x/net/http/httpproxy`): the
//! upper-case name first, then the lower-case one; a value without a
//! scheme is an `http://` proxy. A setting strata cannot use is an error
//! that names the variable the user set and never shows its credentials.

use std::net::IpAddr;

use crate::secrets::url::{HIDDEN, percent_decode};

/// One proxy: where it listens, how to reach it, and who to say we are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Proxy {
    /// The variable it was read from, as the user spelt it.
    pub var: &'static str,
    /// Whether strata speaks TLS to the proxy itself (`https://`).
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// User and password of its user information, percent-decoded.
    pub user: Option<String>,
    pub password: Option<String>,
}

impl Proxy {
    /// `http://host:port`, without credentials: for messages and for
    /// ureq, which takes the credentials apart.
    pub fn address(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{scheme}://{host}:{}", self.port)
    }

    /// The proxy as a ureq CONNECT proxy.
    pub fn for_connect(&self) -> Result<ureq::Proxy, String> {
        let proto = if self.tls {
            ureq::ProxyProtocol::Https
        } else {
            ureq::ProxyProtocol::Http
        };
        let mut b = ureq::Proxy::builder(proto).host(&self.host).port(self.port);
        if let Some(u) = &self.user {
            b = b.username(u);
        }
        if let Some(p) = &self.password {
            b = b.password(p);
        }
        b.build()
            .map_err(|e| format!("{} cannot be used as a proxy ({}): {e}", self.var, self.address()))
    }

    /// The value of `Proxy-Authorization` when the URL has user
    /// information: HTTP Basic, as Go's transport sends it.
    pub fn authorization(&self) -> Option<String> {
        if self.user.is_none() && self.password.is_none() {
            return None;
        }
        let pair = format!(
            "{}:{}",
            self.user.as_deref().unwrap_or(""),
            self.password.as_deref().unwrap_or("")
        );
        Some(format!("Basic {}", crate::secrets::base64_encode(pair.as_bytes())))
    }
}

/// The first of `names` that is set (and not empty): its name and value.
pub(crate) fn var<'a>(vars: &'a [(String, String)], names: &[&'static str]) -> Option<(&'static str, &'a str)> {
    names.iter().find_map(|n| {
        vars.iter()
            .find(|(k, v)| k == n && !v.is_empty())
            .map(|(_, v)| (*n, v.as_str()))
    })
}

/// A proxy value as a message may show it: the part after its last `@`
/// only (with the scheme when it has one), so that no credential shows,
/// however malformed the value.
fn shown(value: &str) -> String {
    match value.rsplit_once('@') {
        None => value.to_owned(),
        Some((before, host)) => match before.split_once("://") {
            Some((scheme, _)) if scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c)) => {
                format!("{scheme}://{HIDDEN}@{host}")
            }
            _ => format!("{HIDDEN}@{host}"),
        },
    }
}

/// The proxy of the first of `names` that is set; an error names that
/// variable and what is wrong, without its credentials.
pub(crate) fn from_vars(vars: &[(String, String)], names: &[&'static str]) -> Result<Option<Proxy>, String> {
    let Some((name, value)) = var(vars, names) else {
        return Ok(None);
    };
    parse(name, value.trim()).map(Some).map_err(|why| {
        format!(
            "{name} (set to {}) is not a proxy strata can use: {why}",
            shown(value.trim())
        )
    })
}

/// Reads `value` of the variable `var` as Go reads a proxy URL.
fn parse(var: &'static str, value: &str) -> Result<Proxy, String> {
    let (scheme, rest) = match value.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => ("http".to_owned(), value),
    };
    let tls = match scheme.as_str() {
        "http" => false,
        "https" => true,
        other => {
            return Err(format!(
                "its scheme is `{other}`, and strata reaches Helm repositories through http:// and https:// proxies only"
            ));
        }
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (host, port) = split_host_port(hostport)?;
    if host.is_empty() {
        return Err("it names no host".to_owned());
    }
    let (user, password) = match userinfo {
        None => (None, None),
        Some(u) => match u.split_once(':') {
            Some((a, b)) => (Some(percent_decode(a)), Some(percent_decode(b))),
            None => (Some(percent_decode(u)), None),
        },
    };
    Ok(Proxy {
        var,
        tls,
        host,
        port: port.unwrap_or(if tls { 443 } else { 80 }),
        user,
        password,
    })
}

/// `host:port`, `[v6]:port` or a bare host; a port that is no number is
/// an error.
fn split_host_port(s: &str) -> Result<(String, Option<u16>), String> {
    let bad_port = |p: &str| format!("its port `{p}` is not a port number");
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("its IPv6 address has no closing `]`")?;
        return match after.strip_prefix(':') {
            None if after.is_empty() => Ok((host.to_owned(), None)),
            Some(p) => p.parse().map(|p| (host.to_owned(), Some(p))).map_err(|_| bad_port(p)),
            None => Err(format!("`{after}` follows its address")),
        };
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => p.parse().map(|p| (h.to_owned(), Some(p))).map_err(|_| bad_port(p)),
        _ => Ok((s.to_owned(), None)),
    }
}

/// One entry of `NO_PROXY`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NoProxy {
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

pub(crate) fn parse_no_proxy(value: &str) -> Vec<NoProxy> {
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
pub(crate) fn host_port(url: &str) -> Option<(String, u16)> {
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
pub(crate) fn bypass(url: &str, list: &[NoProxy]) -> bool {
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

    fn vars(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
    }

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
    fn a_proxy_is_read_as_go_reads_it() {
        let names = &["HTTPS_PROXY", "https_proxy"];
        let p = from_vars(&vars(&[("https_proxy", "al%69ce:s%3Acret@proxy.example")]), names)
            .unwrap()
            .unwrap();
        assert_eq!(
            (p.var, p.tls, p.host.as_str(), p.port),
            ("https_proxy", false, "proxy.example", 80)
        );
        assert_eq!(
            (p.user.as_deref(), p.password.as_deref()),
            (Some("alice"), Some("s:cret"))
        );
        assert_eq!(p.authorization().as_deref(), Some("Basic YWxpY2U6czpjcmV0"));
        let p = from_vars(&vars(&[("HTTPS_PROXY", "https://[::1]:8443/")]), names)
            .unwrap()
            .unwrap();
        assert_eq!((p.tls, p.host.as_str(), p.port), (true, "::1", 8443));
        assert_eq!(p.address(), "https://[::1]:8443");
        // The upper-case name first; an empty value is unset.
        let both = vars(&[("https_proxy", "http://b:2"), ("HTTPS_PROXY", "http://a:1")]);
        assert_eq!(from_vars(&both, names).unwrap().unwrap().host, "a");
        let empty = vars(&[("HTTPS_PROXY", ""), ("https_proxy", "http://b:2")]);
        assert_eq!(from_vars(&empty, names).unwrap().unwrap().var, "https_proxy");
    }

    #[test]
    fn a_proxy_strata_cannot_use_is_named_by_its_variable_without_credentials() {
        let names = &["HTTPS_PROXY", "https_proxy"];
        for (value, why) in [
            ("gopher://alice:hunter2-9f@proxy.example:3128", "scheme is `gopher`"),
            ("http://alice:hunter2-9f@proxy.example:31x8", "port `31x8`"),
            ("http://alice:hunter2-9f@[::1", "closing `]`"),
            ("socks5://alice:hunter2-9f@proxy.example:1080", "scheme is `socks5`"),
            ("http://alice:hunter2-9f@", "no host"),
        ] {
            let e = from_vars(&vars(&[("https_proxy", value)]), names).unwrap_err();
            assert!(e.starts_with("https_proxy (set to "), "{e}");
            assert!(e.contains(why), "{value}: {e}");
            assert!(!e.contains("hunter2") && !e.contains("alice"), "{e}");
        }
    }
}
