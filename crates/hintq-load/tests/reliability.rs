//! RELIABILITY rows L1–L8 (except L2, in `nofile.rs`, which changes the process's
//! RLIMIT_NOFILE), against a fake server that misbehaves. Loopback only, seconds each, no
//! timing asserted beyond "the behaviour is visible".

mod common;

use common::{config, run, Mode, Server};
use hintq_load::{ColdLifetime, ColdMode, Config};
use std::net::TcpListener;
use std::os::fd::FromRawFd;
use std::time::{Duration, Instant};

/// Runs `cfg` on a thread and returns what `sample` saw at `at` after the start, plus the
/// report.
fn run_sampling<T: Send>(
    cfg: &Config,
    at: Duration,
    sample: impl FnOnce() -> T + Send,
) -> (hintq_load::Report, T) {
    std::thread::scope(|s| {
        let h = s.spawn(|| run(cfg));
        std::thread::sleep(at);
        let seen = sample();
        (h.join().unwrap(), seen)
    })
}

/// A port range of 8 ports from the ephemeral range, different per test process.
fn narrow_ports() -> (u16, u16) {
    let lo = 40_000 + (std::process::id() % 2000) as u16 * 8;
    (lo, lo + 7)
}

#[test]
fn l1_eaddrnotavail_counted_and_spread_over_sources() {
    let srv = Server::start(Mode::Hold);
    let mut cfg = config(&[&srv.url]);
    cfg.connections = 0;
    cfg.cold = 20;
    cfg.duration = Duration::from_millis(800);
    cfg.port_range = Some(narrow_ports());
    cfg.sources = Some(1);
    let (r, held) = run_sampling(&cfg, Duration::from_millis(500), || srv.open_now());
    assert_eq!(held, 8, "8 ports, one source: 8 connections held\n{}", r.summary());
    assert_eq!(r.cold.held_at_end, 8);
    assert!(r.cold.errors.addr_not_avail >= 12, "{}", r.summary());
    assert_eq!(r.cold.errors.total(), r.cold.errors.addr_not_avail, "{}", r.summary());
    assert!(r.summary().contains("EADDRNOTAVAIL"));

    let srv = Server::start(Mode::Hold);
    cfg.targets = config(&[&srv.url]).targets;
    cfg.sources = None;
    let (r, held) = run_sampling(&cfg, Duration::from_millis(500), || srv.open_now());
    assert_eq!(
        r.plan.sources, 10,
        "planned: 20 connections at a quarter of 8 ports a source need 10 sources"
    );
    assert_eq!(held, 20, "ten 127.0.0.x sources x 8 ports hold all 20\n{}", r.summary());
    assert_eq!((r.cold.held_at_end, r.cold.errors.total()), (20, 0), "{}", r.summary());
}

#[test]
fn l3_nonblocking_connect_failure_counted() {
    let nobody = hintq_testkit::Refusing::new();
    let mut cfg = config(&[&format!("http://{}/", nobody.addr)]);
    cfg.connections = 4;
    cfg.duration = Duration::from_millis(300);
    let r = run(&cfg);
    let e = r.hot.errors;
    assert!(e.connect >= 4, "{}", r.summary());
    assert_eq!((r.hot.successes, r.hot.started, r.hot.connects), (0, 0, 0));
    assert_eq!(e.total(), e.connect, "refusals are connect errors only\n{}", r.summary());
}

/// A listener with a backlog of 1 that never accepts.
fn full_backlog_listener() -> (std::net::TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    use std::os::fd::IntoRawFd;
    let fd = l.into_raw_fd();
    // SAFETY: a valid listening socket; listen(2) again only changes the backlog.
    assert_eq!(unsafe { libc::listen(fd, 1) }, 0);
    // SAFETY: `fd` came from into_raw_fd just above.
    (unsafe { TcpListener::from_raw_fd(fd) }, port)
}

#[test]
fn l4_full_listen_backlog_no_hang() {
    let (_l, port) = full_backlog_listener();
    let mut cfg = config(&[&format!("http://127.0.0.1:{port}/")]);
    cfg.connections = 8;
    cfg.duration = Duration::from_millis(1000);
    cfg.timeout = Duration::from_millis(300);
    let t = Instant::now();
    let r = run(&cfg);
    assert!(t.elapsed() < Duration::from_secs(4), "the run ends on its deadline: {:?}", t.elapsed());
    assert_eq!(r.hot.successes, 0);
    assert!(r.hot.errors.connect_timeout >= 1, "connects stuck behind the backlog time out\n{}", r.summary());
    assert!(r.connect_us.count >= 1, "the connects that got in are timed\n{}", r.summary());
}

#[test]
fn cold_connects_stuck_behind_a_full_backlog_time_out_and_are_retried() {
    let (_l, port) = full_backlog_listener();
    let mut cfg = config(&[&format!("http://127.0.0.1:{port}/")]);
    cfg.connections = 0;
    cfg.cold = 8;
    cfg.duration = Duration::from_millis(1000);
    cfg.timeout = Duration::from_millis(200);
    let r = run(&cfg);
    // The listener takes 2 (its backlog of 1, plus one); the other 6 stay connecting. The
    // warm-up gives up on them after --timeout; from then on every sweep finds them, times
    // them out and opens them again, several times in the second of the run.
    assert!(r.cold.errors.connect_timeout >= 6, "stuck cold connects time out\n{}", r.summary());
    assert!(r.cold.peak_held <= 2, "{}", r.summary());
}

/// 20 requests over 2 connections against `mode`; returns the report.
fn twenty(mode: Mode) -> hintq_load::Report {
    let srv = Server::start(mode);
    let mut cfg = config(&[&srv.url]);
    cfg.requests = Some(20);
    let r = run(&cfg);
    assert_eq!(r.hot.started, 20, "{}", r.summary());
    r
}

#[test]
fn l5_split_reset_truncated_pipelined_and_bad_responses_counted_exactly() {
    let r = twenty(Mode::ByteByByte);
    assert_eq!(
        (r.hot.successes, r.hot.errors.total()),
        (20, 0),
        "byte by byte, CL and chunked\n{}",
        r.summary()
    );

    let r = twenty(Mode::ResetMidBody);
    assert_eq!((r.hot.successes, r.hot.errors.reset), (0, 20), "{}", r.summary());
    assert_eq!(r.hot.errors.total(), 20);

    let r = twenty(Mode::TruncateBody);
    assert_eq!((r.hot.successes, r.hot.errors.truncated), (0, 20), "{}", r.summary());
    assert_eq!(r.hot.errors.total(), 20);

    let r = twenty(Mode::BadStatus);
    assert_eq!((r.hot.successes, r.hot.errors.parse), (0, 20), "{}", r.summary());
    assert_eq!(r.hot.errors.total(), 20);

    let r = twenty(Mode::CloseBeforeResponse);
    assert_eq!((r.hot.successes, r.hot.errors.closed_before_response), (0, 20), "{}", r.summary());
    assert_eq!(r.hot.errors.total(), 20);

    let r = twenty(Mode::Pipeline);
    assert_eq!((r.hot.successes, r.hot.errors.unsolicited), (20, 20), "{}", r.summary());
    assert_eq!(r.hot.errors.total(), 20, "the extra response is never a success");
}

#[test]
fn l6_server_closing_connections_is_not_an_error() {
    // Idle hot connections closed by the server: open loop leaves them idle between requests.
    let srv = Server::start(Mode::CloseIdle(Duration::from_millis(30)));
    let mut cfg = config(&[&srv.url]);
    cfg.connections = 1;
    cfg.rate = Some(10.0);
    cfg.duration = Duration::from_millis(1000);
    let r = run(&cfg);
    assert_eq!(r.hot.errors.total(), 0, "{}", r.summary());
    assert!(r.hot.successes >= 8 && r.hot.closed_idle >= 3, "{}", r.summary());

    let r = twenty(Mode::ConnectionClose);
    assert_eq!(
        (r.hot.successes, r.hot.connection_close, r.hot.errors.total()),
        (20, 20, 0),
        "{}",
        r.summary()
    );

    // Cold connections closed by the server are re-opened and counted apart.
    let srv = Server::start(Mode::CloseAfter(Duration::from_millis(100)));
    let mut cfg = config(&[&srv.url]);
    cfg.connections = 0;
    cfg.cold = 5;
    cfg.duration = Duration::from_millis(500);
    let r = run(&cfg);
    assert!(r.cold.closed_by_server >= 5, "{}", r.summary());
    assert!(r.cold.opened > 5 && srv.accepted.load(std::sync::atomic::Ordering::SeqCst) > 5);
    assert_eq!(r.cold.errors.total() + r.hot.errors.total(), 0, "{}", r.summary());
}

#[test]
fn cold_connections_are_really_held_beside_the_hot_load() {
    let srv = Server::start(Mode::Ok);
    let mut cfg = config(&[&srv.url]);
    cfg.cold = 200;
    cfg.cold_mode = ColdMode::Partial;
    cfg.duration = Duration::from_millis(1000);
    let (r, open) = run_sampling(&cfg, Duration::from_millis(600), || srv.open_now());
    assert_eq!(open, 202, "2 hot + 200 cold open at the server\n{}", r.summary());
    assert_eq!((r.cold.held_at_end, r.cold.peak_held, r.cold.opened), (200, 200, 200), "{}", r.summary());
    assert!(r.hot.successes > 0 && r.hot.errors.total() == 0, "{}", r.summary());
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(srv.partial_heads.load(std::sync::atomic::Ordering::SeqCst), 200, "each sent a partial head");
    assert_eq!(srv.open_now(), 0, "all closed at the end");
}

#[test]
fn cold_heavy_tail_lifetimes_replace_connections() {
    let srv = Server::start(Mode::Hold);
    let mut cfg = config(&[&srv.url]);
    cfg.connections = 0;
    cfg.cold = 50;
    cfg.cold_lifetime = ColdLifetime::HeavyTail;
    cfg.duration = Duration::from_millis(1000);
    let (r, open) = run_sampling(&cfg, Duration::from_millis(500), || srv.open_now());
    // Median lifetime 0.2 s: about half of them expire in a second, and are replaced.
    assert!(r.cold.expired >= 10, "{}", r.summary());
    assert!(open >= 45, "the population stays near 50 while they turn over: {open}");
    assert_eq!(r.cold.errors.total(), 0);
}

#[test]
fn l7_open_loop_latency_from_intended_send_time() {
    let stall = Duration::from_millis(200);
    let srv = Server::start(Mode::StallOnce(stall));
    let mut cfg = config(&[&srv.url]);
    cfg.connections = 1;
    cfg.rate = Some(200.0);
    cfg.duration = Duration::from_millis(1500);
    let r = run(&cfg);
    // ~40 requests fall due during the stall and queue behind it: their latency counts the
    // wait, so the tail shows the stall.
    assert!(r.latency_us.max >= 180_000, "{}", r.summary());
    assert!(r.latency_us.p99 >= 100_000, "open loop p99 shows the stall\n{}", r.summary());
    assert_eq!(r.hot.errors.total(), 0, "{}", r.summary());

    // Closed loop over the same stall: one slow request, the rest hide it (coordinated omission).
    let srv = Server::start(Mode::StallOnce(stall));
    cfg.targets = config(&[&srv.url]).targets;
    cfg.rate = None;
    let r = run(&cfg);
    assert!(r.latency_us.max >= 180_000, "{}", r.summary());
    assert!(r.latency_us.p90 < 100_000, "closed loop hides it\n{}", r.summary());

    // Requests unanswered, or queued behind them, longer than the timeout are errors: none
    // is dropped from the counts.
    let srv = Server::start(Mode::Hold);
    cfg.targets = config(&[&srv.url]).targets;
    cfg.rate = Some(100.0);
    cfg.timeout = Duration::from_millis(100);
    cfg.duration = Duration::from_millis(1000);
    let r = run(&cfg);
    assert_eq!(r.hot.successes, 0);
    assert!(r.hot.errors.timeout >= 80, "{}", r.summary());
    assert_eq!(r.hot.errors.timeout + r.hot.unfinished, r.hot.started, "{}", r.summary());
}

#[test]
fn l8_loopback_only_and_bounded() {
    for url in ["http://10.1.2.3/", "http://example.com/", "http://[2001:db8::1]/"] {
        let e = url.parse::<hintq_load::Target>().unwrap_err();
        assert!(e.contains("loopback") || e.contains("not resolved"), "{e}");
    }
    let srv = Server::start(Mode::Ok);
    let mut cfg = config(&[&srv.url]);
    cfg.requests = Some(30);
    cfg.duration = Duration::from_secs(30);
    let t = Instant::now();
    let r = run(&cfg);
    assert_eq!((r.hot.started, r.hot.successes), (30, 30), "{}", r.summary());
    assert!(t.elapsed() < Duration::from_secs(10));

    let srv = Server::start(Mode::Hold);
    let mut cfg = config(&[&srv.url]);
    cfg.duration = Duration::from_millis(300);
    cfg.timeout = Duration::from_secs(30);
    let t = Instant::now();
    let r = run(&cfg);
    assert!(t.elapsed() < Duration::from_secs(3), "a server that never answers cannot hold the run");
    assert_eq!((r.hot.successes, r.hot.unfinished), (0, 2), "{}", r.summary());

    let mut bad = config(&[&srv.url]);
    bad.duration = Duration::ZERO;
    assert!(hintq_load::run(&bad, None).unwrap_err().contains("bounded"));
}

/// Provos & Lever's reply rate: replies counted second by second, a new connection per
/// request, as httperf drives a server.
#[test]
fn reply_rate_is_sampled_each_whole_second() {
    let srv = Server::start(Mode::Ok);
    let mut cfg = config(&[&srv.url]);
    cfg.connections = 8;
    cfg.rate = Some(200.0);
    cfg.new_conn_per_request = true;
    cfg.duration = Duration::from_millis(2500);
    let r = run(&cfg);
    let rate = &r.reply_rate;
    assert_eq!(rate.per_second.len(), 2, "two whole seconds, the partial third left out\n{}", r.summary());
    for &n in &rate.per_second {
        assert!(
            (150..=250).contains(&n),
            "about 200 replies a second: {:?}\n{}",
            rate.per_second,
            r.summary()
        );
    }
    assert!(rate.per_second.iter().sum::<u64>() < r.hot.successes, "the last half second is not a sample");
    assert_eq!(
        (rate.min, rate.max),
        (*rate.per_second.iter().min().unwrap(), *rate.per_second.iter().max().unwrap())
    );
    assert!(r.hot.connects >= r.hot.successes, "a connection per request\n{}", r.summary());
}
