//! The floor under a proxy's CPU per request: relay the bytes of each client connection to an
//! upstream connection of its own and back, nothing parsed, nothing kept. A reverse proxy
//! does at least this per request (two receives and two sends, one exchange with each side);
//! set `hintq proxy`'s and nginx's CPU per request against it as [`crate::floor`] sets a
//! static server's (`crates/hintq-serve/bench/proxy-vs-nginx.sh`).
//!
//! Each accepted connection gets its own upstream connection, opened (blocking, on loopback)
//! when it is accepted and closed with it: a pool that is never shared, as a keep-alive load
//! of one request at a time per connection would use it.
//!
//! * `epoll`: level-triggered `epoll_wait`, then per readable socket a `recv` and a `send` of
//!   what came to the other socket of its pair.
//! * `uring`: a multishot accept, a multishot receive per socket into a provided-buffer ring,
//!   and each receive's bytes copied into a buffer that an `IORING_OP_SEND` to the other
//!   socket takes, queued for the next `io_uring_enter` (`DEFER_TASKRUN`, as the floor).
//!
//! As the floor, an instrument and not a proxy: a send the kernel does not take whole at once
//! (never, for the small messages it is for) shuts the pair down with a message rather than
//! being finished later, so bytes are never reordered (the ring's sends carry `MSG_DONTWAIT`:
//! one that would wait fails rather than waiting behind a later one).

use crate::floor::{self, Mechanism};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, IntoRawFd, RawFd};

/// Relays every connection of `listener` to `upstream` with `mechanism` on the calling thread
/// until the process is stopped.
///
/// # Errors
/// Setting up the mechanism, or a wait that fails.
pub fn relay(listener: TcpListener, mechanism: Mechanism, upstream: SocketAddr) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    match mechanism {
        Mechanism::Epoll => epoll(&listener, upstream),
        Mechanism::Uring => uring(&listener, upstream),
    }
}

/// The other socket of each relayed pair, by descriptor (`-1`: none, or gone).
#[derive(Default)]
struct Pairs(Vec<RawFd>);

impl Pairs {
    fn set(&mut self, a: RawFd, b: RawFd) {
        let top = a.max(b) as usize;
        if self.0.len() <= top {
            self.0.resize(top + 1, -1);
        }
        self.0[a as usize] = b;
        self.0[b as usize] = a;
    }

    fn peer(&self, fd: RawFd) -> RawFd {
        self.0.get(fd as usize).copied().unwrap_or(-1)
    }

    /// Closes `fd` and shuts its peer down, whose own end (a receive that ends) closes it:
    /// the peer is told first that `fd` is gone, so that a new connection given the number
    /// is never taken for it.
    fn close(&mut self, fd: RawFd) {
        let peer = self.peer(fd);
        if peer >= 0 {
            self.0[peer as usize] = -1;
            // SAFETY: plain system call on a descriptor this loop owns.
            unsafe { libc::shutdown(peer, libc::SHUT_RDWR) };
        }
        if let Some(p) = self.0.get_mut(fd as usize) {
            *p = -1;
        }
        // SAFETY: a descriptor this loop owns, closed once (its pair entry is cleared).
        unsafe { libc::close(fd) };
    }
}

/// Accepts one connection and opens its upstream connection; both non-blocking, `TCP_NODELAY`.
fn pair_up(client: RawFd, upstream: SocketAddr, pairs: &mut Pairs) -> io::Result<RawFd> {
    let up = TcpStream::connect(upstream)?;
    up.set_nodelay(true)?;
    up.set_nonblocking(true)?;
    let up = up.into_raw_fd();
    hintq_sys::set_nodelay(client)?;
    pairs.set(client, up);
    Ok(up)
}

/// Reports a send the kernel did not take whole, and shuts the pair down.
fn short_send(fd: RawFd, sent: isize, want: usize, pairs: &mut Pairs) {
    eprintln!("hintq-relay: a send on descriptor {fd} went in part ({sent} of {want}): shut");
    let peer = pairs.peer(fd);
    if peer >= 0 {
        pairs.close(peer);
    }
}

fn epoll(listener: &TcpListener, upstream: SocketAddr) -> io::Result<()> {
    // Never closed: the loop ends with the process.
    let ep = hintq_sys::epoll_create()?.into_raw_fd();
    let add = |fd: RawFd| floor::epoll_add(ep, fd);
    let lfd = listener.as_raw_fd();
    add(lfd)?;
    let mut pairs = Pairs::default();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = floor::epoll_wait(ep, &mut events)?;
        for ev in &events[..n] {
            let fd = ev.u64 as RawFd;
            if fd == lfd {
                while let Ok((c, _)) = listener.accept() {
                    let c = c.into_raw_fd();
                    match pair_up(c, upstream, &mut pairs) {
                        Ok(up) if add(c).is_ok() && add(up).is_ok() => {}
                        Ok(_) => pairs.close(c),
                        Err(e) => {
                            eprintln!("hintq-relay: upstream {upstream}: {e}");
                            // SAFETY: the accepted descriptor, not paired, closed once.
                            unsafe { libc::close(c) };
                        }
                    }
                }
                continue;
            }
            let peer = pairs.peer(fd);
            // SAFETY: `buf` has the length passed.
            let got = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if got < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock {
                continue;
            }
            if got <= 0 || peer < 0 {
                pairs.close(fd);
                continue;
            }
            // SAFETY: `buf[..got]` lives across the call.
            let sent = unsafe { libc::send(peer, buf.as_ptr().cast(), got as usize, libc::MSG_NOSIGNAL) };
            if sent != got {
                short_send(peer, sent, got as usize, &mut pairs);
            }
        }
    }
}

/// `user_data` kinds of the relay's ring (the descriptor, or a send's slot, in the low 32 bits).
const ACCEPT: u64 = 1 << 32;
const RECV: u64 = 2 << 32;
const SEND: u64 = 3 << 32;
const BGID: u16 = 9;

/// A send in flight: its bytes (kept until its completion) and the socket it goes to (`-1`
/// once that socket is closed: its number may be given to a new connection meanwhile).
struct Sending {
    bytes: Vec<u8>,
    fd: RawFd,
}

/// [`Pairs::close`] for the ring's loop: sends still in flight to `fd` are forgotten.
fn close_sending(pairs: &mut Pairs, sending: &mut [Sending], fd: RawFd) {
    pairs.close(fd);
    sending.iter_mut().filter(|s| s.fd == fd).for_each(|s| s.fd = -1);
}

fn uring(listener: &TcpListener, upstream: SocketAddr) -> io::Result<()> {
    let (mut ring, bufs) = floor::ring(BGID)?;
    let lfd = listener.as_raw_fd();
    let mut pairs = Pairs::default();
    // Sends in flight by slot; free slots (with their emptied buffers) for the next.
    let mut sending: Vec<Sending> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    // SAFETY: every entry points at memory that outlives its completion (the buffer ring,
    // never freed, or a send's bytes, kept in `sending` until then) or at nothing.
    let push = |ring: &mut IoUring, sqe: squeue::Entry| unsafe { floor::push(ring, &sqe) };
    let accept =
        || opcode::AcceptMulti::new(types::Fd(lfd)).flags(libc::SOCK_CLOEXEC).build().user_data(ACCEPT);
    let recv = |fd: RawFd| opcode::RecvMulti::new(types::Fd(fd), BGID).build().user_data(RECV | fd as u64);
    push(&mut ring, accept())?;
    let mut done: Vec<(u64, i32, u32)> = Vec::with_capacity(4096);
    loop {
        floor::wait(&mut ring, &mut done)?;
        for (data, res, flags) in done.drain(..) {
            let low = (data & 0xffff_ffff) as usize;
            match data & !0xffff_ffff {
                ACCEPT => {
                    if res >= 0 {
                        let c = res as RawFd;
                        match pair_up(c, upstream, &mut pairs) {
                            Ok(up) => {
                                push(&mut ring, recv(c))?;
                                push(&mut ring, recv(up))?;
                            }
                            Err(e) => {
                                eprintln!("hintq-relay: upstream {upstream}: {e}");
                                // SAFETY: the accepted descriptor, not paired, closed once.
                                unsafe { libc::close(c) };
                            }
                        }
                    }
                    if !cqueue::more(flags) {
                        push(&mut ring, accept())?;
                    }
                }
                RECV => {
                    let fd = low as RawFd;
                    let peer = pairs.peer(fd);
                    if res > 0 {
                        let Some(bid) = cqueue::buffer_select(flags) else { continue };
                        if peer >= 0 {
                            let slot = free.pop().unwrap_or_else(|| {
                                sending.push(Sending { bytes: Vec::new(), fd: -1 });
                                sending.len() - 1
                            });
                            let s = &mut sending[slot];
                            s.bytes.clear();
                            s.bytes.extend_from_slice(bufs.bytes(bid, res as usize));
                            s.fd = peer;
                            let sqe =
                                opcode::Send::new(types::Fd(peer), s.bytes.as_ptr(), s.bytes.len() as u32)
                                    .flags(libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
                                    .build()
                                    .user_data(SEND | slot as u64);
                            push(&mut ring, sqe)?;
                        }
                        bufs.give(bid);
                    }
                    if !cqueue::more(flags) {
                        if (res > 0 || res == -libc::ENOBUFS) && peer >= 0 {
                            push(&mut ring, recv(fd))?;
                        } else {
                            close_sending(&mut pairs, &mut sending, fd);
                        }
                    }
                }
                _ => {
                    let (fd, want) = (sending[low].fd, sending[low].bytes.len());
                    free.push(low);
                    if fd >= 0 && res != want as i32 {
                        eprintln!(
                            "hintq-relay: a send on descriptor {fd} went in part ({res} of {want}): shut"
                        );
                        // Its peer is closed, which shuts `fd` down; `fd` closes when its
                        // receive ends.
                        let peer = pairs.peer(fd);
                        if peer >= 0 {
                            close_sending(&mut pairs, &mut sending, peer);
                        }
                    }
                }
            }
        }
    }
}
