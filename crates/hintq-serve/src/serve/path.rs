//! From request target to an open file beneath the root, in two independent fences.
//!
//! 1. [`decode_target`]: strict percent-decoding per segment, then dot-segment removal
//!    (RFC 3986 §5.2.4) on the decoded segments, as nginx does (`ngx_http_parse_complex_uri`).
//!    Refused with 400: a target that is neither origin-form nor absolute-form, a malformed
//!    escape, `%00`, a `/` or `\` that arrives encoded (`%2f`, `%5c`) or a raw `\`, and a
//!    `..` (however encoded) that would climb above the root.
//! 2. [`open_beneath`]: `openat2(root, path, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: the
//!    kernel itself refuses any resolution that leaves the root (`..` or a symlink pointing
//!    out: `EXDEV`, answered 403) and `/proc` magic links. Symlinks that stay inside the root
//!    are followed. Opened with `O_NONBLOCK`, so a FIFO planted in the root cannot hang a
//!    thread (it is then refused as not a regular file).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// A request target decoded by [`decode_target`] (the path itself goes to the caller's buffer).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Target<'t> {
    /// The normalised path ends in `/` (the target's last segment is empty, `.` or `..`,
    /// as RFC 3986 §5.2.4 leaves them): a directory may be served from it.
    pub dir_form: bool,
    /// The query, as sent (still percent-encoded), when present and not empty.
    pub query: Option<&'t str>,
}

/// Decodes `target` into `rel`, the path relative to the root, NUL-terminated (`.` for the
/// root itself), without empty or dot segments; or gives the status to answer. `rel` is the
/// caller's reusable buffer, so a request allocates nothing here.
pub(crate) fn decode_target<'t>(target: &'t str, rel: &mut Vec<u8>) -> Result<Target<'t>, u16> {
    let path = origin_path(target).ok_or(400u16)?;
    // Byte scans, not `str` patterns: a target is short, and the pattern searcher's set-up
    // cost more than the search (2% of a small response's user time).
    let (path, query) = match path.bytes().position(|b| b == b'?') {
        // `?` is ASCII: both halves are on character boundaries.
        Some(i) => (&path[..i], Some(&path[i + 1..]).filter(|q| !q.is_empty())),
        None => (path, None),
    };
    rel.clear();
    let dir_form = match plain(path.as_bytes(), rel) {
        Some(dir_form) => dir_form,
        None => {
            rel.clear();
            segments(path.as_bytes(), rel)?
        }
    };
    Ok(Target { dir_form, query })
}

/// Decodes `path` (starting with `/`) segment by segment into `out`, NUL-terminated;
/// returns whether it named a directory (its last segment empty or a dot segment).
fn segments(path: &[u8], out: &mut Vec<u8>) -> Result<bool, u16> {
    let mut dir_form = true;
    for raw in path.split(|&b| b == b'/').skip(1) {
        let start = out.len();
        if !out.is_empty() {
            out.push(b'/');
        }
        let seg_start = out.len();
        decode_segment(raw, out)?;
        dir_form = matches!(&out[seg_start..], b"" | b"." | b"..");
        match &out[seg_start..] {
            b"" | b"." => out.truncate(start),
            b".." => {
                // Drop `..` and the segment before it. A decoded segment holds no `/` (an
                // encoded one is refused), so that segment starts after the last `/`.
                out.truncate(start);
                if out.is_empty() {
                    return Err(400);
                }
                let prev = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                out.truncate(prev);
            }
            _ => {}
        }
    }
    if out.is_empty() {
        out.push(b'.');
    }
    out.push(0);
    Ok(dir_form)
}

/// The common path, decoded in one pass: no escapes, no backslash, no empty segment but a
/// last one, no segment starting with a dot; it is copied as it is, without its leading and
/// trailing slashes, and `Some(dir_form)` returned. `None` (with `out` in any state) leaves
/// the path to the segment-by-segment decoding, which gives the same result for every path
/// this one takes (checked by a test).
fn plain(path: &[u8], out: &mut Vec<u8>) -> Option<bool> {
    let mut prev = b'/';
    for &b in &path[1..] {
        if b == b'%' || b == b'\\' || (prev == b'/' && (b == b'/' || b == b'.')) {
            return None;
        }
        prev = b;
    }
    let dir_form = prev == b'/';
    let inner = &path[1..path.len() - usize::from(dir_form && path.len() > 1)];
    out.extend_from_slice(if inner.is_empty() { b"." } else { inner });
    out.push(0);
    Some(dir_form)
}

/// The `Location` of the redirect from a directory named without its trailing slash: the
/// normalised path (never the raw target) plus `/`, each byte outside RFC 3986's pchar
/// percent-encoded, then the query with any byte a query may not hold encoded. `rel` holds
/// no empty segment, so the result starts with exactly one `/` (`//host/` cannot come out:
/// never an open redirect).
pub(crate) fn location(t: &Target<'_>, rel: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let rel = &rel[..rel.len() - 1];
    let mut out = Vec::with_capacity(rel.len() * 3 + 2 + t.query.map_or(0, |q| q.len() * 3 + 1));
    let push = |out: &mut Vec<u8>, b: u8, keep: bool| {
        if keep {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    };
    out.push(b'/');
    if rel != b"." {
        for &b in rel {
            let pchar = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b);
            push(&mut out, b, pchar);
        }
        out.push(b'/');
    }
    if let Some(q) = t.query {
        out.push(b'?');
        for &b in q.as_bytes() {
            let query = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b);
            push(&mut out, b, query);
        }
    }
    debug_assert!(!out.starts_with(b"//"));
    out
}

/// The path part of an origin-form (`/a/b?q`) or absolute-form (`http://host/a/b`) target.
fn origin_path(target: &str) -> Option<&str> {
    if target.starts_with('/') {
        return Some(target);
    }
    let starts = |p: &str| target.get(..p.len()).is_some_and(|t| t.eq_ignore_ascii_case(p));
    let rest = if starts("http://") {
        &target[7..]
    } else if starts("https://") {
        &target[8..]
    } else {
        return None;
    };
    Some(rest.find(['/', '?']).map_or("/", |i| if rest[i..].starts_with('/') { &rest[i..] } else { "/" }))
}

fn decode_segment(raw: &[u8], out: &mut Vec<u8>) -> Result<(), u16> {
    let mut i = 0;
    while i < raw.len() {
        let b = match raw[i] {
            b'%' => {
                let hex = |k: usize| raw.get(k).and_then(|&c| (c as char).to_digit(16));
                let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2)) else { return Err(400) };
                i += 2;
                let b = (hi * 16 + lo) as u8;
                if matches!(b, 0 | b'/') {
                    return Err(400);
                }
                b
            }
            b => b,
        };
        if b == b'\\' {
            return Err(400);
        }
        out.push(b);
        i += 1;
    }
    Ok(())
}

/// Opens `path` (NUL-terminated, relative) beneath `root`, read-only, non-blocking,
/// close-on-exec, never leaving the root.
///
/// # Errors
/// The `openat2` error; [`status_of`] maps it to a status.
pub(crate) fn open_beneath(root: RawFd, path: &[u8]) -> io::Result<OwnedFd> {
    debug_assert_eq!(path.last(), Some(&0));
    // SAFETY: open_how is plain data; all-zero is valid (mode 0).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    loop {
        // SAFETY: `path` is NUL-terminated, `how` a live open_how of the size passed.
        let r = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                root,
                path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if r >= 0 {
            // SAFETY: a new descriptor owned by nobody else.
            return Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) });
        }
        let e = io::Error::last_os_error();
        // EAGAIN: a concurrent rename raced the lookup (openat2(2)); just retry.
        if !matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) {
            return Err(e);
        }
    }
}

/// The status for an `openat2` failure: missing → 404; refused by the fence or permissions
/// → 403; out of descriptors or memory → 503; anything else → 500.
pub(crate) fn status_of(e: &io::Error) -> u16 {
    match e.raw_os_error().unwrap_or(0) {
        libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG => 404,
        libc::EXDEV | libc::ELOOP | libc::EACCES | libc::EPERM => 403,
        libc::EMFILE | libc::ENFILE | libc::ENOMEM => 503,
        _ => 500,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path the one-pass decoding takes gets what the segment decoding gives: all
    /// paths of up to five bytes over an alphabet of the bytes that matter.
    #[test]
    fn the_plain_path_agrees_with_the_segment_decoding() {
        let alphabet = b"/.a%\\b";
        let (mut taken, mut paths) = (0, 0);
        let mut path = vec![b'/'];
        fn each(path: &mut Vec<u8>, alphabet: &[u8], left: usize, f: &mut impl FnMut(&[u8])) {
            f(path);
            if left > 0 {
                for &b in alphabet {
                    path.push(b);
                    each(path, alphabet, left - 1, f);
                    path.pop();
                }
            }
        }
        each(&mut path, alphabet, 5, &mut |p| {
            paths += 1;
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            if let Some(dir_form) = plain(p, &mut fast) {
                taken += 1;
                let want = segments(p, &mut slow);
                assert_eq!(Ok(dir_form), want, "{:?}", String::from_utf8_lossy(p));
                assert_eq!(fast, slow, "{:?}", String::from_utf8_lossy(p));
            }
        });
        assert!(taken > 100 && taken < paths, "{taken} of {paths} taken");
    }

    fn decode(t: &str) -> Result<(Target<'_>, Vec<u8>), u16> {
        let mut rel = b"left over".to_vec();
        decode_target(t, &mut rel).map(|d| (d, rel))
    }

    fn ok(t: &str) -> String {
        let p = decode(t).unwrap_or_else(|s| panic!("{t}: {s}")).1;
        String::from_utf8(p[..p.len() - 1].to_vec()).unwrap()
    }

    fn loc(t: &str) -> String {
        let (d, rel) = decode(t).unwrap();
        String::from_utf8(location(&d, &rel)).unwrap()
    }

    #[test]
    fn dir_form_and_query() {
        for (t, dir) in [
            ("/", true),
            ("/sub", false),
            ("/sub/", true),
            ("/sub/.", true),
            ("/sub/x/..", true),
            ("/sub/%2e", true),
            ("/sub//", true),
            ("/sub?x=/", false),
            ("http://h", true),
            ("http://h/sub", false),
        ] {
            assert_eq!(decode(t).unwrap().0.dir_form, dir, "{t}");
        }
        assert_eq!(decode("/a?b=c?d").unwrap().0.query, Some("b=c?d"));
        assert_eq!(decode("/a?").unwrap().0.query, None);
    }

    #[test]
    fn locations_are_local_paths() {
        assert_eq!(loc("/sub"), "/sub/");
        assert_eq!(loc("/a/b?x=1&y=%20"), "/a/b/?x=1&y=%20");
        assert_eq!(loc("/a%20b/c%3Fd%23e%25f"), "/a%20b/c%3Fd%23e%25f/");
        assert_eq!(loc("/%C3%A9t%C3%A9"), "/%C3%A9t%C3%A9/");
        assert_eq!(loc("/a?q=\u{e9}\"<"), "/a/?q=%C3%A9%22%3C");
        // Never a network-path reference, however the target starts.
        for t in [
            "//evil.com",
            "///evil.com",
            "/.//evil.com",
            "/./evil.com",
            "/x/..//evil.com",
            "http://h//evil.com",
        ] {
            assert_eq!(loc(t), "/evil.com/", "{t}");
        }
        assert_eq!(loc("/evil.com/..?//x"), "/?//x");
    }

    #[test]
    fn decodes_and_removes_dot_segments() {
        assert_eq!(ok("/"), ".");
        assert_eq!(ok("/a/b.html?x=1"), "a/b.html");
        assert_eq!(ok("/a/./b/../c"), "a/c");
        assert_eq!(ok("/a//b/"), "a/b");
        assert_eq!(ok("/a/%2e%2e/b"), "b");
        assert_eq!(ok("/a%20b"), "a b");
        assert_eq!(ok("/a/.."), ".");
        assert_eq!(ok("http://example.com/x/y"), "x/y");
        assert_eq!(ok("HTTP://example.com"), ".");
        assert_eq!(ok("http://example.com?q"), ".");
    }

    #[test]
    fn refuses_escapes_and_climbs() {
        for t in [
            "/../x",
            "/%2e%2e/x",
            "/%2E%2E/x",
            "/a/../../x",
            "/a%2fb",
            "/a%2Fb",
            "/a%00b",
            "/a\\b",
            "/a%5cb",
            "/%",
            "/%4",
            "/%zz",
            "*",
            "x",
            "example.com:80",
            "/.%2e/x",
        ] {
            assert_eq!(decode(t).map(|d| d.0), Err(400), "{t}");
        }
    }
}
