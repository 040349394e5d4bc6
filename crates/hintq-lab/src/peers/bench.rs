//! libevent's `test/bench.c` method over hintq (any backend) and over mio, for E9: the same
//! method as `peers/bench_method.c` (see there), so every peer is timed alike.

use hintq::{Backend, Event, Interest, Queue};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// What `hintq lab peer-bench` was asked (the binary's flags, `src/lab_args.rs`).
#[derive(Debug, Clone)]
pub struct BenchArgs {
    /// `--lib`: `hintq` or `mio`.
    pub lib: String,
    /// `--backend`: hintq's backend.
    pub backend: String,
    /// `-n`: socket pairs.
    pub pairs: usize,
    /// `-a`: pairs written to at the start of a run.
    pub active: usize,
    /// `-w`: writes passed on in a run.
    pub writes: usize,
    /// `-r`: runs.
    pub runs: usize,
    /// `-l`: the launch's number in the lab's plan, unused by the method (it makes each
    /// launch's command line its own).
    pub launch: u32,
    /// `--keep`, a diagnostic: watchers registered before the first run only, never re-armed.
    pub keep: bool,
}

/// An event loop as the method sees it: re-arm one watcher, make one non-blocking pass.
trait Loop {
    fn rearm(&mut self, i: usize, fd: BorrowedFd<'_>) -> io::Result<()>;
    /// Calls `ready(i)` for each readable pair found by one non-blocking pass.
    fn pass(&mut self, ready: &mut dyn FnMut(usize)) -> io::Result<()>;
}

struct HintqLoop {
    q: Queue,
    evs: Vec<Event>,
    /// pair index by descriptor number.
    index: Vec<usize>,
}

impl Loop for HintqLoop {
    fn rearm(&mut self, i: usize, borrowed: BorrowedFd<'_>) -> io::Result<()> {
        let fd = borrowed.as_raw_fd();
        if self.index.len() <= fd as usize {
            self.index.resize(fd as usize + 1, usize::MAX);
        }
        if self.index[fd as usize] != usize::MAX {
            self.q.declare_interest(borrowed, Interest::empty())?;
        }
        self.index[fd as usize] = i;
        // The state is not wanted (the flush pass takes whatever is ready): the paper's call
        // with a NULL statemask, as libevent's `event_add` and mio's `register` are.
        self.q.declare(borrowed, Interest::READ)
    }
    fn pass(&mut self, ready: &mut dyn FnMut(usize)) -> io::Result<()> {
        let n = self.q.get_next_event(&mut self.evs, Some(Duration::ZERO))?;
        self.evs[..n].iter().for_each(|ev| ready(self.index[ev.fd() as usize]));
        Ok(())
    }
}

struct MioLoop {
    poll: mio::Poll,
    events: mio::Events,
    registered: Vec<bool>,
}

impl Loop for MioLoop {
    fn rearm(&mut self, i: usize, fd: BorrowedFd<'_>) -> io::Result<()> {
        let fd = fd.as_raw_fd();
        let reg = self.poll.registry();
        let mut src = mio::unix::SourceFd(&fd);
        if self.registered[i] {
            reg.deregister(&mut src)?;
        }
        self.registered[i] = true;
        reg.register(&mut src, mio::Token(i), mio::Interest::READABLE)
    }
    fn pass(&mut self, ready: &mut dyn FnMut(usize)) -> io::Result<()> {
        self.poll.poll(&mut self.events, Some(Duration::ZERO))?;
        self.events.iter().for_each(|ev| ready(ev.token().0));
        Ok(())
    }
}

fn send1(fd: RawFd) -> bool {
    // SAFETY: one byte from a static buffer.
    unsafe { libc::send(fd, b"x".as_ptr().cast(), 1, 0) == 1 }
}

fn recv1(fd: RawFd) -> isize {
    let mut c = 0u8;
    // SAFETY: one byte into a local.
    unsafe { libc::recv(fd, (&mut c as *mut u8).cast(), 1, 0) }
}

/// The state of one run, as in the C version.
struct Ring<'a> {
    pairs: &'a [(OwnedFd, OwnedFd)],
    got: u64,
    sent: u64,
    left: usize,
    failures: u64,
}

impl Ring<'_> {
    fn on_readable(&mut self, i: usize) {
        let n = recv1(self.pairs[i].0.as_raw_fd());
        if n > 0 {
            self.got += n as u64;
            if self.left > 0 {
                let next = (i + 1) % self.pairs.len();
                self.failures += u64::from(!send1(self.pairs[next].1.as_raw_fd()));
                self.left -= 1;
                self.sent += 1;
            }
        }
    }
}

fn one_run(
    lp: &mut dyn Loop,
    pairs: &[(OwnedFd, OwnedFd)],
    a: &BenchArgs,
    rearm: bool,
) -> io::Result<(f64, u64)> {
    if rearm {
        for (i, p) in pairs.iter().enumerate() {
            lp.rearm(i, p.0.as_fd())?;
        }
    }
    let mut ring = Ring { pairs, got: 0, sent: 0, left: 0, failures: 0 };
    lp.pass(&mut |i| ring.on_readable(i))?;
    ring.got = 0;
    let stride = pairs.len() / a.active;
    for k in 0..a.active {
        ring.failures += u64::from(!send1(pairs[k * stride].1.as_raw_fd()));
        ring.sent += 1;
    }
    ring.left = a.writes;
    let t0 = Instant::now();
    while ring.got != ring.sent {
        lp.pass(&mut |i| ring.on_readable(i))?;
    }
    Ok((t0.elapsed().as_secs_f64() * 1e6, ring.failures))
}

/// Runs the method and prints µs per run, one per line.
///
/// # Errors
/// Bad arguments, a failing system call, or failed reads and writes.
pub fn main(a: &BenchArgs) -> Result<(), String> {
    if a.pairs == 0 || a.active == 0 || a.active > a.pairs || a.runs == 0 {
        return Err("bad -n/-a/-r".into());
    }
    hintq_sys::raise_nofile().map_err(|e| format!("raising RLIMIT_NOFILE: {e}"))?;
    let pairs = (0..a.pairs)
        .map(|_| hintq_sys::socketpair())
        .collect::<io::Result<Vec<_>>>()
        .map_err(|e| e.to_string())?;
    let mut lp: Box<dyn Loop> = match a.lib.as_str() {
        "hintq" => {
            let b: Backend = a.backend.parse().map_err(|e| format!("{e}"))?;
            let q = Queue::new(b).map_err(|e| format!("{b:?}: {e}"))?;
            Box::new(HintqLoop { q, evs: vec![Event::default(); 64], index: Vec::new() })
        }
        "mio" => Box::new(MioLoop {
            poll: mio::Poll::new().map_err(|e| e.to_string())?,
            events: mio::Events::with_capacity(64),
            registered: vec![false; a.pairs],
        }),
        other => return Err(format!("--lib {other}: expected hintq or mio")),
    };
    let mut failures = 0;
    for run in 0..a.runs {
        let (us, f) = one_run(lp.as_mut(), &pairs, a, run == 0 || !a.keep).map_err(|e| e.to_string())?;
        failures += f;
        println!("{us:.1}");
    }
    if failures > 0 {
        return Err(format!("{failures} failed writes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(keep: bool) -> BenchArgs {
        BenchArgs {
            lib: "hintq".into(),
            backend: "epoll".into(),
            pairs: 20,
            active: 2,
            writes: 50,
            runs: 3,
            launch: 0,
            keep,
        }
    }

    /// Every run passes every write around the ring and ends, whether the watchers are
    /// re-armed before it (the method) or kept from the first run (`--keep`).
    #[test]
    fn runs_end_with_every_write_received_re_armed_or_kept() {
        for keep in [false, true] {
            let a = args(keep);
            let pairs: Vec<_> = (0..a.pairs).map(|_| hintq_sys::socketpair().unwrap()).collect();
            let q = Queue::new(Backend::Epoll).unwrap();
            let mut lp = HintqLoop { q, evs: vec![Event::default(); 64], index: Vec::new() };
            for run in 0..a.runs {
                let (us, failures) = one_run(&mut lp, &pairs, &a, run == 0 || !keep).unwrap();
                assert!(us > 0.0 && failures == 0, "keep {keep}, run {run}");
            }
        }
    }
}
