//! Property tests for the Range, If-None-Match and If-Range parsers: they never panic, a
//! resolved range always lies inside the representation, what we write parses back, and a
//! tag list matches exactly when it holds our tag.

use hintq_http::*;
use proptest::prelude::*;

const PIECES: &[&str] = &[
    "bytes",
    "BYTES",
    "=",
    "-",
    ",",
    " ",
    "\t",
    "0",
    "1",
    "9",
    "18446744073709551616",
    "x",
    "\"",
    "W/",
    "*",
];

fn value() -> impl Strategy<Value = Vec<u8>> {
    let one = prop_oneof![
        4 => proptest::sample::select(PIECES).prop_map(|s| s.as_bytes().to_vec()),
        1 => proptest::collection::vec(any::<u8>(), 0..3),
    ];
    proptest::collection::vec(one, 0..16).prop_map(|p| p.concat())
}

fn tag() -> impl Strategy<Value = String> {
    "[!#-~]{0,12}".prop_map(|s| format!("\"{s}\""))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn range_parse_never_panics_and_resolves_inside(v in value(), len in prop_oneof![0u64..5, any::<u64>()]) {
        if let RangeRequest::Single(r) = parse_range(&v) {
            if let Resolved::Partial { first, last } = r.resolve(len) {
                prop_assert!(first <= last && last < len, "{r:?} on {len}: {first}-{last}");
            }
        }
        let etag = b"\"a\"";
        let val = Validators { etag, last_modified: 0, last_modified_strong: true, len };
        let _ = if_none_match(&v, etag);
        let _ = if_range(&v, &val);
    }

    #[test]
    fn written_ranges_parse_back(first in any::<u64>(), span in any::<u64>(), len in any::<u64>()) {
        let last = first.saturating_add(span);
        let r = ByteRange::FromTo(first, last);
        prop_assert_eq!(parse_range(format!("bytes={first}-{last}").as_bytes()), RangeRequest::Single(r));
        prop_assert_eq!(parse_range(format!("bytes={first}-").as_bytes()), RangeRequest::Single(ByteRange::From(first)));
        prop_assert_eq!(parse_range(format!("bytes=-{span}").as_bytes()), RangeRequest::Single(ByteRange::Suffix(span)));
        prop_assert_eq!(parse_range(format!("bytes={first}-{last},0-0").as_bytes()), RangeRequest::Multiple);
        match r.resolve(len) {
            Resolved::Partial { first: a, last: b } => prop_assert!(a == first && b == last.min(len - 1)),
            Resolved::Unsatisfiable => prop_assert!(first >= len),
            Resolved::Full => prop_assert!(false, "a first-last range is never Full"),
        }
        // The suffix keeps exactly min(span, len) bytes.
        match ByteRange::Suffix(span).resolve(len) {
            Resolved::Partial { first: a, last: b } => prop_assert_eq!(b - a + 1, span.min(len)),
            Resolved::Unsatisfiable => prop_assert_eq!(span, 0),
            Resolved::Full => prop_assert_eq!(len, 0),
        }
    }

    #[test]
    fn tag_lists_match_when_they_hold_ours(
        ours in tag(),
        others in proptest::collection::vec(tag(), 0..6),
        weak in proptest::collection::vec(any::<bool>(), 6),
        at in 0usize..7,
        with_ours in any::<bool>(),
    ) {
        let mut list: Vec<String> = others.iter().filter(|t| **t != ours).cloned().collect();
        if with_ours {
            list.insert(at.min(list.len()), ours.clone());
        }
        let list: Vec<String> =
            list.into_iter().zip(weak.iter().cycle()).map(|(t, &w)| if w { format!("W/{t}") } else { t }).collect();
        let value = list.join(" ,\t");
        prop_assert_eq!(if_none_match(value.as_bytes(), ours.as_bytes()), with_ours, "{}", value);
        // If-Range: strong comparison of a single tag.
        let v = Validators { etag: ours.as_bytes(), last_modified: 0, last_modified_strong: true, len: 1 };
        prop_assert!(if_range(ours.as_bytes(), &v));
        let weak_ours = format!("W/{ours}");
        prop_assert!(!if_range(weak_ours.as_bytes(), &v));
    }
}
