//! Copies of a message's headers that own their bytes, for whatever keeps them past the moment
//! hyper is done with the message (a recording's request and response heads).
//!
//! hyper parses each header value as a `Bytes` slice of the connection's read buffer, so a
//! plain `HeaderMap::clone` keeps that whole buffer (8 KiB or more) alive for as long as the
//! copy lives, and hyper allocates a new one at its next read. Measured at 300 concurrent
//! 200-event streams in `violations` mode: the response head kept for the verdict pinned one
//! upstream read buffer per stream, 8 KiB of the ~12 KiB per stream that recording cost over
//! `--record off`. [`detached`] copies every value into one small buffer of its own instead:
//! one allocation per map, the names, values, order and sensitivity unchanged.

use bytes::BytesMut;
use http::{HeaderMap, HeaderValue};

/// `headers`, with every value copied into one buffer owned by the copy.
pub fn detached(headers: &HeaderMap) -> HeaderMap {
    let mut buffer = BytesMut::with_capacity(headers.values().map(HeaderValue::len).sum());
    for value in headers.values() {
        buffer.extend_from_slice(value.as_bytes());
    }
    let buffer = buffer.freeze();
    let mut copy = HeaderMap::with_capacity(headers.len());
    let mut at = 0;
    for (name, value) in headers {
        let end = at + value.len();
        // The bytes were a valid value a moment ago; should that ever not hold, the value is
        // shared rather than lost.
        let owned = match HeaderValue::from_maybe_shared(buffer.slice(at..end)) {
            Ok(mut owned) => {
                owned.set_sensitive(value.is_sensitive());
                owned
            }
            Err(_) => value.clone(),
        };
        copy.append(name.clone(), owned);
        at = end;
    }
    copy
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
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
        map
    }

    #[test]
    fn the_copy_equals_the_original_and_pins_none_of_its_buffer() {
        let mut text = b"application/jsona=1b=2Bearerreq-7".to_vec();
        text.resize(8192, b' ');
        let read_buffer = Bytes::from(text);
        let original = parsed(&read_buffer);
        assert!(
            !read_buffer.is_unique(),
            "the parsed map shares the read buffer"
        );

        let copy = detached(&original);
        let pairs = |map: &HeaderMap| {
            map.iter()
                .map(|(name, value)| (name.clone(), value.clone(), value.is_sensitive()))
                .collect::<Vec<_>>()
        };
        assert_eq!(pairs(&copy), pairs(&original));
        assert_eq!(copy.get_all(SET_COOKIE).iter().count(), 2);
        assert!(copy[AUTHORIZATION].is_sensitive());

        drop(original);
        assert!(
            read_buffer.is_unique(),
            "the copy must not keep the read buffer alive"
        );
        assert_eq!(copy["x-request-id"], "req-7");
    }

    #[test]
    fn an_empty_map_copies_to_an_empty_map() {
        assert!(detached(&HeaderMap::new()).is_empty());
    }
}
