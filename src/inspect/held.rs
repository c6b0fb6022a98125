//! The frames a `violations`-mode recording holds until its verdict, kept compactly: copied (a
//! held `Bytes` would pin the much larger read buffer hyper cut it from) into one small block
//! of encoded frames, and the block appended to the shared [`Spill`] segment whenever it
//! reaches `inspect.held_in_memory` bytes. So what an exchange keeps in memory is that block and
//! one small [`Extent`] per spilled block, whatever the length of its stream.
//!
//! Input: each response frame and the instant it was seen (from the analysis pool). Output, at
//! a verdict with violations: the frames back, with their times, in order. Bounded twice: at
//! most `inspect.max_held_recording` bytes in all (past it the rest is not kept and the
//! recording ends `truncated`), and the spill's own bound. Without a spill (the folder cannot
//! be written), frames stay in memory up to the first bound, as they did before spilling.

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::spill::{Extent, Spill, SpillError};

/// Bytes one exchange keeps in memory before spilling, unless configured otherwise. 4 KiB, not
/// 16: measured with `bench_memory` (300 concurrent 200-event streams) at ~27 KiB less per
/// stream, for one spill append per ~4 KiB of a violations-mode stream.
pub const DEFAULT_HELD_IN_MEMORY: usize = 4 * 1024;

/// Each frame is encoded as its length, its time since the tape began (µs), then its bytes.
const HEADER: usize = 4 + 8;

/// Why held frames stopped being kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// `inspect.max_held_recording` was reached.
    Cap,
    /// The spill segments were full (`inspect.max_spill`).
    SpillFull,
}

#[derive(Debug)]
pub struct HeldFrames {
    base: Instant,
    block: Vec<u8>,
    extents: Vec<Extent>,
    /// Frame bytes kept so far, in memory and spilled.
    kept: u64,
    max: u64,
    in_memory: usize,
    spill: Option<Spill>,
    cut: Option<Cut>,
}

impl HeldFrames {
    pub fn new(max: u64, in_memory: usize, spill: Option<Spill>) -> HeldFrames {
        HeldFrames {
            base: Instant::now(),
            block: Vec::new(),
            extents: Vec::new(),
            kept: 0,
            max,
            in_memory: in_memory.max(1),
            spill,
            cut: None,
        }
    }

    /// Keeps one frame, unless a bound was reached.
    pub fn push(&mut self, bytes: &[u8], at: Instant) {
        if self.cut.is_some() {
            return;
        }
        if self.kept + bytes.len() as u64 > self.max {
            self.cut = Some(Cut::Cap);
            return;
        }
        let (Ok(len), Ok(t_us)) = (
            u32::try_from(bytes.len()),
            u64::try_from(at.saturating_duration_since(self.base).as_micros()),
        ) else {
            self.cut = Some(Cut::Cap);
            return;
        };
        let needed = HEADER + bytes.len();
        if self.block.capacity() - self.block.len() < needed {
            // Doubling, as a Vec would, so a slow stream keeps a small block; with a spill, never
            // past the block's bound plus a frame like this one crossing it. (Without one the
            // block holds every frame, and must keep doubling.)
            let mut grown = (self.block.capacity() * 2).max(4 * needed);
            if self.spill.is_some() {
                grown = grown.min(self.in_memory + 2 * needed);
            }
            let total = grown.max(self.block.len() + needed);
            self.block.reserve_exact(total - self.block.len());
        }
        self.block.extend_from_slice(&len.to_le_bytes());
        self.block.extend_from_slice(&t_us.to_le_bytes());
        self.block.extend_from_slice(bytes);
        self.kept += bytes.len() as u64;
        if self.block.len() >= self.in_memory {
            self.spill_block();
        }
    }

    fn spill_block(&mut self) {
        let Some(spill) = &self.spill else {
            return;
        };
        match spill.append(&self.block) {
            Ok(extent) => {
                self.extents.push(extent);
                self.block.clear();
                if self.block.capacity() > 2 * self.in_memory {
                    // One big frame grew it: give that back.
                    self.block = Vec::new();
                }
            }
            Err(SpillError::Full { .. }) => {
                self.cut = Some(Cut::SpillFull);
            }
            Err(SpillError::Io { .. } | SpillError::Off) => {
                // Logged once by the spill: this exchange keeps its frames in memory instead.
                self.spill = None;
            }
        }
    }

    /// Bytes this tape holds in memory now.
    #[cfg(test)]
    pub fn in_memory(&self) -> usize {
        self.block.capacity()
    }

    /// The most it can hold in memory (to charge the budget ahead).
    pub fn in_memory_bound(&self) -> usize {
        match self.spill {
            Some(_) => self.in_memory.saturating_mul(2),
            None => usize::try_from(self.max).unwrap_or(usize::MAX),
        }
    }

    /// Why frames stopped being kept, if they did.
    pub fn cut(&self) -> Option<Cut> {
        self.cut
    }

    /// Every kept frame with its instant, in order; reads the spilled blocks (blocking I/O).
    /// A block that cannot be read back ends the list there (`Err` says so).
    pub fn load(self) -> (Vec<(Bytes, Instant)>, Option<std::io::Error>) {
        let HeldFrames {
            base,
            block,
            extents,
            ..
        } = self;
        let mut all =
            Vec::with_capacity(extents.iter().map(Extent::len).sum::<usize>() + block.len());
        let mut failed = None;
        for extent in &extents {
            match extent.read() {
                Ok(bytes) => all.extend_from_slice(&bytes),
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            }
        }
        drop(extents);
        if failed.is_none() {
            all.extend_from_slice(&block);
        }
        let all = Bytes::from(all);
        let mut frames = Vec::new();
        let mut at = 0;
        while at + HEADER <= all.len() {
            let mut len = [0u8; 4];
            let mut t_us = [0u8; 8];
            len.copy_from_slice(&all[at..at + 4]);
            t_us.copy_from_slice(&all[at + 4..at + HEADER]);
            let start = at + HEADER;
            let end = start + u32::from_le_bytes(len) as usize;
            if end > all.len() {
                break;
            }
            let when = base + Duration::from_micros(u64::from_le_bytes(t_us));
            frames.push((all.slice(start..end), when));
            at = end;
        }
        (frames, failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TestDir;

    /// A spill in a fresh folder, which lives as long as the returned `TestDir`.
    fn spill(name: &str) -> (TestDir, Spill) {
        let dir = TestDir::new(&format!("held-{name}"));
        let spill = Spill::new(dir.to_path_buf(), 1 << 20);
        (dir, spill)
    }

    #[test]
    fn without_a_spill_the_block_grows_by_doubling_not_by_a_frame_at_a_time() {
        let mut held = HeldFrames::new(1 << 20, 64, None);
        let start = Instant::now();
        let mut capacities = Vec::new();
        for i in 0..2_000u32 {
            held.push(&[b'x'; 100], start + Duration::from_micros(u64::from(i)));
            if capacities.last() != Some(&held.in_memory()) {
                capacities.push(held.in_memory());
            }
        }
        assert!(held.cut().is_none());
        assert!(
            capacities.len() < 20,
            "{} reallocations: {capacities:?}",
            capacities.len()
        );
        let (back, failed) = held.load();
        assert!(failed.is_none());
        assert_eq!(back.len(), 2_000);
    }

    #[test]
    fn frames_come_back_in_order_with_their_times_and_memory_stays_small() {
        let (_dir, order_spill) = spill("order");
        let mut held = HeldFrames::new(1 << 20, 64, Some(order_spill));
        let start = Instant::now();
        let frames: Vec<Vec<u8>> = (0..200u8)
            .map(|i| vec![i; 1 + usize::from(i % 7)])
            .collect();
        for (i, frame) in frames.iter().enumerate() {
            held.push(frame, start + Duration::from_millis(i as u64));
            assert!(
                held.in_memory() <= 2 * 64,
                "{} bytes in memory",
                held.in_memory()
            );
        }
        assert!(held.cut().is_none());
        let (back, failed) = held.load();
        assert!(failed.is_none());
        assert_eq!(back.len(), frames.len());
        for (i, ((bytes, at), frame)) in back.iter().zip(&frames).enumerate() {
            assert_eq!(bytes.as_ref(), frame.as_slice());
            let offset = at.saturating_duration_since(start);
            assert!(
                offset.as_millis().abs_diff(i as u128) <= 1,
                "frame {i} at {offset:?}"
            );
        }
    }

    #[test]
    fn past_the_cap_the_rest_is_not_kept() {
        let (_dir, cap_spill) = spill("cap");
        let mut held = HeldFrames::new(10, 4, Some(cap_spill));
        held.push(b"123456", Instant::now());
        held.push(b"78901", Instant::now());
        held.push(b"2", Instant::now());
        assert_eq!(held.cut(), Some(Cut::Cap));
        let (back, _) = held.load();
        assert_eq!(back.len(), 1, "only what fitted, and nothing after the cut");
    }

    #[test]
    fn a_spill_that_cannot_be_written_keeps_frames_in_memory_and_stops_trying() {
        // A folder under a regular file can never be made.
        let dir = TestDir::new("held-file");
        let file = dir.join("file");
        std::fs::write(&file, b"").expect("file");
        let spill = Spill::new(file.join("spill"), 1 << 20);
        let mut held = HeldFrames::new(1 << 20, 8, Some(spill.clone()));
        for _ in 0..10 {
            held.push(b"0123456789", Instant::now());
        }
        assert!(held.cut().is_none());
        assert_eq!(held.load().0.len(), 10, "nothing lost");
        assert!(matches!(spill.append(b"x"), Err(SpillError::Off)));
    }

    #[test]
    fn without_a_spill_frames_stay_in_memory_up_to_the_cap() {
        let mut held = HeldFrames::new(1 << 20, 16, None);
        for _ in 0..10 {
            held.push(b"0123456789", Instant::now());
        }
        assert!(held.in_memory() >= 100);
        assert_eq!(held.load().0.len(), 10);
    }
}
