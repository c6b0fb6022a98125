//! The buffered-body framer: collects a whole `application/json` body, bounded.
//!
//! Input: decoded response bytes from the exchange. Output: the complete body, handed to the
//! buffered contract checks once the body ends.

/// The body grew past the configured bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the JSON body exceeded {limit} bytes")]
pub struct BodyTooLarge {
    pub limit: usize,
}

/// Accumulates one JSON document.
#[derive(Debug)]
pub struct JsonFramer {
    limit: usize,
    body: Vec<u8>,
}

impl JsonFramer {
    pub fn new(limit: usize) -> JsonFramer {
        JsonFramer {
            limit,
            body: Vec::new(),
        }
    }

    pub fn push(&mut self, bytes: &[u8]) -> Result<(), BodyTooLarge> {
        if self.body.len() + bytes.len() > self.limit {
            return Err(BodyTooLarge { limit: self.limit });
        }
        self.body.extend_from_slice(bytes);
        Ok(())
    }

    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// What it holds: the body's buffer (its capacity, which is what is allocated).
    pub fn held_bytes(&self) -> usize {
        self.body.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_until_the_limit() {
        let mut framer = JsonFramer::new(4);
        framer.push(b"{}").expect("fits");
        framer.push(b"  ").expect("fits exactly");
        assert_eq!(framer.body(), b"{}  ");
        assert_eq!(framer.push(b"x"), Err(BodyTooLarge { limit: 4 }));
    }
}
