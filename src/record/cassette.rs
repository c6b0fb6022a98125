//! Per-test recordings: the `x-tooltap-cassette` request header, and the folder a cassette's
//! recordings are written to.
//!
//! Input: a request's headers (or a recording's recorded ones), and a cassette name as a test
//! harness sends it, e.g. `tests/test_weather.py::test_loop`. Output: the name (lossless, for
//! matching) and a safe relative folder for it (lossy, for humans).
//!
//! A recording belongs to the cassette named in its own recorded request header, not to the
//! folder it sits in: the name is compared exactly (two names a folder would fold together stay
//! apart), recordings can be moved or merged into segment files freely, and old captures under
//! `replay/<date>/` keep working. The folder only makes the files easy to find: each name part
//! split at `/`, `\` and `::` becomes one [`segment`](super::layout::segment) (`[A-Za-z0-9._-]`,
//! no leading dot, at most 96 characters), empty parts and `.` go, at most
//! [`MAX_FOLDER_DEPTH`] parts are kept, so no name can reach outside the recordings folder or
//! build an unbounded path.

use std::path::PathBuf;

use http::{HeaderMap, HeaderName};

/// The request header that names the test a request belongs to. Never forwarded upstream.
pub const CASSETTE_HEADER: &str = "x-tooltap-cassette";
/// [`CASSETTE_HEADER`] as a parsed name: a map looks it up without reading the text again.
pub const CASSETTE_HEADER_NAME: HeaderName = HeaderName::from_static(CASSETTE_HEADER);
/// The most folder levels a cassette name becomes; the rest of the name is joined into the last.
pub const MAX_FOLDER_DEPTH: usize = 8;
/// Longer cassette names are cut to this many bytes (at a character boundary) when read.
pub const MAX_NAME: usize = 1024;

/// The cassette a request names, if any: the header's value, trimmed, cut to [`MAX_NAME`]
/// bytes. An empty value names none.
pub fn of_request(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(CASSETTE_HEADER_NAME)?;
    bounded(&String::from_utf8_lossy(value.as_bytes()))
}

/// The cassette a recording belongs to: its recorded `x-tooltap-cassette` request header.
pub fn of_recorded(headers: &[(String, String)]) -> Option<String> {
    let (_, value) = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(CASSETTE_HEADER))?;
    bounded(value)
}

fn bounded(value: &str) -> Option<String> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    Some(value[..value.floor_char_boundary(MAX_NAME)].to_owned())
}

/// The relative folder a cassette's recordings are written to: `tests/test_weather.py::test_loop`
/// → `tests/test_weather.py/test_loop`. Never absolute, never holds `..`, never empty.
pub fn folder(name: &str) -> PathBuf {
    let parts: Vec<&str> = name
        .split(['/', '\\'])
        .flat_map(|part| part.split("::"))
        .map(str::trim)
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let mut folder = PathBuf::new();
    let kept = parts.len().min(MAX_FOLDER_DEPTH);
    for (index, part) in parts.iter().take(kept).enumerate() {
        let last = index + 1 == kept;
        let part = if last && parts.len() > kept {
            parts[index..].join("_")
        } else {
            (*part).to_owned()
        };
        folder.push(super::layout::segment(&part));
    }
    if folder.as_os_str().is_empty() {
        folder.push("_");
    }
    folder
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Component;

    #[test]
    fn a_test_id_becomes_its_module_folders_and_test() {
        assert_eq!(
            folder("tests/test_weather.py::test_loop"),
            PathBuf::from("tests/test_weather.py/test_loop")
        );
        assert_eq!(
            folder("tests/test_x.py::TestA::test_b[param-1]"),
            PathBuf::from("tests/test_x.py/TestA/test_b_param-1_")
        );
        assert_eq!(folder("weather > loop"), PathBuf::from("weather___loop"));
    }

    #[test]
    fn no_name_reaches_outside_the_recordings_folder_or_grows_without_bound() {
        let long = "a".repeat(100_000);
        let deep = "x/".repeat(10_000);
        let attacks = [
            "../../etc/passwd",
            "/etc/passwd",
            "..",
            ".",
            "",
            "/",
            "a/../../b",
            "..\\..\\windows",
            "nul\0byte/../x",
            "::..::..::",
            ".hidden/.git",
            long.as_str(),
            deep.as_str(),
        ];
        for attack in attacks {
            let folder = folder(attack);
            assert!(!folder.as_os_str().is_empty(), "{attack:?}");
            assert!(folder.is_relative(), "{attack:?} → {folder:?}");
            assert!(
                folder.components().all(|c| match c {
                    Component::Normal(part) => {
                        let part = part.to_string_lossy();
                        !part.starts_with('.') && part.len() <= 96 && !part.contains('\0')
                    }
                    _ => false,
                }),
                "{attack:?} → {folder:?}"
            );
            assert!(
                folder.components().count() <= MAX_FOLDER_DEPTH,
                "{attack:?}"
            );
            assert!(
                folder.as_os_str().len() <= MAX_FOLDER_DEPTH * 97,
                "{attack:?}"
            );
        }
        assert_eq!(
            folder("../../etc/passwd"),
            PathBuf::from("_./_./etc/passwd")
        );
        assert_eq!(folder("/etc/passwd"), PathBuf::from("etc/passwd"));
    }

    #[test]
    fn the_name_is_read_trimmed_and_bounded_from_a_request_or_a_recording() {
        let mut headers = HeaderMap::new();
        assert_eq!(of_request(&headers), None);
        headers.insert(CASSETTE_HEADER, "  t.py::a ".parse().expect("value"));
        assert_eq!(of_request(&headers).as_deref(), Some("t.py::a"));
        headers.insert(CASSETTE_HEADER, "  ".parse().expect("value"));
        assert_eq!(of_request(&headers), None);
        let long = format!("é{}", "b".repeat(5000));
        headers.insert(CASSETTE_HEADER, long.parse().expect("value"));
        let read = of_request(&headers).expect("named");
        assert!(
            read.len() <= MAX_NAME && read.starts_with('é'),
            "{}",
            read.len()
        );
        let recorded = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("X-Tooltap-Cassette".to_owned(), "t.py::b".to_owned()),
        ];
        assert_eq!(of_recorded(&recorded).as_deref(), Some("t.py::b"));
        assert_eq!(of_recorded(&recorded[..1]), None);
    }
}
