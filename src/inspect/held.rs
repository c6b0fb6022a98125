//! The frames a `violations`-mode recording holds until its verdict, kept compactly: copied (a
//! held `Bytes` would pin the much larger read buffer hyper cut it from) into one small block
//! of encoded frames, and the block appended to the shared [`Spill`] whenever the next frame
//! would take it past `inspect.held_in_memory` bytes. Each spilled block begins with the place
//! of the one before it, so the blocks form a chain read back from its end: what an exchange
//! keeps in memory is that block, the last block's [`Extent`] and one more per older segment
//! it reached (segments are 32 MiB), whatever the length of its stream.
//!
//! Input: each response frame and the instant it was seen (from the analysis pool, or the
//! inspector's own thread while no write is needed: [`HeldFrames::push_in_memory`]). Output, at
//! a verdict with violations: the frames back, with their times, in order. Bounded twice: at
//! most `inspect.max_held_recording` bytes in all (past it the rest is not kept and the
//! recording ends `truncated`), and the spill's own bound. Without a spill (the folder cannot
//! be written), frames stay in memory up to the first bound, as they did before spilling.

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::spill::{Extent, Spill, SpillError};

/// Each frame is encoded as its length, its time since holding began (µs), then its bytes.
const HEADER: usize = 4 + 8;

/// Each block begins with the place of the block spilled before it: its segment's number, its
/// offset and its length (0: none, the chain's first block).
const CHAIN: usize = 8 + 8 + 4;

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
    /// [`CHAIN`] bytes, then encoded frames (empty until the first frame after a spill).
    block: Vec<u8>,
    /// The last spilled block, and the last one in each older segment the chain reaches
    /// (they keep those segments open).
    tail: Option<Extent>,
    older: Vec<Extent>,
    /// Frame bytes kept so far, in memory and spilled.
    kept: u64,
    max: u64,
    in_memory: usize,
    /// Where blocks were spilled (kept to read them back); `spilling` says whether new ones
    /// still go there.
    spill: Option<Spill>,
    spilling: bool,
    cut: Option<Cut>,
}

impl HeldFrames {
    pub fn new(max: u64, in_memory: usize, spill: Option<Spill>) -> HeldFrames {
        HeldFrames {
            base: Instant::now(),
            block: Vec::new(),
            tail: None,
            older: Vec::new(),
            kept: 0,
            max,
            in_memory: in_memory.max(1),
            spilling: spill.is_some(),
            spill,
            cut: None,
        }
    }

    /// Keeps one frame, unless a bound was reached; may append a block to the spill (blocking
    /// I/O: off the workers).
    pub fn push(&mut self, bytes: &[u8], at: Instant) {
        self.push_with(bytes, at, true);
    }

    /// [`HeldFrames::push`] without blocking I/O, for the inspector's own thread: `false`, with
    /// the frame not taken and nothing changed, when keeping it would first append a block
    /// that the spill can only take by writing ([`Spill::append_in_memory`]); that frame and
    /// the ones after it are then pushed from the pool. A block that reached its bound after
    /// a frame and could not be appended then is appended before the next frame instead.
    pub fn push_in_memory(&mut self, bytes: &[u8], at: Instant) -> bool {
        self.push_with(bytes, at, false)
    }

    fn push_with(&mut self, bytes: &[u8], at: Instant, io: bool) -> bool {
        if self.cut.is_some() {
            return true;
        }
        if self.kept + bytes.len() as u64 > self.max {
            self.cut = Some(Cut::Cap);
            return true;
        }
        let (Ok(len), Ok(t_us)) = (
            u32::try_from(bytes.len()),
            u64::try_from(at.saturating_duration_since(self.base).as_micros()),
        ) else {
            self.cut = Some(Cut::Cap);
            return true;
        };
        let needed = HEADER + bytes.len();
        if self.spilling && self.block.len() > CHAIN && self.block.len() + needed > self.in_memory {
            if !self.spill_block(io) {
                return false;
            }
            if self.cut.is_some() {
                return true;
            }
        }
        if self.block.is_empty() {
            // With a spill the block never grows past its bound (or one larger frame); without
            // one it holds every frame, and must grow by doubling.
            let first = if self.spilling {
                self.in_memory.max(CHAIN + needed)
            } else {
                CHAIN + 4 * needed
            };
            self.block.reserve_exact(first);
            self.block.extend_from_slice(&[0; CHAIN]);
        } else if self.block.capacity() - self.block.len() < needed {
            let total = (self.block.capacity() * 2).max(self.block.len() + needed);
            self.block.reserve_exact(total - self.block.len());
        }
        self.block.extend_from_slice(&len.to_le_bytes());
        self.block.extend_from_slice(&t_us.to_le_bytes());
        self.block.extend_from_slice(bytes);
        self.kept += bytes.len() as u64;
        if self.spilling && self.block.len() >= self.in_memory {
            // Refused without I/O: the next frame's check above appends it.
            self.spill_block(io);
        }
        true
    }

    /// Appends the block to the spill; `false` when `io` is off and that needs a write (the
    /// block is left as it was).
    fn spill_block(&mut self, io: bool) -> bool {
        let Some(spill) = self.spill.as_ref().filter(|_| self.spilling) else {
            return true;
        };
        let (number, offset, len) = self.tail.as_ref().map_or((0, 0, 0), |last| {
            (last.segment_number(), last.offset(), last.len())
        });
        let Ok(len) = u32::try_from(len) else {
            self.cut = Some(Cut::Cap);
            return true;
        };
        self.block[..8].copy_from_slice(&number.to_le_bytes());
        self.block[8..16].copy_from_slice(&offset.to_le_bytes());
        self.block[16..CHAIN].copy_from_slice(&len.to_le_bytes());
        let appended = if io {
            spill.append(&self.block)
        } else {
            match spill.append_in_memory(&self.block) {
                Some(appended) => appended,
                None => return false,
            }
        };
        match appended {
            Ok(extent) => {
                let number = extent.segment_number();
                if let Some(last) = self.tail.replace(extent)
                    && last.segment_number() != number
                {
                    // The chain moved to a newer segment: keep the old one open and findable.
                    self.older.push(last);
                }
                self.block.clear();
                if self.block.capacity() > self.in_memory {
                    // One big frame grew it: give that back.
                    self.block = Vec::new();
                }
            }
            Err(SpillError::Full { .. }) => {
                self.cut = Some(Cut::SpillFull);
            }
            Err(SpillError::Io { .. } | SpillError::Off) => {
                // Logged once by the spill: this exchange keeps its frames in memory instead.
                self.spilling = false;
            }
        }
        true
    }

    /// Bytes these frames hold in memory now.
    #[cfg(test)]
    pub fn in_memory(&self) -> usize {
        self.block.capacity()
    }

    /// The most it can hold in memory (to charge the budget ahead).
    pub fn in_memory_bound(&self) -> usize {
        if self.spilling {
            self.in_memory.saturating_mul(2)
        } else {
            usize::try_from(self.max).unwrap_or(usize::MAX)
        }
    }

    /// Whether [`HeldFrames::push`] would still keep a frame (no bound was reached).
    pub fn takes_frames(&self) -> bool {
        self.cut.is_none()
    }

    /// Why frames stopped being kept, if they did.
    pub fn cut(&self) -> Option<Cut> {
        self.cut
    }

    /// Every kept frame with its instant, in order; reads the spilled blocks (blocking I/O).
    /// When a spilled block cannot be read back, none of the spilled frames are returned (the
    /// chain is read from its end, and a recording must not start after a hole); `Err` says so.
    pub fn load(self) -> (Vec<(Bytes, Instant)>, Option<std::io::Error>) {
        let HeldFrames {
            base,
            block,
            tail,
            older,
            spill,
            ..
        } = self;
        // The chain, read from its end: on any failure nothing spilled is returned (frames
        // after a hole would make a recording that lies about its start).
        let mut spilled: Vec<Vec<u8>> = Vec::new();
        let mut failed = None;
        let mut next = tail
            .as_ref()
            .map(|last| last.sibling(last.offset(), last.len()));
        while let (Some(extent), Some(spill)) = (next.take(), spill.as_ref()) {
            match spill.read(&extent).and_then(|bytes| {
                let previous = chained(&bytes, tail.iter().chain(&older))?;
                Ok((bytes, previous))
            }) {
                Ok((bytes, previous)) => {
                    spilled.push(bytes);
                    next = previous;
                }
                Err(error) => {
                    failed = Some(error);
                    spilled.clear();
                    break;
                }
            }
        }
        drop((tail, older));
        let mut all = Vec::with_capacity(
            spilled.iter().map(|b| b.len() - CHAIN).sum::<usize>() + block.len(),
        );
        for bytes in spilled.iter().rev() {
            all.extend_from_slice(&bytes[CHAIN..]);
        }
        drop(spilled);
        if failed.is_none() && block.len() > CHAIN {
            all.extend_from_slice(&block[CHAIN..]);
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

/// The block spilled before this one (`None` for the chain's first), found among the extents
/// that keep its segment open.
fn chained<'a>(
    block: &[u8],
    mut known: impl Iterator<Item = &'a Extent>,
) -> std::io::Result<Option<Extent>> {
    let broken = || std::io::Error::other("a spilled block does not name its predecessor");
    let field = |range: std::ops::Range<usize>| block.get(range).ok_or_else(broken);
    let number = u64::from_le_bytes(field(0..8)?.try_into().map_err(|_| broken())?);
    let offset = u64::from_le_bytes(field(8..16)?.try_into().map_err(|_| broken())?);
    let len = u32::from_le_bytes(field(16..CHAIN)?.try_into().map_err(|_| broken())?);
    if len == 0 {
        return Ok(None);
    }
    let segment = known
        .find(|extent| extent.segment_number() == number)
        .ok_or_else(broken)?;
    Ok(Some(segment.sibling(offset, len as usize)))
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
    fn frames_pushed_without_io_join_the_tail_and_one_that_would_write_is_refused_unchanged() {
        let (_dir, spill) = spill("held-in-memory");
        let mut held = HeldFrames::new(1 << 24, 1024, Some(spill.clone()));
        let now = Instant::now();
        let frames: Vec<Vec<u8>> = (0..2000)
            .map(|i| vec![b'a' + (i % 26) as u8; 100 + i % 50])
            .collect();
        let mut refused = 0;
        for frame in &frames {
            let before = (
                held.block.get(CHAIN..).map(<[u8]>::to_vec),
                held.kept,
                held.tail.as_ref().map(Extent::offset),
            );
            if held.push_in_memory(frame, now) {
                continue;
            }
            refused += 1;
            let after = (
                held.block.get(CHAIN..).map(<[u8]>::to_vec),
                held.kept,
                held.tail.as_ref().map(Extent::offset),
            );
            // (A block's first bytes name the block before it, written for each append.)
            assert_eq!(after, before, "a refused frame changes nothing");
            // As the pool does: with I/O.
            held.push(frame, now);
        }
        // The first block needs a segment made; after that only a full tail needs a write.
        let spilled = usize::try_from(spill.live_bytes()).expect("small");
        let flushes = spilled / crate::inspect::spill::PENDING_BYTES;
        assert!(
            (1 + flushes.saturating_sub(1)..=2 + flushes).contains(&refused),
            "{refused} refusals for {spilled} bytes spilled"
        );
        let (back, failed) = held.load();
        assert!(failed.is_none());
        let back: Vec<&[u8]> = back.iter().map(|(bytes, _)| bytes.as_ref()).collect();
        let sent: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        assert_eq!(back, sent, "every frame back, in order");
        // Without a spill nothing is ever written: every push is in memory.
        let mut alone = HeldFrames::new(1 << 20, 1024, None);
        assert!(frames.iter().all(|frame| alone.push_in_memory(frame, now)));
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

    #[test]
    fn interleaved_chains_across_segments_come_back_whole_with_a_small_block_each() {
        let dir = TestDir::new("held-chain");
        // Small segments, so each chain crosses many of them.
        let spill = Spill::with_segment_bytes(dir.to_path_buf(), 1 << 30, 4_096);
        let mut tapes = [
            HeldFrames::new(1 << 30, 256, Some(spill.clone())),
            HeldFrames::new(1 << 30, 256, Some(spill.clone())),
        ];
        let start = Instant::now();
        let frames: Vec<Vec<u8>> = (0..1_500usize)
            .map(|i| vec![(i % 253) as u8; 1 + (i * 53) % 300])
            .collect();
        for (i, frame) in frames.iter().enumerate() {
            let tape = &mut tapes[i % 2];
            tape.push(frame, start + Duration::from_millis(i as u64));
            assert!(
                tape.in_memory() <= 256.max(CHAIN + HEADER + frame.len()),
                "{} bytes in memory",
                tape.in_memory()
            );
        }
        for (which, tape) in tapes.into_iter().enumerate() {
            assert!(tape.cut().is_none());
            assert!(
                tape.older.len() > 10,
                "the chain crossed segments: {}",
                tape.older.len()
            );
            let (back, failed) = tape.load();
            assert!(failed.is_none(), "{failed:?}");
            let expected: Vec<_> = frames.iter().skip(which).step_by(2).collect();
            assert_eq!(back.len(), expected.len());
            for ((bytes, _), frame) in back.iter().zip(expected) {
                assert_eq!(bytes.as_ref(), frame.as_slice());
            }
        }
        // Every block was read back and every tape dropped: no segment is kept but the current one.
        assert!(spill.live_bytes() <= 4_096);
    }

    #[test]
    fn a_chain_that_cannot_be_read_back_returns_no_frames_and_says_why() {
        let (_dir, broken_spill) = spill("broken");
        let mut held = HeldFrames::new(1 << 20, 64, Some(broken_spill));
        for i in 0..50u8 {
            held.push(&[i; 30], Instant::now());
        }
        let last = held.tail.take().expect("blocks were spilled");
        // The last block's place, made to reach past everything written.
        held.tail = Some(last.sibling(last.offset(), last.len() + (1 << 20)));
        let (back, failed) = held.load();
        assert!(failed.is_some(), "the failure is reported");
        assert!(back.is_empty(), "no frames after a hole: {}", back.len());
    }
}
