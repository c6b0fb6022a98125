//! One exchange's trips to the analysis pool ([`super::offload`]): what the engine is started
//! from, and the exchange itself, started lazily on the first trip so that a buffered response
//! costs one trip ([`LazyExchange`]); a small trip whose schemas are cached and plain runs where the
//! inspector is instead ([`HERE_BYTES`]): its work is in proportion to its bytes, and cheaper
//! than the hand-offs.
//!
//! Input: the request the inspector copied and the response head ([`Start`]), then batches of
//! tap events. Output: the started [`Exchange`], fed each batch ([`feed`]), each frame also
//! appended to the recording's [`ExchangeRecording`] when there is one (on the inspector's
//! thread while that needs no write to the spill; the rest of such a batch on the pool).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use bytes::Bytes;

use super::recording::ExchangeRecording;
use crate::engine::framing::body_kind;
use crate::engine::report::BodyKind;
use crate::engine::weigh::BUFFERED_PER_BYTE;
use crate::engine::{Dialect, EngineConfig, Exchange, RequestParts, ResponseHead, SchemaCache};
use crate::tap::tee::{CopyStop, TapEvent};

/// Feeds a batch to the engine and the recording. With `stop`, at the frame after which
/// neither reads more (inspection stopped and the recording takes no more frames), the tee is
/// told to stop copying: the frames that arrive while the rest of the trip runs are not copied.
/// `here` (the inspector's own thread): the recording takes frames only while that needs no
/// blocking I/O ([`ExchangeRecording::frame_in_memory`]); the frames it refused, from the
/// first on, are returned for [`record_rest`] on the pool (empty on the pool, and nearly
/// always here: only a spill append that must write refuses).
pub(super) fn feed(
    exchange: &mut Exchange,
    batch: Vec<TapEvent>,
    tape: &mut Option<ExchangeRecording>,
    stop: Option<&CopyStop>,
    here: bool,
) -> Vec<TapEvent> {
    let mut rest = Vec::new();
    for event in batch {
        #[cfg(test)]
        super::tests::panic_on_marker(&event.bytes);
        let refused = match tape.as_mut() {
            Some(_) if !rest.is_empty() => true,
            Some(tape) if here => !tape.frame_in_memory(&event.bytes, event.at),
            Some(tape) => {
                tape.frame(&event.bytes, event.at);
                false
            }
            None => false,
        };
        exchange.feed(&event.bytes);
        if refused {
            // The recording still takes frames (on the pool): no stopping the copies here.
            rest.push(event);
            continue;
        }
        if let Some(stop) = stop
            && exchange.stopped()
            && tape.as_ref().is_none_or(|tape| !tape.takes_frames())
        {
            stop.stop();
        }
    }
    rest
}

/// The frames a trip on the inspector's thread left to the recording ([`feed`]), taken on the
/// pool where a spill append may write.
pub(super) fn record_rest(tape: &mut Option<ExchangeRecording>, rest: Vec<TapEvent>) {
    if let Some(tape) = tape.as_mut() {
        for event in rest {
            tape.frame(&event.bytes, event.at);
        }
    }
}

/// What the engine needs to start, until the first trip to the analysis pool starts it.
pub(super) struct Start {
    pub engine: Arc<EngineConfig>,
    pub schemas: Arc<SchemaCache>,
    pub dialect: Dialect,
    pub request: StartRequest,
    pub head: ResponseHead,
}

/// The request an exchange is started from, as the inspector copied it.
pub(super) struct StartRequest {
    /// The body, when it was copied whole.
    pub body: Option<Bytes>,
    /// The target (never logged), method and read headers ([`super::RequestHead`]).
    pub head: super::RequestHead,
}

/// The most bytes a trip may feed (and a request may hold, for the trip that starts the
/// engine) to run on the inspector's own thread rather than the pool: a trip to the pool and
/// back (two context switches, a wake-up, the job's boxing) costs more than the engine's work
/// for this many bytes (see docs/benchmarks.md#analysis-pool).
pub(super) const HERE_BYTES: usize = 8 * 1024;

/// One exchange's engine: not started yet (its request not parsed, its schemas not compiled),
/// or started.
pub(super) enum LazyExchange {
    Pending(Start),
    Started {
        exchange: Box<Exchange>,
        /// Every schema it declares is plain (`engine::schema_plain`), whether it was cached
        /// or compiled by the start: its checks cost in proportion to the arguments, so its
        /// small trips may run on the inspector's thread.
        plain: bool,
    },
}

impl LazyExchange {
    /// The started exchange; starts it first when needed (compiling what the cache lacks).
    /// Call on a pool thread, or on a started engine.
    pub(super) fn get(self) -> Exchange {
        self.started().0
    }

    /// [`LazyExchange::get`], with whether the exchange's schemas are all plain: known once it
    /// is started, here or on the pool (what the start compiled counts), so that its later
    /// small trips may run on the inspector's thread.
    pub(super) fn started(self) -> (Exchange, bool) {
        match self {
            LazyExchange::Started { exchange, plain } => (*exchange, plain),
            LazyExchange::Pending(start) => {
                let (mut exchange, plain) = SchemaCache::observing(|| start.exchange());
                exchange.response_head(start.head);
                (exchange, plain)
            }
        }
    }

    /// Starts a pending engine on this thread when that compiles nothing: a request of at most
    /// [`HERE_BYTES`] whose declared tools are all in the schema cache. Otherwise (or when
    /// already started) it is returned as it was. `None` when the start panicked.
    pub(super) fn start_here(self) -> Option<LazyExchange> {
        let LazyExchange::Pending(start) = self else {
            return Some(self);
        };
        if start.request.body.as_ref().map_or(0, Bytes::len) > HERE_BYTES {
            return Some(LazyExchange::Pending(start));
        }
        let started = catch_unwind(AssertUnwindSafe(|| {
            SchemaCache::lookup_only(|| start.exchange())
        }));
        let (mut exchange, facts) = started.ok()?;
        if facts.missed {
            // Built with stand-ins for the missing schemas: thrown away, started on the pool.
            return Some(LazyExchange::Pending(start));
        }
        exchange.response_head(start.head);
        Some(LazyExchange::Started {
            exchange: Box::new(exchange),
            plain: facts.plain,
        })
    }

    /// What it holds between trips: its reassembly and its framing (`Exchange::reassembly_bytes`
    /// and `Exchange::framing_bytes`); 0 before it starts.
    pub(super) fn held_bytes(&self) -> usize {
        match self {
            LazyExchange::Started { exchange, .. } => exchange
                .reassembly_bytes()
                .saturating_add(exchange.framing_bytes()),
            LazyExchange::Pending(_) => 0,
        }
    }

    /// The most a trip feeding `bytes` may add to what it holds, reserved before the trip: the
    /// bytes themselves, left in a framing buffer; for a buffered body (or one whose framing is
    /// known by no stream content type) also what judging them takes (`weigh::BUFFERED_PER_BYTE` per byte). What a
    /// dialect weighs past that (an entry's own weight) is charged when the trip is back.
    pub(super) fn reserve(&self, bytes: usize) -> usize {
        let stream = match self {
            LazyExchange::Started { exchange, .. } => {
                exchange.body_kind().is_some_and(BodyKind::is_stream)
            }
            // Not framed yet: by its content type alone (no content type is taken as buffered).
            LazyExchange::Pending(start) => {
                body_kind(start.head.content_type.as_deref(), false).is_stream()
            }
        };
        if stream {
            bytes
        } else {
            bytes.saturating_mul(1 + BUFFERED_PER_BYTE)
        }
    }

    /// Whether this engine's small trips may run on the inspector's thread.
    pub(super) fn plain(&self) -> bool {
        matches!(self, LazyExchange::Started { plain: true, .. })
    }
}

impl Start {
    fn exchange(&self) -> Exchange {
        let request = RequestParts {
            body: self.request.body.as_deref().unwrap_or_default(),
            path: self.request.head.target.as_deref(),
            method: self.request.head.method.as_ref().map(http::Method::as_str),
            headers: &self.request.head.headers,
        };
        Exchange::start(&self.engine, &self.schemas, self.dialect, request)
    }
}
