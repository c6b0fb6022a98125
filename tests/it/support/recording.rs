//! Reading a recording the way the tests that re-judge one need: a response header by name.
//!
//! Input: a [`Recording`] from `tooltap::record::read_file`. Output: the header's value, as
//! recorded (after redaction).

use tooltap::record::Recording;

/// The recorded response header `name` (the first of that name), if any.
pub fn response_header(recording: &Recording, name: &str) -> Option<String> {
    recording
        .meta
        .response
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
}
