//! The W3C trace context a client sends (`traceparent`, `tracestate`), and fresh span ids.
//!
//! Input: the request's header values. Output: a [`TraceParent`] the exchange's span continues
//! (same trace id, the client's span as its parent), or `None` for a header that is absent or
//! malformed (the span then starts a trace of its own). The headers themselves are forwarded
//! upstream unchanged, as every header is; nothing here touches them.

use ring::rand::{SecureRandom, SystemRandom};

/// The parts of a valid `traceparent` (version `00`, or a later version read as `00` reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// `tracestate`, when sent and at most [`MAX_TRACE_STATE`] bytes.
    pub trace_state: Option<String>,
}

/// Longest `tracestate` kept (the W3C limit is 32 members of at most 256 characters; receivers
/// may cut at 512).
pub const MAX_TRACE_STATE: usize = 512;

impl TraceParent {
    /// The `traceparent` and `tracestate` of a request's headers, when the first is valid.
    pub fn from_headers(headers: &http::HeaderMap) -> Option<TraceParent> {
        let traceparent = headers.get("traceparent")?.to_str().ok()?;
        let state = headers
            .get("tracestate")
            .and_then(|value| value.to_str().ok());
        TraceParent::parse(traceparent, state)
    }

    /// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`; all-zero ids and version `ff`
    /// are invalid, as the W3C recommendation says.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<TraceParent> {
        let text = traceparent.trim();
        let mut parts = text.split('-');
        let version = parts.next()?;
        let trace = parts.next()?;
        let span = parts.next()?;
        let flags = parts.next()?;
        if version.len() != 2 || version.eq_ignore_ascii_case("ff") || flags.len() != 2 {
            return None;
        }
        // Version 00 has exactly four parts; later versions may append more.
        if version == "00" && parts.next().is_some() {
            return None;
        }
        hex::<1>(version)?;
        hex::<1>(flags)?;
        let trace_id = hex::<16>(trace)?;
        let span_id = hex::<8>(span)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        let trace_state = tracestate
            .map(str::trim)
            .filter(|state| !state.is_empty() && state.len() <= MAX_TRACE_STATE)
            .map(str::to_owned);
        Some(TraceParent {
            trace_id,
            span_id,
            trace_state,
        })
    }
}

/// Lower- or upper-case hex of exactly `N` bytes.
fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (index, pair) in digits.chunks(2).enumerate() {
        let high = (pair[0] as char).to_digit(16)?;
        let low = (pair[1] as char).to_digit(16)?;
        out[index] = (high * 16 + low) as u8;
    }
    Some(out)
}

/// `N` random bytes from the OS, never all zero (an all-zero id is invalid).
pub fn random_id<const N: usize>() -> [u8; N] {
    let random = SystemRandom::new();
    let mut id = [0u8; N];
    if random.fill(&mut id).is_err() || id == [0u8; N] {
        // The OS's randomness failed: an id from the clock and a counter is still unique enough
        // within one process.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        for (index, byte) in id.iter_mut().enumerate() {
            *byte = (nanos >> ((index % 8) * 8)) as u8 | 1;
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_w3c_example_parses() {
        let parent = TraceParent::parse(EXAMPLE, Some("congo=t61rcWkgMzE")).expect("valid");
        assert_eq!(parent.trace_id[0], 0x4b);
        assert_eq!(parent.trace_id[15], 0x36);
        assert_eq!(
            parent.span_id,
            [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]
        );
        assert_eq!(parent.trace_state.as_deref(), Some("congo=t61rcWkgMzE"));
    }

    #[test]
    fn malformed_or_zero_ids_start_a_new_trace() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-zzf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad, None), None, "{bad:?}");
        }
        // A later version may carry more parts.
        assert!(
            TraceParent::parse(
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more",
                None
            )
            .is_some()
        );
    }

    #[test]
    fn an_oversized_tracestate_is_not_kept() {
        let long = "a=".to_string() + &"b".repeat(MAX_TRACE_STATE);
        let parent = TraceParent::parse(EXAMPLE, Some(&long)).expect("valid");
        assert_eq!(parent.trace_state, None);
    }

    #[test]
    fn random_ids_differ() {
        assert_ne!(random_id::<8>(), random_id::<8>());
        assert_ne!(random_id::<16>(), [0; 16]);
    }
}
