//! Bounded decoding of `Content-Encoding` for inspection.
//!
//! Input: raw response body bytes as they crossed the wire, in arbitrary splits. Output: the
//! decoded bytes the framers read. The client's bytes are never touched: this decodes a copy.
//! The total decoded size is bounded (a gzip bomb stops at `max_decoded`), and decoding is
//! push-based (`std::io::Write` decoders) so nothing waits for more input.

use std::io::{self, Write};

/// Why decoding stopped. None of these is a contract violation: they end inspection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("unsupported content-encoding {0:?}")]
    Unsupported(String),
    #[error("decoded body exceeded {limit} bytes")]
    TooLarge { limit: usize },
    #[error("corrupt {encoding} body: {reason}")]
    Corrupt {
        encoding: &'static str,
        reason: String,
    },
}

/// What a codec's own state is taken to hold for the memory budget: an inflate window and its
/// tables, or a brotli or zstd decoder at the windows common in HTTP responses.
pub const CODEC_STATE: usize = 64 * 1024;

/// A writer that keeps decoded bytes and refuses to grow past the limit.
#[derive(Debug)]
struct BoundedWriter {
    decoded: Vec<u8>,
    total: usize,
    limit: usize,
    exceeded: bool,
}

impl Write for BoundedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.exceeded || self.total + buf.len() > self.limit {
            self.exceeded = true;
            return Err(io::Error::other("decoded size limit"));
        }
        self.total += buf.len();
        self.decoded.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Codec {
    Identity,
    Gzip(flate2::write::GzDecoder<BoundedWriter>),
    /// HTTP `deflate` is zlib-wrapped, but servers also send raw deflate; the first byte decides.
    DeflateUndecided(BoundedWriter),
    Zlib(flate2::write::ZlibDecoder<BoundedWriter>),
    RawDeflate(flate2::write::DeflateDecoder<BoundedWriter>),
    Brotli(Box<brotli::DecompressorWriter<BoundedWriter>>),
    Zstd(zstd::stream::write::Decoder<'static, BoundedWriter>),
}

/// Decodes one response body.
pub struct BodyDecoder {
    codec: Codec,
    name: &'static str,
    limit: usize,
}

impl std::fmt::Debug for BodyDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyDecoder")
            .field("encoding", &self.name)
            .finish()
    }
}

impl BodyDecoder {
    /// A decoder for a `Content-Encoding` header value (`None` or `identity`: pass-through).
    pub fn new(content_encoding: Option<&str>, limit: usize) -> Result<BodyDecoder, DecodeError> {
        let writer = BoundedWriter {
            decoded: Vec::new(),
            total: 0,
            limit,
            exceeded: false,
        };
        let label = content_encoding
            .map(|e| e.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let (codec, name) = match label.as_str() {
            "" | "identity" => (Codec::Identity, "identity"),
            "gzip" | "x-gzip" => (Codec::Gzip(flate2::write::GzDecoder::new(writer)), "gzip"),
            "deflate" => (Codec::DeflateUndecided(writer), "deflate"),
            "br" => (
                Codec::Brotli(Box::new(brotli::DecompressorWriter::new(writer, 4096))),
                "br",
            ),
            "zstd" => {
                let decoder = zstd::stream::write::Decoder::new(writer).map_err(|e| {
                    DecodeError::Corrupt {
                        encoding: "zstd",
                        reason: e.to_string(),
                    }
                })?;
                (Codec::Zstd(decoder), "zstd")
            }
            other => return Err(DecodeError::Unsupported(other.to_owned())),
        };
        Ok(BodyDecoder { codec, name, limit })
    }

    /// Decodes `bytes`; returns the decoded bytes (borrowing `bytes` itself for identity).
    pub fn push<'a>(&'a mut self, bytes: &'a [u8]) -> Result<&'a [u8], DecodeError> {
        if let Codec::DeflateUndecided(_) = self.codec {
            if bytes.is_empty() {
                return Ok(bytes);
            }
            self.decide_deflate(bytes[0]);
        }
        self.clear_output();
        let result = match &mut self.codec {
            Codec::Identity => return Ok(bytes),
            Codec::DeflateUndecided(_) => Ok(()),
            Codec::Gzip(decoder) => decoder.write_all(bytes),
            Codec::Zlib(decoder) => decoder.write_all(bytes),
            Codec::RawDeflate(decoder) => decoder.write_all(bytes),
            Codec::Brotli(decoder) => decoder.write_all(bytes),
            Codec::Zstd(decoder) => decoder.write_all(bytes),
        };
        self.settle(result)
    }

    /// Flushes what the decoder still holds at the end of the body.
    pub fn finish(&mut self) -> Result<&[u8], DecodeError> {
        self.clear_output();
        let result = match &mut self.codec {
            Codec::Identity | Codec::DeflateUndecided(_) => return Ok(&[]),
            Codec::Gzip(decoder) => decoder.try_finish(),
            Codec::Zlib(decoder) => decoder.try_finish(),
            Codec::RawDeflate(decoder) => decoder.try_finish(),
            Codec::Brotli(decoder) => decoder.close().map_err(io::Error::other),
            Codec::Zstd(decoder) => decoder.flush(),
        };
        self.settle(result)
    }

    fn decide_deflate(&mut self, first: u8) {
        let placeholder = Codec::Identity;
        if let Codec::DeflateUndecided(writer) = std::mem::replace(&mut self.codec, placeholder) {
            // A zlib stream starts with CMF, whose low nibble is 8 (the deflate method).
            self.codec = if first & 0x0F == 8 {
                Codec::Zlib(flate2::write::ZlibDecoder::new(writer))
            } else {
                Codec::RawDeflate(flate2::write::DeflateDecoder::new(writer))
            };
        }
    }

    fn writer(&mut self) -> Option<&mut BoundedWriter> {
        match &mut self.codec {
            Codec::Identity => None,
            Codec::DeflateUndecided(writer) => Some(writer),
            Codec::Gzip(decoder) => Some(decoder.get_mut()),
            Codec::Zlib(decoder) => Some(decoder.get_mut()),
            Codec::RawDeflate(decoder) => Some(decoder.get_mut()),
            Codec::Brotli(decoder) => Some(decoder.get_mut()),
            Codec::Zstd(decoder) => Some(decoder.get_mut()),
        }
    }

    /// What it holds between pushes: its output buffer (capacity) and, for a compressed body,
    /// an estimate of its codec's state ([`CODEC_STATE`]); 0 for identity.
    pub fn held_bytes(&self) -> usize {
        let output = match &self.codec {
            Codec::Identity => return 0,
            Codec::DeflateUndecided(writer) => writer,
            Codec::Gzip(decoder) => decoder.get_ref(),
            Codec::Zlib(decoder) => decoder.get_ref(),
            Codec::RawDeflate(decoder) => decoder.get_ref(),
            Codec::Brotli(decoder) => decoder.get_ref(),
            Codec::Zstd(decoder) => decoder.get_ref(),
        };
        output.decoded.capacity().saturating_add(CODEC_STATE)
    }

    /// Turns a write result into decoded output, telling the size limit from corruption.
    fn settle(&mut self, result: io::Result<()>) -> Result<&[u8], DecodeError> {
        let (name, limit) = (self.name, self.limit);
        let Some(writer) = self.writer() else {
            return Ok(&[]);
        };
        if writer.exceeded {
            return Err(DecodeError::TooLarge { limit });
        }
        if let Err(error) = result {
            return Err(DecodeError::Corrupt {
                encoding: name,
                reason: error.to_string(),
            });
        }
        Ok(writer.decoded.as_slice())
    }

    /// Forgets the bytes handed out by the previous call, keeping the buffer's capacity.
    fn clear_output(&mut self) {
        if let Some(writer) = self.writer() {
            writer.decoded.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(encoding: &str, encoded: &[u8], limit: usize) -> Result<Vec<u8>, DecodeError> {
        let mut decoder = BodyDecoder::new(Some(encoding), limit)?;
        let mut out = Vec::new();
        for chunk in encoded.chunks(3) {
            out.extend_from_slice(decoder.push(chunk)?);
        }
        out.extend_from_slice(decoder.finish()?);
        Ok(out)
    }

    fn gzip(plain: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(plain).expect("in memory");
        encoder.finish().expect("in memory")
    }

    #[test]
    fn every_encoding_round_trips_in_small_pieces() {
        let plain = b"data: {\"choices\":[]}\n\n".repeat(20);
        assert_eq!(
            decode_all("gzip", &gzip(&plain), 1 << 20),
            Ok(plain.clone())
        );
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(&plain).expect("in memory");
        assert_eq!(
            decode_all("deflate", &zlib.finish().expect("mem"), 1 << 20),
            Ok(plain.clone())
        );
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(&plain).expect("in memory");
        assert_eq!(
            decode_all("deflate", &raw.finish().expect("mem"), 1 << 20),
            Ok(plain.clone())
        );
        let zstd_bytes = zstd::encode_all(plain.as_slice(), 1).expect("in memory");
        assert_eq!(decode_all("zstd", &zstd_bytes, 1 << 20), Ok(plain.clone()));
        let mut br = Vec::new();
        {
            let mut writer = brotli::CompressorWriter::new(&mut br, 4096, 5, 22);
            writer.write_all(&plain).expect("in memory");
        }
        assert_eq!(decode_all("br", &br, 1 << 20), Ok(plain.clone()));
    }

    #[test]
    fn bombs_stop_at_the_limit_and_garbage_is_corrupt() {
        let bomb = gzip(&vec![b'a'; 1 << 20]);
        assert_eq!(
            decode_all("gzip", &bomb, 4096),
            Err(DecodeError::TooLarge { limit: 4096 })
        );
        assert!(matches!(
            decode_all("gzip", b"not gzip at all", 4096),
            Err(DecodeError::Corrupt { .. })
        ));
        assert!(matches!(
            BodyDecoder::new(Some("compress"), 1),
            Err(DecodeError::Unsupported(_))
        ));
        let mut identity = BodyDecoder::new(None, 1).expect("identity");
        assert_eq!(identity.push(b"unbounded here"), Ok(&b"unbounded here"[..]));
    }
}
