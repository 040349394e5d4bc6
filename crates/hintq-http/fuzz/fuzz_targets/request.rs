//! Request parser: arbitrary bytes as a client's stream. Parses heads and decodes bodies one
//! message after another, as the server does, and checks that feeding the same bytes as
//! growing prefixes reaches the same verdict.
#![no_main]

use hintq_http::{parse_request, BodyDecoder, Limits, Side};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    let whole = parse_request(data, &limits);
    if let Ok(Some(head)) = &whole {
        assert!(head.head_len <= data.len());
        // A complete head is complete at exactly its own length and not before.
        assert_eq!(parse_request(&data[..head.head_len], &limits), whole);
        assert_eq!(parse_request(&data[..head.head_len - 1], &limits), Ok(None));
        let mut body = BodyDecoder::new(head.framing, Side::Request, &limits);
        let mut out = Vec::new();
        if let Ok(used) = body.decode_to_vec(&data[head.head_len..], &mut out) {
            assert!(head.head_len + used <= data.len());
            assert!(out.len() <= used);
        }
    }
});
