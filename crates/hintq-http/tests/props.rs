//! Property tests: the chunked coder round-trips, the parsers never panic, and how the input is
//! split never changes the outcome.

use hintq_http::*;
use proptest::prelude::*;

/// Fragments that make heads and chunked bodies, valid and not, far more often than random bytes.
const FRAGMENTS: &[&str] = &[
    "GET",
    "POST",
    " ",
    "/",
    "/a",
    "HTTP/1.1",
    "HTTP/1.0",
    "HTTP/2.0",
    "\r\n",
    "\r\n\r\n",
    "\n",
    "\r",
    "\0",
    "\t",
    ":",
    ": ",
    "Host: a",
    "Content-Length: 5",
    "Content-Length: 5, 5",
    "Content-Length: +5",
    "Transfer-Encoding: chunked",
    "Transfer-Encoding: identity",
    "Connection: close",
    "Expect: 100-continue",
    "X-A: b",
    " folded",
    "0",
    "1",
    "5",
    "a",
    "F",
    "ffffffffffffffff0",
    "0x",
    ";",
    ";ext=1",
    "hello",
    ",",
    "200 OK",
    "\u{e9}",
];

fn fragments() -> impl Strategy<Value = Vec<u8>> {
    let one = prop_oneof![
        4 => proptest::sample::select(FRAGMENTS).prop_map(|s| s.as_bytes().to_vec()),
        1 => proptest::collection::vec(any::<u8>(), 0..4),
    ];
    proptest::collection::vec(one, 0..24).prop_map(|parts| parts.concat())
}

fn small_limits() -> Limits {
    Limits {
        max_request_line: 40,
        max_method: 8,
        max_header_line: 30,
        max_headers: 4,
        max_head: 120,
        max_body: Some(64),
        max_chunk_extensions: 16,
        chunk_overhead_floor: 40,
        max_trailers: 40,
    }
}

/// Feeds growing prefixes of `buf` to `parse` as a reading server would: returns the first
/// prefix's answer that is not "incomplete", with the prefix length.
fn first_answer<'a, T>(
    buf: &'a [u8],
    parse: impl Fn(&'a [u8]) -> Result<Option<T>, Error>,
) -> Option<Result<T, Error>> {
    (0..=buf.len()).find_map(|i| parse(&buf[..i]).transpose())
}

/// Decodes `body` in pieces of `step` bytes, as reads would deliver it. Returns the data and
/// the bytes consumed, or the data delivered before the error and the error.
fn decode_in_steps(
    framing: Framing,
    body: &[u8],
    step: usize,
    limits: &Limits,
) -> Result<(Vec<u8>, usize), (Vec<u8>, Error)> {
    let mut d = BodyDecoder::new(framing, Side::Request, limits);
    let (mut out, mut pos, mut end) = (Vec::new(), 0, 0);
    while end < body.len() && !d.is_done() {
        end = (end + step).min(body.len());
        match d.decode_to_vec(&body[pos..end], &mut out) {
            Ok(used) => pos += used,
            Err(e) => return Err((out, e)),
        }
    }
    Ok((out, pos))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn chunked_round_trip_with_any_split(
        data in proptest::collection::vec(any::<u8>(), 0..3000),
        cuts in proptest::collection::vec(0usize..3000, 0..12),
        step in 1usize..64,
        trailer in any::<bool>(),
    ) {
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
        cuts.extend([0, data.len()]);
        cuts.sort_unstable();
        let mut wire = Vec::new();
        for w in cuts.windows(2) {
            write_chunk(&mut wire, &data[w[0]..w[1]]);
        }
        let trailers = if trailer { vec![Header::new("X-Sum", b"1")] } else { vec![] };
        write_last_chunk(&mut wire, &trailers);
        let body_len = wire.len();
        wire.extend_from_slice(b"GET / HTTP/1.1\r\n");
        let limits = Limits::default();
        let (out, used) = decode_in_steps(Framing::Chunked, &wire, step, &limits).expect("valid body");
        prop_assert_eq!(out, data);
        prop_assert_eq!(used, body_len);
    }

    #[test]
    fn request_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse_request(&bytes, &Limits::default());
        let _ = parse_request(&bytes, &small_limits());
        let _ = parse_response(&bytes, &small_limits(), false);
    }

    #[test]
    fn request_head_same_whether_fed_whole_or_byte_by_byte(bytes in fragments()) {
        for limits in [Limits::default(), small_limits()] {
            let whole = parse_request(&bytes, &limits).transpose();
            let fed = first_answer(&bytes, |b| parse_request(b, &limits));
            prop_assert_eq!(
                whole.map(|r| r.map_err(|e| e.kind())),
                fed.map(|r| r.map_err(|e| e.kind()))
            );
        }
    }

    #[test]
    fn response_head_same_whether_fed_whole_or_byte_by_byte(bytes in fragments(), head in any::<bool>()) {
        let mut buf = b"HTTP/1.1 ".to_vec();
        buf.extend_from_slice(&bytes);
        let limits = small_limits();
        let whole = parse_response(&buf, &limits, head).transpose();
        let fed = first_answer(&buf, |b| parse_response(b, &limits, head));
        prop_assert_eq!(whole.map(|r| r.map_err(|e| e.kind())), fed.map(|r| r.map_err(|e| e.kind())));
    }

    #[test]
    fn chunked_decoder_same_whether_fed_whole_or_byte_by_byte(body in fragments()) {
        for limits in [Limits::default(), small_limits()] {
            let whole = decode_in_steps(Framing::Chunked, &body, body.len().max(1), &limits);
            let bytewise = decode_in_steps(Framing::Chunked, &body, 1, &limits);
            prop_assert_eq!(whole, bytewise);
        }
    }

    #[test]
    fn chunked_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600), step in 1usize..32) {
        let _ = decode_in_steps(Framing::Chunked, &bytes, step, &small_limits());
    }
}
