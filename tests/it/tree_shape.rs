//! Guards on the tree's shape that no compiler checks: every `docs/<page>.md#<anchor>` a comment
//! in `src/` links to names a heading of that page (measured figures live there, not in the
//! code's comments).

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The anchor GitHub gives a Markdown heading: lower case, spaces as `-`, punctuation other than
/// `-` and `_` left out.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).expect("readable page");
    text.lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| slug(line.trim_start_matches('#')))
        .collect()
}

/// `(page, anchor)` for each `docs/<page>.md#<anchor>` in `line`.
fn doc_links(line: &str) -> Vec<(String, String)> {
    let mut links = Vec::new();
    for (at, _) in line.match_indices("docs/") {
        let rest = &line[at..];
        let Some((page, tail)) = rest.split_once(".md#") else {
            continue;
        };
        if page.contains(|c: char| c.is_whitespace() || c == '`') {
            continue;
        }
        let anchor: String = tail
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if !anchor.is_empty() {
            links.push((format!("{page}.md"), anchor));
        }
    }
    links
}

#[test]
fn every_doc_anchor_a_source_comment_links_to_exists() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        for (number, line) in text.lines().enumerate() {
            if !line.trim_start().starts_with("//") {
                continue;
            }
            for (page, anchor) in doc_links(line) {
                let known = anchors(&root().join(&page));
                assert!(
                    known.contains(&anchor),
                    "{}:{} links to {page}#{anchor}, which is no heading of {page}",
                    file.display(),
                    number + 1
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 20,
        "expected the figures' links, found {checked}"
    );
}

#[test]
fn a_heading_slug_is_github_s() {
    assert_eq!(
        slug(" `tooltap check` throughput"),
        "tooltap-check-throughput"
    );
    assert_eq!(
        slug(" `responses.output.name_unknown`"),
        "responsesoutputname_unknown"
    );
    assert_eq!(
        doc_links("// see docs/benchmarks.md#tee-copy)."),
        [("docs/benchmarks.md".to_owned(), "tee-copy".to_owned())]
    );
}
