//! Size limits, with defaults taken from nginx and hyper.

/// Limits on what a peer may send. Every limit is enforced on partial input too, so a peer that
/// never finishes a line cannot make the caller buffer without bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line (or status line), without CRLF. Longer → 414. Default 8 KiB: nginx's
    /// `large_client_header_buffers 4 8k`; RFC 9112 §3 asks for at least 8000 octets.
    pub max_request_line: usize,
    /// Longest method. Longer, if all token bytes → 501 (RFC 9112 §3¶4); a non-token byte in the
    /// method is a 400 at any length. Default 32: the longest method in the IANA registry,
    /// `UPDATEREDIRECTREF`, has 17 bytes.
    pub max_method: usize,
    /// Longest header line (name, colon, value), without CRLF. Longer → 431. Default 8 KiB (nginx).
    pub max_header_line: usize,
    /// Most header lines. More → 431. Default 100: hyper's `DEFAULT_MAX_HEADERS`, HAProxy 101.
    pub max_headers: usize,
    /// Largest head: leading empty lines, start line, headers and the empty line. Larger → 431.
    /// Default 16 KiB.
    pub max_head: usize,
    /// Largest request body, by Content-Length or decoded chunked size; `None` for no limit (the
    /// proxy streams). Larger → 413. Not applied to responses. Default 1 MiB (nginx
    /// `client_max_body_size`).
    pub max_body: Option<u64>,
    /// Total bytes of chunk extensions in one body. More → 400. Default 16 KiB (hyper's
    /// `CHUNKED_EXTENSIONS_LIMIT`).
    pub max_chunk_extensions: usize,
    /// Framing overhead (size lines, extensions, CRLFs, trailers) tolerated before the ratio
    /// check starts: past it, a body whose data is under a quarter of the bytes read is refused
    /// (h2o/picohttpparser: 100 KiB and 3/4). Default 100 KiB.
    pub chunk_overhead_floor: u64,
    /// Largest trailer section in bytes, including its final CRLF. Larger → 431. Default 8 KiB.
    pub max_trailers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_line: 8 * 1024,
            max_method: 32,
            max_header_line: 8 * 1024,
            max_headers: 100,
            max_head: 16 * 1024,
            max_body: Some(1024 * 1024),
            max_chunk_extensions: 16 * 1024,
            chunk_overhead_floor: 100 * 1024,
            max_trailers: 8 * 1024,
        }
    }
}
