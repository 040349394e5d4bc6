//! Request and response heads: the line scan that enforces limits and CRLF, then `httparse`.
//!
//! `httparse` validates tokens, the target, the version and field bytes. It does not bound line
//! lengths, tolerates bare LF as a line end (RFC 9112 §2.2 allows a MAY), and knows nothing of
//! framing. [`scan_head`] adds exactly those checks before `httparse` runs.

use std::borrow::Cow;
use std::mem::MaybeUninit;

use crate::error::{Error, ErrorKind, Side};
use crate::framing::{self, is_token_byte, Framing};
use crate::headers::Headers;
use crate::Limits;

/// The protocol version of a message. Only HTTP/1.0 and HTTP/1.1 parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// HTTP/1.0
    Http10,
    /// HTTP/1.1
    Http11,
}

impl Version {
    /// `"HTTP/1.0"` or `"HTTP/1.1"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }

    fn from_minor(minor: u8) -> Self {
        if minor == 0 {
            Version::Http10
        } else {
            Version::Http11
        }
    }
}

/// One header field, borrowed from the input or owned (see [`RequestHead::into_owned`]).
/// The name keeps the case the peer sent; values are validated bytes (no NUL, CR, LF or other
/// control bytes except HTAB) with surrounding whitespace trimmed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Header<'a> {
    /// Field name, a token.
    pub name: Cow<'a, str>,
    /// Field value.
    pub value: Cow<'a, [u8]>,
}

impl<'a> Header<'a> {
    /// A header borrowing its name and value.
    pub fn new(name: &'a str, value: &'a [u8]) -> Self {
        Header { name: Cow::Borrowed(name), value: Cow::Borrowed(value) }
    }

    /// Copies whatever is borrowed.
    pub fn into_owned(self) -> Header<'static> {
        Header { name: Cow::Owned(self.name.into_owned()), value: Cow::Owned(self.value.into_owned()) }
    }

    /// Whether the name equals `name`, ignoring ASCII case.
    #[inline]
    pub fn is(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }
}

/// The first value of `name` among `headers`, ignoring case.
pub fn find_header<'h>(headers: &'h [Header<'_>], name: &str) -> Option<&'h [u8]> {
    headers.iter().find(|h| h.is(name)).map(|h| &*h.value)
}

/// A parsed request head with its framing decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead<'a> {
    /// Method token, case kept (methods are case-sensitive).
    pub method: Cow<'a, str>,
    /// Request target as sent (origin-form, absolute-form, authority-form or `*`).
    pub target: Cow<'a, str>,
    /// HTTP/1.0 or HTTP/1.1.
    pub version: Version,
    /// Header fields in the order received.
    pub headers: Headers<'a>,
    /// How the body is delimited: [`Framing::None`] without Content-Length and
    /// Transfer-Encoding, [`Framing::Length`] or [`Framing::Chunked`]; never `UntilClose`.
    pub framing: Framing,
    /// Whether the connection may serve another request after this one (HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
    pub keep_alive: bool,
    /// `Expect: 100-continue` in an HTTP/1.1 request: send `100 Continue` before reading the
    /// body (or answer finally without reading it, and close). Ignored in HTTP/1.0.
    pub expect_continue: bool,
    /// Bytes of input the head occupied, leading empty lines included; the body starts there.
    pub head_len: usize,
}

impl<'a> RequestHead<'a> {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        find_header(&self.headers, name)
    }

    /// Whether the method is `HEAD` (its response carries no body).
    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }

    /// Copies whatever is borrowed from the input buffer, so the buffer can be reused.
    pub fn into_owned(self) -> RequestHead<'static> {
        RequestHead {
            method: Cow::Owned(self.method.into_owned()),
            target: Cow::Owned(self.target.into_owned()),
            headers: self.headers.into_owned(),
            version: self.version,
            framing: self.framing,
            keep_alive: self.keep_alive,
            expect_continue: self.expect_continue,
            head_len: self.head_len,
        }
    }
}

/// A parsed response head with its framing decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead<'a> {
    /// HTTP/1.0 or HTTP/1.1.
    pub version: Version,
    /// Three-digit status code.
    pub status: u16,
    /// Reason phrase (may be empty).
    pub reason: Cow<'a, str>,
    /// Header fields in the order received.
    pub headers: Headers<'a>,
    /// How the body is delimited (RFC 9112 §6.3): `None` for HEAD, 1xx, 204, 304; else
    /// chunked, Content-Length, or until close.
    pub framing: Framing,
    /// Whether the connection may carry another request: version rule and `Connection`, and
    /// never when the body is delimited by close.
    pub keep_alive: bool,
    /// Bytes of input the head occupied; the body starts there.
    pub head_len: usize,
}

impl<'a> ResponseHead<'a> {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        find_header(&self.headers, name)
    }

    /// Whether this is an interim (1xx) response; the final response follows it.
    pub fn is_informational(&self) -> bool {
        (100..200).contains(&self.status)
    }

    /// Copies whatever is borrowed from the input buffer.
    pub fn into_owned(self) -> ResponseHead<'static> {
        ResponseHead {
            reason: Cow::Owned(self.reason.into_owned()),
            headers: self.headers.into_owned(),
            version: self.version,
            status: self.status,
            framing: self.framing,
            keep_alive: self.keep_alive,
            head_len: self.head_len,
        }
    }
}

/// Parses a request head from the start of `buf`.
///
/// Returns `Ok(None)` while the head is incomplete and within limits (read more and call again
/// with the whole buffer), `Ok(Some(head))` once complete, and `Err` with the status to answer
/// otherwise. Empty lines (CRLF) before the request line are skipped (RFC 9112 §2.2¶6).
///
/// # Errors
///
/// Any [`ErrorKind`] of the head and framing rules; [`Error::status`] is what to answer and the
/// connection must be closed afterwards.
pub fn parse_request<'a>(buf: &'a [u8], limits: &Limits) -> Result<Option<RequestHead<'a>>, Error> {
    // The common case first: a whole head, parsed once. Kept only if it passes every rule
    // the line scan enforces; anything else (incomplete, invalid, over a limit) is judged by
    // the scan and then `httparse`, as if this attempt had not been made.
    let mut slots = HeaderSlots::new(limits.max_headers);
    let mut req = httparse::Request::new(&mut []);
    if let Ok(httparse::Status::Complete(n)) = req.parse_with_uninit_headers(buf, slots.get()) {
        let method = req.method.unwrap_or_default();
        let line_starts = req.headers.iter().map(|h| offset_in(buf, h.name));
        if offset_in(buf, method) == leading_crlf(buf)
            && method.len() <= limits.max_method
            && lines_fit(buf, n, line_starts, limits)
        {
            return request_head(&req, n, limits);
        }
    }
    parse_request_scanned(buf, limits)
}

/// [`parse_request`] without the common-case attempt: the line scan, then `httparse` on the
/// head it found.
fn parse_request_scanned<'a>(buf: &'a [u8], limits: &Limits) -> Result<Option<RequestHead<'a>>, Error> {
    let err = |kind| Error::new(kind, Side::Request);
    let Some(head_len) = scan_head(buf, limits, Side::Request).map_err(err)? else {
        return Ok(None);
    };
    let mut slots = HeaderSlots::new(limits.max_headers);
    let mut req = httparse::Request::new(&mut []);
    match req.parse_with_uninit_headers(&buf[..head_len], slots.get()) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(err(ErrorKind::InvalidStartLine)),
        Err(e) => return Err(err(map_httparse(e, &buf[..head_len], Side::Request))),
    }
    request_head(&req, head_len, limits)
}

/// The head `req` parsed, as [`parse_request`] returns it. Built where it is returned, its
/// fields pushed into it there: a head is most of a kilobyte (its inline header slots), and
/// moving it through each layer of `Result` and `Option` was a tenth of a static request's
/// instructions in `hintq serve`.
fn request_head<'a>(
    req: &httparse::Request<'_, 'a>,
    head_len: usize,
    limits: &Limits,
) -> Result<Option<RequestHead<'a>>, Error> {
    let version = Version::from_minor(req.version.unwrap_or(1));
    let mut out = Ok(Some(RequestHead {
        method: Cow::Borrowed(req.method.unwrap_or_default()),
        target: Cow::Borrowed(req.path.unwrap_or_default()),
        version,
        headers: Headers::new(),
        framing: Framing::None,
        keep_alive: false,
        expect_continue: false,
        head_len,
    }));
    let Ok(Some(head)) = &mut out else { unreachable!("made above") };
    push_headers(&mut head.headers, req.headers);
    match framing::request(version, &head.headers, limits) {
        Ok(info) => {
            head.framing = info.framing;
            head.keep_alive = info.keep_alive;
            head.expect_continue = info.expect_continue;
        }
        // Into `out` too: every path returns that one value, which is then made in place.
        Err(kind) => out = Err(Error::new(kind, Side::Request)),
    }
    out
}

/// Parses a response head from the start of `buf`. `request_was_head` says whether the request
/// it answers was a HEAD (then it has no body whatever its headers say).
///
/// Returns `Ok(None)` while incomplete. The status line is bounded by
/// [`Limits::max_request_line`]; [`Limits::max_body`] does not apply.
///
/// # Errors
///
/// Any violation, with [`Error::status`] 502: close the upstream connection, discard the
/// response, answer 502 downstream (RFC 9112 §6.3, row P2).
pub fn parse_response<'a>(
    buf: &'a [u8],
    limits: &Limits,
    request_was_head: bool,
) -> Result<Option<ResponseHead<'a>>, Error> {
    let config = httparse::ParserConfig::default();
    // The common case first, as in `parse_request`.
    let mut slots = HeaderSlots::new(limits.max_headers);
    let mut res = httparse::Response::new(&mut []);
    if let Ok(httparse::Status::Complete(n)) =
        config.parse_response_with_uninit_headers(&mut res, buf, slots.get())
    {
        let line_starts = res.headers.iter().map(|h| offset_in(buf, h.name));
        if buf[leading_crlf(buf)..].starts_with(b"HTTP/") && lines_fit(buf, n, line_starts, limits) {
            return response_head(&res, n, request_was_head);
        }
    }
    parse_response_scanned(buf, limits, request_was_head)
}

/// [`parse_response`] without the common-case attempt.
fn parse_response_scanned<'a>(
    buf: &'a [u8],
    limits: &Limits,
    request_was_head: bool,
) -> Result<Option<ResponseHead<'a>>, Error> {
    let err = |kind| Error::new(kind, Side::Response);
    let config = httparse::ParserConfig::default();
    let Some(head_len) = scan_head(buf, limits, Side::Response).map_err(err)? else {
        return Ok(None);
    };
    let mut slots = HeaderSlots::new(limits.max_headers);
    let mut res = httparse::Response::new(&mut []);
    match config.parse_response_with_uninit_headers(&mut res, &buf[..head_len], slots.get()) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(err(ErrorKind::InvalidStartLine)),
        Err(e) => return Err(err(map_httparse(e, &buf[..head_len], Side::Response))),
    }
    response_head(&res, head_len, request_was_head)
}

/// The head `res` parsed, as [`parse_response`] returns it, built in place as
/// [`request_head`] is.
fn response_head<'a>(
    res: &httparse::Response<'_, 'a>,
    head_len: usize,
    request_was_head: bool,
) -> Result<Option<ResponseHead<'a>>, Error> {
    let version = Version::from_minor(res.version.unwrap_or(1));
    let status = res.code.unwrap_or_default();
    let mut out = Ok(Some(ResponseHead {
        version,
        status,
        reason: Cow::Borrowed(res.reason.unwrap_or_default()),
        headers: Headers::new(),
        framing: Framing::None,
        keep_alive: false,
        head_len,
    }));
    let Ok(Some(head)) = &mut out else { unreachable!("made above") };
    push_headers(&mut head.headers, res.headers);
    match framing::response(version, status, request_was_head, &head.headers) {
        Ok(info) => {
            head.framing = info.framing;
            head.keep_alive = info.keep_alive;
        }
        Err(kind) => out = Err(Error::new(kind, Side::Response)),
    }
    out
}

/// Where `part` (a slice of `buf`) starts in `buf`.
fn offset_in(buf: &[u8], part: &str) -> usize {
    (part.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize)
}

/// Whether a head `httparse` found complete in `buf[..n]`, whose header lines start at
/// `line_starts`, keeps every rule of [`scan_head`]: each line (the start line after the
/// leading empty lines, each header line, the empty line) ends in CRLF, none is longer than its
/// limit and the head fits `max_head`. Then the scan would have found the same end, and the
/// head can be used without it. (`httparse` has already refused a bare CR, a line break inside
/// a line, whitespace before a name and more header lines than its `max_headers` slots, and
/// skipped leading empty lines, which the caller checks against [`leading_crlf`].)
fn lines_fit(buf: &[u8], n: usize, line_starts: impl Iterator<Item = usize>, limits: &Limits) -> bool {
    if n > limits.max_head || n < 2 || buf[n - 2..n] != *b"\r\n" {
        return false;
    }
    let (mut line, mut max) = (leading_crlf(buf), limits.max_request_line);
    for next in line_starts.chain(std::iter::once(n - 2)) {
        if next < line + 2 || next > n || buf[next - 2..next] != *b"\r\n" || next - 2 - line > max {
            return false;
        }
        (line, max) = (next, limits.max_header_line);
    }
    true
}

/// Header slots on the stack; a higher `Limits::max_headers` puts them on the heap.
const STACK_HEADERS: usize = 128;

/// Header slots for `httparse`, left uninitialised: it writes the ones it fills (initialising
/// all 128 cost a 4 KiB copy per head). On the stack unless `Limits::max_headers` is higher.
struct HeaderSlots<'b> {
    stack: [MaybeUninit<httparse::Header<'b>>; STACK_HEADERS],
    heap: Vec<MaybeUninit<httparse::Header<'b>>>,
    len: usize,
}

impl<'b> HeaderSlots<'b> {
    fn new(len: usize) -> Self {
        let mut heap = Vec::new();
        if len > STACK_HEADERS {
            heap.resize(len, MaybeUninit::uninit());
        }
        HeaderSlots { stack: [MaybeUninit::uninit(); STACK_HEADERS], heap, len }
    }

    fn get(&mut self) -> &mut [MaybeUninit<httparse::Header<'b>>] {
        if self.len > STACK_HEADERS {
            &mut self.heap
        } else {
            &mut self.stack[..self.len]
        }
    }
}

/// Appends the fields `httparse` filled (its slots past them are empty).
fn push_headers<'a>(headers: &mut Headers<'a>, parsed: &[httparse::Header<'a>]) {
    for h in parsed.iter().take_while(|h| !h.name.is_empty()) {
        headers.push(Header::new(h.name, h.value));
    }
}

fn map_httparse(e: httparse::Error, head: &[u8], side: Side) -> ErrorKind {
    match e {
        httparse::Error::HeaderName => ErrorKind::InvalidHeaderName,
        httparse::Error::HeaderValue => ErrorKind::InvalidHeaderValue,
        httparse::Error::TooManyHeaders => ErrorKind::TooManyHeaders,
        httparse::Error::Version if is_other_version(version_slot(head, side)) => {
            ErrorKind::UnsupportedVersion
        }
        _ => ErrorKind::InvalidStartLine,
    }
}

/// Where the start line keeps its version: everything after the second SP of a request line
/// (`token SP target SP version`, so `GET /pa th HTTP/1.1` leaves `th HTTP/1.1`, not a
/// version), or before the first SP of a status line.
fn version_slot(head: &[u8], side: Side) -> &[u8] {
    let head = trim_leading_crlf(head);
    let line_end = memchr::memchr(b'\r', head).unwrap_or(head.len());
    let mut parts = head[..line_end].splitn(3, |&b| b == b' ');
    let slot = match side {
        Side::Request => parts.nth(2),
        Side::Response => parts.next(),
    };
    slot.unwrap_or_default()
}

/// Whether `version` is exactly a well-formed `HTTP/d.d`: then it is merely unsupported (505,
/// as nginx answers `HTTP/2.0`) rather than garbage (400).
fn is_other_version(version: &[u8]) -> bool {
    matches!(version, [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
        if major.is_ascii_digit() && minor.is_ascii_digit())
}

/// The length of the empty lines (CRLF) at the start of `buf`.
fn leading_crlf(buf: &[u8]) -> usize {
    buf.len() - trim_leading_crlf(buf).len()
}

fn trim_leading_crlf(mut buf: &[u8]) -> &[u8] {
    while let Some(rest) = buf.strip_prefix(b"\r\n") {
        buf = rest;
    }
    buf
}

/// Finds the end of the head (the index after its empty line) while enforcing what `httparse`
/// does not: line and head limits (also on partial input), CRLF as the only line end, no
/// whitespace at the start of a header line, and the method's bytes and length.
///
/// Returns `Ok(None)` while incomplete and within limits.
fn scan_head(buf: &[u8], limits: &Limits, side: Side) -> Result<Option<usize>, ErrorKind> {
    let start = leading_crlf(buf);
    if side == Side::Request {
        // Bytes past `max_head` are judged by the head limit instead, which is passed first.
        let window = buf.get(start..buf.len().min(limits.max_head)).unwrap_or_default();
        check_method(window, limits.max_method)?;
    }
    let mut pos = start;
    let mut line_index = 0usize;
    loop {
        let Some(offset) = memchr::memchr(b'\n', &buf[pos..]) else {
            return check_partial_line(buf, pos, line_index, limits).map(|()| None);
        };
        let lf = pos + offset;
        check_partial_line(&buf[..lf], pos, line_index, limits)?;
        if lf == pos || buf[lf - 1] != b'\r' {
            return Err(ErrorKind::BareLf);
        }
        if lf + 1 > limits.max_head {
            return Err(ErrorKind::HeadTooLarge);
        }
        if line_index > 0 && lf - 1 == pos {
            return Ok(Some(lf + 1));
        }
        pos = lf + 1;
        line_index += 1;
    }
}

/// Checks the method as its bytes arrive (RFC 9110 §9.1: method = token). A byte that is
/// neither tchar nor SP, CR or LF means the line is garbage, not a method: 400, whatever the
/// length (random bytes, a TLS hello). More than `max_method` tchar is a well-formed method
/// longer than any we implement: 501 (RFC 9112 §3¶4). Line ends are left to the line scan.
fn check_method(line: &[u8], max_method: usize) -> Result<(), ErrorKind> {
    let window = &line[..line.len().min(max_method.saturating_add(1))];
    match window.iter().position(|&b| !is_token_byte(b)) {
        Some(end) if matches!(window[end], b' ' | b'\r' | b'\n') => Ok(()),
        Some(_) => Err(ErrorKind::InvalidStartLine),
        None if window.len() > max_method => Err(ErrorKind::MethodTooLong),
        None => Ok(()),
    }
}

/// Checks on the line being received (from `pos` to the end of `buf`, no LF yet). Each check is
/// monotone in the input length and, where two limits are passed, the one passed first is
/// reported: the verdict is the same however the input was split into reads. A lone CR may be
/// the start of the empty line that ends the head.
fn check_partial_line(buf: &[u8], pos: usize, line_index: usize, limits: &Limits) -> Result<(), ErrorKind> {
    let rest = &buf[pos..];
    if line_index > 0 && !rest.is_empty() && rest != b"\r" {
        if line_index > limits.max_headers {
            return Err(ErrorKind::TooManyHeaders);
        }
        if matches!(rest[0], b' ' | b'\t') {
            return Err(ErrorKind::ObsFold);
        }
    }
    let (line_max, line_kind) = if line_index == 0 {
        (limits.max_request_line, ErrorKind::RequestLineTooLong)
    } else {
        (limits.max_header_line, ErrorKind::HeaderLineTooLong)
    };
    // Input lengths at which each limit is first exceeded (the line may still get its CR).
    let line_over_at = pos.saturating_add(line_max).saturating_add(2);
    let head_over_at = limits.max_head.saturating_add(1);
    if buf.len() >= line_over_at.min(head_over_at) {
        return Err(if line_over_at <= head_over_at { line_kind } else { ErrorKind::HeadTooLarge });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pieces of heads, with the line ends, spaces and limits the two paths judge.
    const PIECES: &[&str] = &[
        "GET / HTTP/1.1",
        "HTTP/1.1 200 OK",
        "HTTP/1.0 204",
        "GETLONGMETHOD /",
        " HTTP/1.1",
        "\r\n",
        "\r\n",
        "\n",
        "\r",
        "Host: a",
        "Content-Length: 3",
        "X-Long: aaaaaaaaaaaaaaaaaaaaaaaa",
        "Transfer-Encoding: chunked",
        " folded",
        "\t",
        ":",
        "x",
        "\0",
        "abc",
        "HTTP/2.0",
    ];

    fn heads() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(proptest::sample::select(PIECES), 0..16)
            .prop_map(|parts| parts.concat().into_bytes())
    }

    fn limits(small: bool) -> Limits {
        if small {
            Limits {
                max_request_line: 24,
                max_method: 6,
                max_header_line: 20,
                max_headers: 3,
                max_head: 80,
                ..Limits::default()
            }
        } else {
            Limits::default()
        }
    }

    fn kinds<T>(r: Result<Option<T>, Error>) -> Result<Option<T>, ErrorKind> {
        r.map_err(|e| e.kind())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        /// The common-case attempt never changes an answer: whatever the input, the head (or
        /// the error, or "incomplete") is the one the line scan and `httparse` give.
        #[test]
        fn the_whole_head_attempt_agrees_with_the_scan(body in heads(), small in any::<bool>(), head in any::<bool>()) {
            let l = limits(small);
            let mut buf = body.clone();
            buf.extend_from_slice(b"\r\n\r\nbody");
            for b in [&body[..], &buf[..]] {
                prop_assert_eq!(kinds(parse_request(b, &l)), kinds(parse_request_scanned(b, &l)));
                prop_assert_eq!(kinds(parse_response(b, &l, head)), kinds(parse_response_scanned(b, &l, head)));
            }
        }
    }

    /// Heads the attempt must hand to the scan, each for the rule it would otherwise miss.
    #[test]
    fn heads_the_scan_refuses_are_refused() {
        let l = Limits { max_method: 4, max_header_line: 10, max_headers: 1, ..Limits::default() };
        let cases: [(&[u8], ErrorKind); 5] = [
            (b"GET / HTTP/1.1\nHost: a\r\n\r\n", ErrorKind::BareLf),
            (b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", ErrorKind::BareLf),
            (b"PURGE / HTTP/1.1\r\nHost: a\r\n\r\n", ErrorKind::MethodTooLong),
            (b"GET / HTTP/1.1\r\nHost: aaaaaaaaa\r\n\r\n", ErrorKind::HeaderLineTooLong),
            (b"GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n\r\n", ErrorKind::TooManyHeaders),
        ];
        for (head, kind) in cases {
            assert_eq!(
                parse_request(head, &l).err().map(|e| e.kind()),
                Some(kind),
                "{:?}",
                String::from_utf8_lossy(head)
            );
        }
        let bare = parse_response(b"HTTP/1.1 200 OK\r\nA: b\n\r\n", &l, false);
        assert_eq!(bare.err().map(|e| e.kind()), Some(ErrorKind::BareLf));
    }

    /// Limits set to `usize::MAX` mean "no limit": a head, whole or partial, parses under
    /// them on both paths (the method's bound once overflowed, a panic in debug builds).
    #[test]
    fn limits_at_their_largest_are_no_limits() {
        let l = Limits {
            max_method: usize::MAX,
            max_request_line: usize::MAX,
            max_header_line: usize::MAX,
            max_head: usize::MAX,
            ..Limits::default()
        };
        let head = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        for b in [&head[..], &head[..20]] {
            assert_eq!(kinds(parse_request(b, &l)), kinds(parse_request_scanned(b, &l)));
        }
        assert!(parse_request(head, &l).unwrap().is_some());
        let bare = parse_response(b"HTTP/1.1 200 OK\r\nA: b\n\r\n", &l, false);
        assert_eq!(bare.err().map(|e| e.kind()), Some(ErrorKind::BareLf));
    }
}
