//! [`Headers`]: the header fields of a head, held inline up to [`INLINE_HEADERS`] so that
//! parsing an ordinary request allocates nothing.
//!
//! Why not `smallvec` or `arrayvec`: their types implement `Drop`, and without the nightly
//! `may_dangle` a value with a `Drop` impl keeps every borrow it holds alive until it goes out
//! of scope. A head borrows the connection's input buffer, and the servers change that buffer
//! (consume the head, answer an error) while the head is still in scope. `Vec` is exempt
//! (`may_dangle`), and so is this type, which has no `Drop` impl of its own: its fields are
//! dropped by the compiler's drop glue, which does not need the borrow.

use crate::head::Header;
use std::fmt;
use std::ops::{Deref, DerefMut};

/// Header fields a head holds without allocating (browsers send about a dozen).
pub const INLINE_HEADERS: usize = 16;

/// Header fields in the order received; a slice by [`Deref`]. The first [`INLINE_HEADERS`]
/// live inside the value; a longer list moves to the heap whole.
#[derive(Clone, Default)]
pub struct Headers<'a> {
    inline: [Header<'a>; INLINE_HEADERS],
    /// Fields in `inline`; 0 once `spill` is used.
    len: usize,
    /// The whole list, once it outgrew `inline`.
    spill: Vec<Header<'a>>,
}

impl<'a> Headers<'a> {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a field.
    pub fn push(&mut self, h: Header<'a>) {
        if !self.spill.is_empty() {
            self.spill.push(h);
        } else if self.len < INLINE_HEADERS {
            self.inline[self.len] = h;
            self.len += 1;
        } else {
            self.spill.reserve(2 * INLINE_HEADERS);
            self.spill.extend(self.inline.iter_mut().map(std::mem::take));
            self.spill.push(h);
            self.len = 0;
        }
    }

    /// Keeps the fields for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&Header<'a>) -> bool) {
        if !self.spill.is_empty() {
            self.spill.retain(keep);
            return;
        }
        let mut kept = 0;
        for i in 0..self.len {
            if keep(&self.inline[i]) {
                self.inline.swap(kept, i);
                kept += 1;
            }
        }
        for h in &mut self.inline[kept..self.len] {
            *h = Header::default();
        }
        self.len = kept;
    }

    /// Copies whatever is borrowed, so the input buffer can be reused.
    pub fn into_owned(self) -> Headers<'static> {
        self.iter().map(|h| h.clone().into_owned()).collect()
    }
}

impl<'a> Deref for Headers<'a> {
    type Target = [Header<'a>];
    fn deref(&self) -> &[Header<'a>] {
        if self.spill.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }
}

impl DerefMut for Headers<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        if self.spill.is_empty() {
            &mut self.inline[..self.len]
        } else {
            &mut self.spill
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
