//! Connect time is each connection's own: from just before its `connect(2)` to its
//! writability, not from the start of the batch of connects it was opened with (with 32
//! connections the batch's clock reported a p50 of 2.1 ms where one connection took 0.24 ms).

mod common;

use common::{config, run, Mode, Server};
use std::time::Duration;

/// The test hook (feature `test-hooks`) sleeps 400 ms before each hot connect. Timed from
/// the batch's start, the two connects would take at least 400 ms and 800 ms. Timed from each
/// connect's own start, the lower of the two (the p50 of two) and their mean stay below one
/// sleep whatever the machine's load. What this checks is where the clock starts: on
/// loopback the handshake is usually done when `declare_interest` returns, which then
/// reports the writability itself (stamped there). Where it does not, the worker's look at
/// its queue right after each connect sees a handshake finished by then; one finished later
/// is seen at the next look, after the next connect (here, after the next sleep too): this
/// test does not tell those apart.
#[test]
fn connect_time_starts_at_each_connections_own_connect() {
    let srv = Server::start(Mode::Ok);
    let stall = Duration::from_millis(400);
    let cfg = hintq_load::Config {
        connections: 2,
        requests: Some(10),
        stall_hot_connects: Some(stall),
        ..config(&[&srv.url])
    };
    let r = run(&cfg);
    let c = &r.connect_us;
    assert_eq!(c.count, 2, "{}", r.summary());
    let stall_us = stall.as_micros() as u64;
    assert!(c.p50 < stall_us, "the wait behind the other connect is not counted\n{}", r.summary());
    assert!(c.mean < stall_us as f64, "{}", r.summary());
}
