//! The floor under a static server's CPU per request: the least a server can do per request
//! on this kernel, receive it and send a response prepared once, with nothing between. Set
//! `hintq serve`'s CPU per request against this as well as against nginx's: what is left
//! between serve and the floor is the server's own cost (parsing, the file cache, the event
//! API); what is under the floor no server can save (`crates/hintq-serve/bench/floor.sh`).
//!
//! One thread serves every connection of one listener:
//!
//! * `epoll`: level-triggered `epoll_wait`, then `recv` and `send` per readable connection:
//!   two system calls per request, as tuned servers do (nginx makes three: it also reads the
//!   file).
//! * `uring`: a multishot accept, and per connection a multishot `IORING_OP_RECV` taking
//!   buffers from a provided-buffer ring ([`hintq_sys::BufRing`]), each request answered by
//!   an `IORING_OP_SEND` of the prepared response queued for the next `io_uring_enter`; the
//!   ring with `DEFER_TASKRUN` (completions run only when the thread asks), as liburing
//!   advises for a thread that owns its ring.
//!
//! A request is counted at each `CRLF CRLF` (the end of a head without a body, all a load
//! generator of GETs sends); pipelined requests get a response each, in order. It is a
//! measuring instrument, not a server: the response never changes (its `Date` is the
//! start's), nothing is parsed, and a send the kernel takes only in part (never, for a
//! response that fits the socket buffer, which is what it is for) closes the connection with
//! a message rather than being finished later.

use hintq_sys::{cvt, BufRing};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, IntoRawFd, RawFd};

/// The mechanism the floor server waits with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Level-triggered epoll, `recv` and `send` system calls.
    Epoll,
    /// io_uring: multishot accept and receive, sends queued in the ring.
    Uring,
}

impl std::str::FromStr for Mechanism {
    type Err = String;
    fn from_str(s: &str) -> Result<Mechanism, String> {
        match s {
            "epoll" => Ok(Mechanism::Epoll),
            "uring" => Ok(Mechanism::Uring),
            _ => Err(format!("unknown mechanism {s:?}: epoll or uring")),
        }
    }
}

/// The response to every request: a `200 OK` head like nginx's for a static file, then `body`.
pub fn response(body: &[u8], content_type: &str) -> Vec<u8> {
    let date = httpdate::fmt_http_date(std::time::SystemTime::now());
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nServer: hintq-floor\r\nDate: {date}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nLast-Modified: {date}\r\nConnection: keep-alive\r\nETag: \"floor\"\r\n\
         Accept-Ranges: bytes\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// Serves `listener` with `mechanism` on the calling thread until the process is stopped.
///
/// # Errors
/// Setting up the mechanism, or a wait that fails.
pub fn serve(listener: TcpListener, mechanism: Mechanism, response: Vec<u8>) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    match mechanism {
        Mechanism::Epoll => epoll(&listener, &response),
        Mechanism::Uring => uring(&listener, &response),
    }
}

/// Counts the heads that end in `bytes`. `state` is how much of a head's end (`CRLF CRLF`)
/// the bytes before them ended with (0 to 3): an end may straddle two receives.
fn ends(state: &mut u8, bytes: &[u8]) -> usize {
    const END: &[u8] = b"\r\n\r\n";
    let (mut n, mut at) = (0, 0);
    // Go on with an end begun in the receive before, while the bytes follow it.
    while *state > 0 && at < bytes.len() && bytes[at] == END[usize::from(*state)] {
        *state += 1;
        at += 1;
        if *state == 4 {
            n += 1;
            *state = 0;
        }
    }
    *state = if *state > 0 && at == bytes.len() { *state } else { 0 };
    if *state > 0 {
        return n;
    }
    while let Some(i) = find(&bytes[at..], END) {
        n += 1;
        at += i + END.len();
    }
    let rest = &bytes[at..];
    *state = (1..=3).rev().find(|&k| rest.ends_with(&END[..k])).unwrap_or(0) as u8;
    n
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = hay[from..].iter().position(|&b| b == b'\r') {
        let at = from + i;
        if hay[at..].starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

fn close(fd: RawFd) {
    // SAFETY: a descriptor this loop accepted and owns; closed once (its state is dropped).
    unsafe { libc::close(fd) };
}

fn accept(listener: RawFd) -> io::Result<RawFd> {
    // SAFETY: no address is asked for.
    let fd = cvt(unsafe {
        libc::accept4(
            listener,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    })?;
    hintq_sys::set_nodelay(fd)?;
    Ok(fd)
}

/// Watches `fd` for input, level-triggered, its number as the event's data.
pub(crate) fn epoll_add(ep: RawFd, fd: RawFd) -> io::Result<()> {
    crate::sys::epoll_add(ep, fd, libc::EPOLLIN as u32, fd as u64)
}

/// Waits without limit for `events`, retrying on `EINTR`; returns how many came.
pub(crate) fn epoll_wait(ep: RawFd, events: &mut [libc::epoll_event]) -> io::Result<usize> {
    hintq_sys::retry(|| hintq_sys::epoll_wait(ep, events, -1))
}

fn epoll(listener: &TcpListener, response: &[u8]) -> io::Result<()> {
    // Never closed: the loop ends with the process.
    let ep = hintq_sys::epoll_create()?.into_raw_fd();
    let add = |fd: RawFd| epoll_add(ep, fd);
    let lfd = listener.as_raw_fd();
    add(lfd)?;
    let mut tails: Vec<u8> = Vec::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    loop {
        let n = epoll_wait(ep, &mut events)?;
        for ev in &events[..n] {
            let fd = ev.u64 as RawFd;
            if fd == lfd {
                while let Ok(c) = accept(lfd) {
                    if tails.len() <= c as usize {
                        tails.resize(c as usize + 1, 0);
                    }
                    tails[c as usize] = 0;
                    if add(c).is_err() {
                        close(c);
                    }
                }
                continue;
            }
            // SAFETY: `buf` has the length passed.
            let got = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if got < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock {
                continue;
            }
            if got <= 0 {
                close(fd);
                continue;
            }
            let k = ends(&mut tails[fd as usize], &buf[..got as usize]);
            let reply = if k == 1 {
                response
            } else {
                out.clear();
                (0..k).for_each(|_| out.extend_from_slice(response));
                &out[..]
            };
            if reply.is_empty() {
                continue;
            }
            // SAFETY: `reply` lives across the call.
            let sent = unsafe { libc::send(fd, reply.as_ptr().cast(), reply.len(), libc::MSG_NOSIGNAL) };
            if sent != reply.len() as isize {
                eprintln!(
                    "hintq-floor: a send on descriptor {fd} went in part ({sent} of {}): closed",
                    reply.len()
                );
                close(fd);
            }
        }
    }
}

/// `user_data` kinds of the floor's ring (the descriptor in the low 32 bits).
const ACCEPT: u64 = 1 << 32;
const RECV: u64 = 2 << 32;
const SEND: u64 = 3 << 32;
const BGID: u16 = 7;

/// The ring of the floor and the relay: `DEFER_TASKRUN` where the kernel has it, with a
/// provided-buffer ring of group `bgid` for the receives (kept until the process ends: the
/// loops return only on an error, and a receive of the ring's teardown could still take a
/// buffer after the ring is dropped).
pub(crate) fn ring(bgid: u16) -> io::Result<(IoUring, &'static mut BufRing)> {
    let build = |defer: bool| {
        let mut b = IoUring::builder();
        b.setup_cqsize(4096);
        if defer {
            b.setup_single_issuer().setup_defer_taskrun();
        } else {
            b.setup_coop_taskrun().setup_taskrun_flag();
        }
        b.build(256)
    };
    let ring = build(true).or_else(|_| build(false))?;
    let bufs = Box::leak(Box::new(BufRing::new(&ring, 256, 4096, bgid)?));
    Ok((ring, bufs))
}

/// Queues `sqe`, submitting to make room when the queue is full.
///
/// # Safety
/// Memory the entry points at stays valid until its completion is reaped.
pub(crate) unsafe fn push(ring: &mut IoUring, sqe: &squeue::Entry) -> io::Result<()> {
    loop {
        // SAFETY: the caller's promise.
        if unsafe { ring.submission().push(sqe) }.is_ok() {
            return Ok(());
        }
        ring.submit()?;
    }
}

/// One wait of the floor's and the relay's loops: submits, waits for a completion and
/// appends every completion's `user_data`, result and flags to `done`.
pub(crate) fn wait(ring: &mut IoUring, done: &mut Vec<(u64, i32, u32)>) -> io::Result<()> {
    match ring.submit_and_wait(1) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY | libc::ETIME)) => {}
        r => drop(r?),
    }
    done.extend(ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
    Ok(())
}

fn uring(listener: &TcpListener, response: &[u8]) -> io::Result<()> {
    let (mut ring, bufs) = ring(BGID)?;
    let lfd = listener.as_raw_fd();
    let mut tails: Vec<u8> = Vec::new();
    // SAFETY: every entry points at memory that outlives the loop (the response, the buffer
    // ring) or at nothing.
    let push = |ring: &mut IoUring, sqe: squeue::Entry| unsafe { push(ring, &sqe) };
    let accept =
        || opcode::AcceptMulti::new(types::Fd(lfd)).flags(libc::SOCK_CLOEXEC).build().user_data(ACCEPT);
    let recv = |fd: RawFd| opcode::RecvMulti::new(types::Fd(fd), BGID).build().user_data(RECV | fd as u64);
    push(&mut ring, accept())?;
    let mut done: Vec<(u64, i32, u32)> = Vec::with_capacity(4096);
    loop {
        wait(&mut ring, &mut done)?;
        for (data, res, flags) in done.drain(..) {
            let fd = (data & 0xffff_ffff) as RawFd;
            match data & !0xffff_ffff {
                ACCEPT => {
                    if res >= 0 {
                        let c = res as RawFd;
                        if tails.len() <= c as usize {
                            tails.resize(c as usize + 1, 0);
                        }
                        tails[c as usize] = 0;
                        hintq_sys::set_nodelay(c)?;
                        push(&mut ring, recv(c))?;
                    }
                    if !cqueue::more(flags) {
                        push(&mut ring, accept())?;
                    }
                }
                RECV => {
                    if res > 0 {
                        let Some(bid) = cqueue::buffer_select(flags) else { continue };
                        let k = ends(&mut tails[fd as usize], bufs.bytes(bid, res as usize));
                        bufs.give(bid);
                        for i in 0..k {
                            let sqe =
                                opcode::Send::new(types::Fd(fd), response.as_ptr(), response.len() as u32)
                                    .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
                                    .build()
                                    .user_data(SEND | fd as u64);
                            // Pipelined responses of one connection leave in order: each is
                            // linked to the next (two sends on a socket may otherwise be
                            // retried out of order).
                            let link =
                                if i + 1 < k { squeue::Flags::IO_LINK } else { squeue::Flags::empty() };
                            push(&mut ring, sqe.flags(link))?;
                        }
                    }
                    if !cqueue::more(flags) {
                        if res > 0 || res == -libc::ENOBUFS {
                            push(&mut ring, recv(fd))?;
                        } else {
                            close(fd);
                        }
                    }
                }
                _ => {
                    if res >= 0 && res != response.len() as i32 {
                        eprintln!("hintq-floor: a send on descriptor {fd} went in part ({res}): shut");
                        // SAFETY: plain system call on our descriptor.
                        unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_counted_across_receives() {
        let mut t = 0;
        assert_eq!(ends(&mut t, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 1);
        assert_eq!(ends(&mut t, b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"), 2);
        // Split inside the end, at every place.
        let req = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        for cut in 1..req.len() {
            let mut t = 0;
            let n = ends(&mut t, &req[..cut]) + ends(&mut t, &req[cut..]);
            assert_eq!(n, 1, "cut at {cut}");
        }
        // One byte at a time, three requests.
        let mut t = 0;
        let three = req.repeat(3);
        assert_eq!(three.iter().map(|b| ends(&mut t, std::slice::from_ref(b))).sum::<usize>(), 3);
    }
}
