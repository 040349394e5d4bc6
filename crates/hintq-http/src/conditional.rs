//! Validators, conditional requests and range requests (RFC 9110 §8.8, §13, §14), sans IO.
//!
//! A static server knows a file's entity-tag, modification time and length; [`select`] takes
//! them with the request's header fields and says what to answer: 304, the full 200, one
//! range (206) or 416. The pieces are public for callers that need only one of them:
//! [`parse_range`] and [`ByteRange::resolve`], [`if_none_match`], [`if_range`].
//!
//! Choices where RFC 9110 leaves room:
//!
//! * Only a single range is honoured. A range set with two or more ranges is ignored and the
//!   whole representation sent with 200, which §14.2¶3 allows ("a server MAY ignore the Range
//!   header field"); so is a syntactically invalid one (§14.2¶5) and one in another unit.
//!   Parsing stops at the second range, so a header of thousands of ranges costs one pass
//!   over at most [`Limits::max_header_line`](crate::Limits) bytes and no allocation.
//! * Numbers larger than `u64` are not errors (the grammar has no bound): they saturate, so a
//!   huge first-pos is unsatisfiable (416), a huge last-pos is clamped to the end, and a huge
//!   suffix-length means the whole representation (§14.1.2).
//! * A Range field on two lines, an If-Range on two lines, or an If-Range that is neither an
//!   entity-tag nor an HTTP-date: the Range is ignored (200), never guessed at.
//! * An If-None-Match that does not parse as an entity-tag list matches nothing (so the full
//!   response is sent, which is always safe), and it still takes precedence over
//!   If-Modified-Since (§13.2.2 tests the field's presence).
//! * A suffix range on an empty representation (satisfiable by §14.1.2, but no
//!   `Content-Range` can describe zero bytes) gets the full, empty, 200.

use std::time::UNIX_EPOCH;

use crate::head::Header;

/// One range-spec of a `bytes` Range field (RFC 9110 §14.1.1), numbers saturated at
/// `u64::MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `first-last`, with `last >= first`.
    FromTo(u64, u64),
    /// `first-`: from `first` to the end.
    From(u64),
    /// `-n`: the last `n` bytes.
    Suffix(u64),
}

/// What a Range field value asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeRequest {
    /// Exactly one range: honoured.
    Single(ByteRange),
    /// Two or more ranges: ignored (the full representation is sent).
    Multiple,
    /// Another unit, or not the `bytes=` grammar (including `last < first`): ignored.
    Invalid,
}

/// A [`ByteRange`] against a representation of known length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    /// Bytes `first..=last` (206), always within the representation.
    Partial {
        /// First byte.
        first: u64,
        /// Last byte, inclusive.
        last: u64,
    },
    /// Send the whole representation (200).
    Full,
    /// 416 with `Content-Range: bytes */len`.
    Unsatisfiable,
}

impl ByteRange {
    /// Resolves against a representation of `len` bytes (RFC 9110 §14.1.2).
    pub fn resolve(self, len: u64) -> Resolved {
        match self {
            ByteRange::FromTo(first, _) | ByteRange::From(first) if first >= len => Resolved::Unsatisfiable,
            ByteRange::FromTo(first, last) => Resolved::Partial { first, last: last.min(len - 1) },
            ByteRange::From(first) => Resolved::Partial { first, last: len - 1 },
            ByteRange::Suffix(0) => Resolved::Unsatisfiable,
            ByteRange::Suffix(_) if len == 0 => Resolved::Full,
            ByteRange::Suffix(n) => Resolved::Partial { first: len - n.min(len), last: len - 1 },
        }
    }
}

fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if !is_ows(*first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !is_ows(*last) {
            break;
        }
        s = rest;
    }
    s
}

/// `1*DIGIT`, saturating at `u64::MAX`; `None` if empty or not all digits.
fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, &d| n.saturating_mul(10).saturating_add(u64::from(d - b'0'))))
}

fn range_spec(s: &[u8]) -> Option<ByteRange> {
    let dash = s.iter().position(|&b| b == b'-')?;
    let (first, last) = (&s[..dash], &s[dash + 1..]);
    if first.is_empty() {
        return digits(last).map(ByteRange::Suffix);
    }
    let first = digits(first)?;
    if last.is_empty() {
        return Some(ByteRange::From(first));
    }
    let last = digits(last)?;
    (last >= first).then_some(ByteRange::FromTo(first, last))
}

/// Parses a Range field value: `bytes=` (unit case-insensitive) and a range set, whose list
/// may hold empty elements and optional whitespace around commas (RFC 9110 §5.6.1.2).
pub fn parse_range(value: &[u8]) -> RangeRequest {
    let value = trim_ows(value);
    let Some(set) = value.get(6..).filter(|_| value[..6].eq_ignore_ascii_case(b"bytes=")) else {
        return RangeRequest::Invalid;
    };
    let mut single = None;
    for element in set.split(|&b| b == b',') {
        let element = trim_ows(element);
        if element.is_empty() {
            continue;
        }
        if single.is_some() {
            return RangeRequest::Multiple;
        }
        match range_spec(element) {
            Some(r) => single = Some(r),
            None => return RangeRequest::Invalid,
        }
    }
    single.map_or(RangeRequest::Invalid, RangeRequest::Single)
}

/// An entity-tag split into (weak, opaque-tag with its quotes).
fn split_tag(tag: &[u8]) -> Option<(bool, &[u8])> {
    let (weak, opaque) = match tag.strip_prefix(b"W/") {
        Some(rest) => (true, rest),
        None => (false, tag),
    };
    let ok = opaque.len() >= 2
        && opaque[0] == b'"'
        && opaque[opaque.len() - 1] == b'"'
        && opaque[1..opaque.len() - 1].iter().all(|&b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80);
    ok.then_some((weak, opaque))
}

/// The entity-tags of a `#entity-tag` list, or `None` if it does not parse.
fn tag_list(value: &[u8]) -> Option<Vec<(bool, &[u8])>> {
    let mut out = Vec::new();
    let mut rest = value;
    loop {
        rest = trim_ows(rest);
        while let Some(r) = rest.strip_prefix(b",") {
            rest = trim_ows(r);
        }
        if rest.is_empty() {
            return Some(out);
        }
        // The tag ends at its closing quote (etagc has no DQUOTE).
        let open = if rest.starts_with(b"W/") { 2 } else { 0 };
        if rest.get(open) != Some(&b'"') {
            return None;
        }
        let close = open + 1 + rest[open + 1..].iter().position(|&b| b == b'"')?;
        out.push(split_tag(&rest[..=close])?);
        rest = trim_ows(&rest[close + 1..]);
        if !rest.is_empty() && rest[0] != b',' {
            return None;
        }
    }
}

/// Whether an If-None-Match field value matches `etag` (the current entity-tag, quotes
/// included): `*`, or any listed tag equal to it by the weak comparison (RFC 9110 §8.8.3.2,
/// §13.1.2). A value that does not parse matches nothing.
pub fn if_none_match(value: &[u8], etag: &[u8]) -> bool {
    let value = trim_ows(value);
    if value == b"*" {
        return true;
    }
    let Some((_, ours)) = split_tag(etag) else { return false };
    tag_list(value).is_some_and(|tags| tags.iter().any(|&(_, opaque)| opaque == ours))
}

/// A file's current validators and length, for [`select`] and [`if_range`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validators<'a> {
    /// The entity-tag sent in `ETag`, quotes included (`"…"`, or `W/"…"` for a weak one).
    pub etag: &'a [u8],
    /// `Last-Modified`, in seconds since the epoch.
    pub last_modified: u64,
    /// Whether `Last-Modified` may act as a strong validator (RFC 9110 §8.8.2.2: the file was
    /// last changed at least a second before now); only then can an If-Range date match.
    pub last_modified_strong: bool,
    /// Length of the representation.
    pub len: u64,
}

fn http_date_secs(value: &[u8]) -> Option<u64> {
    let t = httpdate::parse_http_date(std::str::from_utf8(value).ok()?).ok()?;
    Some(t.duration_since(UNIX_EPOCH).ok()?.as_secs())
}

/// Whether an If-Range field value matches (RFC 9110 §13.1.5): an entity-tag by the strong
/// comparison (a weak tag on either side never matches), or an HTTP-date equal to a strong
/// `Last-Modified`. Anything else does not match.
pub fn if_range(value: &[u8], v: &Validators<'_>) -> bool {
    let value = trim_ows(value);
    if value.starts_with(b"\"") || value.starts_with(b"W/") {
        return match (split_tag(value), split_tag(v.etag)) {
            (Some((false, theirs)), Some((false, ours))) => theirs == ours,
            _ => false,
        };
    }
    v.last_modified_strong && http_date_secs(value) == Some(v.last_modified)
}

/// What to answer a GET or HEAD of a representation with validators `v`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selected {
    /// 304 Not Modified.
    NotModified,
    /// 200 with the whole representation.
    Full,
    /// 206 with bytes `first..=last`.
    Partial {
        /// First byte.
        first: u64,
        /// Last byte, inclusive.
        last: u64,
    },
    /// 416 with `Content-Range: bytes */len`.
    Unsatisfiable,
}

/// Evaluates the conditional and range fields of a GET or HEAD request in RFC 9110 §13.2.2's
/// order (If-Match and If-Unmodified-Since are not evaluated: a static server has no state
/// to protect): If-None-Match, else If-Modified-Since, then Range with If-Range.
///
/// If-Modified-Since is ignored when it is not a valid HTTP-date or appears on more than one
/// line (§13.1.3).
pub fn select(headers: &[Header<'_>], v: &Validators<'_>) -> Selected {
    let mut inm = headers.iter().filter(|h| h.is("if-none-match")).peekable();
    if inm.peek().is_some() {
        if inm.any(|h| if_none_match(&h.value, v.etag)) {
            return Selected::NotModified;
        }
    } else if let Some(ims) = only(headers, "if-modified-since").and_then(http_date_secs) {
        if v.last_modified <= ims {
            return Selected::NotModified;
        }
    }
    let Some(range) = only(headers, "range") else { return Selected::Full };
    let RangeRequest::Single(range) = parse_range(range) else { return Selected::Full };
    if headers.iter().any(|h| h.is("if-range")) {
        match only(headers, "if-range") {
            Some(ir) if if_range(ir, v) => {}
            _ => return Selected::Full,
        }
    }
    match range.resolve(v.len) {
        Resolved::Partial { first, last } => Selected::Partial { first, last },
        Resolved::Full => Selected::Full,
        Resolved::Unsatisfiable => Selected::Unsatisfiable,
    }
}

/// The value of `name` when it appears on exactly one line.
fn only<'h>(headers: &'h [Header<'_>], name: &str) -> Option<&'h [u8]> {
    let mut it = headers.iter().filter(|h| h.is(name));
    let first = it.next()?;
    it.next().is_none().then_some(&*first.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAG: &[u8] = b"\"1a-2b-3c\"";

    fn v(len: u64) -> Validators<'static> {
        Validators { etag: TAG, last_modified: 784_111_777, last_modified_strong: true, len }
    }

    #[test]
    fn ranges_parse() {
        use ByteRange::*;
        use RangeRequest::*;
        assert_eq!(parse_range(b"bytes=0-99"), Single(FromTo(0, 99)));
        assert_eq!(parse_range(b"BYTES=10-"), Single(From(10)));
        assert_eq!(parse_range(b"bytes=-5"), Single(Suffix(5)));
        assert_eq!(parse_range(b"bytes= , 3-4 ,"), Single(FromTo(3, 4)));
        assert_eq!(parse_range(b"bytes=0-0,2-3"), Multiple);
        assert_eq!(parse_range(b"bytes=0-1, x"), Multiple, "parsing stops at the second");
        assert_eq!(parse_range(b"bytes=99999999999999999999999-"), Single(From(u64::MAX)));
        assert_eq!(parse_range(b"bytes=0-99999999999999999999999"), Single(FromTo(0, u64::MAX)));
        for bad in [
            &b""[..],
            b"bytes",
            b"bytes=",
            b"bytes=,",
            b"bytes=5-1",
            b"bytes=-",
            b"bytes=a-b",
            b"bytes=1-2-3",
            b"bytes=+1-2",
            b"bytes=0x1-2",
            b"bytes = 0-1",
            b"bytes=0 - 1",
            b"items=0-1",
            b"bytes=-1-",
        ] {
            assert_eq!(parse_range(bad), Invalid, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn ranges_resolve() {
        use ByteRange::*;
        let p = |first, last| Resolved::Partial { first, last };
        assert_eq!(FromTo(0, 99).resolve(1000), p(0, 99));
        assert_eq!(FromTo(10, 5000).resolve(1000), p(10, 999));
        assert_eq!(FromTo(1000, 1001).resolve(1000), Resolved::Unsatisfiable);
        assert_eq!(From(999).resolve(1000), p(999, 999));
        assert_eq!(From(u64::MAX).resolve(1000), Resolved::Unsatisfiable);
        assert_eq!(Suffix(10).resolve(1000), p(990, 999));
        assert_eq!(Suffix(u64::MAX).resolve(1000), p(0, 999));
        assert_eq!(Suffix(0).resolve(1000), Resolved::Unsatisfiable);
        assert_eq!(Suffix(3).resolve(0), Resolved::Full);
        assert_eq!(From(0).resolve(0), Resolved::Unsatisfiable);
    }

    #[test]
    fn if_none_match_lists() {
        assert!(if_none_match(b"*", TAG));
        assert!(if_none_match(b"\"1a-2b-3c\"", TAG));
        assert!(if_none_match(b"W/\"1a-2b-3c\"", TAG), "weak comparison");
        assert!(if_none_match(b"\"x\", W/\"y\" ,\"1a-2b-3c\"", TAG));
        assert!(if_none_match(b" , \"1a-2b-3c\" ,", TAG));
        assert!(if_none_match(b"\"1a-2b-3c\"", b"W/\"1a-2b-3c\""));
        assert!(!if_none_match(b"\"x\"", TAG));
        assert!(!if_none_match(b"1a-2b-3c", TAG), "unquoted");
        assert!(!if_none_match(b"\"1a-2b-3c", TAG));
        assert!(!if_none_match(b"\"x\" \"1a-2b-3c\"", TAG), "no comma: invalid list");
        assert!(!if_none_match(b"w/\"1a-2b-3c\"", TAG), "W is case-sensitive");
        assert!(!if_none_match(b"", TAG));
        assert!(!if_none_match(b"*, \"x\"", TAG));
    }

    #[test]
    fn if_range_strong_only() {
        assert!(if_range(TAG, &v(10)));
        assert!(!if_range(b"W/\"1a-2b-3c\"", &v(10)));
        assert!(!if_range(b"\"other\"", &v(10)));
        assert!(if_range(b"Sun, 06 Nov 1994 08:49:37 GMT", &v(10)));
        assert!(!if_range(b"Sun, 06 Nov 1994 08:49:38 GMT", &v(10)));
        let weak_date = Validators { last_modified_strong: false, ..v(10) };
        assert!(!if_range(b"Sun, 06 Nov 1994 08:49:37 GMT", &weak_date));
        assert!(!if_range(b"yesterday", &v(10)));
    }

    fn h(pairs: &[(&'static str, &'static str)]) -> Vec<Header<'static>> {
        pairs.iter().map(|(n, v)| Header::new(n, v.as_bytes())).collect()
    }

    #[test]
    fn select_follows_the_rfc_order() {
        let sel = |pairs: &[(&'static str, &'static str)]| select(&h(pairs), &v(1000));
        let old = "Sat, 01 Jan 1994 00:00:00 GMT";
        let new = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(sel(&[]), Selected::Full);
        assert_eq!(sel(&[("If-None-Match", "\"1a-2b-3c\"")]), Selected::NotModified);
        assert_eq!(sel(&[("If-Modified-Since", new)]), Selected::NotModified);
        assert_eq!(sel(&[("If-Modified-Since", old)]), Selected::Full);
        // If-None-Match present: If-Modified-Since is not looked at.
        assert_eq!(sel(&[("If-None-Match", "\"x\""), ("If-Modified-Since", new)]), Selected::Full);
        assert_eq!(sel(&[("If-None-Match", "\"x\""), ("if-none-match", "*")]), Selected::NotModified);
        assert_eq!(sel(&[("If-Modified-Since", new), ("If-Modified-Since", new)]), Selected::Full);
        assert_eq!(sel(&[("Range", "bytes=10-19")]), Selected::Partial { first: 10, last: 19 });
        assert_eq!(sel(&[("Range", "bytes=1000-")]), Selected::Unsatisfiable);
        assert_eq!(sel(&[("Range", "bytes=0-1,5-6")]), Selected::Full);
        assert_eq!(sel(&[("Range", "bytes=0-1"), ("Range", "bytes=0-1")]), Selected::Full);
        assert_eq!(sel(&[("Range", "lines=1-2")]), Selected::Full);
        let r = ("Range", "bytes=-10");
        assert_eq!(sel(&[r, ("If-Range", "\"1a-2b-3c\"")]), Selected::Partial { first: 990, last: 999 });
        assert_eq!(sel(&[r, ("If-Range", "\"old\"")]), Selected::Full);
        assert_eq!(sel(&[r, ("If-Range", new)]), Selected::Partial { first: 990, last: 999 });
        assert_eq!(sel(&[r, ("If-Range", old)]), Selected::Full);
        assert_eq!(sel(&[r, ("If-Range", "\"1a-2b-3c\""), ("If-Range", "\"1a-2b-3c\"")]), Selected::Full);
        // Not modified wins over a range.
        assert_eq!(sel(&[r, ("If-None-Match", "*")]), Selected::NotModified);
        // If-Range without Range does nothing.
        assert_eq!(sel(&[("If-Range", "\"old\"")]), Selected::Full);
    }

    #[test]
    fn content_range_values() {
        let mut b = Vec::new();
        let mut w = crate::HeadWriter::response(&mut b, crate::Version::Http11, 206);
        w.content_range(Some((10, 99)), 1000).content_range(None, u64::MAX);
        w.content_range(Some((u64::MAX - 1, u64::MAX - 1)), u64::MAX);
        w.finish();
        let text = String::from_utf8(b).unwrap();
        assert!(text.contains("\r\nContent-Range: bytes 10-99/1000\r\n"), "{text}");
        assert!(text.contains("\r\nContent-Range: bytes */18446744073709551615\r\n"), "{text}");
        assert!(
            text.contains(
                "Content-Range: bytes 18446744073709551614-18446744073709551614/18446744073709551615"
            ),
            "{text}"
        );
    }
}
