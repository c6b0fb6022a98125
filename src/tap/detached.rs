//! Copies of a message's headers that own their bytes, for whatever keeps them past the moment
//! hyper is done with the message (a recording's request and response heads).
//!
//! hyper parses each header value as a `Bytes` slice of the connection's read buffer, so a
//! plain `HeaderMap::clone` keeps that whole buffer (8 KiB or more) alive for as long as the
//! copy lives, and hyper allocates a new one at its next read. In `violations` mode the
//! response head kept for the verdict would pin one upstream read buffer per stream, most of
//! what recording costs per stream (see docs/benchmarks.md#detached-headers).
//! [`DetachedHeaders`] keeps the names and values encoded in one small buffer
//! instead (one allocation, no hashing), and builds a `HeaderMap` back only when a recording is
//! actually written: in `violations` mode most exchanges are clean and never need one.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};

/// Each header is encoded as its name's length (u32 LE), its value's length (u32 LE), whether
/// the value is sensitive (one byte), the name, then the value.
const ENTRY: usize = 4 + 4 + 1;

/// A message's headers, in order, in one buffer of their own.
#[derive(Debug, Clone, Default)]
pub struct DetachedHeaders {
    encoded: Box<[u8]>,
}

impl DetachedHeaders {
    pub fn of(headers: &HeaderMap) -> DetachedHeaders {
        let size = headers
            .iter()
            .map(|(name, value)| ENTRY + name.as_str().len() + value.len())
            .sum();
        let mut encoded = Vec::with_capacity(size);
        for (name, value) in headers {
            // Names and values are far below 4 GiB (hyper bounds a head at a few MiB).
            let name_len = u32::try_from(name.as_str().len()).unwrap_or(u32::MAX);
            let value_len = u32::try_from(value.len()).unwrap_or(u32::MAX);
            encoded.extend_from_slice(&name_len.to_le_bytes());
            encoded.extend_from_slice(&value_len.to_le_bytes());
            encoded.push(u8::from(value.is_sensitive()));
            encoded.extend_from_slice(name.as_str().as_bytes());
            encoded.extend_from_slice(value.as_bytes());
        }
        DetachedHeaders {
            encoded: encoded.into_boxed_slice(),
        }
    }

    /// The headers as a map again: the same names, values, order and sensitivity. The values
    /// share one buffer of the map's own.
    pub fn to_map(&self) -> HeaderMap {
        let all = Bytes::copy_from_slice(&self.encoded);
        let mut map = HeaderMap::new();
        let mut at = 0;
        while let Some(entry) = all.get(at..at + ENTRY) {
            let length = |range: std::ops::Range<usize>| {
                let mut bytes = [0u8; 4];
                bytes.copy_from_slice(&entry[range]);
                u32::from_le_bytes(bytes) as usize
            };
            let (name_len, value_len) = (length(0..4), length(4..8));
            let sensitive = entry[8] == 1;
            let name_at = at + ENTRY;
            let value_at = name_at + name_len;
            at = value_at + value_len;
            // Every pair was a valid header when encoded, so neither check can fail.
            let (Some(name), Some(value)) = (
                all.get(name_at..value_at)
                    .and_then(|name| HeaderName::from_bytes(name).ok()),
                all.get(value_at..at)
                    .and_then(|_| HeaderValue::from_maybe_shared(all.slice(value_at..at)).ok()),
            ) else {
                continue;
            };
            let mut value = value;
            value.set_sensitive(sensitive);
            map.append(name, value);
        }
        map
    }
}

/// `headers`, with every value copied into one buffer owned by the copy.
pub fn detached(headers: &HeaderMap) -> HeaderMap {
    DetachedHeaders::of(headers).to_map()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{AUTHORIZATION, CONTENT_TYPE, SET_COOKIE};

    /// A map whose values are slices of one larger buffer, as hyper parses them.
    fn parsed(read_buffer: &Bytes) -> HeaderMap {
        let mut map = HeaderMap::new();
        let value = |range: std::ops::Range<usize>| {
            HeaderValue::from_maybe_shared(read_buffer.slice(range)).unwrap()
        };
        map.append(CONTENT_TYPE, value(0..16));
        map.append(SET_COOKIE, value(16..19));
        map.append(SET_COOKIE, value(19..22));
        let mut secret = value(22..28);
        secret.set_sensitive(true);
        map.append(AUTHORIZATION, secret);
        map.append("x-empty", value(28..28));
        map.append("x-request-id", value(28..33));
        // obs-text: bytes past ASCII are valid in a value.
        map.append("x-latin", value(33..37));
        map
    }

    /// Every header as owned bytes (a cloned value would share the buffer under test).
    fn pairs(map: &HeaderMap) -> Vec<(String, Vec<u8>, bool)> {
        map.iter()
            .map(|(name, value)| {
                let name = name.as_str().to_owned();
                (name, value.as_bytes().to_vec(), value.is_sensitive())
            })
            .collect()
    }

    #[test]
    fn the_copy_equals_the_original_and_pins_none_of_its_buffer() {
        let mut text = b"application/jsona=1b=2Bearerreq-7caf\xe9".to_vec();
        text.resize(8192, b' ');
        let read_buffer = Bytes::from(text);
        let original = parsed(&read_buffer);
        assert!(
            !read_buffer.is_unique(),
            "the parsed map shares the read buffer"
        );

        let kept = DetachedHeaders::of(&original);
        let expected = pairs(&original);
        drop(original);
        assert!(
            read_buffer.is_unique(),
            "the copy must not keep the read buffer alive"
        );
        let back = kept.to_map();
        assert_eq!(pairs(&back), expected);
        assert_eq!(back.get_all(SET_COOKIE).iter().count(), 2);
        assert!(back[AUTHORIZATION].is_sensitive());
        assert_eq!(back["x-request-id"], "req-7");
        assert_eq!(back["x-latin"].as_bytes(), b"caf\xe9");
        assert_eq!(pairs(&detached(&back)), expected);
    }

    #[test]
    fn an_empty_map_copies_to_an_empty_map() {
        assert!(DetachedHeaders::of(&HeaderMap::new()).to_map().is_empty());
        assert!(DetachedHeaders::default().to_map().is_empty());
    }
}
