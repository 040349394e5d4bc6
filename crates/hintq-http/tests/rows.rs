//! One test per RELIABILITY.md row about parsing and framing (S1–S10, S14, S15, S17, S19,
//! P2–P8, L5), named after the row. Each feeds the raw bytes of the bad input.

use hintq_http::*;

fn parse(bytes: &[u8]) -> Result<Option<RequestHead<'_>>, Error> {
    parse_request(bytes, &Limits::default())
}

/// The request parses completely; returns its head.
fn ok(bytes: &[u8]) -> RequestHead<'_> {
    match parse(bytes) {
        Ok(Some(head)) => head,
        other => panic!("{:?}: expected a head, got {other:?}", String::from_utf8_lossy(bytes)),
    }
}

/// The request is refused with `status` and the connection must close.
fn refused(bytes: &[u8], status: u16) -> ErrorKind {
    match parse(bytes) {
        Err(e) => {
            assert_eq!(e.status(), status, "{:?}: {e}", String::from_utf8_lossy(bytes));
            assert!(e.must_close());
            assert_eq!(e.side(), Side::Request);
            e.kind()
        }
        other => panic!("{:?}: expected {status}, got {other:?}", String::from_utf8_lossy(bytes)),
    }
}

fn with_headers(headers: &str) -> Vec<u8> {
    format!("POST /x HTTP/1.1\r\nHost: a\r\n{headers}\r\n").into_bytes()
}

/// Decodes a chunked request body given whole; returns data or the error.
fn chunked(body: &[u8]) -> Result<Vec<u8>, Error> {
    chunked_with(body, &Limits::default())
}

fn chunked_with(body: &[u8], limits: &Limits) -> Result<Vec<u8>, Error> {
    let mut d = BodyDecoder::new(Framing::Chunked, Side::Request, limits);
    let mut out = Vec::new();
    let used = d.decode_to_vec(body, &mut out)?;
    assert!(d.is_done(), "not done after {used} of {} bytes", body.len());
    Ok(out)
}

fn chunk_error(body: &[u8]) -> ErrorKind {
    let e = chunked(body).expect_err("must be refused");
    assert_eq!(e.status(), 400);
    e.kind()
}

#[test]
fn s1_content_length_with_transfer_encoding() {
    for shape in [
        "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n",
    ] {
        assert_eq!(refused(&with_headers(shape), 400), ErrorKind::ContentLengthWithTransferEncoding);
    }
}

#[test]
fn s2_differing_content_lengths() {
    let kind = refused(&with_headers("Content-Length: 42\r\nContent-Length: 43\r\n"), 400);
    assert_eq!(kind, ErrorKind::ConflictingContentLength);
    assert_eq!(
        refused(&with_headers("Content-Length: 42, 43\r\n"), 400),
        ErrorKind::ConflictingContentLength
    );
}

#[test]
fn s2_equal_content_lengths_collapse() {
    assert_eq!(ok(&with_headers("Content-Length: 42, 42\r\n")).framing, Framing::Length(42));
    assert_eq!(
        ok(&with_headers("Content-Length: 42\r\nContent-Length: 42\r\n")).framing,
        Framing::Length(42)
    );
}

#[test]
fn s2_malformed_content_length() {
    for value in
        ["+5", "-1", "0x5", "", "5 5", "1e3", "123456789012345678901234567890", "18446744073709551616"]
    {
        let kind = refused(&with_headers(&format!("Content-Length: {value}\r\n")), 400);
        assert_eq!(kind, ErrorKind::InvalidContentLength, "{value:?}");
    }
}

#[test]
fn s2_largest_content_length_is_parsed_then_limited() {
    let kind = refused(&with_headers("Content-Length: 18446744073709551615\r\n"), 413);
    assert_eq!(kind, ErrorKind::BodyTooLarge);
    let unlimited = Limits { max_body: None, ..Limits::default() };
    let buf = with_headers("Content-Length: 18446744073709551615\r\n");
    let head = parse_request(&buf, &unlimited).unwrap().unwrap();
    assert_eq!(head.framing, Framing::Length(u64::MAX));
}

#[test]
fn s3_transfer_codings_other_than_chunked() {
    for value in ["identity", "gzip", "chunked, identity", "gzip, chunked", "chunked, chunked"] {
        let kind = refused(&with_headers(&format!("Transfer-Encoding: {value}\r\n")), 501);
        assert_eq!(kind, ErrorKind::UnsupportedTransferCoding, "{value:?}");
    }
    for value in [",chunked", "chunked,", "", "chunked x", "chunked\"x\""] {
        let kind = refused(&with_headers(&format!("Transfer-Encoding: {value}\r\n")), 400);
        assert_eq!(kind, ErrorKind::InvalidTransferEncoding, "{value:?}");
    }
}

#[test]
fn s3_transfer_encoding_twice() {
    let buf = with_headers("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n");
    assert_eq!(refused(&buf, 400), ErrorKind::RepeatedTransferEncoding);
}

#[test]
fn s3_transfer_encoding_in_http10() {
    let buf = b"POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(refused(buf, 400), ErrorKind::TransferEncodingInHttp10);
}

#[test]
fn s3_chunked_any_case_is_accepted() {
    assert_eq!(ok(&with_headers("Transfer-Encoding: ChUnKeD \r\n")).framing, Framing::Chunked);
}

#[test]
fn s4_bad_chunk_sizes() {
    for body in
        [&b"0x1\r\na\r\n0\r\n\r\n"[..], b"+1\r\na\r\n0\r\n\r\n", b"-1\r\na\r\n0\r\n\r\n", b"1_0\r\n", b"\r\n"]
    {
        assert_eq!(chunk_error(body), ErrorKind::InvalidChunkSize, "{:?}", String::from_utf8_lossy(body));
    }
    assert_eq!(chunk_error(b"10000000000000000\r\n"), ErrorKind::InvalidChunkSize);
    assert_eq!(chunk_error(b"00000000000000001\r\n"), ErrorKind::InvalidChunkSize);
    assert_eq!(chunk_error(b"1 \r\na\r\n0\r\n\r\n"), ErrorKind::InvalidChunkSize);
    assert_eq!(chunk_error(b";ext\r\n"), ErrorKind::InvalidChunkSize);
}

#[test]
fn s4_sixteen_hex_digits_parse_without_overflow() {
    let mut d = BodyDecoder::new(Framing::Chunked, Side::Response, &Limits::default());
    let r = d.decode(b"ffffffffffffffff\r\nab").unwrap();
    assert_eq!(r.data.len(), 2);
    let mut d = BodyDecoder::new(Framing::Chunked, Side::Request, &Limits::default());
    assert_eq!(d.decode(b"ffffffffffffffff\r\n").unwrap_err().kind(), ErrorKind::BodyTooLarge);
}

#[test]
fn s4_chunk_line_endings() {
    assert_eq!(chunk_error(b"1\na\r\n0\r\n\r\n"), ErrorKind::InvalidChunkLineEnding);
    assert_eq!(chunk_error(b"1\rXa\r\n0\r\n\r\n"), ErrorKind::InvalidChunkLineEnding);
    assert_eq!(chunk_error(b"1\r\na\r\n0\n\r\n"), ErrorKind::InvalidChunkLineEnding);
    assert_eq!(chunk_error(b"1\r\na\rX0\r\n\r\n"), ErrorKind::InvalidChunkLineEnding);
    assert_eq!(chunk_error(b"1\r\na\r\n0\r\n\n"), ErrorKind::InvalidChunkLineEnding);
    assert_eq!(chunk_error(b"1;a=b\n"), ErrorKind::InvalidChunkLineEnding);
}

#[test]
fn s4_valid_chunked_shapes() {
    assert_eq!(chunked(b"3\r\nabc\r\n0\r\n\r\n").unwrap(), b"abc");
    assert_eq!(chunked(b"3;a=b;c=\"d\"\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n").unwrap(), b"abc0123456789");
    assert_eq!(chunked(b"3 ; a=b\r\nabc\r\n0\r\n\r\n").unwrap(), b"abc");
}

#[test]
fn s5_chunk_data_longer_than_its_size() {
    assert_eq!(chunk_error(b"2\r\nabc\r\n0\r\n\r\n"), ErrorKind::ChunkDataOverrun);
}

#[test]
fn s6_one_byte_chunk_flood() {
    let mut body = b"1\r\nx\r\n".repeat(100_000);
    body.extend_from_slice(b"0\r\n\r\n");
    let limits = Limits { max_body: None, ..Limits::default() };
    let e = chunked_with(&body, &limits).unwrap_err();
    assert_eq!((e.kind(), e.status()), (ErrorKind::ChunkOverheadTooLarge, 400));
}

#[test]
fn s6_big_chunks_are_not_overhead() {
    let mut body = Vec::new();
    for _ in 0..300 {
        write_chunk(&mut body, &[b'y'; 1000]);
    }
    write_last_chunk(&mut body, &[]);
    assert_eq!(chunked(&body).unwrap().len(), 300_000);
}

#[test]
fn s6_huge_chunk_extensions() {
    let mut body = format!("1;{}\r\nx\r\n", "a".repeat(20_000)).into_bytes();
    body.extend_from_slice(b"0\r\n\r\n");
    assert_eq!(chunk_error(&body), ErrorKind::ChunkExtensionsTooLarge);
    assert_eq!(chunk_error(b"1;a\x00b\r\nx\r\n0\r\n\r\n"), ErrorKind::InvalidChunkExtension);
}

#[test]
fn s6_trailers_are_parsed_and_limited() {
    let mut d = BodyDecoder::new(Framing::Chunked, Side::Request, &Limits::default());
    let mut out = Vec::new();
    d.decode_to_vec(b"1\r\nx\r\n0\r\nX-Sum: 42\r\nX-B: c\r\n\r\n", &mut out).unwrap();
    assert!(d.is_done());
    let names: Vec<_> = d.trailers().iter().map(|h| (h.name.to_string(), h.value.to_vec())).collect();
    assert_eq!(names, [("X-Sum".to_string(), b"42".to_vec()), ("X-B".to_string(), b"c".to_vec())]);

    let big = format!("0\r\nX: {}\r\n\r\n", "v".repeat(9000)).into_bytes();
    assert_eq!(chunked(&big).unwrap_err().kind(), ErrorKind::TrailersTooLarge);
    assert_eq!(chunked(b"0\r\nX : y\r\n\r\n").unwrap_err().kind(), ErrorKind::InvalidTrailer);
    assert_eq!(chunked(b"0\r\nX: y\r\n z\r\n\r\n").unwrap_err().kind(), ErrorKind::InvalidTrailer);
}

#[test]
fn s7_obs_fold() {
    assert_eq!(refused(&with_headers("X-A: b\r\n c\r\n"), 400), ErrorKind::ObsFold);
    assert_eq!(refused(&with_headers("X-A: b\r\n\tc\r\n"), 400), ErrorKind::ObsFold);
    assert_eq!(refused(b"GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400), ErrorKind::ObsFold);
}

#[test]
fn s7_bad_header_names() {
    for line in ["X-A : b", "X-A\t: b", ": b", "X(A): b", "X\x01A: b", "X\u{e9}: b", "NoColon"] {
        let kind = refused(&with_headers(&format!("{line}\r\n")), 400);
        assert_eq!(kind, ErrorKind::InvalidHeaderName, "{line:?}");
    }
}

#[test]
fn s8_nul_cr_lf_in_values() {
    assert_eq!(refused(&with_headers("X-A: b\0c\r\n"), 400), ErrorKind::InvalidHeaderValue);
    assert_eq!(refused(&with_headers("X-A: b\rc\r\n"), 400), ErrorKind::InvalidHeaderValue);
    assert_eq!(refused(&with_headers("X-A: b\nc: d\r\n"), 400), ErrorKind::BareLf);
    assert_eq!(refused(&with_headers("X-A: b\x7fc\r\n"), 400), ErrorKind::InvalidHeaderValue);
    assert_eq!(ok(&with_headers("X-A: b\tc \u{e9}\r\n")).header("x-a"), Some("b\tc \u{e9}".as_bytes()));
}

#[test]
fn s8_bare_cr_or_lf_in_request_line() {
    refused(b"GET /a\rb HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    refused(b"GET / HTTP/1.1\rHost: a\r\n\r\n", 400);
    assert_eq!(refused(b"GET / HTTP/1.1\nHost: a\r\n\r\n", 400), ErrorKind::BareLf);
    assert_eq!(refused(b"GET / HTTP/1.1\r\nHost: a\r\n\n", 400), ErrorKind::BareLf);
}

#[test]
fn s9_host_missing_or_twice() {
    assert_eq!(refused(b"GET / HTTP/1.1\r\n\r\n", 400), ErrorKind::MissingHost);
    assert_eq!(refused(b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400), ErrorKind::DuplicateHost);
    assert_eq!(refused(b"GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n", 400), ErrorKind::DuplicateHost);
    assert_eq!(refused(b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400), ErrorKind::InvalidHost);
    assert_eq!(refused(b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400), ErrorKind::InvalidHost);
    ok(b"GET / HTTP/1.0\r\n\r\n");
    ok(b"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
}

/// An empty Host was accepted (200): no host, so no "http" target URI (RFC 9110 §4.2.1 says
/// reject it; nginx's `ngx_http_validate_host` answers 400), in any version and target form.
#[test]
fn s9_empty_host_is_refused() {
    for host in ["Host:", "Host: ", "Host:\t", "Host: :80"] {
        for line in ["GET / HTTP/1.1", "GET / HTTP/1.0", "GET http://a/ HTTP/1.1"] {
            let buf = format!("{line}\r\n{host}\r\n\r\n");
            assert_eq!(refused(buf.as_bytes(), 400), ErrorKind::InvalidHost, "{buf:?}");
        }
    }
    ok(b"GET / HTTP/1.1\r\nHost: a:80\r\n\r\n");
    ok(b"GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n");
}

#[test]
fn s10_request_line_too_long() {
    let limits = Limits::default();
    let line = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(limits.max_request_line));
    assert_eq!(refused(line.as_bytes(), 414), ErrorKind::RequestLineTooLong);
    // Refused before the line ends: never buffered without bound.
    let partial = format!("GET /{}", "a".repeat(limits.max_request_line));
    assert_eq!(refused(partial.as_bytes(), 414), ErrorKind::RequestLineTooLong);
    // 8000 octets must be supported (RFC 9112 §3¶5).
    ok(format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(8000)).as_bytes());
}

#[test]
fn s10_method_too_long() {
    let long = format!("{} / HTTP/1.1\r\nHost: a\r\n\r\n", "A".repeat(33));
    assert_eq!(refused(long.as_bytes(), 501), ErrorKind::MethodTooLong);
    assert_eq!(refused("A".repeat(40).as_bytes(), 501), ErrorKind::MethodTooLong);
    assert_eq!(refused("a-b.c!".repeat(7).as_bytes(), 501), ErrorKind::MethodTooLong);
    ok(format!("{} / HTTP/1.1\r\nHost: a\r\n\r\n", "A".repeat(32)).as_bytes());
}

/// Bytes outside tchar where the method belongs were taken for a long method (501): garbage is
/// a bad request line, 400 (RFC 9110 §9.1: method = token), refused as soon as the byte arrives.
#[test]
fn s10_method_with_non_token_byte_is_400_not_501() {
    for method in ["GE(T", "GET\x00", "G\u{e9}T", "GET\t", "GET\x7f", "<html>", "{\"a\":1}"] {
        let buf = format!("{method} / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(refused(buf.as_bytes(), 400), ErrorKind::InvalidStartLine, "{method:?}");
        assert_eq!(refused(method.as_bytes(), 400), ErrorKind::InvalidStartLine, "partial {method:?}");
    }
    // Longer than `max_method` but not a token: the byte decides, not the length.
    let long = format!("{}\x01{}", "A".repeat(20), "A".repeat(20));
    assert_eq!(refused(long.as_bytes(), 400), ErrorKind::InvalidStartLine);
    // A TLS ClientHello sent to the plain-text port.
    let hello = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x9c\x1e\x8b\x5d\x07\x41\xb3\x60\x7c\xf1";
    assert_eq!(refused(hello, 400), ErrorKind::InvalidStartLine);
}

/// 256 random bytes were answered 501, taken for a method. Now every such input is a 400, or
/// incomplete in the rare case its first non-token byte is SP or CR and no LF follows.
#[test]
fn s10_random_bytes_are_400() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut incomplete = 0;
    for _ in 0..2000 {
        let bytes: Vec<u8> = (0..256)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect();
        match parse(&bytes) {
            Err(e) => assert_eq!(e.status(), 400, "{bytes:?}: {e}"),
            Ok(None) => incomplete += 1,
            Ok(Some(head)) => panic!("{bytes:?} parsed as {head:?}"),
        }
    }
    assert!(incomplete < 40, "{incomplete} of 2000 left waiting");
}

#[test]
fn s10_header_line_too_long() {
    let limits = Limits::default();
    let big = with_headers(&format!("X-A: {}\r\n", "v".repeat(limits.max_header_line)));
    assert_eq!(refused(&big, 431), ErrorKind::HeaderLineTooLong);
    let partial = format!("GET / HTTP/1.1\r\nX-A: {}", "v".repeat(limits.max_header_line));
    assert_eq!(refused(partial.as_bytes(), 431), ErrorKind::HeaderLineTooLong);
}

#[test]
fn s10_too_many_headers() {
    let many: String = (0..101).map(|i| format!("X-{i}: v\r\n")).collect();
    assert_eq!(refused(&with_headers(&many), 431), ErrorKind::TooManyHeaders);
    let exactly: String = (0..99).map(|i| format!("X-{i}: v\r\n")).collect();
    assert_eq!(ok(&with_headers(&exactly)).headers.len(), 100);
    let partial = format!("GET / HTTP/1.1\r\n{many}");
    assert_eq!(refused(partial.as_bytes(), 431), ErrorKind::TooManyHeaders);
}

#[test]
fn s10_header_section_too_large() {
    let lines: String = (0..10).map(|i| format!("X-{i}: {}\r\n", "v".repeat(2000))).collect();
    assert_eq!(refused(&with_headers(&lines), 431), ErrorKind::HeadTooLarge);
}

#[test]
fn s10_version() {
    assert_eq!(refused(b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505), ErrorKind::UnsupportedVersion);
    assert_eq!(refused(b"GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505), ErrorKind::UnsupportedVersion);
    assert_eq!(refused(b"GET / http/1.1\r\nHost: a\r\n\r\n", 400), ErrorKind::InvalidStartLine);
    assert_eq!(refused(b"GET /\r\n\r\n", 400), ErrorKind::InvalidStartLine);
    assert_eq!(refused(b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400), ErrorKind::InvalidStartLine);
}

/// `GET /pa th HTTP/1.1` was answered 505, as if `HTTP/1.1` (the last word) were the version:
/// the version is the third part of the line, here `th HTTP/1.1`, which is no version (400).
#[test]
fn s10_space_in_target_is_400_not_505() {
    for line in [
        "GET /pa th HTTP/1.1",
        "GET /pa th HTTP/2.0",
        "GET / HTTP/1.1 x",
        "GET / HTTP/2.0 x",
        "GET / x HTTP/1.2",
    ] {
        let buf = format!("{line}\r\nHost: a\r\n\r\n");
        assert_eq!(refused(buf.as_bytes(), 400), ErrorKind::InvalidStartLine, "{line:?}");
    }
    assert_eq!(refused(b"GET /pa%20th HTTP/9.9\r\nHost: a\r\n\r\n", 505), ErrorKind::UnsupportedVersion);
}

#[test]
fn s14_pipelined_requests_are_delimited() {
    let buf =
        b"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n\r\nGET /bPOST /c HTTP/1.1\r\nHost: a\r\n\
Transfer-Encoding: chunked\r\n\r\n3\r\nGET\r\n0\r\n\r\nGET /d HTTP/1.1\r\nHost: a\r\n\r\n";
    let limits = Limits::default();
    let mut pos = 0;
    let mut seen = Vec::new();
    while pos < buf.len() {
        let head = parse_request(&buf[pos..], &limits).unwrap().unwrap();
        let mut body = BodyDecoder::new(head.framing, Side::Request, &limits);
        let mut data = Vec::new();
        let used = body.decode_to_vec(&buf[pos + head.head_len..], &mut data).unwrap();
        assert!(body.is_done());
        seen.push((head.target.to_string(), String::from_utf8(data).unwrap()));
        pos += head.head_len + used;
    }
    let expect = [("/a", "GET /b"), ("/c", "GET"), ("/d", "")].map(|(t, b)| (t.to_string(), b.to_string()));
    assert_eq!(seen, expect);
}

#[test]
fn s15_valid_request_then_invalid_one() {
    let buf = b"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n";
    let first = ok(buf);
    assert_eq!(first.target, "/a");
    assert!(first.keep_alive);
    assert_eq!(refused(&buf[first.head_len..], 400), ErrorKind::DuplicateHost);
}

#[test]
fn s17_expect() {
    assert!(ok(&with_headers("Expect: 100-continue\r\nContent-Length: 3\r\n")).expect_continue);
    assert!(ok(&with_headers("Expect: 100-Continue\r\nContent-Length: 3\r\n")).expect_continue);
    let h = ok(b"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
    assert!(!h.expect_continue, "ignored in HTTP/1.0");
    ok(b"POST / HTTP/1.0\r\nExpect: foo\r\n\r\n");
    assert_eq!(refused(&with_headers("Expect: foo\r\n"), 417), ErrorKind::ExpectationFailed);
}

#[test]
fn s19_leading_crlf_ignored_crlf_only_incomplete() {
    let h = ok(b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!((h.method.as_ref(), h.head_len), ("GET", 31));
    assert!(parse(b"").unwrap().is_none());
    assert!(parse(b"\r\n").unwrap().is_none());
    assert!(parse(b"\r\n\r\n\r").unwrap().is_none());
    let flood = b"\r\n".repeat(20_000);
    assert_eq!(refused(&flood, 431), ErrorKind::HeadTooLarge);
}

#[test]
fn keep_alive_decision() {
    assert!(ok(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").keep_alive);
    assert!(!ok(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n").keep_alive);
    assert!(!ok(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: x, close\r\n\r\n").keep_alive);
    assert!(!ok(b"GET / HTTP/1.0\r\n\r\n").keep_alive);
    assert!(ok(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
}

fn response(bytes: &[u8], head_request: bool) -> Result<ResponseHead<'_>, Error> {
    parse_response(bytes, &Limits::default(), head_request).map(|r| r.expect("complete"))
}

#[test]
fn p2_invalid_upstream_framing_is_502() {
    let bad: [&[u8]; 7] = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n",
    ];
    for bytes in bad {
        let e = response(bytes, false).unwrap_err();
        assert_eq!((e.status(), e.side(), e.must_close()), (502, Side::Response, true), "{e}");
    }
    let e = BodyDecoder::new(Framing::Chunked, Side::Response, &Limits::default())
        .decode(b"0x1\r\n")
        .unwrap_err();
    assert_eq!(e.status(), 502);
}

#[test]
fn p3_truncated_bodies_are_errors_at_close() {
    let limits = Limits::default();
    let mut d = BodyDecoder::new(Framing::Length(10), Side::Response, &limits);
    d.decode(b"12345").unwrap();
    assert_eq!(d.finish().unwrap_err().kind(), ErrorKind::TruncatedBody);
    let mut d = BodyDecoder::new(Framing::Chunked, Side::Response, &limits);
    d.decode_to_vec(b"5\r\n12345\r\n", &mut Vec::new()).unwrap();
    assert_eq!(d.finish().unwrap_err().status(), 502);
    let mut d = BodyDecoder::new(Framing::UntilClose, Side::Response, &limits);
    assert_eq!(d.decode(b"abc").unwrap().data, 0..3);
    d.finish().unwrap();
    assert!(d.is_done());
}

#[test]
fn p4_no_body_responses_and_extra_bytes() {
    let r = response(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true).unwrap();
    assert_eq!(r.framing, Framing::None);
    for status in [100, 101, 204, 304] {
        let bytes = format!("HTTP/1.1 {status} X\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(response(bytes.as_bytes(), false).unwrap().framing, Framing::None, "{status}");
    }
    let bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcEXTRA";
    let r = response(bytes, false).unwrap();
    let mut d = BodyDecoder::new(r.framing, Side::Response, &Limits::default());
    let mut out = Vec::new();
    let used = d.decode_to_vec(&bytes[r.head_len..], &mut out).unwrap();
    assert_eq!((out.as_slice(), used, d.is_done()), (&b"abc"[..], 3, true));
}

#[test]
fn p5_ambiguous_request_framing_never_parses() {
    let shapes = [
        "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n",
        "Content-Length: 3\r\nContent-Length: 4\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
        "Transfer-Encoding: identity, chunked\r\n",
        "Transfer-Encoding : chunked\r\n",
        "Transfer-Encoding: chunked\r\n\tidentity\r\n",
        "Transfer-Encoding:\x0bchunked\r\n",
        "Content-Length: 3\x00\r\n",
    ];
    for shape in shapes {
        let e = parse(&with_headers(shape)).expect_err(shape);
        assert!(e.must_close() && (400..=501).contains(&e.status()), "{shape:?}: {e}");
    }
}

#[test]
fn p6_hop_by_hop_stripped_and_via_added() {
    let buf = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close, X-Foo, Host, Content-Length\r\nX-Foo: 1\r\n\
Keep-Alive: 5\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\nUpgrade: h2c\r\nTrailer: X\r\nX-Bar: 2\r\n\
Content-Length: 0\r\nVia: 1.0 other\r\n\r\n";
    let mut head = ok(buf);
    // The same fields, without editing the list (how the proxy writes a head).
    let forwarded: Vec<_> = end_to_end(&head.headers).map(|h| h.name.to_string()).collect();
    assert_eq!(forwarded, ["Host", "X-Bar", "Content-Length", "Via"]);
    strip_hop_by_hop(&mut head.headers);
    add_via(&mut head.headers, head.version, "hintq");
    let names: Vec<_> = head.headers.iter().map(|h| h.name.to_string()).collect();
    assert_eq!(names, ["Host", "X-Bar", "Content-Length", "Via", "Via"]);
    assert_eq!(&*head.headers[4].value, b"1.1 hintq");
    // Options with odd spacing and case name fields too; empty options name nothing.
    let head = ok(b"GET / HTTP/1.1\r\nHost: a\r\nX-Foo: 1\r\nconnection: ,  x-FOO ,\r\nX-Keep: 2\r\n\r\n");
    let forwarded: Vec<_> = end_to_end(&head.headers).map(|h| h.name.to_string()).collect();
    assert_eq!(forwarded, ["Host", "X-Keep"]);
}

#[test]
fn p7_cr_lf_nul_never_written() {
    let mut buf = Vec::new();
    let mut w = HeadWriter::response(&mut buf, Version::Http11, 200);
    w.header("X-A", b"a\r\nSet-Cookie: x\0");
    w.finish();
    assert_eq!(buf, b"HTTP/1.1 200 OK\r\nX-A: a  Set-Cookie: x \r\n\r\n");
    // Short and long values (checked two ways), a bad byte first, inside and last.
    for len in [1, 2, 31, 63, 64, 65, 200] {
        for at in [0, len / 2, len - 1] {
            for bad in [b'\r', b'\n', 0] {
                let mut value = vec![b'v'; len];
                value[at] = bad;
                let mut buf = Vec::new();
                let mut w = HeadWriter::request(&mut buf, "GET", "/", Version::Http11);
                w.header("X", &value);
                w.finish();
                let mut want = b"GET / HTTP/1.1\r\nX: ".to_vec();
                want.extend(value.iter().map(|&b| if b == bad { b' ' } else { b }));
                want.extend_from_slice(b"\r\n\r\n");
                assert_eq!(buf, want, "length {len}, byte {bad} at {at}");
            }
        }
    }
    assert_eq!(response(b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", false).unwrap_err().status(), 502);
}

/// Lines written once and added to many heads keep the writer's guarantee, in place.
#[test]
fn p7_prebuilt_fields_are_sanitised_and_added_where_asked() {
    let fields = Fields::build(|w| {
        w.header("ETag", b"\"a\r\nX: y\"").header("Last-Modified", b"then");
    });
    assert_eq!(fields.as_bytes(), b"ETag: \"a  X: y\"\r\nLast-Modified: then\r\n");
    let mut buf = Vec::new();
    let mut w = HeadWriter::response(&mut buf, Version::Http11, 304);
    w.date(b"now").fields(&fields).connection_close();
    w.finish();
    assert_eq!(
        buf,
        b"HTTP/1.1 304 Not Modified\r\nDate: now\r\nETag: \"a  X: y\"\r\nLast-Modified: then\r\n\
          Connection: close\r\n\r\n"
    );
}

#[test]
fn p8_expect_continue_is_reported_and_kept() {
    let buf = with_headers("Expect: 100-continue\r\nContent-Length: 10\r\n");
    let mut head = ok(&buf);
    assert!(head.expect_continue);
    strip_hop_by_hop(&mut head.headers);
    assert_eq!(head.header("expect"), Some(&b"100-continue"[..]));
    let interim = response(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", false).unwrap();
    assert!(interim.is_informational());
    assert_eq!((interim.framing, interim.head_len), (Framing::None, 25));
}

#[test]
fn l5_split_and_pipelined_responses() {
    let bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
2\r\nho\r\n0\r\n\r\nHTTP/1.0 200 OK\r\n\r\nrest";
    let limits = Limits::default();
    assert!(parse_response(&bytes[..20], &limits, false).unwrap().is_none());
    let mut pos = 0;
    let mut bodies = Vec::new();
    while pos < bytes.len() {
        let r = parse_response(&bytes[pos..], &limits, false).unwrap().unwrap();
        let mut d = BodyDecoder::new(r.framing, Side::Response, &limits);
        let mut out = Vec::new();
        pos += r.head_len + d.decode_to_vec(&bytes[pos + r.head_len..], &mut out).unwrap();
        if !d.is_done() {
            d.finish().unwrap();
            assert!(!r.keep_alive);
        }
        bodies.push(String::from_utf8(out).unwrap());
    }
    assert_eq!(bodies, ["hi", "ho", "rest"]);
}

#[test]
fn error_responses_have_short_bodies() {
    for status in [400, 403, 404, 405, 408, 413, 414, 417, 431, 501, 502, 504, 505] {
        let mut buf = Vec::new();
        write_error_response(&mut buf, status, Some(b"Sun, 06 Nov 1994 08:49:37 GMT"), true, false);
        let r = parse_response(&buf, &Limits::default(), false).unwrap().unwrap();
        let body = &buf[r.head_len..];
        assert_eq!((r.status, r.framing, r.keep_alive), (status, Framing::Length(body.len() as u64), false));
        assert!(!reason(status).is_empty());
        assert_eq!(body, error_body(status).as_bytes());
    }
}

#[test]
fn dates_format_imf_fixdate() {
    assert_eq!(&hintq_http::http_date(784111777), b"Sun, 06 Nov 1994 08:49:37 GMT");
}

/// `Date` and the seconds come from the cache while the second lasts and move on with the
/// wall clock when it ends.
#[test]
fn the_cached_second_follows_the_wall_clock() {
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
    let wall = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let mut cache = DateCache::new();
    let before = wall();
    let now = Instant::now();
    let a = (cache.unix(now), *cache.get(now));
    assert!((before..=wall()).contains(&a.0), "{} not in {before}..", a.0);
    assert_eq!(a.1, hintq_http::http_date(a.0));
    // To the next second of the wall clock itself (the cache's end is placed on the
    // monotonic clock, which a pause between its two readings could leave early).
    let into = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos();
    std::thread::sleep(Duration::from_nanos(u64::from(1_000_000_000 - into)) + Duration::from_millis(50));
    let now = Instant::now();
    let b = (cache.unix(now), *cache.get(now));
    assert!(b.0 > a.0 && b.0 <= wall(), "{} after {}", b.0, a.0);
    assert_ne!(b.1, a.1);
}

#[test]
fn owned_heads_outlive_the_buffer() {
    let owned = {
        let buf = b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n".to_vec();
        parse(&buf).unwrap().unwrap().into_owned()
    };
    assert_eq!((owned.target.as_ref(), owned.header("HOST")), ("/x", Some(&b"a"[..])));
}

/// P3 with a body moved outside the decoder (the proxy's splice): skipped bytes count
/// toward the Content-Length as decoded ones do, a body not complete is still truncated at
/// the close, and a skip past the end is refused.
#[test]
fn p3_skipped_body_bytes_count_toward_the_length() {
    let mut d = BodyDecoder::new(Framing::Length(10), Side::Response, &Limits::default());
    assert_eq!(d.length_remaining(), Some(10));
    d.skip(4);
    assert_eq!(d.decode(b"abcdefghij").unwrap(), Decoded { consumed: 6, data: 0..6, done: true });
    assert!(d.is_done() && d.finish().is_ok());
    let mut d = BodyDecoder::new(Framing::Length(10), Side::Response, &Limits::default());
    d.skip(9);
    assert!(!d.is_done());
    assert_eq!(d.finish().unwrap_err().kind(), ErrorKind::TruncatedBody);
    let chunked = BodyDecoder::new(Framing::Chunked, Side::Response, &Limits::default());
    assert_eq!(chunked.length_remaining(), None);
    let past = std::panic::catch_unwind(|| {
        let mut d = BodyDecoder::new(Framing::Length(3), Side::Response, &Limits::default());
        d.skip(4);
    });
    assert!(past.is_err(), "a skip past the end of the body");
}
