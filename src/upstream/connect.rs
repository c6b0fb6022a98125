//! Opening one upstream connection: DNS, TCP (`TCP_NODELAY`, reads capped), and TLS for HTTPS
//! with ALPN offering h2 and http/1.1.
//!
//! Input: the upstream's scheme, host and port, the connect timeout and the rustls connector.
//! Output: a [`Stream`] and whether the server chose HTTP/2, or an [`UpstreamError`] that says
//! which step failed. The connect timeout bounds each resolved address's TCP connect, as
//! `timeouts.connect` promises; the TLS handshake falls under the request's first-byte timeout.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::error::UpstreamError;
use crate::read_cap::ReadCapped;

/// Where one pool connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    /// Without IPv6 brackets.
    pub host: String,
    pub port: u16,
}

/// An open upstream connection, plain or TLS.
pub enum Stream {
    Plain(ReadCapped),
    Tls(Box<TlsStream<ReadCapped>>),
}

/// A connected stream, and whether ALPN picked HTTP/2.
pub struct Connected {
    pub stream: Stream,
    pub h2: bool,
}

pub async fn connect(
    target: &Target,
    timeout: Duration,
    tls: &TlsConnector,
) -> Result<Connected, UpstreamError> {
    let socket = tcp(target, timeout).await?;
    if !target.https {
        return Ok(Connected {
            stream: Stream::Plain(ReadCapped(socket)),
            h2: false,
        });
    }
    let name = ServerName::try_from(target.host.clone())
        .map_err(|error| UpstreamError::Tls(io::Error::new(io::ErrorKind::InvalidInput, error)))?;
    let stream = tls
        .connect(name, ReadCapped(socket))
        .await
        .map_err(UpstreamError::Tls)?;
    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    Ok(Connected {
        stream: Stream::Tls(Box::new(stream)),
        h2,
    })
}

/// Resolve the host and connect to its addresses in turn, each within `timeout`.
async fn tcp(target: &Target, timeout: Duration) -> Result<TcpStream, UpstreamError> {
    let addresses: Vec<SocketAddr> = match target.host.parse::<std::net::IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, target.port)],
        Err(_) => tokio::net::lookup_host((target.host.as_str(), target.port))
            .await
            .map_err(UpstreamError::Resolve)?
            .collect(),
    };
    let mut last = None;
    for address in addresses {
        match tokio::time::timeout(timeout, TcpStream::connect(address)).await {
            Ok(Ok(socket)) => {
                socket.set_nodelay(true).map_err(UpstreamError::Connect)?;
                return Ok(socket);
            }
            Ok(Err(error)) => last = Some(UpstreamError::Connect(error)),
            Err(_elapsed) => last = Some(UpstreamError::ConnectTimeout(timeout)),
        }
    }
    Err(last.unwrap_or_else(|| {
        UpstreamError::Resolve(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} resolved to no address", target.host),
        ))
    }))
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(socket) => Pin::new(socket).poll_read(cx, buf),
            Stream::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(socket) => Pin::new(socket).poll_write(cx, buf),
            Stream::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(socket) => Pin::new(socket).poll_write_vectored(cx, bufs),
            Stream::Tls(stream) => Pin::new(stream.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(socket) => socket.is_write_vectored(),
            Stream::Tls(stream) => stream.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(socket) => Pin::new(socket).poll_flush(cx),
            Stream::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(socket) => Pin::new(socket).poll_shutdown(cx),
            Stream::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
        }
    }
}
