//! The open-file cache: per request path, the open descriptor, what `fstat` said, the
//! response fields made from it (ETag, Last-Modified, Content-Type) and, for a small file, its
//! bytes, so that a request for a cached file costs no system call of its own beyond the
//! socket's read and write (nginx's `open_file_cache`, plus the body of small files).
//!
//! * **Bounded.** At most `max_entries` paths (spread over [`SHARDS`] locks, so threads do
//!   not queue on one); a full shard drops an entry (the hash map's arbitrary first, which
//!   SipHash's random keys make unpredictable to clients) before taking a new one. Bodies held
//!   in memory are bounded too: files up to the cache's hold limit (`--file-cache-hold`;
//!   by default [`HOLD_MAX_RING`] where the io_uring ring sends, else [`HOLD_MAX`]: see
//!   `serve::default_hold`),
//!   [`INLINE_BUDGET`] bytes in all; a larger file, or one past the budget, is cached without
//!   its body and sent with `sendfile`.
//! * **Revalidated.** An entry older than the validity period (`--file-cache-valid`, as nginx's
//!   `open_file_cache_valid`) is opened again through the `openat2` fence before it is used:
//!   a file replaced, changed or deleted is never served longer than that period after the
//!   change, and a path that a changed symlink now resolves outside the root stops being
//!   served within it (the fence refuses it, 403). A validity of zero turns the cache off:
//!   every request opens its file.
//! * **Only the fence opens.** Entries are filled by the caller's open function, the one that
//!   goes through [`super::path::open_beneath`]; nothing here opens a path.
//!
//! An entry is shared (`Arc`): a response being sent keeps its descriptor and body alive even
//! after the entry is replaced or dropped.

use hashbrown::HashTable;
use hintq_http::{Fields, HeadWriter};
use std::fs::File;
use std::hash::BuildHasher;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Files up to this size are held in memory by default and sent with their head in one
/// `sendmsg`; larger ones with the head's send and then `sendfile`. Measured by
/// `crates/hintq-serve/bench/hold-threshold.sh` on epoll (the README gives the figures): up
/// to here one gathered send from memory costs no more CPU per request than the head plus
/// `sendfile` (16 KiB: 0.99 of it, about the same), above it more (24 KiB: 1.06, 64 KiB:
/// 1.30).
pub const HOLD_MAX: u64 = 16 * 1024;
/// The same where the io_uring ring sends: a held body is copied into the ring's buffer and
/// leaves with the batch's one kernel entry, where `sendfile` is a system call of its own
/// after the head's send completes. Held costs 0.86 of `sendfile` at 32 KiB, 1.09 at 48 KiB.
pub const HOLD_MAX_RING: u64 = 32 * 1024;
/// Bytes of file bodies held in memory by one cache, in all.
pub(crate) const INLINE_BUDGET: usize = 64 * 1024 * 1024;
/// Independent locks the entries are spread over.
const SHARDS: usize = 16;

/// Where a cached file's bytes come from.
#[derive(Debug)]
pub(crate) enum Content {
    /// The whole file, of at most the hold limit, taken from the budget. No descriptor
    /// is kept: nothing reads the file.
    Held(Arc<[u8]>),
    /// The file open read-only, for `sendfile`.
    File(Arc<OwnedFd>),
}

/// A regular file as the cache holds it.
#[derive(Debug)]
pub(crate) struct Entry {
    pub content: Content,
    /// Size in bytes.
    pub len: u64,
    /// Modification time, whole seconds.
    pub mtime: i64,
    /// The entity-tag, quoted.
    pub etag: Box<[u8]>,
    /// Content-Type.
    pub ctype: &'static [u8],
    /// The header lines of a whole-file 200 after `Date`: Content-Type, Content-Length,
    /// Accept-Ranges, ETag, Last-Modified, written once here rather than at each request.
    pub full: Fields,
    /// The validators' lines (ETag, Last-Modified), which end a 206 and a 304.
    pub validators: Fields,
    /// When it was opened (or last revalidated) through the fence.
    checked: Instant,
}

impl Entry {
    /// An entry for `file`, whose `fstat` is `st`; the body is read here when `hold` allows
    /// (`None` for no cache, which never holds bodies).
    pub(crate) fn new(
        file: OwnedFd,
        st: &libc::stat,
        ctype: &'static [u8],
        etag: Box<[u8]>,
        last_modified: [u8; 29],
        hold: Option<Hold<'_>>,
    ) -> Entry {
        let len = st.st_size.max(0) as u64;
        let file = File::from(file);
        let content = match hold.map(|h| (h.budget, h.max)) {
            Some((b, max)) if len <= max && take(b, len as usize) => {
                let mut buf = vec![0u8; len as usize];
                match file.read_exact_at(&mut buf, 0) {
                    Ok(()) => Content::Held(buf.into()),
                    // Shorter than its `fstat` said: it is being changed. The descriptor is
                    // used instead, and `sendfile` notices a short file.
                    Err(_) => {
                        b.fetch_add(len as usize, Relaxed);
                        Content::File(Arc::new(file.into()))
                    }
                }
            }
            _ => Content::File(Arc::new(file.into())),
        };
        let validators = |w: &mut HeadWriter<'_>| {
            w.header("ETag", &etag).header("Last-Modified", &last_modified);
        };
        let full = Fields::build(|w| {
            w.header("Content-Type", ctype).content_length(len).header("Accept-Ranges", b"bytes");
            validators(w);
        });
        let validators = Fields::build(validators);
        Entry {
            content,
            len,
            mtime: st.st_mtime.max(0),
            etag,
            ctype,
            full,
            validators,
            checked: Instant::now(),
        }
    }

    /// Bytes of the budget it holds.
    fn charged(&self) -> usize {
        match &self.content {
            Content::Held(b) => b.len(),
            Content::File(_) => 0,
        }
    }

    #[cfg(test)]
    fn held(&self) -> Option<&[u8]> {
        match &self.content {
            Content::Held(b) => Some(b),
            Content::File(_) => None,
        }
    }
}

/// What an entry may take for its body: a file of up to `max` bytes, from what is left of
/// the cache's `budget`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hold<'a> {
    budget: &'a AtomicUsize,
    max: u64,
}

/// Takes `n` bytes from the budget if it has them.
fn take(budget: &AtomicUsize, n: usize) -> bool {
    budget.fetch_update(Relaxed, Relaxed, |left| left.checked_sub(n)).is_ok()
}

/// The entries of one shard: each key (the decoded path and whether it named a directory)
/// with its hash, computed once per lookup for both the shard and the table.
type Shard = HashTable<(u64, Box<[u8]>, Arc<Entry>)>;

/// The cache; see the module docs.
#[derive(Debug)]
pub(crate) struct FileCache {
    shards: Box<[Mutex<Shard>]>,
    hasher: foldhash::fast::RandomState,
    per_shard: usize,
    valid: Duration,
    budget: AtomicUsize,
    hold_max: u64,
}

impl FileCache {
    /// A cache of at most `max_entries` paths, each trusted for `valid` after it was opened,
    /// holding the bodies of files up to `hold_max` bytes. Zero for either of the first two
    /// turns caching off; a `hold_max` of zero sends every body with `sendfile`.
    pub(crate) fn new(max_entries: usize, valid: Duration, hold_max: u64) -> FileCache {
        let per_shard = if valid.is_zero() { 0 } else { max_entries.div_ceil(SHARDS) };
        FileCache {
            shards: (0..SHARDS).map(|_| Mutex::new(HashTable::new())).collect(),
            hasher: Default::default(),
            per_shard,
            valid,
            budget: AtomicUsize::new(INLINE_BUDGET),
            hold_max,
        }
    }

    /// What entries made for this cache may take for their bodies (`None`: caching is off,
    /// so no body is worth reading).
    pub(crate) fn hold(&self) -> Option<Hold<'_>> {
        (self.per_shard > 0).then_some(Hold { budget: &self.budget, max: self.hold_max })
    }

    /// The entry for `key` if it is still within its validity period at `now`; else `open` is
    /// called (through the fence) and what it returns is cached and given back. An error from
    /// `open` drops any entry for `key`.
    pub(crate) fn get<E>(
        &self,
        key: &[u8],
        now: Instant,
        open: impl FnOnce() -> Result<Entry, E>,
    ) -> Result<Arc<Entry>, E> {
        if self.per_shard == 0 {
            return open().map(Arc::new);
        }
        let hash = self.hasher.hash_one(key);
        let shard = &self.shards[hash as usize % SHARDS];
        let is_key = |e: &(u64, Box<[u8]>, Arc<Entry>)| e.0 == hash && *e.1 == *key;
        {
            let map = shard.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, _, e)) = map.find(hash, is_key) {
                if now.saturating_duration_since(e.checked) < self.valid {
                    return Ok(Arc::clone(e));
                }
            }
        }
        // Opened outside the lock: other paths of the shard are not held up by the disk.
        let fresh = open();
        let mut map = shard.lock().unwrap_or_else(|e| e.into_inner());
        let old = match fresh {
            Ok(entry) => {
                let entry = Arc::new(entry);
                let old = match map.find_mut(hash, is_key) {
                    Some(slot) => Some(std::mem::replace(&mut slot.2, Arc::clone(&entry))),
                    None => {
                        let evicted = if map.len() >= self.per_shard {
                            let first = map.iter().next().map(|e| (e.0, e.1.clone()));
                            first.and_then(|(h, k)| {
                                map.find_entry(h, |e| e.0 == h && e.1 == k).ok().map(|o| o.remove().0 .2)
                            })
                        } else {
                            None
                        };
                        map.insert_unique(hash, (hash, key.into(), Arc::clone(&entry)), |e| e.0);
                        evicted
                    }
                };
                drop(map);
                self.release(old);
                return Ok(entry);
            }
            Err(e) => (map.find_entry(hash, is_key).ok().map(|o| o.remove().0 .2), e),
        };
        drop(map);
        self.release(old.0);
        Err(old.1)
    }

    /// Gives an entry's body bytes back to the budget.
    fn release(&self, old: Option<Arc<Entry>>) {
        if let Some(old) = old {
            self.budget.fetch_add(old.charged(), Relaxed);
        }
    }

    /// Paths cached now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, OwnedFd};

    fn entry(contents: &[u8], hold: Option<Hold<'_>>) -> Entry {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Relaxed);
        let path = std::env::temp_dir().join(format!("hintq-cache-{}-{n}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        let file = OwnedFd::from(std::fs::File::open(&path).unwrap());
        std::fs::remove_file(&path).unwrap();
        // SAFETY: stat is plain data, filled by fstat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `file` is open and `st` a live stat.
        assert_eq!(unsafe { libc::fstat(file.as_raw_fd(), &mut st) }, 0);
        Entry::new(file, &st, b"text/plain", b"\"t\"".to_vec().into(), [b' '; 29], hold)
    }

    #[test]
    fn small_bodies_are_held_within_the_budget_and_the_limit() {
        let budget = AtomicUsize::new(10);
        let hold = Some(Hold { budget: &budget, max: 8 });
        assert_eq!(entry(b"12345678", hold).held(), Some(&b"12345678"[..]));
        assert_eq!(budget.load(Relaxed), 2);
        // Over what is left of the budget: cached without its body.
        assert!(entry(b"123", hold).held().is_none());
        assert_eq!(budget.load(Relaxed), 2);
        // Over the limit, however much budget is left: without its body, nothing taken.
        let budget = AtomicUsize::new(100);
        assert!(entry(b"123456789", Some(Hold { budget: &budget, max: 8 })).held().is_none());
        assert!(entry(b"1", Some(Hold { budget: &budget, max: 0 })).held().is_none());
        assert_eq!(budget.load(Relaxed), 100);
        // No cache: never a body.
        assert!(entry(b"1", None).held().is_none());
    }

    /// Asks `cache` three times for `a`; returns how many times it was opened.
    fn opens_for_three_gets(cache: &FileCache) -> usize {
        let mut opens = 0;
        for _ in 0..3 {
            cache
                .get::<()>(b"a", Instant::now(), || {
                    opens += 1;
                    Ok(entry(b"abc", cache.hold()))
                })
                .unwrap();
        }
        opens
    }

    #[test]
    fn entries_are_reused_until_they_expire_and_bounded() {
        let cache = FileCache::new(SHARDS, Duration::from_millis(200), HOLD_MAX);
        let opens = opens_for_three_gets(&cache);
        assert_eq!(opens, 1, "within the validity period the entry is reused");
        std::thread::sleep(Duration::from_millis(250));
        cache.get::<()>(b"a", Instant::now(), || Ok(entry(b"abd", cache.hold()))).unwrap();
        assert_eq!(cache.get::<()>(b"a", Instant::now(), || Err(())).unwrap().held(), Some(&b"abd"[..]));
        // A failed revalidation drops the entry and returns its body to the budget.
        std::thread::sleep(Duration::from_millis(250));
        assert!(cache.get::<u16>(b"a", Instant::now(), || Err(404)).is_err());
        assert_eq!(cache.len(), 0);
        assert_eq!(cache.budget.load(Relaxed), INLINE_BUDGET);
        // Never more entries than asked for (one per shard here).
        for i in 0..200u32 {
            cache.get::<()>(&i.to_le_bytes(), Instant::now(), || Ok(entry(b"x", cache.hold()))).unwrap();
        }
        assert!(cache.len() <= SHARDS, "{} entries", cache.len());
        assert_eq!(cache.budget.load(Relaxed), INLINE_BUDGET - cache.len());
    }

    #[test]
    fn zero_validity_opens_every_time() {
        let cache = FileCache::new(100, Duration::ZERO, HOLD_MAX);
        let opens = opens_for_three_gets(&cache);
        assert_eq!(opens, 3);
        assert_eq!(cache.len(), 0);
    }
}
