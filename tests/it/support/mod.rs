//! Shared harness for the integration tests: a scripted upstream, a raw HTTP client, the
//! in-process proxy, and a throwaway PKI. Every network await goes through [`within`].

pub mod aimock;
pub mod binary;
pub mod body;
pub mod check;
pub mod client;
pub mod clients;
pub mod metrics;
pub mod pki;
pub mod proxy;
pub mod recording;
pub mod temp;
pub mod upstream;

pub use temp::TempDir;

use std::future::Future;
use std::time::Duration;

/// Await `future` or fail the test after `limit`.
pub async fn within<T>(limit: Duration, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {limit:?}"),
    }
}
