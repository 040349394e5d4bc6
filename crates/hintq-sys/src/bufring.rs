//! A ring of provided buffers for io_uring receives (`IORING_REGISTER_PBUF_RING`, 5.19): the
//! ring of entries the kernel reads (page-aligned, as it asks) and the buffers themselves.
//! A multishot `IORING_OP_RECV` with buffer selection takes one per completion; the owner
//! copies the bytes out ([`BufRing::received`]) and gives the buffer back ([`BufRing::give`]).
//! An incrementally consumed ring ([`BufRing::incremental`], `IOU_PBUF_RING_INC`, 6.12) lets
//! each completion take only the bytes it received from the head buffer, the next one
//! continuing where it stopped: large buffers then cost no more memory per small receive, and
//! a large body comes in a few completions. The kernel says a buffer is still in use with
//! `IORING_CQE_F_BUF_MORE` ([`buf_more`]); it is given back only once a completion without it
//! came.

use io_uring::{types, IoUring};
use std::io;

/// `count` buffers of `size` bytes registered with one ring as one buffer group.
pub struct BufRing {
    entries: std::ptr::NonNull<types::BufRingEntry>,
    layout: std::alloc::Layout,
    bufs: Box<[u8]>,
    size: usize,
    count: u16,
    /// Our copy of the tail; the kernel's is in the first entry.
    tail: u16,
    /// Per buffer, the bytes completions took from it since it was given (incremental
    /// consumption: where the next completion's bytes start).
    taken: Box<[u32]>,
}

/// `IOU_PBUF_RING_INC`: the kernel consumes each buffer incrementally (6.12).
const IOU_PBUF_RING_INC: u16 = 2;

/// `IORING_CQE_F_BUF_MORE`: the completion's buffer is still the kernel's (incremental
/// consumption): more completions will put bytes in it after these.
pub fn buf_more(flags: u32) -> bool {
    flags & (1 << 4) != 0
}

impl BufRing {
    /// Registers `count` (a power of two) buffers of `size` bytes with `ring` as group `bgid`,
    /// all given to the kernel.
    ///
    /// The value must outlive every receive that may take its buffers. The kernel drops the
    /// group with the ring only in the ring's teardown, which runs after the ring's
    /// descriptor is closed: [`BufRing::release`] it before the ring goes, or keep this value
    /// until the process ends.
    ///
    /// # Errors
    /// Allocation, or the kernel refusing the registration (before 5.19: `EINVAL`).
    pub fn new(ring: &IoUring, count: u16, size: usize, bgid: u16) -> io::Result<BufRing> {
        BufRing::register(ring, count, size, bgid, 0)
    }

    /// As [`BufRing::new`], consumed incrementally (`IOU_PBUF_RING_INC`, see the module docs).
    ///
    /// # Errors
    /// As [`BufRing::new`]; a kernel before 6.12 refuses the flag (`EINVAL`).
    pub fn incremental(ring: &IoUring, count: u16, size: usize, bgid: u16) -> io::Result<BufRing> {
        BufRing::register(ring, count, size, bgid, IOU_PBUF_RING_INC)
    }

    fn register(ring: &IoUring, count: u16, size: usize, bgid: u16, flags: u16) -> io::Result<BufRing> {
        if u32::try_from(size).is_err() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "buffer size over 4 GiB"));
        }
        if !count.is_power_of_two() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "buffer count must be a power of two"));
        }
        let layout = std::alloc::Layout::from_size_align(
            usize::from(count) * std::mem::size_of::<types::BufRingEntry>(),
            4096,
        )
        .map_err(io::Error::other)?;
        // SAFETY: the layout has a non-zero size (count >= 1).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<types::BufRingEntry>();
        let entries =
            std::ptr::NonNull::new(raw).ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let mut r = BufRing {
            entries,
            layout,
            bufs: vec![0; usize::from(count) * size].into(),
            size,
            count,
            tail: 0,
            taken: vec![0; usize::from(count)].into(),
        };
        // SAFETY: the entries stay allocated until `r` drops, which its owner does only after
        // the ring is gone (the contract of `new`).
        unsafe { ring.submitter().register_buf_ring_with_flags(raw as u64, count, bgid, flags) }?;
        (0..count).for_each(|bid| r.give(bid));
        Ok(r)
    }

    /// Buffer `bid`'s first `len` bytes, as a completion of a ring not consumed
    /// incrementally left them.
    pub fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        let at = usize::from(bid) * self.size;
        &self.bufs[at..at + len.min(self.size)]
    }

    /// The `len` bytes a completion left in buffer `bid`: its first ones, or on an
    /// incrementally consumed ring those after what earlier completions took from it since
    /// it was given. Every completion that names a buffer is passed here (with its result,
    /// 0 for none), in order, so that the next one's bytes are found. An id out of range
    /// gives nothing.
    pub fn received(&mut self, bid: u16, len: usize) -> &[u8] {
        let Some(taken) = self.taken.get_mut(usize::from(bid)) else { return &[] };
        let from = (*taken as usize).min(self.size);
        let len = len.min(self.size - from);
        *taken += len as u32;
        let at = usize::from(bid) * self.size + from;
        &self.bufs[at..at + len]
    }

    /// Gives buffer `bid` back to the kernel; an id out of range is ignored.
    pub fn give(&mut self, bid: u16) {
        if bid >= self.count {
            return;
        }
        self.taken[usize::from(bid)] = 0;
        let i = usize::from(self.tail & (self.count - 1));
        let addr = self.bufs.as_ptr() as u64 + u64::from(bid) * self.size as u64;
        // SAFETY: `i` < count, inside the allocation; the kernel reads an entry only once the
        // tail (published below) covers it, so writing this one races with nothing.
        let e = unsafe { &mut *self.entries.as_ptr().add(i) };
        e.set_addr(addr);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the tail field of the first entry, which the kernel reads atomically.
        let tail = unsafe { types::BufRingEntry::tail(self.entries.as_ptr()) }
            as *const std::sync::atomic::AtomicU16;
        // SAFETY: as above; a u16 field is aligned for an AtomicU16.
        unsafe { &*tail }.store(self.tail, std::sync::atomic::Ordering::Release);
    }
}

// SAFETY: the entries are plain memory owned by this value alone (the kernel reads them only
// through the ring it was registered with); moving it to another thread moves that too.
unsafe impl Send for BufRing {}

impl BufRing {
    /// Unregisters group `bgid` from `ring`, after which no receive can take these buffers and
    /// they may be freed (dropped). When the kernel refuses (a one-thread ring asked from
    /// another thread), the value comes back, still registered: keep it while a receive of
    /// that ring could run, or leak it (`std::mem::forget`).
    ///
    /// # Errors
    /// The value itself, when the group could not be unregistered.
    pub fn release(self, ring: &IoUring, bgid: u16) -> Result<(), BufRing> {
        ring.submitter().unregister_buf_ring(bgid).map_err(|_| self)
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; the group was unregistered, or its ring
        // is gone and no receive can run (the contract of `new`).
        unsafe { std::alloc::dealloc(self.entries.as_ptr().cast(), self.layout) };
    }
}
