//! Chunked decoder: the first byte picks a read size, the rest is the body. Decoding in reads of
//! that size must give the same data and verdict as decoding all at once.
#![no_main]

use hintq_http::{BodyDecoder, Error, Framing, Limits, Side};
use libfuzzer_sys::fuzz_target;

fn decode(body: &[u8], step: usize) -> Result<(Vec<u8>, usize), (Vec<u8>, Error)> {
    let limits = Limits { chunk_overhead_floor: 256, ..Limits::default() };
    let mut d = BodyDecoder::new(Framing::Chunked, Side::Request, &limits);
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

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else { return };
    let step = usize::from(first % 16) + 1;
    let whole = decode(body, body.len().max(1));
    assert_eq!(whole, decode(body, step));
    if let Ok((out, used)) = &whole {
        assert!(out.len() <= *used && *used <= body.len());
    }
});
