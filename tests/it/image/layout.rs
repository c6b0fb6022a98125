//! The two ways to build the image agree: the Dockerfile's runtime stage (for users with
//! Docker) and the OCI config `scripts/image` writes name the same entrypoint, command, user,
//! working folder, ports, volume and TOOLTAP_* environment; and the `docker load` archive holds
//! that very config and layers whose digests are the config's diff_ids.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use super::{built_image, oci_config, repo};
use crate::support::TempDir;
use crate::support::command::succeed;

/// The sha256 of a file, hex, by coreutils' `sha256sum` (no hashing crate in the tests).
fn sha256_hex(path: &Path) -> String {
    let output = succeed(Command::new("sha256sum").arg(path));
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace()
        .next()
        .expect("a digest")
        .to_string()
}

/// The runtime stage's instructions (after the last FROM), continuation lines joined:
/// instruction name (upper case) to each occurrence's arguments.
fn runtime_stage() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(repo().join("Dockerfile")).expect("Dockerfile");
    let mut logical = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if current.is_empty() && (line.is_empty() || line.starts_with('#')) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(head) => current.push_str(head),
            None => {
                current.push_str(line);
                logical.push(std::mem::take(&mut current));
            }
        }
    }
    let last_from = logical
        .iter()
        .rposition(|l| l.to_uppercase().starts_with("FROM "))
        .expect("a FROM");
    let mut stage: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in &logical[last_from..] {
        let (name, args) = line.split_once(' ').expect("instruction and arguments");
        stage
            .entry(name.to_uppercase())
            .or_default()
            .push(args.trim().to_string());
    }
    stage
}

/// The single value of `instruction` in the runtime stage.
fn only(stage: &BTreeMap<String, Vec<String>>, instruction: &str) -> String {
    let values = &stage[instruction];
    assert_eq!(values.len(), 1, "one {instruction} in the runtime stage");
    values[0].clone()
}

fn json_strings(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("exec-form JSON array {text}: {e}"))
}

/// The keys of a JSON object (the OCI config's sets: ports, volumes).
fn keys(value: &serde_json::Value) -> BTreeSet<String> {
    value
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_str().expect("string").to_string())
        .collect()
}

#[tokio::test]
async fn the_dockerfile_and_the_oci_image_declare_the_same_container() {
    let image = tokio::task::spawn_blocking(built_image)
        .await
        .expect("image build");
    let config = &oci_config(image)["config"];
    let stage = runtime_stage();

    assert_eq!(
        json_strings(&only(&stage, "ENTRYPOINT")),
        strings(&config["Entrypoint"])
    );
    assert_eq!(json_strings(&only(&stage, "CMD")), strings(&config["Cmd"]));
    assert_eq!(only(&stage, "USER"), config["User"].as_str().expect("User"));
    assert_eq!(
        only(&stage, "WORKDIR"),
        config["WorkingDir"].as_str().expect("WorkingDir")
    );
    let exposed: BTreeSet<String> = stage["EXPOSE"]
        .iter()
        .flat_map(|args| args.split_whitespace())
        .map(|port| format!("{port}/tcp"))
        .collect();
    let oci_ports: BTreeSet<String> = keys(&config["ExposedPorts"]);
    assert_eq!(exposed, oci_ports);
    let volumes: BTreeSet<String> = stage["VOLUME"]
        .iter()
        .flat_map(|args| json_strings(args))
        .collect();
    let oci_volumes: BTreeSet<String> = keys(&config["Volumes"]);
    assert_eq!(volumes, oci_volumes);

    // ENV KEY=VALUE pairs (no quoting or spaces in values): the TOOLTAP_* ones agree.
    let docker_env: BTreeSet<String> = stage["ENV"]
        .iter()
        .flat_map(|args| args.split_whitespace().map(str::to_string))
        .filter(|pair| pair.starts_with("TOOLTAP_"))
        .collect();
    let oci_env: BTreeSet<String> = strings(&config["Env"])
        .into_iter()
        .filter(|pair| pair.starts_with("TOOLTAP_"))
        .collect();
    assert_eq!(docker_env, oci_env);
    // What the container is for: every interface on the documented ports, records on the volume.
    for pair in [
        "TOOLTAP_LISTEN=0.0.0.0:8787",
        "TOOLTAP_ADMIN_LISTEN=0.0.0.0:9787",
        "TOOLTAP_RECORDINGS=/var/lib/tooltap/recordings",
    ] {
        assert!(oci_env.contains(pair), "{pair} missing from {oci_env:?}");
    }
    assert!(oci_ports.contains("8787/tcp") && oci_ports.contains("9787/tcp"));
    assert!(oci_volumes.contains("/var/lib/tooltap/recordings"));
    assert_eq!(
        config["User"], "10001:10001",
        "numeric, so runAsNonRoot can verify it"
    );
}

#[tokio::test]
async fn the_docker_archive_holds_the_oci_config_and_layers_matching_its_diff_ids() {
    let image = tokio::task::spawn_blocking(built_image)
        .await
        .expect("image build");
    let oci = oci_config(image);
    let dir = TempDir::new("image-archive");
    succeed(
        Command::new("tar")
            .arg("-xf")
            .arg(image.join("tooltap-docker.tar"))
            .arg("-C")
            .arg(dir.path()),
    );
    let read = |name: &str| {
        std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name} in the archive: {e}"))
    };
    let manifest: serde_json::Value =
        serde_json::from_slice(&read("manifest.json")).expect("manifest.json");
    let manifest = &manifest.as_array().expect("a list of images")[0];
    assert_eq!(strings(&manifest["RepoTags"]), ["tooltap:latest"]);
    let config_name = manifest["Config"].as_str().expect("Config");
    let config_bytes = read(config_name);
    assert_eq!(
        format!("{}.json", sha256_hex(&dir.join(config_name))),
        config_name,
        "the config is named by its digest (the image id)"
    );
    let config: serde_json::Value = serde_json::from_slice(&config_bytes).expect("config");
    assert_eq!(config, oci, "the archive's config is the OCI image's");
    let diff_ids = strings(&oci["rootfs"]["diff_ids"]);
    let layers = strings(&manifest["Layers"]);
    assert_eq!(layers.len(), diff_ids.len());
    for (layer, diff_id) in layers.iter().zip(&diff_ids) {
        let digest = format!("sha256:{}", sha256_hex(&dir.join(layer)));
        assert_eq!(&digest, diff_id, "{layer} is the uncompressed layer");
    }
    let repositories: serde_json::Value =
        serde_json::from_slice(&read("repositories")).expect("repositories");
    assert!(repositories["tooltap"]["latest"].is_string());
}
