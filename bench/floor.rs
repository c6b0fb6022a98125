//! The floor of the design card's HTTP stack: the least a proxy on hyper 1.x's own connection
//! APIs does per request, measured beside tooltap and nginx as `bench/run`'s `hyper-floor`
//! variant (docs/benchmarks.md; what it shows: issue 39's fifth pass in bench/closing-notes.md).
//!
//! Each accepted client connection is served by `hyper::server::conn::http1` and gets one
//! upstream connection of its own (`hyper::client::conn::http1`, opened once, kept alive): the
//! request goes up with its path and headers unchanged, the response's head and body come back
//! as hyper hands them over. No pool, no header rewriting, no timeouts, no inspection, no
//! metrics, no logging: not a proxy to run, a bound on what one built on these parts can cost.
//!
//! Usage: `bench_floor --listen 127.0.0.1:PORT --upstream 127.0.0.1:PORT`; built by `bench/run`
//! with `cargo build --release --bin bench_floor --features bench-floor`.

// Bench code may stop loudly: the deny lints in Cargo.toml guard the product code.
#![allow(clippy::expect_used, clippy::panic, clippy::unreachable)]

use std::net::SocketAddr;
use std::sync::Arc;

use clap::Parser;
use hyper::body::Incoming;
use hyper::client::conn::http1 as client;
use hyper::server::conn::http1 as server;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

#[derive(Debug, Parser)]
struct Args {
    #[arg(long)]
    listen: SocketAddr,
    #[arg(long)]
    upstream: SocketAddr,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve(args))
}

async fn serve(args: Args) -> std::io::Result<()> {
    let listener = TcpListener::bind(args.listen).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let upstream = args.upstream;
        tokio::spawn(async move {
            if let Err(error) = connection(stream, upstream).await {
                eprintln!("bench_floor: {error}");
            }
        });
    }
}

/// Serves one client connection over one upstream connection of its own.
async fn connection(stream: TcpStream, upstream: SocketAddr) -> Result<(), hyper::Error> {
    let up = TcpStream::connect(upstream)
        .await
        .expect("the upstream accepts connections");
    up.set_nodelay(true)
        .expect("a connected socket takes TCP_NODELAY");
    let (sender, driver) = client::handshake(TokioIo::new(up)).await?;
    tokio::spawn(driver);
    // HTTP/1.1 answers one request at a time, so the lock is never contended.
    let sender = Arc::new(Mutex::new(sender));
    let service = service_fn(move |request: Request<Incoming>| {
        let sender = Arc::clone(&sender);
        async move {
            let mut sender = sender.lock().await;
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            Ok::<Response<Incoming>, hyper::Error>(response)
        }
    });
    server::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await
}
