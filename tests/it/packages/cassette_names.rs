//! The pytest plugin computes a test's recordings folder in Python (`python/tooltap/_modes.py`)
//! and must land exactly where tooltap files that cassette's captures
//! (`tooltap::record::cassette::folder`): the two renderings agree on ordinary node ids and on
//! hostile names.

use std::path::{Path, PathBuf};

use crate::support::clients::python;

#[test]
fn the_plugin_renders_cassette_folders_as_tooltap_does() {
    let long = "a".repeat(300);
    let deep = "x/".repeat(40);
    let names = [
        "tests/test_weather.py::test_loop",
        "tests/test_x.py::TestA::test_b[param-1]",
        "providers.test.js::stream true > chat",
        "../../etc/passwd",
        "/etc/passwd",
        "a/../../b",
        "..",
        ".",
        "/",
        "\\\\server\\share::t",
        " padded :: name ",
        ".hidden/.x::.y",
        "t%C3%A9st.py::caf%C3%A9",
        &long,
        &deep,
    ];
    let python_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    let script = format!(
        "import json, sys\nsys.path.insert(0, {:?})\nfrom tooltap._modes import cassette_folder\n\
         print(json.dumps([cassette_folder(n) for n in json.load(sys.stdin)]))",
        python_dir.display().to_string()
    );
    let mut child = std::process::Command::new(python())
        .args(["-c", &script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    serde_json::to_writer(child.stdin.take().expect("stdin"), &names).expect("write names");
    let output = child.wait_with_output().expect("python ends");
    assert!(output.status.success(), "the plugin's renderer ran");
    let rendered: Vec<PathBuf> = serde_json::from_slice(&output.stdout).expect("a JSON list");
    for (name, python_folder) in names.iter().zip(rendered) {
        assert_eq!(
            python_folder,
            tooltap::record::cassette::folder(name),
            "cassette {name:?}"
        );
    }
}
