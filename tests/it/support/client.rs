//! A bare HTTP/1.1 client for tests: one fresh connection per request, so a test controls
//! exactly when a connection closes (drop the [`Conn`] guard), and frames are read with
//! `Incoming::frame()` to count them.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Incoming};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use super::within;

const LIMIT: Duration = Duration::from_secs(10);

/// Keeps the client connection alive; dropping it closes the socket.
pub struct Conn(JoinHandle<()>);

impl Drop for Conn {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A fully read response.
#[derive(Debug)]
pub struct Collected {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub frames: usize,
}

impl Collected {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("response body is JSON")
    }

    /// A stream enforce mode cut: the body is `passed` (what got through before the violation)
    /// then exactly one event, `prefix`, its JSON and a blank line. The body as text, and that
    /// event's JSON.
    pub fn cut_after(&self, passed: &[u8], prefix: &str) -> (String, serde_json::Value) {
        let text = String::from_utf8(self.body.to_vec()).expect("utf-8");
        assert!(self.body.starts_with(passed), "{text}");
        let rest = &text[passed.len()..];
        let payload = rest
            .strip_prefix(prefix)
            .and_then(|r| r.strip_suffix("\n\n"))
            .unwrap_or_else(|| panic!("not one {prefix:?} event after what passed: {rest:?}"));
        let event = serde_json::from_str(payload).expect("error event is JSON");
        (text, event)
    }
}

pub async fn send<B>(addr: SocketAddr, request: Request<B>) -> (Response<Incoming>, Conn)
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let stream = within(LIMIT, TcpStream::connect(addr))
        .await
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (mut sender, connection) = within(
        LIMIT,
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .expect("handshake");
    let conn = Conn(tokio::spawn(async move {
        let _ = connection.await;
    }));
    let response = within(LIMIT, sender.send_request(request))
        .await
        .expect("response head");
    (response, conn)
}

/// Read every frame of `response`, counting data frames.
pub async fn collect(response: Response<Incoming>) -> Collected {
    let (parts, mut body) = response.into_parts();
    let mut bytes = BytesMut::new();
    let mut frames = 0;
    while let Some(frame) = within(LIMIT, body.frame()).await {
        if let Ok(data) = frame.expect("body frame").into_data() {
            frames += 1;
            bytes.extend_from_slice(&data);
        }
    }
    Collected {
        status: parts.status,
        headers: parts.headers,
        body: bytes.freeze(),
        frames,
    }
}

/// A raw TCP connection to `addr` (for bytes no HTTP client would send), within 5 s.
pub async fn connect(addr: SocketAddr) -> TcpStream {
    within(Duration::from_secs(5), TcpStream::connect(addr))
        .await
        .expect("connect")
}

/// A request with a complete body and a Host header for `addr`.
pub fn request(addr: SocketAddr, method: &str, path: &str, body: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .expect("request")
}

/// Send and read everything.
pub async fn exchange(addr: SocketAddr, request: Request<Full<Bytes>>) -> Collected {
    let (response, _conn) = send(addr, request).await;
    collect(response).await
}
