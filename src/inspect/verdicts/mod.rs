//! The verdict board: the last few exchanges' verdicts, kept so that a test harness can ask, right
//! after a test, whether the exchanges that test made broke the contract, and wait for the ones
//! still being inspected.
//!
//! Input: [`Verdicts::begin`] when an exchange's inspection is spawned (on the request path,
//! before its response goes out, so an id a client holds is always known to the board unless it
//! was pushed out), [`Verdicts::finish`] when the inspection ends, with its [`Findings`] (or none
//! when it judged nothing). Output: [`Verdicts::wait`], each asked exchange's [`State`] once none
//! of them is pending or the wait is over.
//!
//! Bounded by construction: the board keeps the [`KEPT`] most recent exchanges (an older one is
//! pushed out and answers [`State::Unknown`]; pushed-out exchanges are counted in
//! [`Verdicts::pushed_out`]), each with at most [`KEPT_VIOLATIONS`] violations (errors first;
//! the rest counted in `not_listed`) whose path and detail are cut at [`KEPT_TEXT`] bytes. A wait
//! lasts at most [`MAX_WAIT`], for at most [`MAX_ASKED`] exchanges. Served on
//! `GET /__tooltap/verdicts` by `tooltap replay` and by the proxy's admin listener.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::Notify;

use crate::engine::violation::bounded_str;
use crate::engine::{Report, Severity, Violation};

/// How many exchanges the board remembers, the most recent ones.
pub const KEPT: usize = 256;
/// How many violations of one exchange the board keeps (errors first).
pub const KEPT_VIOLATIONS: usize = 8;
/// A kept violation's path and detail are cut at this many bytes.
pub const KEPT_TEXT: usize = 512;
/// The longest a query may wait for pending verdicts.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// The most exchanges one query may ask about.
pub const MAX_ASKED: usize = 256;

/// One kept violation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: &'static str,
    pub path: String,
    pub detail: String,
}

/// What an exchange's inspection found, as the board keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Findings {
    pub violations: Vec<Finding>,
    /// Violations found but not kept here: past [`KEPT_VIOLATIONS`], or past the engine's own
    /// `inspect.max_violations`.
    pub not_listed: u64,
}

impl Findings {
    /// The board's copy of a report's violations.
    pub fn of(report: &Report) -> Findings {
        Findings::kept(&report.violations, report.violations_not_listed)
    }

    /// The board's copy of `violations`, `not_listed` more having been counted, not listed.
    pub fn kept(violations: &[Violation], not_listed: u64) -> Findings {
        let mut all: Vec<_> = violations.iter().collect();
        // Errors first, so that the cut never hides one behind warnings.
        all.sort_by_key(|v| v.severity != Severity::Error);
        let violations = all
            .iter()
            .take(KEPT_VIOLATIONS)
            .map(|v| Finding {
                rule: v.rule.as_str(),
                severity: v.severity.as_str(),
                path: bounded_str(&v.path, KEPT_TEXT).into_owned(),
                detail: bounded_str(&v.detail, KEPT_TEXT).into_owned(),
            })
            .collect::<Vec<_>>();
        let cut = (all.len() - violations.len()) as u64;
        Findings {
            violations,
            not_listed: not_listed + cut,
        }
    }
}

/// Where an exchange's verdict stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum State {
    /// Still being inspected.
    Pending,
    /// Inspected: what it found (maybe nothing).
    Judged(Findings),
    /// The inspection ended without a verdict (the upstream never answered, the memory budget,
    /// an analysis that panicked): nothing to say about the contract.
    NotJudged,
    /// Not on the board: never inspected here (a skipped exchange, another server's id), or
    /// pushed out by [`KEPT`] newer ones.
    Unknown,
}

/// One answer line: an asked exchange and its state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    pub exchange: String,
    #[serde(flatten)]
    pub state: State,
}

#[derive(Default)]
struct Board {
    states: HashMap<Arc<str>, State, IdHash>,
    /// Insertion order, oldest first: what is pushed out next.
    order: VecDeque<Arc<str>>,
    pushed_out: u64,
}

/// How the board hashes exchange ids: FNV-1a. Every id it holds is one tooltap made (a
/// client's id is only looked up, never inserted), so no caller chooses what collides, and
/// SipHash's keyed rounds (three hashes per exchange: its insert, its finish, an old one's
/// removal) bought nothing here.
#[derive(Debug, Default, Clone, Copy)]
struct IdHash;

impl BuildHasher for IdHash {
    type Hasher = Fnv;

    fn build_hasher(&self) -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

/// FNV-1a's 64-bit state.
struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The board; one per server (proxy or replay), shared by its inspections and its admin answers.
#[derive(Default)]
pub struct Verdicts {
    board: Mutex<Board>,
    /// Woken on every finished inspection; waiters check again.
    finished: Notify,
}

impl Verdicts {
    /// An exchange's inspection starts: it is pending from now on.
    pub fn begin(&self, exchange: &Arc<str>) {
        let mut board = self.board.lock().unwrap_or_else(PoisonError::into_inner);
        if board.order.len() >= KEPT
            && let Some(oldest) = board.order.pop_front()
        {
            board.states.remove(&oldest);
            board.pushed_out += 1;
        }
        if board
            .states
            .insert(Arc::clone(exchange), State::Pending)
            .is_none()
        {
            board.order.push_back(Arc::clone(exchange));
        }
    }

    /// An exchange's inspection ended, with what it found (`None`: it judged nothing).
    pub fn finish(&self, exchange: &str, findings: Option<Findings>) {
        {
            let mut board = self.board.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(state) = board.states.get_mut(exchange) {
                *state = findings.map_or(State::NotJudged, State::Judged);
            }
        }
        self.finished.notify_waiters();
    }

    /// How many exchanges were pushed out of the board by newer ones.
    pub fn pushed_out(&self) -> u64 {
        self.board
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pushed_out
    }

    /// Each asked exchange's state now.
    pub fn states(&self, exchanges: &[String]) -> Vec<Answer> {
        let board = self.board.lock().unwrap_or_else(PoisonError::into_inner);
        exchanges
            .iter()
            .map(|exchange| Answer {
                exchange: exchange.clone(),
                state: board
                    .states
                    .get(exchange.as_str())
                    .cloned()
                    .unwrap_or(State::Unknown),
            })
            .collect()
    }

    /// Each asked exchange's state once none is pending, or when `within` (at most
    /// [`MAX_WAIT`]) is over, whichever comes first.
    pub async fn wait(&self, exchanges: &[String], within: Duration) -> Vec<Answer> {
        let deadline = tokio::time::Instant::now() + within.min(MAX_WAIT);
        loop {
            // Registered before the check, so a finish between the check and the wait wakes it.
            let finished = self.finished.notified();
            tokio::pin!(finished);
            finished.as_mut().enable();
            let answers = self.states(exchanges);
            if answers.iter().all(|a| a.state != State::Pending) {
                return answers;
            }
            if tokio::time::timeout_at(deadline, finished).await.is_err() {
                return self.states(exchanges);
            }
        }
    }
}

/// Marks an exchange's inspection finished however its task ends: with its findings through
/// [`FinishGuard::judged`], or without a verdict when the task is dropped first.
pub struct FinishGuard {
    verdicts: Arc<Verdicts>,
    exchange: Arc<str>,
    done: bool,
}

impl FinishGuard {
    /// Puts `exchange` on the board as pending.
    pub fn begin(verdicts: Arc<Verdicts>, exchange: Arc<str>) -> FinishGuard {
        verdicts.begin(&exchange);
        FinishGuard {
            verdicts,
            exchange,
            done: false,
        }
    }

    pub fn judged(mut self, findings: Option<Findings>) {
        self.done = true;
        self.verdicts.finish(&self.exchange, findings);
    }
}

impl Drop for FinishGuard {
    fn drop(&mut self) {
        if !self.done {
            self.verdicts.finish(&self.exchange, None);
        }
    }
}

/// What a `GET /__tooltap/verdicts` query asks: `exchange=<id>` (repeated) and `wait_ms=<n>`.
#[derive(Debug, PartialEq)]
pub struct Query {
    pub exchanges: Vec<String>,
    pub wait: Duration,
}

/// Parses the query string of `GET /__tooltap/verdicts`; the error says what is wrong.
pub fn parse_query(query: Option<&str>) -> Result<Query, String> {
    let mut exchanges = Vec::new();
    let mut wait = Duration::ZERO;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "exchange" if !value.is_empty() => exchanges.push(value.to_string()),
            "wait_ms" => {
                let ms: u64 = value.parse().map_err(|_| {
                    format!("wait_ms must be a number of milliseconds, not {value:?}")
                })?;
                wait = Duration::from_millis(ms);
            }
            _ => {
                return Err(format!(
                    "unknown query parameter {pair:?}: there are exchange and wait_ms"
                ));
            }
        }
    }
    if exchanges.len() > MAX_ASKED {
        return Err(format!(
            "{} exchanges asked; at most {MAX_ASKED} per query",
            exchanges.len()
        ));
    }
    Ok(Query { exchanges, wait })
}

/// The answer to a `GET /__tooltap/verdicts` query: `{"exchanges": [<Answer>...], "pushed_out":
/// <n>}` (`pushed_out`: exchanges pushed off the board so far), or what is wrong with the query.
pub async fn answer(verdicts: &Verdicts, query: Option<&str>) -> Result<serde_json::Value, String> {
    let query = parse_query(query)?;
    let answers = verdicts.wait(&query.exchanges, query.wait).await;
    Ok(serde_json::json!({ "exchanges": answers, "pushed_out": verdicts.pushed_out() }))
}

#[cfg(test)]
mod tests;
