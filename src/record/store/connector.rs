//! object_store's HTTP client: tooltap's own upstream client ([`crate::upstream`]) with
//! its own small pool (never the forwarder's), rustls with the `ring` provider and the webpki
//! roots ([`crate::tls::client_config`]), so storing recordings adds no second HTTP or
//! TLS stack and no reqwest.
//!
//! Input: object_store's [`HttpRequest`]s. Output: its [`HttpResponse`]s, the body streamed.
//! Each request's head must arrive within [`HEAD_TIMEOUT`] (object_store's own timeout options
//! configure reqwest, which is not used here); connecting has [`CONNECT_TIMEOUT`], and so has a
//! wait for a connection when [`MAX_CONNECTIONS`] are busy.

use std::time::Duration;

use http_body_util::BodyExt;
use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpResponseBody, HttpService,
};

use crate::upstream::{self, PoolSettings, UpstreamClient, UpstreamError};

/// Connecting to the store gives up after this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A response head not received within this long fails the request (object_store retries it).
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// An idle connection to the store is closed after this long.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections open to one store at once (the uploader runs a few uploads in parallel, each
/// may send parts in parallel); idle ones kept.
const MAX_CONNECTIONS: usize = 16;
const MAX_IDLE: usize = 4;

/// Hands object_store a client over hyper + rustls/ring.
#[derive(Debug, Clone)]
pub struct HyperConnector {
    client: UpstreamClient,
}

impl HyperConnector {
    pub fn new() -> Result<HyperConnector, crate::tls::TlsError> {
        let tls = crate::tls::client_config(None)?;
        let client = UpstreamClient::new(
            PoolSettings {
                connect_timeout: CONNECT_TIMEOUT,
                idle_timeout: IDLE_TIMEOUT,
                max_idle: MAX_IDLE,
                max_connections: MAX_CONNECTIONS,
            },
            tls,
        );
        Ok(HyperConnector { client })
    }
}

impl HttpConnector for HyperConnector {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        Ok(HttpClient::new(HyperService {
            client: self.client.clone(),
        }))
    }
}

#[derive(Debug)]
struct HyperService {
    client: UpstreamClient,
}

#[async_trait::async_trait]
impl HttpService for HyperService {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let (parts, body) = request.into_parts();
        let mut request = http::Request::from_parts(
            parts,
            body.map_err(upstream::BodyError::from).boxed_unsync(),
        );
        let Some(upstream) = upstream::absolute_upstream(&mut request) else {
            return Err(HttpError::new(
                HttpErrorKind::Request,
                NotAbsolute(request.uri().to_string()),
            ));
        };
        let sent = tokio::time::timeout(HEAD_TIMEOUT, self.client.send(&upstream, request)).await;
        let response = match sent {
            Err(elapsed) => return Err(HttpError::new(HttpErrorKind::Timeout, elapsed)),
            Ok(Err(error)) => {
                let kind = match error {
                    UpstreamError::Request(_) => HttpErrorKind::Request,
                    _ => HttpErrorKind::Connect,
                };
                return Err(HttpError::new(kind, error));
            }
            Ok(Ok(response)) => response,
        };
        let (parts, body) = response.into_parts();
        let body = body.map_err(|error| HttpError::new(HttpErrorKind::Interrupted, error));
        Ok(HttpResponse::from_parts(parts, HttpResponseBody::new(body)))
    }
}

/// object_store handed over a request whose URI names no `http`/`https` upstream.
#[derive(Debug, thiserror::Error)]
#[error("{0} is not an http or https URL")]
struct NotAbsolute(String);
