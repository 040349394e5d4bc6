//! Header rules for intermediaries: hop-by-hop stripping (RFC 9110 §7.6.1) and `Via` (§7.6.3).

use std::borrow::Cow;

use crate::framing::list_elements;
use crate::head::{Header, Version};
use crate::headers::Headers;

/// Fields that describe one connection, never forwarded: RFC 9110 §7.6.1 names Connection,
/// Proxy-Connection, Keep-Alive, TE, Transfer-Encoding and Upgrade; `Trailer` is added as in
/// RFC 2616 §13.5.1 because the proxy re-frames bodies and does not promise the same trailers.
pub const HOP_BY_HOP: [&str; 7] =
    ["connection", "proxy-connection", "keep-alive", "te", "transfer-encoding", "upgrade", "trailer"];

/// Fields a `Connection` option may not remove: the proxy needs them to route and frame, and
/// letting a client strip them is the "hop-by-hop header abuse" trick.
const PROTECTED: [&str; 2] = ["host", "content-length"];

/// Whether `name` is one of the fixed hop-by-hop fields.
pub fn is_hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.iter().any(|h| name.eq_ignore_ascii_case(h))
}

/// Removes the hop-by-hop fields and every field named by a `Connection` option
/// (`Connection: close, X-Foo` removes `X-Foo`), except Host and Content-Length.
///
/// Content-Length is kept so the caller sees it; a proxy writes its own framing headers from
/// the parsed [`Framing`](crate::Framing) and must not copy Content-Length blindly.
pub fn strip_hop_by_hop(headers: &mut Headers<'_>) {
    // (`end_to_end` keeps the same fields without allocating; this one edits the list.)
    let listed: Vec<String> = headers
        .iter()
        .filter(|h| h.is("connection"))
        .flat_map(|h| list_elements(&h.value).map(|t| String::from_utf8_lossy(t).to_ascii_lowercase()))
        .filter(|t| !t.is_empty() && !PROTECTED.contains(&t.as_str()))
        .collect();
    headers.retain(|h| !is_hop_by_hop(&h.name) && !listed.iter().any(|t| h.is(t)));
}

/// The fields [`strip_hop_by_hop`] keeps, in order, without copying the list: what a proxy
/// writing a head straight from a parsed one forwards.
pub fn end_to_end<'h, 'a>(headers: &'h [Header<'a>]) -> impl Iterator<Item = &'h Header<'a>> {
    let options = headers.iter().any(|c| c.is("connection"));
    headers.iter().filter(move |h| !(is_hop_by_hop(&h.name) || options && named_by_connection(h, headers)))
}

/// Whether a `Connection` option among `headers` names `h` (never Host or Content-Length).
fn named_by_connection(h: &Header<'_>, headers: &[Header<'_>]) -> bool {
    if PROTECTED.iter().any(|p| h.is(p)) {
        return false;
    }
    let name = h.name.as_bytes();
    headers.iter().filter(|c| c.is("connection")).any(|c| {
        // `list_elements` trims whitespace; an option with a byte that is not ASCII never
        // equals a token name (the lossy lower-casing in `strip_hop_by_hop` agrees).
        list_elements(&c.value).any(|t| !t.is_empty() && t.eq_ignore_ascii_case(name))
    })
}

/// Appends `Via: 1.1 <pseudonym>` (the version the message was received with). Appending a new
/// line keeps the order of any earlier `Via` entries (RFC 9110 §7.6.3). The value is owned,
/// so the list moves to the heap ([`Headers`] holds only borrowed fields inline); a proxy
/// writing heads from the parsed list writes `Via` itself instead (as `hintq proxy` does).
pub fn add_via(headers: &mut Headers<'_>, received: Version, pseudonym: &str) {
    let protocol = match received {
        Version::Http10 => "1.0",
        Version::Http11 => "1.1",
    };
    let value = format!("{protocol} {pseudonym}").into_bytes();
    headers.push(Header { name: Cow::Borrowed("Via"), value: Cow::Owned(value) });
}
