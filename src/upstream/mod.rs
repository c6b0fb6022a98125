//! tooltap's own upstream client, over `hyper::client::conn`: a [`pool::Pool`] per upstream
//! (scheme, host, port), HTTP/1.1, and HTTP/2 when the upstream picks it by ALPN on TLS.
//!
//! Input: a request whose URI is the absolute upstream URI (`forward` built it, with its `Host`
//! header), and the [`UpstreamUrl`] it goes to. Output: the response head with a
//! [`ResponseBody`] that hands its HTTP/1.1 connection back to the pool when it is dropped, or an
//! [`UpstreamError`].
//!
//! HTTP/1.1 requests are written in origin form (path and query), HTTP/2 ones keep the absolute
//! URI for `:scheme` and `:authority`. Nothing is added to the request. A request that fails on a
//! pooled connection before any of it was written (the upstream closed the connection while it
//! sat idle, and hyper hands the request back untouched) is sent once more, on a new connection:
//! whatever its method, since the upstream saw nothing of it.

mod body;
pub mod collector;
mod connect;
mod error;
mod pool;

pub use crate::metrics::upstream_pool::{Closed, PoolCounters};

/// Errors inside a body stream. Boxed because hyper needs `Into<Box<dyn Error>>` anyway and a
/// tee may add its own.
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// What the upstream receives.
pub type RequestBody = http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, BodyError>;
pub use body::ResponseBody;
pub use error::UpstreamError;
pub use pool::{UPSTREAM_MAX_HEAD_BYTES, UPSTREAM_MAX_HEADERS};

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use http::{Request, Response, Uri};
use tokio_rustls::TlsConnector;

use crate::metrics::Metrics;
use crate::route::UpstreamUrl;
use body::Lease;
use connect::Target;
use pool::{Checkout, Conn, Pool, Shared};

/// The pool settings, from `[timeouts]` and `[proxy]`.
#[derive(Debug, Clone, Copy)]
pub struct PoolSettings {
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_idle: usize,
    pub max_connections: usize,
}

/// The client: cheap to clone, every clone shares the pools.
#[derive(Clone)]
pub struct UpstreamClient {
    shared: Arc<Shared>,
    pools: Arc<Mutex<Vec<PoolEntry>>>,
}

/// A pool under the scheme and authority a route names it by.
struct PoolEntry {
    https: bool,
    authority: http::uri::Authority,
    pool: Arc<Pool>,
}

impl std::fmt::Debug for UpstreamClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamClient")
            .field("max_idle", &self.shared.max_idle)
            .field("max_connections", &self.shared.max_connections)
            .finish_non_exhaustive()
    }
}

impl UpstreamClient {
    /// A client whose TLS connections use `tls` (ALPN is set here: h2, then http/1.1).
    pub fn new(settings: PoolSettings, mut tls: rustls::ClientConfig) -> UpstreamClient {
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        UpstreamClient {
            shared: Arc::new(Shared {
                connect_timeout: settings.connect_timeout,
                idle_timeout: settings.idle_timeout,
                max_idle: settings.max_idle,
                max_connections: settings.max_connections.max(1),
                tls: TlsConnector::from(Arc::new(tls)),
                metrics: OnceLock::new(),
            }),
            pools: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Count connections opened, reused and closed into `metrics` (set once; later calls keep
    /// the first registry).
    pub fn count_into(&self, metrics: Arc<Metrics>) {
        let _ = self.shared.metrics.set(metrics);
    }

    /// The pool for `upstream`, made on first use (there is one per distinct upstream of the
    /// configured routes: a short list scanned under a lock held for the scan only). The list
    /// is keyed by scheme and authority as the route spells them, so the common case compares
    /// two short strings byte for byte; an authority seen for the first time is resolved to its
    /// target (host and port, `example.com` and `example.com:80` being one upstream) once.
    fn pool(&self, upstream: &UpstreamUrl) -> Arc<Pool> {
        let authority = upstream.authority();
        let https = upstream.is_https();
        let mut pools = self.pools.lock().unwrap_or_else(PoisonError::into_inner);
        // Byte for byte (`Authority`'s own `==` ignores ASCII case, a loop over every byte):
        // a route's requests all carry the very authority it was parsed with, and one spelled
        // otherwise still finds its pool by its target below.
        let known = pools
            .iter()
            .find(|entry| entry.https == https && entry.authority.as_str() == authority.as_str());
        if let Some(entry) = known {
            return entry.pool.clone();
        }
        let target = Target {
            https,
            host: authority
                .host()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port: authority.port_u16().unwrap_or(if https { 443 } else { 80 }),
        };
        let pool = match pools.iter().find(|entry| *entry.pool.target() == target) {
            Some(entry) => entry.pool.clone(),
            None => Pool::new(target, self.shared.clone()),
        };
        pools.push(PoolEntry {
            https,
            authority: authority.clone(),
            pool: pool.clone(),
        });
        pool
    }

    /// Send `request` to `upstream` and wait for the response head.
    ///
    /// Not an `async fn`: one would keep the request in its state twice (its argument, and
    /// the request rebuilt without its absolute URI), and this future is part of every
    /// request's service future, which hyper moves whole into its slot.
    pub fn send<'a>(
        &'a self,
        upstream: &'a UpstreamUrl,
        request: Request<RequestBody>,
    ) -> impl Future<Output = Result<Response<ResponseBody>, UpstreamError>> + 'a {
        let pool = self.pool(upstream);
        let (absolute, mut request) = {
            let (mut parts, body) = request.into_parts();
            let absolute = std::mem::take(&mut parts.uri);
            (absolute, Request::from_parts(parts, body))
        };
        async move {
            let mut fresh = false;
            loop {
                let Checkout { conn, reused } = pool.checkout(fresh).await?;
                let sent = match conn {
                    Conn::H1(mut sender) => {
                        *request.uri_mut() = origin_form(&absolute);
                        sender
                            .try_send_request(request)
                            .await
                            .map(|response| (response, Some(sender)))
                    }
                    Conn::H2(mut sender) => {
                        *request.uri_mut() = absolute.clone();
                        sender
                            .try_send_request(request)
                            .await
                            .map(|response| (response, None))
                    }
                };
                match sent {
                    Ok((response, sender)) => {
                        let lease = sender.map(|sender| Lease {
                            sender,
                            pool: pool.clone(),
                        });
                        return Ok(response.map(|incoming| ResponseBody::new(incoming, lease)));
                    }
                    Err(mut error) => match error.take_message() {
                        Some(unsent) if reused && !fresh => {
                            tracing::debug!(
                                upstream = upstream.as_str(),
                                error = %error.error(),
                                "a pooled upstream connection closed before the request was sent: \
                                 sending it on a new connection"
                            );
                            request = unsent;
                            fresh = true;
                        }
                        _ => return Err(UpstreamError::Request(error.into_error())),
                    },
                }
            }
        }
    }
}

/// For tooltap's own senders that have no route (the OTLP exporter, object storage): the
/// upstream (scheme and authority) that `request`'s absolute `http`/`https` URI names, after
/// giving the request that authority as its `Host` header unless it has one. `None` when the URI
/// is not absolute or names another scheme.
pub fn absolute_upstream<B>(request: &mut Request<B>) -> Option<UpstreamUrl> {
    let uri = request.uri();
    let upstream =
        UpstreamUrl::parse(&format!("{}://{}", uri.scheme_str()?, uri.authority()?)).ok()?;
    request
        .headers_mut()
        .entry(http::header::HOST)
        .or_insert_with(|| upstream.host_header().clone());
    Some(upstream)
}

/// The path and query of `uri` (`/` when it has none), as HTTP/1.1 writes a request line.
fn origin_form(uri: &Uri) -> Uri {
    match uri.path_and_query() {
        Some(path_and_query) => Uri::from(path_and_query.clone()),
        None => Uri::from_static("/"),
    }
}
