//! Two tooltap processes started in the same second, recording into one shared folder: their
//! exchange ids differ, and neither recording replaces the other.

use std::ffi::OsStr;

use crate::engine_support;
use crate::support::TempDir;
use crate::support::binary;
use crate::support::client::exchange;
use crate::support::fixtures::fixture_request;
use crate::support::fixtures::fixture_upstream;
use crate::support::temp::jsonl_under;

#[tokio::test]
async fn two_processes_sharing_a_folder_keep_both_recordings_under_distinct_ids() {
    let fixture = engine_support::fixture("buffered_arguments_object");
    let upstream = fixture_upstream(std::slice::from_ref(&fixture)).await;
    let dir = TempDir::new("two");
    let recordings = dir.join("rec");
    let url = upstream.url();
    let args: Vec<&OsStr> = vec![
        "--upstream".as_ref(),
        url.as_ref(),
        "--record".as_ref(),
        "all".as_ref(),
        "--recordings".as_ref(),
        recordings.as_os_str(),
        "--violations".as_ref(),
        "off".as_ref(),
    ];
    // A clean exchange's summary line is at DEBUG: the tests wait for it.
    let (mut first, mut second) = tokio::join!(
        binary::start_proxy(&args, "debug"),
        binary::start_proxy(&args, "debug")
    );
    let mut ids = Vec::new();
    for running in [&mut first, &mut second] {
        let addr = running.addr;
        let got = exchange(addr, fixture_request(addr, &fixture)).await;
        assert_eq!(got.body, fixture.body);
        let id = got.headers["x-tooltap-exchange"]
            .to_str()
            .expect("id")
            .to_string();
        ids.push(id);
        running.wait_for_line("exchange inspected").await;
    }
    assert_ne!(
        ids[0], ids[1],
        "each process's first exchange has its own id"
    );
    // Recordings are written by a thread after the summary: wait for both files.
    let mut files = Vec::new();
    for _ in 0..200 {
        files = jsonl_under(&recordings);
        if files.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(files.len(), 2, "{files:?}");
    for id in &ids {
        assert!(
            files
                .iter()
                .any(|f| f.to_string_lossy().contains(id.as_str())),
            "no recording for {id} in {files:?}"
        );
    }
}
