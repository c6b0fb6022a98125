//! Guards on the tree's shape that no compiler checks: imports between rooms go one way (no
//! import cycle between the top-level modules of `src/`, nor between the modules of one room,
//! beyond the known ones listed here, a list that may only shrink), a module with submodules is
//! `dir/mod.rs` (never `dir.rs` beside `dir/`), no rule function is over 60 lines (beside the
//! known ones, a list that may only shrink), and every `docs/<page>.md#<anchor>` a comment in
//! `src/` links to names a heading of that page (measured figures live there, not in the code's
//! comments).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::engine_docs::{root, rust_files};

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

/// The import edges that close a cycle and are known, `(from, to, why)`: none today. A room is a
/// top-level module (`proxy`); a module inside one is `room::module` (`inspect::offload`). The
/// list may only shrink: the test fails on a new cycle, and on a row whose edge is gone.
const KNOWN_BACK_EDGES: &[(&str, &str, &str)] = &[];

/// A file's module path below `src/` (`src/inspect/offload.rs` → `["inspect", "offload"]`).
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(root().join("src")).expect("under src");
    let mut path: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    if path == ["lib"] || path == ["main"] {
        path.clear();
    }
    path
}

/// Test code may import anything: `tests.rs`, `tests_*.rs`, `*_tests.rs`, files under a
/// `tests/` folder.
fn is_test_file(file: &Path) -> bool {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name == "tests.rs"
        || name.starts_with("tests_")
        || name.ends_with("_tests.rs")
        || file.components().any(|part| part.as_os_str() == "tests")
}

/// The file's code: comment lines left out, and everything from an inline `#[cfg(test)] mod`.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut code = String::new();
    for (at, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let next = lines.get(at + 1).map_or("", |next| next.trim_start());
        if trimmed == "#[cfg(test)]" && next.contains("mod ") && next.ends_with('{') {
            break;
        }
        if !trimmed.starts_with("//") {
            code.push_str(line);
            code.push('\n');
        }
    }
    code
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e` (white space already removed).
fn expand_group(path: &str) -> Vec<String> {
    let Some(open) = path.find('{') else {
        return vec![path.to_owned()];
    };
    let (prefix, inner) = (&path[..open], &path[open + 1..path.len().saturating_sub(1)]);
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&inner[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|part| !part.is_empty())
        .flat_map(|part| expand_group(&format!("{prefix}{part}")))
        .collect()
}

/// Every module path the code names: `use` trees and inline `crate::` paths.
fn named_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + 4..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = after.find(';') else { break };
        let tree: String = after[..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        paths.extend(expand_group(&tree));
    }
    for (at, _) in code.match_indices("crate::") {
        let path: String = code[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        paths.push(path);
    }
    paths
}

/// The module `path` names, seen from `module` (`crate::`, `super::`, `self::`); `None` for an
/// outside crate.
fn resolve(module: &[String], path: &str) -> Option<Vec<String>> {
    let mut segments = path.split("::").filter(|s| !s.is_empty()).peekable();
    let mut target: Vec<String> = match segments.peek().copied() {
        Some("crate") => {
            segments.next();
            Vec::new()
        }
        Some("super") | Some("self") => module.to_vec(),
        _ => return None,
    };
    for segment in segments {
        match segment {
            "super" => {
                target.pop();
            }
            "self" => {}
            name => target.push(name.to_owned()),
        }
    }
    Some(target)
}

/// Import edges between rooms (`proxy` → `config`) and between the modules of one room
/// (`inspect::offload` → `inspect::recording`).
fn import_edges() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files.iter().filter(|file| !is_test_file(file)) {
        let module = module_of(file);
        let Some(room) = module.first() else { continue };
        let code = code_of(&std::fs::read_to_string(file).expect("readable"));
        for path in named_paths(&code) {
            let Some(target) = resolve(&module, &path) else {
                continue;
            };
            let Some(target_room) = target.first() else {
                continue;
            };
            if target_room != room {
                edges
                    .entry(room.clone())
                    .or_default()
                    .insert(target_room.clone());
            } else if let (Some(from), Some(to)) = (module.get(1), target.get(1))
                && from != to
            {
                edges
                    .entry(format!("{room}::{from}"))
                    .or_default()
                    .insert(format!("{room}::{to}"));
            }
        }
    }
    edges
}

/// One cycle in `edges`, if there is any (a depth-first search for an edge back onto the path).
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

#[test]
fn rooms_import_one_way_but_for_the_known_back_edges() {
    let mut edges = import_edges();
    assert!(
        edges.get("proxy").is_some_and(|to| to.contains("config")),
        "the parser found no proxy → config edge: it reads nothing"
    );
    for (from, to, why) in KNOWN_BACK_EDGES {
        let present = edges
            .get_mut(*from)
            .is_some_and(|targets| targets.remove(*to));
        assert!(
            present,
            "{from} → {to} ({why}) no longer exists: remove its row from KNOWN_BACK_EDGES"
        );
    }
    if let Some(cycle) = find_cycle(&edges) {
        panic!(
            "a new import cycle: {} (import the other way, or move what both need into a leaf)",
            cycle.join(" → ")
        );
    }
}

#[test]
fn the_cycle_finder_sees_a_cycle_and_the_parser_reads_groups_and_super() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&edges), None);
    edges.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&edges),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(
        expand_group("crate::a::{b,c::{d,e}}"),
        ["crate::a::b", "crate::a::c::d", "crate::a::c::e"]
    );
    let module = ["inspect".to_owned(), "offload".to_owned()];
    assert_eq!(
        resolve(&module, "super::recording::ExchangeRecording"),
        Some(vec![
            "inspect".into(),
            "recording".into(),
            "ExchangeRecording".into()
        ])
    );
    assert_eq!(resolve(&module, "std::sync::Arc"), None);
    let code =
        code_of("use crate::x::Y;\n// use crate::z;\n#[cfg(test)]\nmod tests {\nuse crate::w;\n");
    assert_eq!(named_paths(&code), ["crate::x::Y", "crate::x::Y"]);
}

/// Every folder below `dir`.
fn folders(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            folders(&path, out);
            out.push(path);
        }
    }
}

#[test]
fn a_module_with_submodules_is_a_folder_with_mod_rs() {
    let mut found = Vec::new();
    folders(&root().join("src"), &mut found);
    assert!(found.len() > 10, "the walk found {} folders", found.len());
    let beside: Vec<String> = found
        .iter()
        .filter(|dir| dir.with_extension("rs").is_file())
        .map(|dir| dir.with_extension("rs").display().to_string())
        .collect();
    assert!(
        beside.is_empty(),
        "a module file beside its folder (move it in as mod.rs with `git mv`): {beside:?}"
    );
}

/// The most lines a rule function may take, from its `fn` line to its closing brace.
const RULE_FUNCTION_LINES: usize = 60;

/// The rooms whose functions judge rules: the dialects and the MCP conversation store.
const RULE_ROOMS: &[&str] = &["engine/dialect", "engine/mcp_conversation"];

/// Rule functions let over [`RULE_FUNCTION_LINES`], `(file below src/, fn)`: none. The test fails
/// on a new long function, and on a row whose function is no longer long (or no longer there), so
/// a row can only be added by hand, with a reason.
const KNOWN_LONG_RULE_FUNCTIONS: &[(&str, &str)] = &[];

/// The name of the function `line` opens (`pub(crate) async fn name(...`), if it opens one.
fn opened_fn(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    let qualifiers = [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ];
    while let Some(shorter) = qualifiers.iter().find_map(|q| rest.strip_prefix(q)) {
        rest = shorter;
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `(name, lines)` for each function of `text` with a body, inline `#[cfg(test)]` modules left
/// out: from its `fn` line to the closing brace at its own indentation (rustfmt's layout).
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let all: Vec<&str> = text.lines().collect();
    let test_module = all.iter().enumerate().position(|(at, line)| {
        let next = all.get(at + 1).map_or("", |next| next.trim());
        line.trim() == "#[cfg(test)]" && next.contains("mod ") && next.ends_with('{')
    });
    let lines = &all[..test_module.unwrap_or(all.len())];
    let mut lengths = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(name) = opened_fn(line) else {
            continue;
        };
        let indent = &line[..line.len() - line.trim_start().len()];
        for (open, signature) in lines.iter().enumerate().skip(at) {
            let signature = signature.trim_end();
            if signature.ends_with(';') && !signature.contains('{') {
                break; // a declaration without a body (a trait's)
            }
            if signature.ends_with('}') {
                lengths.push((name.to_owned(), open - at + 1));
                break;
            }
            if signature.ends_with('{') {
                let close = lines[open..]
                    .iter()
                    .position(|l| l.strip_prefix(indent) == Some("}"));
                if let Some(close) = close {
                    lengths.push((name.to_owned(), open + close - at + 1));
                }
                break;
            }
        }
    }
    lengths
}

#[test]
fn rule_functions_are_short_but_for_the_known_long_ones() {
    let src = root().join("src");
    let (mut long, mut measured) = (BTreeSet::new(), 0);
    for room in RULE_ROOMS {
        let mut files = Vec::new();
        rust_files(&src.join(room), &mut files);
        for file in files.iter().filter(|file| !is_test_file(file)) {
            let text = std::fs::read_to_string(file).expect("readable");
            let relative = file.strip_prefix(&src).expect("under src");
            let relative = relative.to_string_lossy().replace('\\', "/");
            for (name, lines) in function_lengths(&text) {
                measured += 1;
                if lines > RULE_FUNCTION_LINES {
                    long.insert((relative.clone(), name));
                }
            }
        }
    }
    assert!(measured > 100, "the parser found {measured} rule functions");
    for (file, name) in KNOWN_LONG_RULE_FUNCTIONS {
        assert!(
            long.remove(&((*file).to_owned(), (*name).to_owned())),
            "{file}: {name} is no longer over {RULE_FUNCTION_LINES} lines: remove its row from \
             KNOWN_LONG_RULE_FUNCTIONS"
        );
    }
    assert!(
        long.is_empty(),
        "rule functions over {RULE_FUNCTION_LINES} lines: {long:?} (a `Judge` context makes a \
         finding one call; split the function by what it judges)"
    );
}

#[test]
fn function_lengths_run_from_the_fn_line_to_its_closing_brace() {
    let text = "\
pub(crate) fn one_line() -> u8 { 1 }
trait T {
    fn declared(&self) -> u8;
    fn defaulted(&self) -> u8 {
        1
    }
}
async fn signature_on_two_lines(
    a: u8,
) -> u8 {
    a
}
#[cfg(test)]
mod tests {
    fn left_out() {}
}
";
    assert_eq!(
        function_lengths(text),
        [
            ("one_line".to_owned(), 1),
            ("defaulted".to_owned(), 3),
            ("signature_on_two_lines".to_owned(), 5)
        ]
    );
    assert_eq!(opened_fn("    pub const unsafe fn x<T>()"), Some("x"));
    assert_eq!(opened_fn("    let f = fn_name;"), None);
}
