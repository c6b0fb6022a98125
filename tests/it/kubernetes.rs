//! The Kubernetes manifests under deploy/kubernetes are what they claim: `kubectl kustomize`
//! builds the base (gateway) and the native-sidecar overlay, `kubernetes-validate --strict`
//! accepts every object against the Kubernetes schemas, and the built objects keep the promises
//! docs/deploy.md makes: probes on the admin port's /healthz and /readyz, the proxy Service
//! without the admin port, a PodDisruptionBudget, a termination grace above the preStop sleep
//! plus `shutdown.grace` from config/tooltap.toml (what the image reads), and in the overlay
//! tooltap as an init container with `restartPolicy: Always`. kubectl comes from PATH or from
//! the test venv (scripts/test installs it there when missing); kubernetes-validate and PyYAML
//! from the test venv.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use serde_json::Value;
use tooltap::config::HumanDuration;

use crate::support::TempDir;
use crate::support::clients::python;
use crate::support::command::{on_path, succeed};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A program installed in the test venv beside its python.
fn venv_program(name: &str) -> PathBuf {
    let path = python().parent().expect("venv bin").join(name);
    assert!(
        path.exists(),
        "{name} is missing at {}: run scripts/test (it installs \
         tests/clients/python/requirements.txt)",
        path.display()
    );
    path
}

/// kubectl from PATH, else the test venv's.
fn kubectl() -> PathBuf {
    on_path("kubectl").unwrap_or_else(|| venv_program("kubectl"))
}

/// `kubectl kustomize deploy/kubernetes/<dir>`, validated with `kubernetes-validate --strict`,
/// returned as JSON objects (converted by the venv's PyYAML).
fn build(dir: &str) -> Vec<Value> {
    let built = succeed(
        Command::new(kubectl())
            .arg("kustomize")
            .arg(repo().join("deploy/kubernetes").join(dir)),
    );
    let temp = TempDir::new("kustomize");
    let file = temp.join("built.yaml");
    std::fs::write(&file, &built.stdout).expect("write built.yaml");
    // Fails naming the objects and fields the schemas reject.
    succeed(
        Command::new(venv_program("kubernetes-validate"))
            .args(["--strict", "--quiet"])
            .arg(&file),
    );
    let converted = succeed(
        Command::new(python())
            .args([
                "-c",
                "import json, sys, yaml; json.dump(list(yaml.safe_load_all(open(sys.argv[1]))), sys.stdout)",
            ])
            .arg(&file),
    );
    let objects: Vec<Value> = serde_json::from_slice(&converted.stdout).expect("JSON");
    objects.into_iter().filter(|o| !o.is_null()).collect()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in the build"))
}

fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap_or_else(|| panic!("a list holding {name}"))
        .iter()
        .find(|item| item["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

/// `shutdown.grace` as the image's tooltap reads it: config/tooltap.toml, unless the container
/// sets TOOLTAP_SHUTDOWN_GRACE.
fn shutdown_grace_seconds(container: &Value) -> u64 {
    let overridden = container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == "TOOLTAP_SHUTDOWN_GRACE")
        .map(|e| e["value"].as_str().expect("value").to_string());
    let text = overridden.unwrap_or_else(|| {
        let config = std::fs::read_to_string(repo().join("config/tooltap.toml")).expect("config");
        let table: toml::Table = toml::from_str(&config).expect("config/tooltap.toml parses");
        table["shutdown"]["grace"]
            .as_str()
            .expect("shutdown.grace")
            .to_string()
    });
    HumanDuration::from_str(&text)
        .expect("a duration")
        .0
        .as_secs()
}

/// The promises every build makes for the pod template that holds `tooltap`.
fn assert_tooltap_pod(spec: &Value, tooltap: &Value) {
    let admin_port = named(&tooltap["ports"], "admin")["containerPort"].clone();
    assert_eq!(admin_port, 9787, "the image's admin port");
    for (probe, path) in [
        ("startupProbe", "/healthz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ] {
        assert_eq!(tooltap[probe]["httpGet"]["path"], path, "{probe}");
        assert_eq!(tooltap[probe]["httpGet"]["port"], "admin", "{probe}");
    }
    let grace = spec["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("terminationGracePeriodSeconds");
    let pre_stop = tooltap["lifecycle"]["preStop"]["sleep"]["seconds"]
        .as_u64()
        .unwrap_or(0);
    let shutdown = shutdown_grace_seconds(tooltap);
    // tooltap drains its writers at least 1 s after cutting connections: leave more than that.
    assert!(
        grace > pre_stop + shutdown + 1,
        "terminationGracePeriodSeconds {grace} must exceed preStop {pre_stop} s + shutdown.grace \
         {shutdown} s + the writers' drain"
    );
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        spec["securityContext"]["runAsUser"], 10001,
        "the image's user"
    );
}

#[test]
fn the_gateway_base_builds_validates_and_probes_the_admin_port() {
    let objects = build("base");
    let deployment = find(&objects, "Deployment", "tooltap");
    let spec = &deployment["spec"]["template"]["spec"];
    let tooltap = named(&spec["containers"], "tooltap");
    assert_tooltap_pod(spec, tooltap);

    let proxy = find(&objects, "Service", "tooltap");
    let ports = proxy["spec"]["ports"].as_array().expect("ports");
    assert_eq!(
        ports.len(),
        1,
        "the proxy Service carries the proxy port only"
    );
    assert_eq!(ports[0]["targetPort"], "proxy");
    let admin = find(&objects, "Service", "tooltap-admin");
    assert_eq!(admin["spec"]["ports"][0]["targetPort"], "admin");

    let budget = find(&objects, "PodDisruptionBudget", "tooltap");
    assert_eq!(
        budget["spec"]["selector"]["matchLabels"], deployment["spec"]["selector"]["matchLabels"],
        "the budget covers the Deployment's pods"
    );
}

#[test]
fn the_sidecar_overlay_makes_tooltap_a_native_sidecar_of_the_app() {
    let objects = build("overlays/sidecar");
    let deployment = find(&objects, "Deployment", "app");
    let spec = &deployment["spec"]["template"]["spec"];
    let tooltap = named(&spec["initContainers"], "tooltap");
    assert_eq!(tooltap["restartPolicy"], "Always", "a native sidecar");
    assert!(
        spec["containers"]
            .as_array()
            .expect("containers")
            .iter()
            .all(|c| c["name"] != "tooltap"),
        "tooltap runs once, as the sidecar"
    );
    assert_eq!(
        named(&tooltap["env"], "TOOLTAP_LISTEN")["value"],
        "127.0.0.1:8787",
        "the proxy is for the pod's app only"
    );
    assert_tooltap_pod(spec, tooltap);
    assert!(
        objects
            .iter()
            .all(|o| !(o["kind"] == "Service" && o["metadata"]["name"] == "tooltap")),
        "no gateway Service in the sidecar build"
    );
}
