//! The in-memory half of `--on-miss forward`: a forwarded exchange becomes a recording in the
//! running server's library, so the next identical request is answered offline.
//!
//! Input: the forwarded exchange's request (method, path, body), the upstream's response head,
//! and a second tap on its body (the first feeds the inspector). Output: a [`Recording`] with
//! the frames exactly as they arrived and their `t_us`, inserted into the [`Library`](super::library::Library) under the
//! name `captured/<exchange id>` once the body ended whole. An exchange cut short (client gone,
//! upstream error) or whose tap overflowed is not kept: a fixture with a hole would replay a
//! stream the upstream never sent.
//!
//! Nothing is written to disk here and no request headers are kept but the cassette's (so no
//! credentials are held; the recording belongs to the request's cassette, if it named one);
//! persisting the exchange is the recorder's job (`src/record/`).

use std::path::PathBuf;
use std::sync::{Arc, PoisonError};

use http::HeaderMap;
use http::StatusCode;

use super::ReplayState;
use crate::proxy::exchange::ExchangeCtx;
use crate::record::cassette::CASSETTE_HEADER;
use crate::record::format::{RequestPart, ResponsePart};
use crate::record::{Meta, RecordedBody, RecordedFrame, Recording, VERSION};
use crate::tap::tee::{Ending, TapReceiver};

/// What is known of a forwarded exchange when its response head arrives.
pub struct Forwarded {
    pub upstream: String,
    pub method: String,
    pub request_body: Vec<u8>,
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// The cassette the request named: the kept recording belongs to it.
    pub cassette: Option<String>,
}

/// Drain `tap` and, when the body ended whole, add the exchange to the library.
pub async fn remember(
    state: Arc<ReplayState>,
    ctx: ExchangeCtx,
    forwarded: Forwarded,
    mut tap: TapReceiver,
) {
    let mut frames = Vec::new();
    while let Some(event) = tap.data.recv().await {
        let t_us = event.at.saturating_duration_since(ctx.started).as_micros();
        frames.push(RecordedFrame {
            seq: frames.len() as u64,
            t_us: u64::try_from(t_us).unwrap_or(u64::MAX),
            bytes: event.bytes,
        });
    }
    let whole = match tap.end.await {
        Ok(end) => !end.lossy && matches!(end.ending, Ending::Complete | Ending::Trailers),
        Err(_) => false,
    };
    if !whole {
        tracing::info!("forwarded exchange did not end whole; not kept for replay");
        return;
    }
    let name = format!("captured/{}", ctx.id);
    let recording = recording(&ctx, forwarded, frames, &name);
    let mut library = state
        .library
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    library.insert_captured(name.clone(), recording);
    tracing::info!(recording = %name, "forwarded exchange kept; identical requests now replay it");
}

fn recording(
    ctx: &ExchangeCtx,
    forwarded: Forwarded,
    frames: Vec<RecordedFrame>,
    name: &str,
) -> Recording {
    let Forwarded {
        upstream,
        method,
        request_body,
        status,
        headers,
        cassette,
    } = forwarded;
    let now = std::time::SystemTime::now();
    let head_at = now.checked_sub(ctx.started.elapsed()).unwrap_or(now);
    let started = humantime::format_rfc3339_micros(head_at).to_string();
    let headers = headers
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    Recording {
        path: PathBuf::from(name),
        meta: Meta {
            v: VERSION,
            id: ctx.id.to_string(),
            started,
            route: ctx.route.to_string(),
            upstream,
            method,
            path: ctx.path.clone(),
            dialect: ctx.dialect,
            query: None,
            request: RequestPart {
                headers: cassette
                    .map(|name| (CASSETTE_HEADER.to_owned(), name))
                    .into_iter()
                    .collect(),
                body: RecordedBody::from_bytes(&request_body),
            },
            response: ResponsePart {
                status: status.as_u16(),
                headers,
            },
            redacted: Vec::new(),
            injected: Vec::new(),
            credential: None,
        },
        frames,
        end: None,
    }
}
