//! object_store's HTTP client, built on the same stack as the forwarder: hyper-util's pooled
//! client over hyper-rustls with the `ring` provider and the webpki roots
//! ([`crate::proxy::tls::client_config`]), so storing recordings adds no second TLS stack and
//! no reqwest.
//!
//! Input: object_store's [`HttpRequest`]s. Output: its [`HttpResponse`]s, the body streamed.
//! Each request's head must arrive within [`HEAD_TIMEOUT`] (object_store's own timeout options
//! configure reqwest, which is not used here); connecting has [`CONNECT_TIMEOUT`].

use std::time::Duration;

use http_body_util::BodyExt;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody,
    HttpResponse, HttpResponseBody, HttpService,
};

/// Connecting to the store gives up after this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A response head not received within this long fails the request (object_store retries it).
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

type Https = Client<HttpsConnector<TcpConnector>, HttpRequestBody>;

/// Hands object_store a client over hyper + rustls/ring.
#[derive(Debug, Clone)]
pub struct HyperConnector {
    client: Https,
}

impl HyperConnector {
    pub fn new() -> Result<HyperConnector, crate::proxy::tls::TlsError> {
        let tls = crate::proxy::tls::client_config(None)?;
        let mut tcp = TcpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
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
    client: Https,
}

#[async_trait::async_trait]
impl HttpService for HyperService {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let sent = tokio::time::timeout(HEAD_TIMEOUT, self.client.request(request)).await;
        let response = match sent {
            Err(elapsed) => return Err(HttpError::new(HttpErrorKind::Timeout, elapsed)),
            Ok(Err(error)) => {
                let kind = if error.is_connect() {
                    HttpErrorKind::Connect
                } else {
                    HttpErrorKind::Request
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
