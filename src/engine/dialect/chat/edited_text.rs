//! One edit of a JSON text, for the property tests that compare a scan of Chat's texts with
//! serde's read (the request body and its `tool_choice` in `request`, a chunk or body in
//! `contract::object`): a char deleted, replaced, preceded by an insert, or doubled.

/// `text` with one edit at char `at % len`: `edit / 15` picks deleted (0), replaced (1),
/// preceded by an inserted char (2) or doubled (3); `edit % 15` the char inserted, a JSON
/// punctuation, digit or letter.
pub(super) fn edited(text: &str, at: usize, edit: u8) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = at % chars.len();
    let insert = b"\"\\{}[],:0-.nu 1"[usize::from(edit) % 15] as char;
    let mut out: String = chars[..at].iter().collect();
    match edit / 15 {
        0 => {}
        1 => out.push(insert),
        2 => {
            out.push(insert);
            out.push(chars[at]);
        }
        _ => {
            out.push(chars[at]);
            out.push(chars[at]);
        }
    }
    out.extend(&chars[at + 1..]);
    out
}
