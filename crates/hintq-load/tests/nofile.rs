//! RELIABILITY row L2, alone in its own test binary because it lowers the process's soft
//! RLIMIT_NOFILE (which would disturb tests running beside it).

mod common;

use common::{config, run, Mode, Server};
use std::time::Duration;

fn nofile() -> (u64, u64) {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `rl` is valid for writes.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) }, 0);
    (rl.rlim_cur, rl.rlim_max)
}

#[test]
fn l2_soft_fd_limit_raised_to_hard_else_fail_fast() {
    let (_, hard) = nofile();
    let low = 256.min(hard);
    let rl = libc::rlimit { rlim_cur: low, rlim_max: hard };
    // SAFETY: a valid rlimit at or below the hard limit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) }, 0);

    // 300 connections (and the server's 300 ends of them, in this process) need more than 256.
    let srv = Server::start(Mode::Ok);
    let mut cfg = config(&[&srv.url]);
    cfg.connections = 100;
    cfg.cold = 200;
    cfg.duration = Duration::from_millis(500);
    let r = run(&cfg);
    assert_eq!(nofile().0, hard, "the soft limit was raised to the hard one");
    assert_eq!(r.plan.nofile, (hard, hard));
    assert_eq!(r.cold.held_at_end, 200, "{}", r.summary());
    assert!(r.hot.successes > 0 && r.hot.errors.total() == 0, "{}", r.summary());

    // Beyond the hard limit, with no way to start worker processes: refused before connecting.
    cfg.cold = hard as usize + 1;
    let e = hintq_load::run(&cfg, None).unwrap_err();
    assert!(e.contains("RLIMIT_NOFILE") && e.contains(&hard.to_string()), "{e}");
    assert_eq!(
        srv.accepted.load(std::sync::atomic::Ordering::SeqCst),
        300,
        "nothing connected for the refused run"
    );
}
