//! [`Headers`]: the header fields of a head, held inline up to [`INLINE_HEADERS`] so that
//! parsing an ordinary request allocates nothing.
//!
//! Why not `smallvec` or `arrayvec`: their types implement `Drop`, and without the nightly
//! `may_dangle` a value with a `Drop` impl keeps every borrow it holds alive until it goes out
//! of scope. A head borrows the connection's input buffer, and the servers change that buffer
//! (consume the head, answer an error) while the head is still in scope. `Vec` is exempt
//! (`may_dangle`), and so is this type, which has no `Drop` impl of its own.
//!
//! The inline slots are left uninitialised past `len`, and hold only fields whose name and
//! value are both borrowed: such a field owns nothing, so not dropping it loses nothing. A
//! field that owns either part goes to `spill` (a `Vec`, dropped as usual) with every field
//! before it. Initialising and dropping sixteen `Cow` pairs per head was 4% of the proxy's
//! instructions per request.

use crate::head::Header;
use std::borrow::Cow;
use std::fmt;
use std::mem::MaybeUninit;
use std::ops::Deref;

/// Header fields a head holds without allocating (browsers send about a dozen).
pub const INLINE_HEADERS: usize = 16;

/// Header fields in the order received; a slice by [`Deref`]. The first [`INLINE_HEADERS`]
/// borrowed fields live inside the value; a longer list, or one with an owned field, moves to
/// the heap whole.
pub struct Headers<'a> {
    /// `inline[..len]` are initialised, and each borrows both its name and its value.
    inline: [MaybeUninit<Header<'a>>; INLINE_HEADERS],
    /// Fields in `inline`; 0 once `spill` is used.
    len: usize,
    /// The whole list, once it outgrew `inline` or took an owned field.
    spill: Vec<Header<'a>>,
}

impl<'a> Headers<'a> {
    /// An empty list.
    pub fn new() -> Self {
        Headers { inline: [const { MaybeUninit::uninit() }; INLINE_HEADERS], len: 0, spill: Vec::new() }
    }

    /// Appends a field.
    pub fn push(&mut self, h: Header<'a>) {
        let borrowed = matches!((&h.name, &h.value), (Cow::Borrowed(_), Cow::Borrowed(_)));
        if self.spill.is_empty() && self.len < INLINE_HEADERS && borrowed {
            self.inline[self.len] = MaybeUninit::new(h);
            self.len += 1;
            return;
        }
        if self.spill.is_empty() {
            self.spill.reserve(2 * INLINE_HEADERS);
            // Moved out of the inline slots, which are then forgotten (`len` 0).
            self.spill.extend(self.inline[..self.len].iter().map(|m| {
                // SAFETY: `inline[..len]` are initialised; each is read once, and `len` is
                // set to 0 below, so none is read again.
                unsafe { m.assume_init_read() }
            }));
            self.len = 0;
        }
        self.spill.push(h);
    }

    /// Keeps the fields for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&Header<'a>) -> bool) {
        if !self.spill.is_empty() {
            self.spill.retain(keep);
            return;
        }
        let mut kept = 0;
        for i in 0..self.len {
            // SAFETY: `i < len`: initialised.
            if keep(unsafe { self.inline[i].assume_init_ref() }) {
                self.inline.swap(kept, i);
                kept += 1;
            }
        }
        // The fields dropped own nothing (borrowed name and value): forgetting them is
        // dropping them.
        self.len = kept;
    }

    /// Copies whatever is borrowed, so the input buffer can be reused.
    pub fn into_owned(self) -> Headers<'static> {
        Headers { spill: self.iter().map(|h| h.clone().into_owned()).collect(), ..Headers::new() }
    }
}

impl Default for Headers<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for Headers<'_> {
    fn clone(&self) -> Self {
        self.iter().cloned().collect()
    }
}

impl<'a> Deref for Headers<'a> {
    type Target = [Header<'a>];
    fn deref(&self) -> &[Header<'a>] {
        if self.spill.is_empty() {
            // SAFETY: `inline[..len]` are initialised, and `MaybeUninit<T>` has `T`'s layout.
            unsafe { std::slice::from_raw_parts(self.inline.as_ptr().cast::<Header<'a>>(), self.len) }
        } else {
            &self.spill
        }
    }
}

impl<'a> FromIterator<Header<'a>> for Headers<'a> {
    fn from_iter<I: IntoIterator<Item = Header<'a>>>(iter: I) -> Self {
        let mut out = Headers::new();
        iter.into_iter().for_each(|h| out.push(h));
        out
    }
}

impl PartialEq for Headers<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Headers<'_> {}

impl fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(h: &Headers<'_>) -> Vec<String> {
        h.iter().map(|h| h.name.to_string()).collect()
    }

    #[test]
    fn inline_then_spilled_keeps_order_and_every_operation() {
        let all: Vec<String> = (0..40).map(|i| format!("h{i}")).collect();
        for n in [0, 1, INLINE_HEADERS - 1, INLINE_HEADERS, INLINE_HEADERS + 1, 40] {
            let mut h: Headers<'_> = all[..n].iter().map(|s| Header::new(s, b"v")).collect();
            assert_eq!(names(&h), all[..n], "{n} pushed");
            assert_eq!(h.len(), n);
            h.retain(|x| x.name.ends_with(['0', '2', '4', '6', '8']));
            let even: Vec<String> =
                all[..n].iter().filter(|s| s.ends_with(['0', '2', '4', '6', '8'])).cloned().collect();
            assert_eq!(names(&h), even, "{n} retained");
            h.push(Header::new("last", b""));
            assert_eq!(h[h.len() - 1].name, "last");
            assert_eq!(h.len(), even.len() + 1);
            let owned = h.clone().into_owned();
            assert_eq!(owned, h);
            // Fields past the end of an inline list never show through.
            let mut short: Headers<'_> = all[..3].iter().map(|s| Header::new(s, b"v")).collect();
            short.retain(|x| x.name == "h1");
            short.push(Header::new("new", b""));
            assert_eq!(names(&short), ["h1", "new"]);
        }
    }

    /// An owned field moves the list to the heap in order (inline slots never hold one), and
    /// every operation goes on from there.
    #[test]
    fn owned_fields_keep_their_place() {
        let owned = |n: &str| Header { name: Cow::Owned(n.to_string()), value: Cow::Owned(b"o".to_vec()) };
        let mut h: Headers<'_> = ["a", "b"].iter().map(|s| Header::new(s, b"v")).collect();
        h.push(owned("c"));
        h.push(Header::new("d", b"v"));
        assert_eq!(names(&h), ["a", "b", "c", "d"]);
        assert_eq!(&*h[2].value, b"o");
        h.retain(|x| x.name != "b");
        assert_eq!(names(&h), ["a", "c", "d"]);
        assert_eq!(h.clone(), h);
        let owned_all = h.into_owned();
        assert_eq!(names(&owned_all), ["a", "c", "d"]);
        // An owned value with a borrowed name counts as owned.
        let mut v = Headers::new();
        v.push(Header { name: Cow::Borrowed("x"), value: Cow::Owned(b"1".to_vec()) });
        v.push(Header::new("y", b"2"));
        assert_eq!(names(&v), ["x", "y"]);
    }

    #[test]
    fn equality_ignores_where_the_fields_live() {
        let a: Headers<'_> = (0..20).map(|_| Header::new("x", b"1")).collect();
        let mut b: Headers<'_> = (0..25).map(|_| Header::new("x", b"1")).collect();
        b.retain({
            let mut i = 0;
            move |_| {
                i += 1;
                i <= 20
            }
        });
        assert_eq!(a, b);
        assert_ne!(a, Headers::new());
    }
}
