//! An echo server on the paper's two calls: `declare_interest` once per descriptor, then
//! `get_next_event` for batches of readiness hints, on one thread.
//!
//! ```sh
//! cargo run --example echo                               # serves its own 3 clients, then exits
//! cargo run --example echo -- --listen 127.0.0.1:7000    # serves until Ctrl-C (try: nc 127.0.0.1 7000)
//! HINTQ_BACKEND=poll cargo run --example echo            # any backend `hintq backends` lists
//! ```
//!
//! Without `--listen` it binds a port the kernel picks, prints it, starts three clients on
//! other threads that each send a few lines and check the echo, and exits once all three
//! have closed (exit status 1 if an echo was wrong or the clients took over 10 s).

use hintq::{Backend, Event, Interest, Queue};
use std::collections::HashMap;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

fn main() {
    if let Err(e) = run() {
        eprintln!("echo: {e}");
        std::process::exit(1);
    }
}

fn run() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let listen = match args.as_slice() {
        [] => None,
        [flag, addr] if flag == "--listen" => Some(addr.parse::<SocketAddr>().map_err(|e| {
            io::Error::new(ErrorKind::InvalidInput, format!("--listen {addr}: {e} (expected IP:PORT)"))
        })?),
        _ => {
            eprintln!("usage: echo [--listen IP:PORT]");
            std::process::exit(2);
        }
    };

    let listener = TcpListener::bind(listen.unwrap_or(([127, 0, 0, 1], 0).into()))?;
    // Descriptors handed to the queue are non-blocking: an event is a hint, and a read that
    // finds nothing after all must return EAGAIN instead of blocking the thread.
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    // HINTQ_BACKEND picks the backend by name; unset, io_uring where the kernel allows it.
    let backend = Backend::from_env()?;
    let mut q = Queue::new(backend)?;
    q.declare_interest(listener.as_fd(), Interest::READ)?;
    println!("echo server on {addr} ({backend} backend)");

    // Bounded demo: three clients of our own; the server stops once they are done.
    let clients = match listen {
        Some(_) => {
            println!("try: nc {} {}   (Ctrl-C stops the server)", addr.ip(), addr.port());
            None
        }
        None => Some((0..3).map(|id| std::thread::spawn(move || client(addr, id))).collect::<Vec<_>>()),
    };
    let deadline = Instant::now() + Duration::from_secs(10);

    let mut server = Server { listener, q, conns: HashMap::new(), closed: 0 };
    let mut events = [Event::default(); 64];
    while clients.is_none() || server.closed < 3 {
        if clients.is_some() && Instant::now() > deadline {
            eprintln!("the clients did not finish within 10 s");
            std::process::exit(1);
        }
        let n = server.q.get_next_event(&mut events, Some(Duration::from_millis(500)))?;
        for ev in &events[..n] {
            // An event of a connection closed earlier in this batch (whose number a new
            // connection may already have) is stale: skip it.
            if !server.q.is_current(ev) {
                continue;
            }
            if ev.fd() == server.listener.as_raw_fd() {
                server.accept_all()?;
            } else {
                server.echo(ev.fd())?;
            }
        }
    }

    for (id, c) in clients.into_iter().flatten().enumerate() {
        if let Err(why) = c.join().expect("client thread") {
            eprintln!("client {id}: {why}");
            std::process::exit(1);
        }
    }
    println!("3 clients served, every echo checked");
    Ok(())
}

/// A connection: its socket, what was read but not yet written back, and whether write
/// interest is declared.
struct Conn {
    stream: TcpStream,
    unsent: Vec<u8>,
    writing: bool,
}

struct Server {
    listener: TcpListener,
    q: Queue,
    conns: HashMap<RawFd, Conn>,
    closed: usize,
}

impl Server {
    /// Accepts every pending connection and declares read interest in each. The state
    /// `declare_interest` returns covers bytes that came before the call, so a client that
    /// wrote at once is served now rather than waiting for an event that an edge-triggered
    /// backend would never send.
    fn accept_all(&mut self) -> io::Result<()> {
        loop {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            };
            stream.set_nonblocking(true)?;
            let fd = stream.as_raw_fd();
            let state = self.q.declare_interest(stream.as_fd(), Interest::READ)?;
            self.conns.insert(fd, Conn { stream, unsent: Vec::new(), writing: false });
            println!("connection {fd} accepted");
            if state.is_readable() {
                self.echo(fd)?;
            }
        }
    }

    /// Reads what is there and writes it back; closes the connection at its end.
    fn echo(&mut self, fd: RawFd) -> io::Result<()> {
        let Some(c) = self.conns.get_mut(&fd) else { return Ok(()) };
        let mut buf = [0u8; 4096];
        let mut done = false;
        loop {
            match c.stream.read(&mut buf) {
                Ok(0) => {
                    done = true;
                    break;
                }
                Ok(k) => c.unsent.extend_from_slice(&buf[..k]),
                // Nothing (more) to read: a spurious event is allowed, a lost one is not.
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => {
                    done = true; // reset by the peer
                    c.unsent.clear();
                    break;
                }
            }
        }
        while !c.unsent.is_empty() {
            match c.stream.write(&c.unsent) {
                Ok(k) => drop(c.unsent.drain(..k)),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => {
                    done = true;
                    c.unsent.clear();
                }
            }
        }
        if done && c.unsent.is_empty() {
            let c = self.conns.remove(&fd).expect("present above");
            // Revoke, then close: no event of this registration is delivered after this.
            self.q.close(OwnedFd::from(c.stream))?;
            self.closed += 1;
            println!("connection {fd} closed ({} open)", self.conns.len());
            return Ok(());
        }
        // Ask for WRITE only while something waits to be sent: a state-based backend would
        // otherwise report the (nearly always) writable socket on every call.
        let writing = !c.unsent.is_empty();
        if c.writing != writing {
            c.writing = writing;
            let interest = if writing { Interest::READ | Interest::WRITE } else { Interest::READ };
            self.q.declare_interest(c.stream.as_fd(), interest)?;
        }
        Ok(())
    }
}

/// A client: sends three lines in two pieces each, closes its sending side and checks that
/// everything came back.
fn client(addr: SocketAddr, id: usize) -> io::Result<()> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut sent = Vec::new();
    for line in 0..3 {
        let text = format!("client {id} line {line}\n");
        let (a, b) = text.as_bytes().split_at(text.len() / 2);
        s.write_all(a)?;
        std::thread::sleep(Duration::from_millis(5));
        s.write_all(b)?;
        sent.extend_from_slice(text.as_bytes());
    }
    s.shutdown(std::net::Shutdown::Write)?;
    let mut back = Vec::new();
    s.read_to_end(&mut back)?;
    if back != sent {
        return Err(io::Error::other(format!(
            "sent {:?}, got back {:?}",
            String::from_utf8_lossy(&sent),
            String::from_utf8_lossy(&back)
        )));
    }
    Ok(())
}
