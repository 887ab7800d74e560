//! Plain-HTTP requests through a proxy, as Go's transport (and so helm)
//! sends them: to the proxy, with the target's absolute URL on the request
//! line (`GET http://charts.example/index.yaml HTTP/1.1`) and the proxy's
//! credentials in `Proxy-Authorization` (golang/go `src/net/http/
//! transport.go`, `dialConn`: `isProxy` for an `http` target, a CONNECT
//! tunnel only for `https`). A proxy that tunnels only to port 443, as
//! Squid does by default, serves these.
//!
//! ureq speaks only CONNECT to an HTTP proxy, so this is a ureq connector
//! of its own: it opens the connection to the proxy (TLS to an
//! `https://` proxy) in place of the target, and the transport it gives
//! rewrites the request line of each request into the absolute form.

use std::fmt;

use ureq::Error;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, NextTimeout, RustlsConnector, TcpConnector, Transport,
};

use super::proxy::Proxy;

/// Connects every request to the proxy.
pub(super) struct Forward {
    proxy: Uri,
    authorization: Option<String>,
    tcp: TcpConnector,
    tls: RustlsConnector,
}

impl fmt::Debug for Forward {
    // Never the credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Forward")
            .field("proxy", &self.proxy)
            .finish_non_exhaustive()
    }
}

impl Forward {
    pub(super) fn new(p: &Proxy) -> Result<(Forward, ForwardResolver), String> {
        let proxy: Uri = p
            .address()
            .parse()
            .map_err(|e| format!("{} cannot be used as a proxy ({}): {e}", p.var, p.address()))?;
        Ok((
            Forward {
                proxy: proxy.clone(),
                authorization: p.authorization(),
                tcp: TcpConnector::default(),
                tls: RustlsConnector::default(),
            },
            ForwardResolver {
                proxy,
                inner: DefaultResolver::default(),
            },
        ))
    }
}

impl Connector<()> for Forward {
    type Out = Box<dyn Transport>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<()>) -> Result<Option<Self::Out>, Error> {
        let _ = chained;
        let Some(authority) = details.uri.authority() else {
            return Err(Error::BadUri(format!("{} names no host", details.uri)));
        };
        let origin = format!("http://{authority}");
        let addrs = details.resolver.resolve(&self.proxy, details.config, details.timeout)?;
        let at_proxy = ConnectionDetails {
            uri: &self.proxy,
            addrs,
            config: details.config,
            request_level: details.request_level,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: details.current_time.clone(),
            run_connector: details.run_connector.clone(),
            register_shutdown: details.register_shutdown.clone(),
        };
        let tcp = Connector::<()>::connect(&self.tcp, &at_proxy, None)?;
        let Some(conn) = self.tls.connect(&at_proxy, tcp)? else {
            return Err(Error::ConnectionFailed);
        };
        Ok(Some(Box::new(AbsoluteForm {
            inner: Box::new(conn),
            origin,
            authorization: self.authorization.clone(),
        })))
    }
}

/// Resolves the proxy's name only: the proxy resolves the target's.
#[derive(Debug)]
pub(super) struct ForwardResolver {
    proxy: Uri,
    inner: DefaultResolver,
}

impl Resolver for ForwardResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, Error> {
        if *uri == self.proxy {
            self.inner.resolve(uri, config, timeout)
        } else {
            Ok(self.empty())
        }
    }
}

/// A connection to the proxy that sends each request line in the
/// absolute form, with the proxy's credentials.
struct AbsoluteForm {
    inner: Box<dyn Transport>,
    /// `http://host[:port]` of the target.
    origin: String,
    authorization: Option<String>,
}

impl fmt::Debug for AbsoluteForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbsoluteForm")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl Transport for AbsoluteForm {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), Error> {
        let rewritten = absolute(
            &self.inner.buffers().output()[..amount],
            &self.origin,
            self.authorization.as_deref(),
        );
        let Some(bytes) = rewritten else {
            return self.inner.transmit_output(amount, timeout);
        };
        let room = self.inner.buffers().output().len().max(1);
        for piece in bytes.chunks(room) {
            self.inner.buffers().output()[..piece.len()].copy_from_slice(piece);
            self.inner.transmit_output(piece.len(), timeout)?;
        }
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, Error> {
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

/// The head of a request with its request line in the absolute form and
/// `Proxy-Authorization` after it; `None` when `out` does not start with
/// a request line in the origin form (the rest of a head, or a body).
fn absolute(out: &[u8], origin: &str, authorization: Option<&str>) -> Option<Vec<u8>> {
    let end = out.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&out[..end]).ok()?;
    let mut parts = line.splitn(3, ' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) || !target.starts_with('/') {
        return None;
    }
    let mut head = format!("{method} {origin}{target} {version}\r\n");
    if let Some(a) = authorization {
        head.push_str(&format!("Proxy-Authorization: {a}\r\n"));
    }
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&out[end + 2..]);
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_line_is_written_in_the_absolute_form_with_the_proxy_s_credentials() {
        let head = b"GET /charts/index.yaml?x=1 HTTP/1.1\r\nhost: charts.example:8080\r\n\r\n";
        let out = absolute(head, "http://charts.example:8080", Some("Basic YTpi")).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET http://charts.example:8080/charts/index.yaml?x=1 HTTP/1.1\r\nProxy-Authorization: Basic YTpi\r\nhost: charts.example:8080\r\n\r\n"
        );
        assert!(absolute(b"payload without a request line", "http://h", None).is_none());
        assert!(absolute(b"GET http://h/ HTTP/1.1\r\n\r\n", "http://h", None).is_none());
    }
}
