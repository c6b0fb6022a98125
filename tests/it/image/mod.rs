//! The container image `scripts/image` builds, tested for real: `run` unpacks it with umoci and
//! runs it with runc (readiness, one proxied exchange, the recording on a mounted volume, a
//! clean stop); `layout` checks the Dockerfile's runtime stage and the image's OCI config agree
//! and that the `docker load` archive holds the same image. The image is built once per test
//! process from the debug binary cargo built for the tests (a release build is the script's
//! default, too slow for the suite). A missing tool fails with its name, never skips.

mod layout;
mod run;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::command::{on_path, succeed};

/// The repository root (scripts/, Dockerfile, config/).
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Fails the test unless `tool` is on PATH, naming it and what installs it.
fn require(tool: &str) {
    assert!(
        on_path(tool).is_some(),
        "{tool} is missing: run scripts/test (as root it installs umoci and runc with apt-get)"
    );
}

/// The folder holding `tooltap-oci/` and `tooltap-docker.tar`, built on first use by
/// `scripts/image` from the test binary. It lives under the suite's temp dir, which
/// scripts/test removes after the run.
fn built_image() -> &'static Path {
    static IMAGE: OnceLock<PathBuf> = OnceLock::new();
    IMAGE.get_or_init(|| {
        for tool in ["umoci", "strip", "python3"] {
            require(tool);
        }
        let out = std::env::temp_dir().join(format!("tooltap-image-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        succeed(
            Command::new(repo().join("scripts/image"))
                .arg(env!("CARGO_BIN_EXE_tooltap"))
                .env("TOOLTAP_IMAGE_OUT", &out),
        );
        out
    })
}

/// The image's OCI config (the blob its `latest` manifest names), parsed.
fn oci_config(image: &Path) -> serde_json::Value {
    let layout = image.join("tooltap-oci");
    let index = read_json(&layout.join("index.json"));
    let entry = index["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == "latest")
        .expect("an image tagged latest");
    let manifest = read_json(&blob(&layout, entry["digest"].as_str().expect("digest")));
    read_json(&blob(
        &layout,
        manifest["config"]["digest"]
            .as_str()
            .expect("config digest"),
    ))
}

/// The path of the blob `digest` ("sha256:<hex>") in an OCI layout.
fn blob(layout: &Path, digest: &str) -> PathBuf {
    let (algorithm, hex) = digest.split_once(':').expect("algorithm:hex");
    layout.join("blobs").join(algorithm).join(hex)
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}
