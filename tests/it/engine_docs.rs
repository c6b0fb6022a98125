//! Guards on the engine's shape: `docs/rules.md` documents exactly `RuleId::ALL` (each with its
//! default severity and a failing example), and `src/engine` imports no I/O stack.

use std::path::{Path, PathBuf};

use tooltap::engine::{RuleId, Severity};

/// The package's folder (the tests read its source and docs).
pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `(id, section text)` for every `### \`id\`` heading of docs/rules.md.
fn documented_rules() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("docs/rules.md")).expect("docs/rules.md");
    let mut sections = Vec::new();
    for chunk in text.split("\n### ").skip(1) {
        let (heading, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
        let id = heading.trim().trim_matches('`').to_owned();
        let body = body.split("\n## ").next().unwrap_or(body).to_owned();
        sections.push((id, body));
    }
    sections
}

#[test]
fn rules_doc_and_rule_ids_agree() {
    let documented = documented_rules();
    let ids: Vec<&str> = documented.iter().map(|(id, _)| id.as_str()).collect();
    for rule in RuleId::ALL {
        assert!(
            ids.contains(&rule.as_str()),
            "{rule} is not documented in docs/rules.md"
        );
    }
    for (id, body) in &documented {
        let rule: RuleId = id
            .parse()
            .unwrap_or_else(|_| panic!("docs/rules.md documents unknown id {id:?}"));
        let severity = match rule.default_severity() {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        assert!(
            body.contains(&format!("Default severity: {severity}.")),
            "{id}: doc severity disagrees with {severity}"
        );
        assert!(body.contains("```"), "{id}: no minimal failing example");
    }
    assert_eq!(
        documented.len(),
        RuleId::ALL.len(),
        "a rule is documented twice"
    );
}

/// Every `.rs` file below `dir`.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn engine_imports_no_io_stack_and_nothing_outside_itself() {
    let mut files = Vec::new();
    rust_files(&root().join("src/engine"), &mut files);
    assert!(
        files.len() >= 10,
        "expected the engine's files, found {}",
        files.len()
    );
    let forbidden = [
        "hyper",
        "tokio",
        "http",
        "http_body",
        "reqwest",
        "std::net",
        "std::fs",
    ];
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        for (number, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for name in forbidden {
                let used = code.contains(&format!("{name}::"))
                    || code.contains(&format!("use {name}"))
                    || code.contains(&format!("extern crate {name}"));
                assert!(
                    !used,
                    "{}:{} uses {name}: the engine must stay sans-IO",
                    file.display(),
                    number + 1
                );
            }
            let outside = code
                .match_indices("crate::")
                .any(|(at, _)| !code[at + "crate::".len()..].starts_with("engine"));
            assert!(
                !outside,
                "{}:{} imports from outside the engine: the engine depends on nothing else in \
                 tooltap",
                file.display(),
                number + 1
            );
        }
    }
}
