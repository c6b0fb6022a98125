//! Reads the commonest end line tooltap writes without serde: a recording judged complete with
//! no violation, `{"type":"end","outcome":"…","t_us":N,"dropped_frames":N,"frames":N,
//! "bytes":N,"completeness":{"state":"complete"},"violations":[]}`, keys in that order and
//! nothing else on the line.
//!
//! Input: one line of a recording. Output: the [`EndLine`] serde would read from it, or `None`
//! for any other line (violations, another completeness, `enforced`, another key order, white
//! space, a number that is not a plain integer); the caller then reads the line with serde.
//! Why: serde's derived read of this line is a visible cost per recording in `tooltap check`
//! (see docs/benchmarks.md#check-reading), and most lines look so.

use super::format::{EndLine, Outcome};
use crate::engine::Completeness;
use crate::engine::json_scan::plain_integer;

/// The end line `line`, or `None` when this path does not take it (see the module doc).
pub fn read(line: &str) -> Option<EndLine> {
    let rest = line.strip_prefix(r#"{"type":"end","outcome":""#)?;
    let (name, rest) = rest.split_once('"')?;
    let outcome = Outcome::ALL.into_iter().find(|o| o.as_str() == name)?;
    let (t_us, rest) = plain_integer(rest.strip_prefix(r#","t_us":"#)?)?;
    let (dropped_frames, rest) = plain_integer(rest.strip_prefix(r#","dropped_frames":"#)?)?;
    let (frames, rest) = plain_integer(rest.strip_prefix(r#","frames":"#)?)?;
    let (bytes, rest) = plain_integer(rest.strip_prefix(r#","bytes":"#)?)?;
    if rest != r#","completeness":{"state":"complete"},"violations":[]}"# {
        return None;
    }
    Some(EndLine {
        outcome,
        t_us,
        dropped_frames,
        frames,
        bytes,
        completeness: Completeness::Complete,
        violations: Vec::new(),
        enforced: None,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::record::format::Line;

    fn by_serde(line: &str) -> Option<EndLine> {
        match serde_json::from_str::<Line>(line) {
            Ok(Line::End(end)) => Some(*end),
            _ => None,
        }
    }

    fn written(end: &EndLine) -> String {
        serde_json::to_string(&Line::End(Box::new(end.clone()))).unwrap()
    }

    fn clean(outcome: Outcome) -> EndLine {
        EndLine {
            outcome,
            t_us: 534,
            dropped_frames: 0,
            frames: 1,
            bytes: 399,
            completeness: Completeness::Complete,
            violations: vec![],
            enforced: None,
        }
    }

    #[test]
    fn every_outcome_is_read_as_serde_reads_it() {
        for outcome in Outcome::ALL {
            let line = written(&clean(outcome));
            assert_eq!(read(&line), Some(clean(outcome)), "{line}");
            assert_eq!(read(&line), by_serde(&line), "{line}");
        }
    }

    #[test]
    fn other_end_lines_are_left_to_serde() {
        let line = written(&clean(Outcome::Complete));
        let mut truncated = clean(Outcome::FramesLost);
        truncated.completeness = Completeness::Partial;
        let left = [
            written(&truncated),
            line.replacen(r#""outcome":"complete""#, r#""outcome":"finished""#, 1),
            line.replacen(r#""t_us":534"#, r#""t_us": 534"#, 1),
            line.replacen(r#""t_us":534"#, r#""t_us":5.0"#, 1),
            line.replacen(r#""frames":1"#, r#""frames":18446744073709551616"#, 1),
            line.replacen(r#""violations":[]"#, r#""violations":[],"x":1"#, 1),
            format!("{line} "),
        ];
        for edited in &left {
            assert_ne!(*edited, line);
            assert_eq!(read(edited), None, "{edited}");
        }
        // serde takes the truncated one, the white space and the unknown member.
        let serde_takes = left.iter().filter(|l| by_serde(l).is_some()).count();
        assert_eq!(serde_takes, 4, "{left:#?}");
    }

    proptest! {
        #[test]
        fn any_clean_end_written_is_read_back_exactly(
            pick in 0..Outcome::ALL.len(),
            t_us: u64,
            dropped_frames: u64,
            frames: u64,
            bytes: u64,
        ) {
            let end = EndLine { t_us, dropped_frames, frames, bytes, ..clean(Outcome::ALL[pick]) };
            prop_assert_eq!(read(&written(&end)), Some(end));
        }
    }
}
