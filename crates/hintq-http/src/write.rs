//! Writing heads, error responses and chunked bodies into a `Vec<u8>`.

use std::io::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::head::{Header, Version};

/// The canonical reason phrase of `status` (RFC 9110 §15), or `""` for codes without one.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Writes a head field by field into a buffer; [`finish`](Self::finish) adds the empty line.
///
/// Values are written as given except that CR, LF and NUL become SP (RFC 9110 §5.5¶5), so no
/// value can split a response or smuggle a header (row P7) even if a caller forgot to check.
#[derive(Debug)]
pub struct HeadWriter<'b> {
    buf: &'b mut Vec<u8>,
}

impl<'b> HeadWriter<'b> {
    /// Starts a response: `HTTP/1.1 200 OK`.
    pub fn response(buf: &'b mut Vec<u8>, version: Version, status: u16) -> Self {
        buf.extend_from_slice(version.as_str().as_bytes());
        // A status outside 100..=999 would not be three digits; clamp rather than write garbage.
        // Three digits written by hand: `write!` cost 2% of a small response's user time.
        let status3 = status.clamp(100, 999);
        let digits = [
            b' ',
            b'0' + (status3 / 100) as u8,
            b'0' + (status3 / 10 % 10) as u8,
            b'0' + (status3 % 10) as u8,
            b' ',
        ];
        buf.extend_from_slice(&digits);
        buf.extend_from_slice(reason(status).as_bytes());
        buf.extend_from_slice(b"\r\n");
        HeadWriter { buf }
    }

    /// Starts a request: `GET /x HTTP/1.1`.
    pub fn request(buf: &'b mut Vec<u8>, method: &str, target: &str, version: Version) -> Self {
        for part in [method, " ", target, " ", version.as_str(), "\r\n"] {
            buf.extend_from_slice(part.as_bytes());
        }
        HeadWriter { buf }
    }

    /// Adds `name: value`.
    pub fn header(&mut self, name: &str, value: &[u8]) -> &mut Self {
        debug_assert!(
            !name.is_empty() && name.bytes().all(crate::framing::is_token_byte),
            "bad name {name:?}"
        );
        self.buf.reserve(name.len() + value.len() + 4);
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.extend_from_slice(b": ");
        let start = self.buf.len();
        self.buf.extend_from_slice(value);
        if has_line_break_or_nul(value) {
            let mut at = start;
            while let Some(i) = memchr::memchr3(b'\r', b'\n', 0, &self.buf[at..]) {
                self.buf[at + i] = b' ';
                at += i + 1;
            }
        }
        self.buf.extend_from_slice(b"\r\n");
        self
    }

    /// Adds every header of `headers`, in order.
    pub fn headers(&mut self, headers: &[Header<'_>]) -> &mut Self {
        for h in headers {
            self.header(&h.name, &h.value);
        }
        self
    }

    /// Adds `Content-Length: n`.
    pub fn content_length(&mut self, n: u64) -> &mut Self {
        let mut digits = [0u8; 20];
        let len = format_u64(n, &mut digits);
        self.header("Content-Length", &digits[..len])
    }

    /// Adds `Content-Range: bytes first-last/len` for `Some((first, last))`, or
    /// `Content-Range: bytes */len` (a 416) for `None` (RFC 9110 §14.4).
    pub fn content_range(&mut self, range: Option<(u64, u64)>, len: u64) -> &mut Self {
        let mut v = [0u8; 6 + 20 + 1 + 20 + 1 + 20];
        v[..6].copy_from_slice(b"bytes ");
        let mut at = 6;
        let mut digits = [0u8; 20];
        let put = |v: &mut [u8], at: &mut usize, bytes: &[u8]| {
            v[*at..*at + bytes.len()].copy_from_slice(bytes);
            *at += bytes.len();
        };
        match range {
            Some((first, last)) => {
                let n = format_u64(first, &mut digits);
                put(&mut v, &mut at, &digits[..n]);
                put(&mut v, &mut at, b"-");
                let n = format_u64(last, &mut digits);
                put(&mut v, &mut at, &digits[..n]);
            }
            None => put(&mut v, &mut at, b"*"),
        }
        put(&mut v, &mut at, b"/");
        let n = format_u64(len, &mut digits);
        put(&mut v, &mut at, &digits[..n]);
        self.header("Content-Range", &v[..at])
    }

    /// Adds `Transfer-Encoding: chunked`.
    pub fn chunked(&mut self) -> &mut Self {
        self.header("Transfer-Encoding", b"chunked")
    }

    /// Adds `Date:` with an IMF-fixdate from [`DateCache::get`] (or any preformatted date).
    pub fn date(&mut self, date: &[u8]) -> &mut Self {
        self.header("Date", date)
    }

    /// Adds `Connection: close`.
    pub fn connection_close(&mut self) -> &mut Self {
        self.header("Connection", b"close")
    }

    /// Adds header lines written once before (see [`Fields`]): a server that answers the
    /// same fields many times (a cached file's type, length and validators) writes them once.
    pub fn fields(&mut self, fields: &Fields) -> &mut Self {
        self.buf.extend_from_slice(&fields.0);
        self
    }

    /// Ends the head with the empty line.
    pub fn finish(self) {
        self.buf.extend_from_slice(b"\r\n");
    }
}

/// Header lines written by a [`HeadWriter`], kept to be added to many heads with
/// [`HeadWriter::fields`]. Only a `HeadWriter` makes them, so they carry its guarantee: no CR,
/// LF or NUL inside a value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields(Box<[u8]>);

impl Fields {
    /// The lines `write` adds.
    pub fn build(write: impl FnOnce(&mut HeadWriter<'_>)) -> Fields {
        let mut buf = Vec::new();
        write(&mut HeadWriter { buf: &mut buf });
        Fields(buf.into())
    }

    /// The lines as bytes, each ending in CRLF.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

fn format_u64(mut n: u64, out: &mut [u8; 20]) -> usize {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let len = tmp.len() - i;
    out[..len].copy_from_slice(&tmp[i..]);
    len
}

/// `Date` header values, one second of the wall clock at a time, that second placed on the
/// monotonic clock: a response whose time (an [`Instant`], such as the batch time of the
/// server's runtime) falls in the cached second gets its `Date` and Unix seconds with one
/// comparison, without reading the wall clock or formatting (nginx likewise caches its time
/// strings). The wall clock is read again when the time leaves the second, so a step of the
/// wall clock shows within a second.
#[derive(Debug, Clone, Copy, Default)]
pub struct DateCache {
    second: Option<Second>,
}

/// One second of the wall clock: the monotonic interval `[from, until)` it covers.
#[derive(Debug, Clone, Copy)]
struct Second {
    from: Instant,
    until: Instant,
    /// Whole seconds since the Unix epoch.
    unix: u64,
    /// The IMF-fixdate of `unix`.
    text: [u8; 29],
}

impl DateCache {
    /// An empty cache; the first call reads the wall clock.
    pub const fn new() -> Self {
        DateCache { second: None }
    }

    /// The cached second `now` falls in, read from the wall clock if it is another.
    fn second(&mut self, now: Instant) -> &Second {
        match self.second {
            Some(s) if now >= s.from && now < s.until => {}
            _ => {
                let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
                let left = Duration::from_nanos(u64::from(1_000_000_000 - since.subsec_nanos()));
                let unix = since.as_secs();
                self.second = Some(Second { from: now, until: now + left, unix, text: http_date(unix) });
            }
        }
        self.second.as_ref().expect("set above")
    }

    /// The IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, always 29 bytes) for a response made
    /// at `now`.
    pub fn get(&mut self, now: Instant) -> &[u8; 29] {
        &self.second(now).text
    }

    /// Whole seconds since the Unix epoch at `now` (the same second as [`DateCache::get`]'s).
    pub fn unix(&mut self, now: Instant) -> u64 {
        self.second(now).unix
    }
}

/// `secs` since the Unix epoch as an IMF-fixdate (`Last-Modified`, `Date`).
pub fn http_date(secs: u64) -> [u8; 29] {
    let mut out = [0; 29];
    let t = UNIX_EPOCH + Duration::from_secs(secs.min(253_402_300_799));
    out.copy_from_slice(&httpdate::fmt_http_date(t).as_bytes()[..29]);
    out
}

/// Whether `value` holds CR, LF or NUL (blanked when written). A short value, as most are, is
/// looked at eight bytes at a time for any byte below SP (CR, LF and NUL are among them, as is
/// HTAB, which a value may hold): a word test costs about what the byte-wise pass cost per
/// byte (callgrind counted 70 instructions a field for that pass, 9 fields a proxied request).
/// Only a value with such a byte is looked at byte by byte. A long one goes to `memchr3`,
/// whose set-up alone costs more than the short pass. A byte-by-byte rewrite of every value
/// cost about 1% of a static response's CPU: values are only rewritten when this finds a bad
/// byte.
fn has_line_break_or_nul(value: &[u8]) -> bool {
    if value.len() >= 64 {
        return memchr::memchr3(b'\r', b'\n', 0, value).is_some();
    }
    // A word has a byte below `n` (n <= 128) iff `(w - n*ONES) & !w & HIGH` is not zero.
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let below_space = |w: u64| w.wrapping_sub(ONES * 0x20) & !w & HIGH != 0;
    let mut words = value.chunks_exact(8);
    let control = (&mut words)
        .fold(false, |any, w| any | below_space(u64::from_ne_bytes(w.try_into().expect("eight bytes"))))
        || words.remainder().iter().any(|&b| b < 0x20);
    control && value.iter().any(|&b| matches!(b, b'\r' | b'\n' | 0))
}

/// Writes a complete error response: status line, `Date` (when given), a short `text/plain`
/// body naming the status (`404 Not Found\n`), `Content-Length`, and `Connection: close` when
/// `close`. With `head_request` the body is left out (the length stays).
///
/// For statuses that need more headers (405 needs `Allow`) build the head with [`HeadWriter`]
/// and the body with [`error_body`].
pub fn write_error_response(
    buf: &mut Vec<u8>,
    status: u16,
    date: Option<&[u8]>,
    close: bool,
    head_request: bool,
) {
    let body = error_body(status);
    let mut w = HeadWriter::response(buf, Version::Http11, status);
    if let Some(date) = date {
        w.date(date);
    }
    w.header("Content-Type", b"text/plain; charset=utf-8").content_length(body.len() as u64);
    if close {
        w.connection_close();
    }
    w.finish();
    if !head_request {
        buf.extend_from_slice(body.as_bytes());
    }
}

/// The short body of an error response: `"413 Content Too Large\n"`.
pub fn error_body(status: u16) -> String {
    format!("{status} {}\n", reason(status))
}

/// Writes the size line of a chunk of `len` bytes (`len` must not be 0: that is the last
/// chunk). With [`write_chunk_end`] after the data it lets a proxy send data without copying.
pub fn write_chunk_header(buf: &mut Vec<u8>, len: usize) {
    debug_assert!(len > 0, "a zero-size chunk ends the body");
    let _ = write!(buf, "{len:x}\r\n");
}

/// Writes the CRLF that closes a chunk's data.
pub fn write_chunk_end(buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"\r\n");
}

/// Writes `data` as one chunk; writes nothing for empty data (an empty chunk would end the
/// body).
pub fn write_chunk(buf: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    write_chunk_header(buf, data.len());
    buf.extend_from_slice(data);
    write_chunk_end(buf);
}

/// Writes the last chunk, `trailers`, and the final CRLF. A proxy relaying a body that was cut
/// short must not call this: the missing last chunk is how the client learns of the truncation
/// (row P3).
pub fn write_last_chunk(buf: &mut Vec<u8>, trailers: &[Header<'_>]) {
    buf.extend_from_slice(b"0\r\n");
    let mut w = HeadWriter { buf };
    w.headers(trailers);
    w.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-wise test finds CR, LF and NUL wherever they are, beside any other bytes
    /// (SP, HTAB, obs-text, DEL: the borrows of the word arithmetic cross such neighbours).
    #[test]
    fn every_bad_byte_is_found_at_every_place() {
        for fill in [b'a', b' ', b'\t', 0x7f, 0x80, 0xff] {
            for len in (1..=17).chain([31, 32, 33, 63, 64, 65]) {
                for at in 0..len {
                    for b in 0..=255u8 {
                        let mut v = vec![fill; len];
                        v[at] = b;
                        let naive = v.iter().any(|&b| matches!(b, b'\r' | b'\n' | 0));
                        assert_eq!(has_line_break_or_nul(&v), naive, "{v:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_value_with_a_line_break_is_blanked() {
        let mut out = Vec::new();
        HeadWriter::response(&mut out, Version::Http11, 200).header("X", b"a\r\nEvil: 1\0");
        assert_eq!(out, b"HTTP/1.1 200 OK\r\nX: a  Evil: 1 \r\n");
    }
}
