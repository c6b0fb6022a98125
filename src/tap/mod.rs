//! What the client path hands inspection, in a leaf that both sides import (the proxy and the
//! replay server write into it, the inspector reads from it): the tee body and its bounded
//! channel of frames and endings ([`tee`]), the request body's copy kept whole ([`whole`]), a
//! small response's copy handed over framed at its end ([`framed`]), the memory budget that the
//! request's copy and the inspector both charge ([`memory`]), the response and request heads
//! copied out of hyper's buffers for a recording ([`detached`]), and enforce mode's word on what
//! it did to a response ([`verdict`]).

pub mod tee;
pub mod whole;
pub mod framed;
pub mod memory;
pub mod detached;
pub mod verdict;
#[cfg(test)]
mod tests_body;
