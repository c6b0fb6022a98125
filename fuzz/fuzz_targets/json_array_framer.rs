//! The JSON-array framer on arbitrary bytes: never panics, splitting the input at any point
//! yields the same elements and ending as feeding it whole, and a closed array's elements are
//! exactly what a JSON parser reads from the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooltap::engine::framing::JsonArrayFramer;
use tooltap::engine::framing::json_array::ArrayEnd;

fn frame(chunks: &[&[u8]]) -> Option<(Vec<String>, ArrayEnd)> {
    let mut framer = JsonArrayFramer::new(1 << 16);
    let mut elements = Vec::new();
    for chunk in chunks {
        framer.push(chunk, &mut elements).ok()?;
    }
    Some((elements, framer.end()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, body)) = data.split_first() else {
        return;
    };
    let split = usize::from(split) % (body.len() + 1);
    let whole = frame(&[body]);
    let parts = frame(&[&body[..split], &body[split..]]);
    if let (Some(whole), Some(parts)) = (&whole, &parts) {
        assert_eq!(
            whole, parts,
            "split at {split} changed the elements or ending"
        );
    }
    if let Some((elements, ArrayEnd::Closed)) = whole
        && let Ok(serde_json::Value::Array(parsed)) = serde_json::from_slice(body)
    {
        let framed: Vec<serde_json::Value> = elements
            .iter()
            .filter_map(|e| serde_json::from_str(e).ok())
            .collect();
        assert_eq!(framed, parsed, "a valid array's elements");
    }
});
