//! Sockets whose reads are capped at [`READ_CAP`] bytes, so a stream's read buffer stays small.
//!
//! hyper sizes each read adaptively: a read that fills its buffer doubles the next one, up to
//! the connection's `max_buf_size`. When a client reads a stream late, the upstream's events pile
//! up in the kernel, every read fills, and the upstream connection's read buffer grows to that
//! maximum (1 MiB for [`crate::upstream::UPSTREAM_MAX_HEAD_BYTES`], which one large response
//! head needs). Every forwarded frame is a slice of that buffer and keeps it alive until the
//! client has taken it, so a late reader's stream pins up to that maximum in plain pass-through
//! (see docs/benchmarks.md#read-cap). Capping each read at the socket (here, below hyper)
//! keeps hyper's buffer at twice the cap, while a large head still parses: hyper keeps reading,
//! 8 KiB at a time, up to its own limit.
//!
//! Input: a `TcpStream`. Output: the same socket, whose `poll_read` hands at most [`READ_CAP`]
//! bytes per call. Writes are untouched. The cap costs nothing per read: tokio's
//! `try_read_buf` reads into a window of the caller's buffer, uninitialised as hyper left it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::BufMut;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Bytes one read may return: hyper's own initial read size.
pub const READ_CAP: usize = 8 * 1024;

/// A socket whose reads return at most [`READ_CAP`] bytes each.
#[derive(Debug)]
pub struct ReadCapped(pub TcpStream);

impl AsyncRead for ReadCapped {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let socket = &mut self.get_mut().0;
        if buf.remaining() <= READ_CAP {
            return Pin::new(socket).poll_read(cx, buf);
        }
        loop {
            ready!(socket.poll_read_ready(cx))?;
            // `try_read_buf` clears the readiness it used when the socket turns out empty.
            match socket.try_read_buf(&mut (&mut *buf).limit(READ_CAP)) {
                Ok(_) => return Poll::Ready(Ok(())),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

impl AsyncWrite for ReadCapped {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A connected loopback pair: the writing end, and the reading end capped.
    async fn pair() -> (TcpStream, ReadCapped) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let writer = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (reader, _) = listener.accept().await.unwrap();
        (writer, ReadCapped(reader))
    }

    #[tokio::test]
    async fn a_read_returns_at_most_the_cap_and_loses_nothing() {
        let (mut writer, mut capped) = pair().await;
        let sent: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let sending = sent.clone();
        let writing = tokio::spawn(async move {
            writer.write_all(&sending).await.unwrap();
        });
        // Let the kernel queue far more than one read's worth before reading.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let mut got = Vec::new();
        let mut largest = 0;
        loop {
            let mut buf = vec![0u8; 64 * 1024];
            let read = capped.read(&mut buf).await.unwrap();
            if read == 0 {
                break;
            }
            largest = largest.max(read);
            got.extend_from_slice(&buf[..read]);
        }
        writing.await.unwrap();
        assert_eq!(
            largest, READ_CAP,
            "each read is capped, and the cap is reached"
        );
        assert_eq!(got, sent, "every byte arrives, in order");
    }

    #[tokio::test]
    async fn a_small_buffer_is_read_into_directly() {
        let (mut writer, mut capped) = pair().await;
        writer.write_all(b"0123456789").await.unwrap();
        let mut buf = [0u8; 4];
        capped.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"0123");
    }
}
