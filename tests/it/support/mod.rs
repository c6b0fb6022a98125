//! Shared harness for the integration tests: a scripted upstream, a raw HTTP client, the
//! in-process proxy, and a throwaway PKI. Every network await goes through [`within`].

pub mod aimock;
pub mod binary;
pub mod body;
pub mod check;
pub mod client;
pub mod clients;
pub mod command;
pub mod fixtures;
pub mod gemini;
pub mod mcp;
pub mod metrics;
pub mod otlp;
pub mod oversized;
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

/// Waits until `observe` reports the same value on three polls in a row, 50 ms apart (the system
/// went quiet: a stalled stream filled every buffer on its path, a count stopped moving), or
/// fails the test after `limit`. Returns the settled value. For the places that used to sleep a
/// fixed time and hope.
pub async fn quiescent<T: PartialEq>(limit: Duration, mut observe: impl FnMut() -> T) -> T {
    within(limit, async {
        let mut last = observe();
        let mut still = 0;
        while still < 3 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let now = observe();
            still = if now == last { still + 1 } else { 0 };
            last = now;
        }
        last
    })
    .await
}
