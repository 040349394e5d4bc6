//! Incremental body decoding: Content-Length, chunked, and until-close behind one enum.
//!
//! Decoders never copy: [`BodyDecoder::decode`] reports how many input bytes it consumed and
//! which sub-range of the input is body data. Bytes after the end of the body are never
//! consumed; they belong to the next message.

use std::ops::Range;

use crate::error::{Error, ErrorKind, Side};
use crate::head::Header;
use crate::{Framing, Limits};

/// What one [`BodyDecoder::decode`] call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Input bytes consumed; the caller drops them before the next call.
    pub consumed: usize,
    /// Body data inside the consumed input (may be empty).
    pub data: Range<usize>,
    /// The body is complete; the bytes after `consumed` belong to the next message.
    pub done: bool,
}

/// A body decoder for any [`Framing`].
///
/// Feed it input with [`decode`](Self::decode) until `done`; at end of input call
/// [`finish`](Self::finish), which fails unless the body was complete or delimited by close.
/// Splitting the input differently never changes the data or the error.
#[derive(Debug, Clone)]
pub enum BodyDecoder {
    /// `Content-Length` (and [`Framing::None`], as length 0).
    Length(LengthDecoder),
    /// `Transfer-Encoding: chunked`.
    Chunked(ChunkedDecoder),
    /// Until the peer closes (responses only).
    UntilClose {
        /// Set once [`BodyDecoder::finish`] saw the close.
        done: bool,
    },
}

impl BodyDecoder {
    /// A decoder for a body framed as `framing`, sent by `side`.
    pub fn new(framing: Framing, side: Side, limits: &Limits) -> Self {
        match framing {
            Framing::None => BodyDecoder::Length(LengthDecoder::new(0, side)),
            Framing::Length(n) => BodyDecoder::Length(LengthDecoder::new(n, side)),
            Framing::Chunked => BodyDecoder::Chunked(ChunkedDecoder::new(side, limits)),
            Framing::UntilClose => BodyDecoder::UntilClose { done: false },
        }
    }

    /// Consumes input: see [`Decoded`]. Call again with the unconsumed rest while it is not
    /// empty and the body is not done: each call returns at most one run of data.
    ///
    /// # Errors
    ///
    /// Chunked framing errors (rows S4–S6), or a request body beyond [`Limits::max_body`].
    /// After an error every further call returns it again.
    pub fn decode(&mut self, input: &[u8]) -> Result<Decoded, Error> {
        match self {
            BodyDecoder::Length(d) => Ok(d.decode(input)),
            BodyDecoder::Chunked(d) => d.decode(input),
            BodyDecoder::UntilClose { done: true } => Ok(Decoded { consumed: 0, data: 0..0, done: true }),
            BodyDecoder::UntilClose { done: false } => {
                Ok(Decoded { consumed: input.len(), data: 0..input.len(), done: false })
            }
        }
    }

    /// Decodes all of `input` it can, appending body data to `out`; returns the bytes consumed.
    ///
    /// # Errors
    ///
    /// As [`decode`](Self::decode).
    pub fn decode_to_vec(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, Error> {
        let mut pos = 0;
        loop {
            let d = self.decode(&input[pos..])?;
            out.extend_from_slice(&input[pos..][d.data]);
            pos += d.consumed;
            if d.done || d.consumed == 0 || pos == input.len() {
                return Ok(pos);
            }
        }
    }

    /// Whether the whole body has been decoded.
    pub fn is_done(&self) -> bool {
        match self {
            BodyDecoder::Length(d) => d.remaining == 0,
            BodyDecoder::Chunked(d) => d.is_done(),
            BodyDecoder::UntilClose { done } => *done,
        }
    }

    /// The peer closed its side: ends an until-close body.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TruncatedBody`] if a length-delimited or chunked body was not complete: a
    /// proxy must then not complete the body it relays (row P3).
    pub fn finish(&mut self) -> Result<(), Error> {
        match self {
            BodyDecoder::UntilClose { done } => {
                *done = true;
                Ok(())
            }
            BodyDecoder::Length(d) if d.remaining > 0 => Err(Error::new(ErrorKind::TruncatedBody, d.side)),
            BodyDecoder::Chunked(d) if !d.is_done() => Err(Error::new(ErrorKind::TruncatedBody, d.side)),
            _ => Ok(()),
        }
    }

    /// Bytes of a `Content-Length` body still expected; `None` for the other framings.
    pub fn length_remaining(&self) -> Option<u64> {
        match self {
            BodyDecoder::Length(d) => Some(d.remaining),
            _ => None,
        }
    }

    /// Counts `n` bytes of a `Content-Length` body that went by without being decoded (moved
    /// from socket to socket inside the kernel by `splice`, say), as [`decode`](Self::decode)
    /// of them would.
    ///
    /// # Panics
    /// Another framing, or `n` beyond [`length_remaining`](Self::length_remaining): the
    /// caller must never move more than the body has.
    pub fn skip(&mut self, n: u64) {
        match self {
            BodyDecoder::Length(d) if n <= d.remaining => d.remaining -= n,
            _ => panic!("skip({n}) past the end of a body ({self:?})"),
        }
    }

    /// Trailer fields of a finished chunked body (empty otherwise). They are not merged into the
    /// head: RFC 9110 §6.5.1 forbids that unless each field is known to be safe there.
    pub fn trailers(&self) -> &[Header<'static>] {
        match self {
            BodyDecoder::Chunked(d) => &d.trailers,
            _ => &[],
        }
    }
}

/// Counts down a `Content-Length`.
#[derive(Debug, Clone)]
pub struct LengthDecoder {
    remaining: u64,
    side: Side,
}

impl LengthDecoder {
    /// A decoder for `length` bytes.
    pub fn new(length: u64, side: Side) -> Self {
        LengthDecoder { remaining: length, side }
    }

    /// Bytes still expected.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    fn decode(&mut self, input: &[u8]) -> Decoded {
        let n = usize::try_from(self.remaining).map_or(input.len(), |r| r.min(input.len()));
        self.remaining -= n as u64;
        Decoded { consumed: n, data: 0..n, done: self.remaining == 0 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Hex digits of the size.
    Size,
    /// Whitespace after the size: only `;` (an extension) may follow.
    SizeSpace,
    /// Chunk extension bytes, up to CR.
    Extension,
    /// CR of the size line seen, LF expected.
    SizeLf,
    /// Data bytes of the current chunk.
    Data,
    /// CR after the data expected.
    DataCr,
    /// LF after the data expected.
    DataLf,
    /// Trailer section (or the final CRLF), collected until an empty line.
    Trailers,
    /// Body complete.
    Done,
    /// An error was returned; it is returned again.
    Failed(ErrorKind),
}

/// Incremental decoder of `Transfer-Encoding: chunked` (RFC 9112 §7.1).
///
/// Strict where parsers disagree (the smuggling shapes of rows S4–S6): the size is 1 to 16
/// hex digits and nothing else, whitespace after it is allowed only before `;`, every line ends
/// with CRLF, the byte after the data must be CR. Extensions are checked for control bytes and
/// counted against [`Limits::max_chunk_extensions`]; framing overhead above three quarters of
/// the bytes read, once past [`Limits::chunk_overhead_floor`], is refused (h2o's rule against
/// 1-byte-chunk floods).
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    side: Side,
    size: u64,
    digits: u8,
    remaining: u64,
    data_total: u64,
    overhead: u64,
    extension_bytes: usize,
    trailer_buf: Vec<u8>,
    trailers: Vec<Header<'static>>,
    max_body: Option<u64>,
    max_extensions: usize,
    overhead_floor: u64,
    max_trailers: usize,
    max_headers: usize,
}

impl ChunkedDecoder {
    /// A decoder for a chunked body sent by `side`; `limits.max_body` applies to requests only.
    pub fn new(side: Side, limits: &Limits) -> Self {
        ChunkedDecoder {
            state: State::Size,
            side,
            size: 0,
            digits: 0,
            remaining: 0,
            data_total: 0,
            overhead: 0,
            extension_bytes: 0,
            trailer_buf: Vec::new(),
            trailers: Vec::new(),
            max_body: if side == Side::Request { limits.max_body } else { None },
            max_extensions: limits.max_chunk_extensions,
            overhead_floor: limits.chunk_overhead_floor,
            max_trailers: limits.max_trailers,
            max_headers: limits.max_headers,
        }
    }

    /// Whether the last chunk and the trailer section have been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Trailer fields, once done.
    pub fn trailers(&self) -> &[Header<'static>] {
        &self.trailers
    }

    /// Consumes input: see [`Decoded`].
    ///
    /// # Errors
    ///
    /// See [`BodyDecoder::decode`].
    pub fn decode(&mut self, input: &[u8]) -> Result<Decoded, Error> {
        match self.decode_inner(input) {
            Ok(d) => Ok(d),
            Err(kind) => {
                self.state = State::Failed(kind);
                Err(Error::new(kind, self.side))
            }
        }
    }

    fn decode_inner(&mut self, input: &[u8]) -> Result<Decoded, ErrorKind> {
        let mut pos = 0;
        while pos < input.len() {
            match self.state {
                State::Done => break,
                State::Failed(kind) => return Err(kind),
                State::Data => {
                    let n = usize::try_from(self.remaining)
                        .map_or(input.len() - pos, |r| r.min(input.len() - pos));
                    self.remaining -= n as u64;
                    self.data_total += n as u64;
                    if self.remaining == 0 {
                        self.state = State::DataCr;
                    }
                    return Ok(Decoded { consumed: pos + n, data: pos..pos + n, done: false });
                }
                _ => {
                    self.framing_byte(input[pos])?;
                    pos += 1;
                }
            }
        }
        if let State::Failed(kind) = self.state {
            return Err(kind);
        }
        Ok(Decoded { consumed: pos, data: pos..pos, done: self.state == State::Done })
    }

    /// One byte of framing (anything but chunk data).
    fn framing_byte(&mut self, b: u8) -> Result<(), ErrorKind> {
        self.count_overhead()?;
        self.state = match (self.state, b) {
            (State::Size, _) if b.is_ascii_hexdigit() => {
                if self.digits == 16 {
                    return Err(ErrorKind::InvalidChunkSize);
                }
                self.digits += 1;
                self.size = self.size << 4 | u64::from(hex_value(b));
                State::Size
            }
            (State::Size | State::SizeSpace, b' ' | b'\t' | b';' | b'\r') if self.digits == 0 => {
                return Err(ErrorKind::InvalidChunkSize)
            }
            (State::Size | State::SizeSpace, b' ' | b'\t') => State::SizeSpace,
            (State::Size | State::SizeSpace, b';') => self.extension_byte(b)?,
            (State::Size | State::SizeSpace, b'\n') => return Err(ErrorKind::InvalidChunkLineEnding),
            (State::Size, b'\r') | (State::Extension, b'\r') => State::SizeLf,
            (State::Size | State::SizeSpace, _) => return Err(ErrorKind::InvalidChunkSize),
            (State::Extension, b'\n') => return Err(ErrorKind::InvalidChunkLineEnding),
            (State::Extension, _) => self.extension_byte(b)?,
            (State::SizeLf, b'\n') => self.chunk_start()?,
            (State::DataCr, b'\r') => State::DataLf,
            (State::DataCr, _) => return Err(ErrorKind::ChunkDataOverrun),
            (State::DataLf, b'\n') => State::Size,
            (State::SizeLf | State::DataLf, _) => return Err(ErrorKind::InvalidChunkLineEnding),
            (State::Trailers, _) => self.trailer_byte(b)?,
            (State::Data | State::Done | State::Failed(_), _) => unreachable!("not a framing state"),
        };
        Ok(())
    }

    fn extension_byte(&mut self, b: u8) -> Result<State, ErrorKind> {
        self.extension_bytes += 1;
        if self.extension_bytes > self.max_extensions {
            return Err(ErrorKind::ChunkExtensionsTooLarge);
        }
        if b != b'\t' && (b < b' ' || b == 0x7f) {
            return Err(ErrorKind::InvalidChunkExtension);
        }
        Ok(State::Extension)
    }

    fn chunk_start(&mut self) -> Result<State, ErrorKind> {
        let size = std::mem::take(&mut self.size);
        self.digits = 0;
        if size == 0 {
            return Ok(State::Trailers);
        }
        if self.max_body.is_some_and(|max| self.data_total.saturating_add(size) > max) {
            return Err(ErrorKind::BodyTooLarge);
        }
        self.remaining = size;
        Ok(State::Data)
    }

    fn trailer_byte(&mut self, b: u8) -> Result<State, ErrorKind> {
        let last = self.trailer_buf.last().copied();
        match (last, b) {
            (Some(b'\r'), b'\n') => {}
            (Some(b'\r'), _) | (_, b'\n') => return Err(ErrorKind::InvalidChunkLineEnding),
            _ => {}
        }
        if self.trailer_buf.len() == self.max_trailers {
            return Err(ErrorKind::TrailersTooLarge);
        }
        self.trailer_buf.push(b);
        if self.trailer_buf == b"\r\n" {
            self.trailer_buf = Vec::new();
            return Ok(State::Done);
        }
        if self.trailer_buf.ends_with(b"\r\n\r\n") {
            self.trailers = parse_trailers(&self.trailer_buf, self.max_headers)?;
            self.trailer_buf = Vec::new();
            return Ok(State::Done);
        }
        Ok(State::Trailers)
    }

    /// Every framing byte counts as overhead; checked per byte so the verdict does not depend on
    /// how the input was split.
    fn count_overhead(&mut self) -> Result<(), ErrorKind> {
        self.overhead += 1;
        let total = self.overhead + self.data_total;
        if self.overhead >= self.overhead_floor && self.data_total < total / 4 {
            return Err(ErrorKind::ChunkOverheadTooLarge);
        }
        Ok(())
    }
}

fn hex_value(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

fn parse_trailers(section: &[u8], max_headers: usize) -> Result<Vec<Header<'static>>, ErrorKind> {
    let mut slots = vec![httparse::EMPTY_HEADER; max_headers];
    match httparse::parse_headers(section, &mut slots) {
        Ok(httparse::Status::Complete((n, headers))) if n == section.len() => {
            Ok(headers.iter().map(|h| Header::new(h.name, h.value).into_owned()).collect())
        }
        Err(httparse::Error::TooManyHeaders) => Err(ErrorKind::TrailersTooLarge),
        _ => Err(ErrorKind::InvalidTrailer),
    }
}
