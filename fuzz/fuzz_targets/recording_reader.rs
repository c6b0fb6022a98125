//! The recording reader on arbitrary bytes: never panics; a file it accepts has gap-free frames.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(recording) = tooltap::record::read::parse(Path::new("fuzz.jsonl"), data) {
        for (i, frame) in recording.frames.iter().enumerate() {
            assert_eq!(frame.seq, i as u64);
        }
    }
});
