//! The one error type: what went wrong, on which side, and the status the peer must get.

use std::fmt;

/// Which peer sent the bytes that failed to parse.
///
/// A request error is answered with the status of its [`ErrorKind`]; a response error (from an
/// upstream, seen by the proxy or the load generator) is always a 502 for whoever is downstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The bytes came from a client (the server parses them).
    Request,
    /// The bytes came from a server (the proxy or the load generator parses them).
    Response,
}

/// What was wrong with the bytes. Each variant names one rule; the status it maps to on the
/// request side is in brackets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Request line (or status line) longer than [`Limits::max_request_line`](crate::Limits) (414).
    RequestLineTooLong,
    /// Method of token bytes longer than [`Limits::max_method`](crate::Limits) (501): a method
    /// longer than any implemented (RFC 9112 §3¶4). Non-token bytes are `InvalidStartLine`.
    MethodTooLong,
    /// One header line longer than [`Limits::max_header_line`](crate::Limits) (431).
    HeaderLineTooLong,
    /// Whole head larger than [`Limits::max_head`](crate::Limits) (431).
    HeadTooLarge,
    /// More header lines than [`Limits::max_headers`](crate::Limits) (431).
    TooManyHeaders,
    /// Request line (or status line) not `token SP target SP HTTP/1.x`: a non-token byte in the
    /// method, a space in the target, garbage where the version belongs (400).
    InvalidStartLine,
    /// A well-formed `HTTP/x.y` other than 1.0 and 1.1 (505).
    UnsupportedVersion,
    /// Empty name, non-token byte in a name, or whitespace before the colon (400).
    InvalidHeaderName,
    /// NUL, another control byte, or a bare CR in a field value (400).
    InvalidHeaderValue,
    /// A header line starting with whitespace: obs-fold, or whitespace before the first header (400).
    ObsFold,
    /// A line ended by LF without CR (400).
    BareLf,
    /// HTTP/1.1 request without `Host` (400).
    MissingHost,
    /// More than one `Host` line (400).
    DuplicateHost,
    /// `Host` value with no host (empty, or only `:port`) or with bytes no authority can
    /// contain (400).
    InvalidHost,
    /// `Content-Length` that is not one or more digits, or does not fit in 64 bits (400).
    InvalidContentLength,
    /// `Content-Length` values that differ (`42, 43`, or two lines) (400).
    ConflictingContentLength,
    /// Both `Content-Length` and `Transfer-Encoding` (400).
    ContentLengthWithTransferEncoding,
    /// `Transfer-Encoding` in an HTTP/1.0 message (400).
    TransferEncodingInHttp10,
    /// `Transfer-Encoding` on more than one line (400).
    RepeatedTransferEncoding,
    /// `Transfer-Encoding` list that is not a list of tokens (`,chunked`, empty value) (400).
    InvalidTransferEncoding,
    /// A syntactically valid transfer coding other than exactly `chunked` (501).
    UnsupportedTransferCoding,
    /// `Expect` with anything but `100-continue` (417).
    ExpectationFailed,
    /// Body larger than [`Limits::max_body`](crate::Limits) (413).
    BodyTooLarge,
    /// Chunk size not 1 to 16 hex digits (`0x1`, `+1`, `-1`, `1_0`, empty, 17 digits) (400).
    InvalidChunkSize,
    /// Chunk line not ended by CRLF (bare LF, `\r` followed by another byte) (400).
    InvalidChunkLineEnding,
    /// Chunk data longer than its size: the byte after the data is not CR (400).
    ChunkDataOverrun,
    /// A control byte in a chunk extension (400).
    InvalidChunkExtension,
    /// Chunk extensions beyond [`Limits::max_chunk_extensions`](crate::Limits) in total (400).
    ChunkExtensionsTooLarge,
    /// Framing overhead (size lines, CRLFs) above three quarters of the bytes read (S6) (400).
    ChunkOverheadTooLarge,
    /// Trailer section beyond [`Limits::max_trailers`](crate::Limits) (431).
    TrailersTooLarge,
    /// Trailer section that is not a valid field section (400).
    InvalidTrailer,
    /// The peer closed the connection before the body was complete (400).
    TruncatedBody,
}

impl ErrorKind {
    /// The status a server answers when a request fails this way.
    pub fn request_status(self) -> u16 {
        use ErrorKind::*;
        match self {
            RequestLineTooLong => 414,
            MethodTooLong | UnsupportedTransferCoding => 501,
            HeaderLineTooLong | HeadTooLarge | TooManyHeaders | TrailersTooLarge => 431,
            UnsupportedVersion => 505,
            ExpectationFailed => 417,
            BodyTooLarge => 413,
            _ => 400,
        }
    }

    fn describe(self) -> &'static str {
        use ErrorKind::*;
        match self {
            RequestLineTooLong => "start line too long",
            MethodTooLong => "method too long",
            HeaderLineTooLong => "header line too long",
            HeadTooLarge => "header section too large",
            TooManyHeaders => "too many header lines",
            InvalidStartLine => "invalid start line",
            UnsupportedVersion => "unsupported HTTP version",
            InvalidHeaderName => "invalid header name",
            InvalidHeaderValue => "invalid byte in header value",
            ObsFold => "header line starts with whitespace (obs-fold)",
            BareLf => "line ended by LF without CR",
            MissingHost => "HTTP/1.1 request without Host",
            DuplicateHost => "more than one Host",
            InvalidHost => "invalid or empty Host",
            InvalidContentLength => "invalid Content-Length",
            ConflictingContentLength => "conflicting Content-Length values",
            ContentLengthWithTransferEncoding => "both Content-Length and Transfer-Encoding",
            TransferEncodingInHttp10 => "Transfer-Encoding in HTTP/1.0",
            RepeatedTransferEncoding => "Transfer-Encoding on more than one line",
            InvalidTransferEncoding => "invalid Transfer-Encoding list",
            UnsupportedTransferCoding => "transfer coding other than chunked",
            ExpectationFailed => "unsupported expectation",
            BodyTooLarge => "body too large",
            InvalidChunkSize => "invalid chunk size",
            InvalidChunkLineEnding => "chunk line not ended by CRLF",
            ChunkDataOverrun => "chunk data longer than its size",
            InvalidChunkExtension => "invalid chunk extension",
            ChunkExtensionsTooLarge => "chunk extensions too large",
            ChunkOverheadTooLarge => "chunked framing overhead too large",
            TrailersTooLarge => "trailer section too large",
            InvalidTrailer => "invalid trailer section",
            TruncatedBody => "connection closed before the body was complete",
        }
    }
}

/// A parse or framing failure: the rule broken ([`kind`](Error::kind)), the side that broke it,
/// the status to answer ([`status`](Error::status)) and whether to close
/// ([`must_close`](Error::must_close)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Error {
    kind: ErrorKind,
    side: Side,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, side: Side) -> Self {
        Error { kind, side }
    }

    /// The rule that was broken.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Who sent the bad bytes.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The status to send downstream: the kind's status for a bad request; 502 for a bad
    /// upstream response (RFC 9110 §15.6.3).
    pub fn status(&self) -> u16 {
        match self.side {
            Side::Request => self.kind.request_status(),
            Side::Response => 502,
        }
    }

    /// Whether the connection the bad bytes came from must be closed after answering.
    ///
    /// Always `true`: after any of these errors the position of the next message in the byte
    /// stream is unknown (a head that did not parse, a body whose end cannot be trusted, a body
    /// left unread behind a 413/417), and RFC 9112 §6.3 requires closing for invalid framing.
    /// Upstream connections are closed and their response discarded (§6.3, row P2).
    pub fn must_close(&self) -> bool {
        true
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = match self.side {
            Side::Request => "request",
            Side::Response => "response",
        };
        write!(f, "bad {side}: {} (status {})", self.kind.describe(), self.status())
    }
}

impl std::error::Error for Error {}
