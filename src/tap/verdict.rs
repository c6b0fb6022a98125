//! What enforce mode did to one response, told to that exchange's inspector.
//!
//! Input: enforce mode's decision — a buffered body refused with a 502, or a stream cut with an
//! error event (replacing the frame that completed the violation, or appended after the last
//! one when only the end of the stream broke the contract). Output: one [`EnforceCut`] on a
//! oneshot, or nothing when enforce mode let the response pass (the sender is dropped). The
//! inspector awaits it after the response body ended, so its summary and the recording say
//! `enforced` from the decision itself, never from a flag it might read too early.

use bytes::Bytes;
use tokio::sync::oneshot;

/// How enforce mode changed what the client got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnforceCut {
    /// The refusal's status (`enforce.status`, 502 by default) when a buffered body was refused;
    /// `None` when a stream was cut.
    pub status: Option<u16>,
    /// What the client got instead: the refusal's body, or the stream's final error event.
    pub replacement: Bytes,
    /// For a stream: whether the error event took the place of the last frame read from the
    /// upstream (`true`), or came after the upstream's whole body (`false`).
    pub replaced_last: bool,
    /// For a JSON-array stream: how many of the upstream's body bytes the client got before
    /// the replacement (whole elements only, so not whole frames); `None`: whole frames, as
    /// `replaced_last` says.
    pub kept: Option<u64>,
}

/// The sending half, held by the code that may cut: [`crate::proxy::enforce::EnforceBody`] or
/// the buffered path.
#[derive(Debug, Default)]
pub struct CutSender(Option<oneshot::Sender<EnforceCut>>);

/// The inspector's half: `Err` when enforce mode let the response pass.
pub type CutReceiver = oneshot::Receiver<EnforceCut>;

pub fn channel() -> (CutSender, CutReceiver) {
    let (tx, rx) = oneshot::channel();
    (CutSender(Some(tx)), rx)
}

impl CutSender {
    /// A sender that tells nobody (an exchange not enforced, or enforce mode without an
    /// inspector).
    pub fn none() -> CutSender {
        CutSender(None)
    }

    /// Tell the inspector; only the first cut counts.
    pub fn cut(&mut self, cut: EnforceCut) {
        if let Some(sender) = self.0.take() {
            // The inspector may have gone (it panicked): nothing to tell then.
            let _ = sender.send(cut);
        }
    }
}
