//! The image run for real: unpacked with umoci, started with runc (as root; the network
//! namespace removed so its ephemeral ports are on the host's loopback, the recordings volume a
//! bind mount of a host folder), it becomes ready, proxies one exchange to a loopback upstream,
//! writes the recording as user 10001 onto the mounted volume, and exits 0 on SIGTERM.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::{built_image, require};
use crate::engine_support;
use crate::support::binary::ready_line;
use crate::support::client::{exchange, request};
use crate::support::command::{sigterm, succeed};
use crate::support::fixtures::{fixture_request, fixture_upstream};
use crate::support::temp::jsonl_under;
use crate::support::{TempDir, within};

/// Where the image mounts its recordings volume (`TOOLTAP_RECORDINGS` in the image).
const VOLUME: &str = "/var/lib/tooltap/recordings";

/// A runc container id unique to this run; the container is force-deleted on drop, so a failed
/// test leaves no container behind.
struct Container {
    root: PathBuf,
    id: String,
}

impl Container {
    fn new(root: PathBuf) -> Container {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Container {
            root,
            id: format!("tooltap-it-{}-{n}", std::process::id()),
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = std::process::Command::new("runc")
            .arg("--root")
            .arg(&self.root)
            .args(["delete", "--force", &self.id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn running_as_root() -> bool {
    let output = std::process::Command::new("id")
        .arg("-u")
        .output()
        .expect("id -u");
    String::from_utf8_lossy(&output.stdout).trim() == "0"
}

/// Unpacks the image into `bundle` and adapts its runtime config for the test: no terminal,
/// the host's network (loopback reachable both ways), listeners on ephemeral loopback ports,
/// JSON logs, every exchange recorded, and `recordings` bind-mounted over the volume.
fn unpack(image: &Path, bundle: &Path, recordings: &Path, upstream: &str) {
    succeed(
        std::process::Command::new("umoci")
            .arg("unpack")
            .arg("--image")
            .arg(format!("{}:latest", image.join("tooltap-oci").display()))
            .arg(bundle),
    );
    let path = bundle.join("config.json");
    let mut config = super::read_json(&path);
    config["process"]["terminal"] = false.into();
    let env = config["process"]["env"].as_array_mut().expect("env");
    for (key, value) in [
        ("TOOLTAP_LISTEN", "127.0.0.1:0"),
        ("TOOLTAP_ADMIN_LISTEN", "127.0.0.1:0"),
        ("TOOLTAP_LOG_FORMAT", "json"),
        ("TOOLTAP_UPSTREAM", upstream),
        ("TOOLTAP_RECORD", "all"),
        ("RUST_LOG", "info"),
    ] {
        env.retain(|v| {
            !v.as_str()
                .is_some_and(|v| v.starts_with(&format!("{key}=")))
        });
        env.push(format!("{key}={value}").into());
    }
    let namespaces = config["linux"]["namespaces"]
        .as_array_mut()
        .expect("namespaces");
    namespaces.retain(|ns| ns["type"] != "network");
    let mounts = config["mounts"].as_array_mut().expect("mounts");
    let before = mounts.len();
    mounts.retain(|m| m["destination"] != VOLUME);
    assert_eq!(
        before - mounts.len(),
        1,
        "umoci mounts the image's volume {VOLUME}"
    );
    mounts.push(serde_json::json!({
        "destination": VOLUME,
        "type": "bind",
        "source": recordings,
        "options": ["rbind", "rw"],
    }));
    std::fs::write(&path, serde_json::to_vec(&config).expect("json")).expect("write config.json");
}

#[tokio::test]
async fn the_image_runs_under_runc_proxies_records_on_its_volume_and_stops_cleanly() {
    assert!(
        running_as_root(),
        "the image test runs runc as root: run scripts/test as root (CI does)"
    );
    for tool in ["runc", "umoci"] {
        require(tool);
    }
    let image = tokio::task::spawn_blocking(built_image)
        .await
        .expect("image build");
    let fixture = engine_support::fixture("buffered_arguments_object");
    let upstream = fixture_upstream(std::slice::from_ref(&fixture)).await;
    let dir = TempDir::new("image-run");
    let recordings = dir.join("recordings");
    std::fs::create_dir(&recordings).expect("recordings dir");
    std::os::unix::fs::chown(&recordings, Some(10001), Some(10001)).expect("chown");
    let bundle = dir.join("bundle");
    unpack(image, &bundle, &recordings, &upstream.url());

    let container = Container::new(dir.join("runc"));
    let mut runc = Command::new("runc")
        .arg("--root")
        .arg(&container.root)
        .args(["run", "--bundle"])
        .arg(&bundle)
        .arg(&container.id)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("runc starts");
    let mut lines = BufReader::new(runc.stdout.take().expect("stdout")).lines();
    let mut log = Vec::new();
    let Some((proxy, Some(admin))) = ready_line(&mut lines, &mut log).await else {
        let mut errors = BufReader::new(runc.stderr.take().expect("stderr")).lines();
        while let Ok(Some(line)) = errors.next_line().await {
            log.push(line);
        }
        panic!("the container exited early, or logged no admin address: {log:#?}");
    };

    let ready = within(
        Duration::from_secs(5),
        exchange(admin, request(admin, "GET", "/readyz", "")),
    )
    .await;
    assert_eq!(ready.status, 200, "/readyz: {:?}", ready.body);
    let got = within(
        Duration::from_secs(5),
        exchange(proxy, fixture_request(proxy, &fixture)),
    )
    .await;
    assert_eq!(
        got.body, fixture.body,
        "the client's bytes are the upstream's"
    );
    let id = got.headers["x-tooltap-exchange"]
        .to_str()
        .expect("id")
        .to_string();

    // runc forwards the signal to the container's process and exits with its exit code.
    let status = sigterm(&mut runc).await;
    assert!(
        status.success(),
        "runc (the container's exit code) gave {status} after SIGTERM"
    );

    // The writers drain before a clean exit: the recording is on the host folder now.
    let files = jsonl_under(&recordings);
    let recording = files
        .iter()
        .find(|f| f.to_string_lossy().contains(id.as_str()))
        .unwrap_or_else(|| panic!("no recording for {id} on the volume: {files:?}"));
    let owner = std::fs::metadata(recording).expect("metadata").uid();
    assert_eq!(owner, 10001, "written by the image's unprivileged user");
    drop(container);
}
