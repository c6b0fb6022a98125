//! A scripted upstream for integration tests: a real hyper server on an ephemeral loopback port
//! (plain HTTP or TLS with ALPN h2 + http/1.1).
//!
//! Input: a responder that maps each received request to a [`Script`]: status, headers, and a
//! list of `(delay, bytes)` chunks, each sent as its own body frame after its delay. Output: what
//! the upstream saw ([`Received`]: method, URI, version, headers, body), when each chunk was
//! handed to hyper, request-body progress (bytes so far), and how each response stream ended
//! ([`StreamEnd`]), so tests can assert on the upstream side of the proxy.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Request, Response, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use super::body::{Aborted, ChannelBody, channel};
use super::within;

/// One scripted response.
#[derive(Debug, Clone)]
pub struct Script {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<(Duration, Bytes)>,
    /// Never answer (for first-byte timeouts).
    pub silent: bool,
    /// After the last chunk, break the body off instead of ending it cleanly.
    pub abort: bool,
}

impl Script {
    /// A buffered response with an explicit Content-Length.
    pub fn full(status: u16, content_type: &str, body: &str) -> Script {
        Script {
            status,
            headers: vec![
                ("content-type".into(), content_type.into()),
                ("content-length".into(), body.len().to_string()),
            ],
            chunks: vec![(Duration::ZERO, Bytes::copy_from_slice(body.as_bytes()))],
            silent: false,
            abort: false,
        }
    }

    /// A chunked `text/event-stream`, one frame per event, `gap` apart (the first at once).
    pub fn sse(events: &[&str], gap: Duration) -> Script {
        Script {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: events
                .iter()
                .enumerate()
                .map(|(index, event)| {
                    let delay = if index == 0 { Duration::ZERO } else { gap };
                    (delay, Bytes::copy_from_slice(event.as_bytes()))
                })
                .collect(),
            silent: false,
            abort: false,
        }
    }

    pub fn silent() -> Script {
        Script {
            status: 200,
            headers: vec![],
            chunks: vec![],
            silent: true,
            abort: false,
        }
    }

    pub fn aborted(mut self) -> Script {
        self.abort = true;
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Script {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A request as the upstream received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    /// Path and query, e.g. `/openai/v1/models?x=1`.
    pub uri: String,
    pub version: Version,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// How one response stream ended, seen from the upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// Every chunk was handed to hyper.
    Completed,
    /// The connection went away; this many chunks had been handed over before.
    PeerGone { chunks_sent: usize },
}

type Responder = dyn Fn(&Received) -> Script + Send + Sync;

struct Shared {
    responder: Box<Responder>,
    requests: mpsc::UnboundedSender<Received>,
    ends: mpsc::UnboundedSender<StreamEnd>,
    chunk_times: Mutex<Vec<Instant>>,
    progress: watch::Sender<u64>,
}

pub struct Upstream {
    addr: SocketAddr,
    tls: bool,
    shared: Arc<Shared>,
    requests: mpsc::UnboundedReceiver<Received>,
    ends: mpsc::UnboundedReceiver<StreamEnd>,
}

impl Upstream {
    /// Plain HTTP upstream answering every request with `script`.
    pub async fn serving(script: Script) -> Upstream {
        Upstream::start(move |_| script.clone(), None).await
    }

    /// Start on `127.0.0.1:0`; with `tls`, speak TLS with that server config.
    pub async fn start(
        responder: impl Fn(&Received) -> Script + Send + Sync + 'static,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind upstream");
        let addr = listener.local_addr().expect("upstream addr");
        let (requests_tx, requests) = mpsc::unbounded_channel();
        let (ends_tx, ends) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            responder: Box::new(responder),
            requests: requests_tx,
            ends: ends_tx,
            chunk_times: Mutex::new(Vec::new()),
            progress: watch::channel(0).0,
        });
        let is_tls = tls.is_some();
        tokio::spawn(accept_loop(listener, shared.clone(), tls));
        Upstream {
            addr,
            tls: is_tls,
            shared,
            requests,
            ends,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    pub async fn next_request(&mut self) -> Received {
        within(Duration::from_secs(5), self.requests.recv())
            .await
            .expect("upstream request channel closed")
    }

    pub async fn next_end(&mut self, limit: Duration) -> StreamEnd {
        within(limit, self.ends.recv())
            .await
            .expect("upstream end channel closed")
    }

    /// When each chunk (over all responses) was handed to hyper, in order.
    pub fn chunk_times(&self) -> Vec<Instant> {
        self.shared.chunk_times.lock().expect("lock").clone()
    }

    /// Total request-body bytes received so far, over all requests.
    pub fn body_progress(&self) -> watch::Receiver<u64> {
        self.shared.progress.subscribe()
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            continue;
        };
        stream.set_nodelay(true).expect("nodelay");
        let shared = shared.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| respond(shared.clone(), request));
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .auto_date_header(false);
            builder.http2().timer(TokioTimer::new());
            let _ = match acceptor {
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(tls_stream) => {
                        builder
                            .serve_connection(TokioIo::new(tls_stream), service)
                            .await
                    }
                    Err(_handshake_refused) => return,
                },
                None => {
                    builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                }
            };
        });
    }
}

async fn respond(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<ChannelBody>, Infallible> {
    let (parts, mut body) = request.into_parts();
    let mut collected = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        if let Ok(data) = frame.into_data() {
            shared
                .progress
                .send_modify(|total| *total += data.len() as u64);
            collected.extend_from_slice(&data);
        }
    }
    let received = Received {
        method: parts.method.to_string(),
        uri: parts
            .uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), ToString::to_string),
        version: parts.version,
        headers: parts.headers,
        body: collected.freeze(),
    };
    let script = (shared.responder)(&received);
    let _ = shared.requests.send(received);
    if script.silent {
        std::future::pending::<()>().await;
    }
    let (sender, response_body) = channel(1);
    let mut response = Response::new(response_body);
    *response.status_mut() = http::StatusCode::from_u16(script.status).expect("status");
    for (name, value) in &script.headers {
        response.headers_mut().append(
            http::HeaderName::from_bytes(name.as_bytes()).expect("header name"),
            http::HeaderValue::from_str(value).expect("header value"),
        );
    }
    tokio::spawn(async move {
        for (index, (delay, bytes)) in script.chunks.into_iter().enumerate() {
            // Tokio timers tick in milliseconds: even a zero sleep would wait for the next tick.
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            shared
                .chunk_times
                .lock()
                .expect("lock")
                .push(Instant::now());
            if sender.send(Ok(bytes)).await.is_err() {
                let _ = shared.ends.send(StreamEnd::PeerGone { chunks_sent: index });
                return;
            }
        }
        if script.abort {
            let _ = sender.send(Err(Aborted)).await;
        }
        drop(sender);
        let _ = shared.ends.send(StreamEnd::Completed);
    });
    Ok(response)
}
