//! Reading a recording the way the tests that re-judge one need: a response header by name;
//! and waiting for an in-process proxy's recordings to be on disk.
//!
//! Input: a [`Recording`] from `tooltap::record::read_file`, or a running proxy and its
//! recordings folder. Output: the header's value, as recorded (after redaction); the recording
//! files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tooltap::proxy::server::RunningProxy;
use tooltap::record::Recording;

use super::temp::jsonl_under;
use super::within;

/// Flushes `tooltap`'s recorder until `count` recordings are under `dir` (within 10 s).
pub async fn recordings_written(tooltap: &RunningProxy, dir: &Path, count: usize) -> Vec<PathBuf> {
    within(Duration::from_secs(10), async {
        loop {
            if let Some(recorder) = &tooltap.state().admission.inspection().recorder {
                recorder.flush().await;
            }
            let files = jsonl_under(dir);
            if files.len() == count {
                return files;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// The recorded response header `name` (the first of that name), if any.
pub fn response_header(recording: &Recording, name: &str) -> Option<String> {
    recording
        .meta
        .response
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
}
