//! Wake-one: several threads wait on one descriptor, and each readiness wakes exactly one of
//! them (the paper's `SO_WAKEUP_ONE`, §9), not all of them as threads blocked on a shared
//! epoll set or on `select` are woken.
//!
//! ```sh
//! cargo run --example wake_one                       # 4 threads, 100 readinesses
//! HINTQ_BACKEND=poll cargo run --example wake_one    # members on any backend
//! ```
//!
//! A [`Group`] holds interest for the whole process; each thread takes a member queue with
//! [`Group::queue`] and calls `get_next_event` on it as on any queue. A pipe's read end is
//! declared with [`Delivery::One`]; the main thread writes one byte at a time, 100 times,
//! waiting each time until a member has read it. Each member counts how often its
//! `get_next_event` returned with the pipe's event and how often it found nothing to read
//! (another member was there first: what a thundering herd would show). The example checks
//! that the 100 readinesses were delivered 100 times with no empty read, and exits 1
//! otherwise. (`hintq bench wake-one` counts the wake-ups themselves, from the threads'
//! context switches, beside shared epoll and `EPOLLEXCLUSIVE`.)

use hintq::{Backend, Delivery, Event, Group, Interest};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const MEMBERS: usize = 4;
const READINESSES: usize = 100;

/// What one member saw.
#[derive(Default)]
struct Tally {
    /// `get_next_event` returned the pipe's event.
    delivered: usize,
    /// ... and reading found nothing: the byte was taken by another member.
    empty: usize,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("wake_one: {e}");
        std::process::exit(1);
    }
}

fn run() -> io::Result<()> {
    let backend = Backend::from_env()?;
    let (rd, wr) = pipe()?;
    let mut wr = std::fs::File::from(wr);
    let group = Group::new(backend)?;
    let read = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // Every member has its queue before the first write, so all of them are waiting.
    let ready = Arc::new(Barrier::new(MEMBERS + 1));
    let rdfd = rd.as_raw_fd();

    let members: Vec<_> = (0..MEMBERS)
        .map(|_| {
            let (group, read, stop, ready) = (group.clone(), read.clone(), stop.clone(), ready.clone());
            thread::spawn(move || -> io::Result<Tally> {
                let mut q = group.queue()?;
                ready.wait();
                let mut tally = Tally::default();
                let mut events = [Event::default(); 8];
                while !stop.load(Ordering::Acquire) {
                    // A short timeout only so that the member sees `stop`; a readiness
                    // wakes it at once.
                    let n = q.get_next_event(&mut events, Some(Duration::from_millis(100)))?;
                    for _ in events[..n].iter().filter(|ev| ev.fd() == rdfd) {
                        tally.delivered += 1;
                        match read_byte(rdfd)? {
                            true => drop(read.fetch_add(1, Ordering::Release)),
                            false => tally.empty += 1,
                        }
                    }
                }
                Ok(tally)
            })
        })
        .collect();

    ready.wait();
    group.declare_interest(rd.as_fd(), Interest::READ, Delivery::One)?;
    println!("{MEMBERS} threads wait on one pipe ({backend} backend, Delivery::One)");
    for i in 0..READINESSES {
        wr.write_all(b"x")?;
        // The next byte only after this one was read: each write is one readiness.
        let deadline = Instant::now() + Duration::from_secs(5);
        while read.load(Ordering::Acquire) <= i {
            if Instant::now() > deadline {
                eprintln!("readiness {i} was not delivered within 5 s");
                std::process::exit(1);
            }
            thread::yield_now();
        }
    }
    stop.store(true, Ordering::Release);

    let (mut delivered, mut empty) = (0, 0);
    for (i, m) in members.into_iter().enumerate() {
        let t = m.join().expect("member thread")?;
        println!(
            "  thread {i}: got the readiness {:3} times, found the pipe empty {} times",
            t.delivered, t.empty
        );
        delivered += t.delivered;
        empty += t.empty;
    }
    println!(
        "{READINESSES} readinesses were delivered {delivered} times ({:.2} per readiness), {empty} times to a thread that found the pipe empty",
        delivered as f64 / READINESSES as f64
    );
    if delivered != READINESSES || empty != 0 {
        eprintln!("wake-one broken: every readiness should wake exactly one thread");
        std::process::exit(1);
    }
    Ok(())
}

/// Reads one byte from the non-blocking pipe: true if there was one.
fn read_byte(fd: RawFd) -> io::Result<bool> {
    let mut b = 0u8;
    // SAFETY: reads at most one byte into `b`, which outlives the call.
    let k = unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) };
    match k {
        1 => Ok(true),
        0 => Ok(false), // the end of the stream (not here: the writer stays open)
        _ if io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock => Ok(false),
        _ => Err(io::Error::last_os_error()),
    }
}

/// A non-blocking pipe: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
