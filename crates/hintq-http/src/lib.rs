//! Sans-IO HTTP/1.1 for hintq: request and response heads, RFC 9112 framing, chunked coding,
//! limits and response writing. No sockets: the caller reads bytes, hands them in, and writes
//! what comes out. The static server, the reverse proxy and the load generator share it.
//!
//! # How it is used
//!
//! ```
//! use hintq_http::{parse_request, BodyDecoder, Framing, Limits, Side};
//!
//! let buf = b"POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
//! let limits = Limits::default();
//! let head = parse_request(buf, &limits).unwrap().expect("complete head");
//! assert_eq!(head.framing, Framing::Chunked);
//! let mut body = BodyDecoder::new(head.framing, Side::Request, &limits);
//! let mut data = Vec::new();
//! let used = body.decode_to_vec(&buf[head.head_len..], &mut data).unwrap();
//! assert!(body.is_done());
//! assert_eq!((data.as_slice(), head.head_len + used), (&b"abc"[..], buf.len()));
//! ```
//!
//! [`parse_request`] returns `Ok(None)` until the head is complete, so the caller keeps reading
//! into one buffer and calls again; every limit is also enforced on the incomplete head, so a
//! peer that never ends a line is refused once it passes the limit rather than buffered forever.
//! An [`Error`] carries the status to answer ([`Error::status`]) and whether to close
//! ([`Error::must_close`], always true: after a framing error the next message cannot be found).
//!
//! # Layers
//!
//! - `head`: [`scan_head`](parse_request) checks what `httparse` does not (line and head sizes,
//!   also on partial input; CRLF only; no leading whitespace on header lines; method bytes and
//!   length),
//!   then `httparse` checks tokens, target bytes, version and field-value bytes.
//! - `framing`: Content-Length, Transfer-Encoding, Host, Connection and Expect rules decide
//!   [`Framing`], keep-alive and `100-continue`.
//! - `body`: [`BodyDecoder`] over [`LengthDecoder`] and [`ChunkedDecoder`], incremental and
//!   copy-free (it returns ranges into the input).
//! - `write`: [`HeadWriter`], [`DateCache`], [`write_error_response`], chunk writers.
//! - `proxy`: [`strip_hop_by_hop`], [`add_via`]; [`end_to_end`] for writing a forwarded head
//!   without copying the list.
//! - `conditional`: validators, conditional and range requests (RFC 9110 §8.8, §13, §14):
//!   [`select`] decides 304, 200, 206 or 416 from the request's fields and a file's
//!   [`Validators`]; [`parse_range`], [`if_none_match`], [`if_range`] are its parts.
//!
//! # Choices where RFC 9112 leaves room, and whose behaviour we follow
//!
//! The rule throughout: where implementations disagree, take the strictest mature choice,
//! because a lenient parser behind (or in front of) a strict one is how requests are smuggled.
//!
//! | Case | Our answer | Followed |
//! |---|---|---|
//! | Content-Length and Transfer-Encoding together (S1) | 400 and close, also in responses (502) | nginx (`body_chunked.t`). HAProxy and hyper drop CL and use chunked, which the RFC allows, but then a proxy must re-frame; refusing removes the ambiguity before it can reach the proxy's forwarding path (row P5). |
//! | Content-Length `42, 42` or on two equal lines (S2) | collapsed to 42 | hyper, RFC 9110 §8.6¶13 |
//! | Content-Length differing, signed, hex, empty, > u64 (S2) | 400 | hyper; parsed with checked arithmetic |
//! | Transfer-Encoding other than exactly `chunked` (S3) | 501 when the list is well-formed (`identity`, `gzip`, `chunked, identity`, `gzip, chunked`); 400 when it is not (`,chunked`, empty) | nginx answers 501 for unknown codings; RFC 9112 §6.1¶11 says 501 SHOULD; we implement no coding but chunked, so `gzip, chunked` is also 501 |
//! | Transfer-Encoding on two lines (S3) | 400 | nginx |
//! | Transfer-Encoding in HTTP/1.0 (S3) | 400 and close | nginx, hyper, RFC 9112 §6.1¶16 |
//! | Bad Transfer-Encoding in a response (P2) | error → 502 | h2o (`50reverse-proxy-invalid-transfer-encoding.t`); stricter than RFC 9112 §6.3, which would read until close |
//! | Bare LF as a line end | 400 everywhere (head, chunk lines, trailers) | RFC 9112 §2.2 makes accepting it a MAY; refusing is the only way to honour S8 ("LF inside a value") since a bare LF cannot be told apart from a line end. nginx and httparse accept it. |
//! | obs-fold, whitespace before the first header (S7) | 400 | h2o; RFC 9112 §5.2¶4 allows 400 |
//! | Request line too long / method too long / header line, count, section too large (S10) | 414 / 501 / 431 | RFC 9112 §3¶4; 431 (RFC 6585) where nginx says 400 |
//! | A non-token byte where the method belongs (random bytes, a TLS hello, `GE(T`) | 400 at once, at any length; only an over-long method of token bytes is 501 | RFC 9110 §9.1 (method = token); nginx answers 400 for bytes outside its method alphabet |
//! | Version `HTTP/2.0`, `HTTP/1.2` | 505; other garbage 400, also a space in the target (`GET /a b HTTP/1.1` has `b HTTP/1.1` where the version belongs) | nginx for `HTTP/2.0`; httparse takes only 1.0 and 1.1 |
//! | Chunk size | 1–16 hex digits only; whitespace only before `;` | httparse's 16-digit bound; stricter than hyper on trailing whitespace |
//! | Chunk extensions | control bytes refused; 16 KiB per body | hyper's limit |
//! | Chunk overhead (S6) | refused past 100 KiB of overhead when data is under a quarter of what was read | h2o / picohttpparser's rule, checked per byte so the verdict does not depend on read sizes |
//! | `Expect` other than `100-continue` in HTTP/1.1 (S17) | 417 | RFC 9110 §10.1.1 MAY; ignored in HTTP/1.0 |
//! | Host | HTTP/1.1 needs exactly one; any version refuses two, an empty host (`Host:`, `Host: :80`, also beside an absolute-form target) and bytes no authority contains | RFC 9112 §3.2¶6, RFC 9110 §4.2.1 (an "http" URI with an empty host is invalid), nginx `http_host.t` and `ngx_http_validate_host` |
//! | Invalid CL/TE in 204/304/HEAD responses | still an error (502) | strictness: such an upstream is broken |
//! | Range with two or more ranges, invalid syntax, another unit, or on two lines | ignored: full 200 | RFC 9110 §14.2¶3,¶5 allow ignoring Range; multipart/byteranges is not implemented |
//! | Range numbers beyond `u64` | saturated: first-pos → 416, last-pos clamped, suffix → whole | RFC 9110 §14.1.1 has no bound on digits; never an overflow |
//! | If-None-Match that does not parse | matches nothing (full 200), still overrides If-Modified-Since | RFC 9110 §13.2.2 (presence decides) |
//!
//! Not supported: CONNECT tunnels and `101 Switching Protocols` (the caller sees the head and
//! decides), transfer codings other than chunked.
#![warn(missing_docs)]

mod body;
mod conditional;
mod error;
mod framing;
mod head;
mod headers;
mod limits;
mod proxy;
mod write;

pub use body::{BodyDecoder, ChunkedDecoder, Decoded, LengthDecoder};
pub use conditional::{
    if_none_match, if_range, parse_range, select, ByteRange, RangeRequest, Resolved, Selected, Validators,
};
pub use error::{Error, ErrorKind, Side};
pub use framing::Framing;
pub use head::{find_header, parse_request, parse_response, Header, RequestHead, ResponseHead, Version};
pub use headers::{Headers, INLINE_HEADERS};
pub use limits::Limits;
pub use proxy::{add_via, end_to_end, is_hop_by_hop, strip_hop_by_hop, HOP_BY_HOP};
pub use write::{
    error_body, http_date, reason, write_chunk, write_chunk_end, write_chunk_header, write_error_response,
    write_last_chunk, DateCache, Fields, HeadWriter,
};
