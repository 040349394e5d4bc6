//! E5, Banga Table 2: the share of the server's core spent in event notification at a fixed
//! load with many cold connections, as Banga's DCPI profiles gave it: flat (self) samples of
//! the mechanism's own functions, kernel and user, over all the time of the core the server
//! is pinned to, idle included (`perf record -C <core> -c 1000000 -k mono -g`: one sample per
//! ms of CPU, so the denominator is the window's length), cut to the load's hot phase.
//!
//! What counts is an exact list of functions per mechanism ([`Mechanism::kernel`],
//! [`Mechanism::user`]) found in this kernel's `/proc/kallsyms`, not symbol substrings
//! (`select_task_rq_fair`, `__napi_poll` are no event notification); a sample counts by its
//! own function only, or as one of the [`SHARED`] per-descriptor helpers called by one of
//! the mechanism's; for io_uring only the poll path and the wait, not the sends its ring carries.

use super::serve::{self, servers};
use super::{panel, Analysis, Experiment, Lab};
use crate::data::{num, Row};
use crate::plot::label;
use crate::runner::{Cmd, Point, Ran, Server};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// An event-notification mechanism, with the functions that are its cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// `select(2)` (glibc and hintq both enter through `pselect6`).
    Select,
    /// `poll(2)` (also `gooch`'s two sets).
    Poll,
    /// epoll (hintq's three epoll backends, nginx).
    Epoll,
    /// io_uring multishot `POLL_ADD`.
    Uring,
    /// POSIX RT signals, with `poll(2)` for overflow recovery and the hybrid's polling.
    Rtsig,
}

/// Kernel functions of `poll(2)` (each list space-separated).
const POLL: &str = "__x64_sys_poll __x64_sys_ppoll do_sys_poll do_restart_poll";
/// The poll-table wake-up and bookkeeping select and poll share.
const POLL_TABLE: &str = "pollwake __pollwait poll_initwait poll_freewait poll_select_set_timeout \
    poll_select_finish";
const SELECT: &str = "__x64_sys_select __x64_sys_pselect6 do_pselect kern_select core_sys_select \
    do_select select_estimate_accuracy";
const EPOLL: &str = "__x64_sys_epoll_wait __x64_sys_epoll_pwait __x64_sys_epoll_pwait2 do_epoll_wait \
    do_epoll_pwait ep_send_events ep_item_poll ep_start_scan ep_done_scan ep_poll_callback \
    ep_autoremove_wake_function __x64_sys_epoll_ctl do_epoll_ctl ep_remove ep_remove_epi \
    ep_remove_file ep_ptable_queue_proc";
/// io_uring's poll requests and the wait for completions; not `io_submit_sqes`, which also
/// issues the ring's sends.
const URING: &str = "io_poll_add io_poll_issue io_poll_task_func __io_poll_execute io_poll_execute \
    io_poll_wake io_poll_queue_proc __io_queue_proc io_poll_remove io_poll_remove_entries \
    io_poll_cancel io_poll_find io_arm_poll_handler __io_arm_poll_handler io_cqring_wait";
/// Per-descriptor helpers a mechanism shares with other paths: counted as its own time only
/// when one of its functions called them (Banga's `soo_select` is Linux's `sock_poll` and
/// `tcp_poll`).
pub const SHARED: &str = "sock_poll tcp_poll tcp_stream_is_readable unix_poll pipe_poll fdget \
    __fget_light __fget_files fput";
/// Counted only as the sample's own function: the rest of `io_uring_enter` submits sends.
const URING_SELF: &str = "__x64_sys_io_uring_enter __do_sys_io_uring_enter";
const RTSIG: &str = "__x64_sys_rt_sigtimedwait do_sigtimedwait kill_fasync send_sigio \
    send_sigio_to_task";

impl Mechanism {
    /// The mechanism under a series of the server experiments: `hintq-<backend>` or `nginx`.
    pub fn of_series(series: &str) -> Option<Mechanism> {
        match series.strip_prefix("hintq-").unwrap_or(series) {
            "select" | "select-classic" => Some(Mechanism::Select),
            "poll" | "gooch" => Some(Mechanism::Poll),
            "epoll" | "epoll-et" | "epoll-oneshot" | "nginx" => Some(Mechanism::Epoll),
            "uring" => Some(Mechanism::Uring),
            "rtsig" => Some(Mechanism::Rtsig),
            _ => None,
        }
    }

    /// Kernel functions whose own samples count.
    pub fn kernel(self) -> Vec<&'static str> {
        let lists: &[&str] = match self {
            Mechanism::Select => &[SELECT, POLL_TABLE],
            Mechanism::Poll => &[POLL, POLL_TABLE],
            Mechanism::Epoll => &[EPOLL],
            Mechanism::Uring => &[URING],
            Mechanism::Rtsig => &[RTSIG, POLL, POLL_TABLE],
        };
        lists.iter().flat_map(|l| l.split(' ')).collect()
    }

    /// Kernel functions that count only as the sample's own function.
    pub fn kernel_self(self) -> Vec<&'static str> {
        let own = if self == Mechanism::Uring { URING_SELF } else { "" };
        own.split(' ').filter(|f| !f.is_empty()).collect()
    }

    /// User-space functions that count (as the sample's own function), by path prefix:
    /// hintq's queue and the backend's module, nginx's epoll module.
    pub fn user(self) -> &'static [&'static str] {
        match self {
            Mechanism::Select => &["hintq::queue::", "hintq::backend::select::", "hintq::sys::select"],
            Mechanism::Poll => &[
                "hintq::queue::",
                "hintq::backend::poll::",
                "hintq::backend::pollset::",
                "hintq::backend::gooch::",
            ],
            Mechanism::Epoll => &["hintq::queue::", "hintq::backend::epoll::", "ngx_epoll_"],
            Mechanism::Uring => &["hintq::queue::", "hintq::backend::uring::"],
            Mechanism::Rtsig => &["hintq::queue::", "hintq::backend::rtsig::", "hintq::backend::pollset::"],
        }
    }

    /// Whether a sample with this call chain (outermost caller first, the sampled function
    /// last) is in event notification by this mechanism: its own function is one of the
    /// mechanism's, or one of the [`SHARED`] helpers called by one of them.
    pub fn counts(self, chain: &[&str]) -> bool {
        let Some(leaf) = chain.last().map(|f| base(f)) else { return false };
        let kernel = self.kernel();
        let user = |f: &str| self.user().iter().any(|p| f.trim_start_matches('<').starts_with(p));
        kernel.contains(&leaf)
            || self.kernel_self().contains(&leaf)
            || user(leaf)
            || (SHARED.split(' ').any(|f| f == leaf) && chain.iter().any(|f| kernel.contains(&base(f))))
    }

    /// The functions counted, for the report.
    pub fn describe(self) -> String {
        let mut all = self.kernel();
        all.extend(self.kernel_self());
        let (user, shared) = (self.user().join("*, "), SHARED.replace(' ', ", "));
        format!("{} (kernel), {user}* (user), own time; {shared} when they call them", all.join(", "))
    }
}

/// A function name without the compiler's clone suffixes (`do_pselect.constprop.0`,
/// `ep_item_poll.isra.0`, `core_sys_select.cold`) and without a Rust hash (`::h0123…`).
fn base(f: &str) -> &str {
    let f = f.trim();
    let f = f.split_once('.').filter(|(name, _)| !name.is_empty()).map_or(f, |(name, _)| name);
    match f.rsplit_once("::h") {
        Some((path, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => path,
        _ => f,
    }
}

/// `Err("needs perf ...")` unless `perf` runs.
pub fn perf_ok() -> Result<(), String> {
    match Command::new("perf").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err("needs `perf` (apt-get install -y linux-perf)".into()),
    }
}

/// The `perf report` arguments whose output [`flat_samples`] reads: one entry per function,
/// each followed by its call chains folded on one line with their sample counts.
pub const REPORT_ARGS: &[&str] =
    &["report", "--stdio", "--no-children", "--sort", "comm,symbol", "-g", "folded,0,caller,count"];

/// CPU time one sample stands for (`perf record -c 1000000` on the software clock, ns).
const PERIOD_NS: u64 = 1_000_000;

/// The samples in `mechanism`'s event notification ([`Mechanism::counts`]) by the server's
/// own processes (`SERVER_COMMANDS`) in a `perf report` made with [`REPORT_ARGS`] of a
/// `perf record -g`: the counts of the call chains that count. `None` if the report has no
/// call chain.
pub fn flat_samples(report: &str, mechanism: Mechanism) -> Option<u64> {
    let mut chains = 0;
    let mut counted = 0;
    // Whether the entry the chains below belong to is the server's own (its command).
    let mut own = false;
    for line in report.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.ends_with('%') {
            // `    10.00%  hintq-reactor-0  [k] do_select  -  -`: the command (which may hold
            // spaces) between the percentage and the `[k]`/`[.]` column.
            let rest = line.trim_start().trim_start_matches(first);
            let comm = rest.split(" [").next().unwrap_or("").trim();
            own = SERVER_COMMANDS.iter().any(|c| comm.starts_with(c));
            continue;
        }
        let Some((n, chain)) = line.trim().split_once(' ') else { continue };
        let Ok(n) = n.parse::<u64>() else { continue };
        chains += 1;
        if own && mechanism.counts(&chain.split(';').collect::<Vec<_>>()) {
            counted += n;
        }
    }
    (chains > 0).then_some(counted)
}

/// The commands (process and thread names) of the measured servers: only their samples are
/// event notification; any other process on the core counts as the core's time.
const SERVER_COMMANDS: &[&str] = &["hintq", "nginx"];

/// `server` run under `perf record` sampling its core system-wide, one sample per ms of CPU,
/// stamped with `CLOCK_MONOTONIC`, into the point's `perf.data` (E5's and E11's profiles).
pub fn profiled(mut server: Server) -> Server {
    let record = format!("record -C {} -c {PERIOD_NS} -k mono -g -o perf.data --", server.cmd.cpu);
    let mut args: Vec<String> = record.split(' ').map(String::from).collect();
    args.push(server.cmd.program.to_string_lossy().into());
    args.extend(server.cmd.args.clone());
    server.cmd = Cmd { program: "perf".into(), args, cpu: server.cmd.cpu };
    server
}

/// The load generator's hot phase in `CLOCK_MONOTONIC` seconds: from the command's start
/// plus its warm-up, for its hot seconds.
pub fn hot_window(ran: &Ran, json: &serde_json::Value) -> Result<(f64, f64), String> {
    let warm = serve::at(json, "/warmup_seconds").ok_or("load.json has no /warmup_seconds")?;
    let hot = serve::at(json, "/hot_seconds").ok_or("load.json has no /hot_seconds")?;
    let start = ran.window.0 + warm;
    Ok((start, (start + hot).min(ran.window.1)))
}

/// The share (%) of the profiled core's time in `mechanism`'s event notification within
/// `window`, idle included: [`flat_samples`] of `dir`'s `perf.data` (report kept as
/// `perf-report.txt`), each `PERIOD_NS` of CPU, over the window's length; and the samples it
/// rests on.
pub fn profile_share(dir: &Path, mechanism: Mechanism, window: (f64, f64)) -> Result<(f64, u64), String> {
    let (from, to) = window;
    if to <= from {
        return Err(format!("an empty profile window ({from:.6} to {to:.6} s)"));
    }
    let out = Command::new("perf")
        .args(REPORT_ARGS)
        .args(["-i", "perf.data", "--time", &format!("{from:.6},{to:.6}")])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("perf report: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::write(dir.join("perf-report.txt"), text.as_bytes());
    let samples = flat_samples(&text, mechanism).ok_or("perf report gave no samples")?;
    Ok((samples as f64 * PERIOD_NS as f64 * 1e-9 / (to - from) * 100.0, samples))
}

/// E5: what it reproduces, its plan and its analysis.
pub const EXPERIMENT: Experiment = Experiment {
    id: "E5",
    title: "share of the server core's time (idle included) in event notification, fixed load, many cold connections",
    paper: "Banga et al. Table 2",
    claim: "Classical select took 34% of the CPU (750 cold, 50 hot, 400 req/s; a flat profile of \
         the whole machine, idle included); improved select 12%; the event API under 1%.",
    needs: |lab| lab.need(&["serve"]).and(lab.need(&["load"])).and(perf_ok()),
    plan,
    analyse,
};

fn plan(lab: &Lab) -> Vec<Point> {
    // Banga's cold count only: the full run's time goes to 3 profiles of each line there.
    let colds: Vec<usize> = lab.pick(vec![750], vec![750], vec![100]);
    // Banga's three lines (classical select, improved select, the event API on a kernel
    // event queue), and poll.
    let full = ["uring", "epoll", "poll", "select-classic", "select"];
    let backends = lab.pick(&full[..], &full[1..], &full[1..2]);
    // Three profiles (launches) of each point: a verdict needs 3 (verdict.rs).
    let (secs, launches): (f64, u32) = (lab.pick(4.0, 2.0, 0.5), lab.pick(3, 3, 1));
    let mut points = Vec::new();
    for s in servers(lab, backends) {
        let Some(mechanism) = Mechanism::of_series(&s) else { continue };
        for (&cold, rep) in colds.iter().flat_map(|c| (0..launches).map(move |k| (c, k))) {
            let port = serve::port();
            let Ok(server) = serve::server(lab, &s, port) else { continue };
            let name = s.clone();
            points.push(Point {
                experiment: "E5",
                series: s.clone(),
                x: cold as f64,
                name: format!("{s}-cold{cold}-rep{rep}"),
                server: Some(profiled(server)),
                cmd: serve::load(lab, port, "1k.html", 50, cold, Some(400.0), secs),
                timeout: Duration::from_secs_f64(secs + 60.0),
                estimate: Duration::from_secs_f64(secs + 3.0),
                parse: Box::new(move |ran| {
                    let window = hot_window(ran, &serve::load_json(ran)?)?;
                    let (share, samples) = profile_share(&ran.dir, mechanism, window)?;
                    let row = |metric: &str, v| Row { rep, ..Row::ok("E5", &name, cold as f64, metric, v) };
                    Ok(vec![
                        row("event_cpu_pct", share),
                        row(&super::table2::samples_of("event_cpu_pct"), samples as f64),
                    ])
                }),
            });
        }
    }
    points
}

fn analyse(rows: &[Row]) -> Analysis {
    let (y, metric) = ("% of the server core's time (flat)", "event_cpu_pct");
    let p = panel(rows, metric, "400 req/s, 50 hot", "cold connections", y, (false, false));
    // Banga's Table 2: the section's verdict is the first table's rows', by one rule.
    let t2 = super::table2::table2(super::banga::Setting::Server, rows, "event_cpu_pct");
    let mut reading = vec![format!("{}.", super::table2::TABLE2_RULE)];
    reading.extend(t2.figures.iter().map(|f| format!("{}: {}.", f.figure, f.holds)));
    for l in &p.lines {
        let at: Vec<String> =
            l.points.iter().map(|pt| format!("{}% at {} cold", num(pt.spread.median), pt.x)).collect();
        reading.push(format!("{}: {}.", label(&l.name), at.join(", ")));
    }
    let counts = p
        .lines
        .iter()
        .filter_map(|l| Some(format!("{} counts: {}.", l.name, Mechanism::of_series(&l.name)?.describe())));
    reading.extend(counts);
    let (ours, holds, figures) =
        (format!("{} of the server core's time (flat, idle included)", t2.ours), t2.holds, t2.figures);
    Analysis {
        panels: vec![p],
        ours,
        holds,
        reading,
        metrics: vec![("event_cpu_pct", "% CPU in event notification")],
        figures,
    }
}

#[cfg(test)]
mod tests {
    use super::{flat_samples, Mechanism};
    use crate::data::Row;
    use crate::exp::check::starts;

    /// A `perf report` of a select server made with `REPORT_ARGS`, as perf 6.1 prints it
    /// (trailing columns after the function, then its folded call chains with counts):
    /// 100 samples, 40 of them in select's own path.
    const REPORT: &str = "\
# Samples: 100  of event 'cpu-clock:ppp'
# Overhead  Symbol
#
    20.00%  hintq  [k] do_select                                  -      -
20 0;__select;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pselect6;do_pselect.constprop.0;core_sys_select;do_select
    12.00%  hintq  [k] fdget                                      -      -
10 0;__select;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pselect6;do_pselect.constprop.0;core_sys_select;do_select;fdget
2 0;__libc_recv;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_recvfrom;__sys_recvfrom;fdget
    10.00%  hintq  [k] select_task_rq_fair                        -      -
10 0;__libc_send;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_sendto;tcp_sendmsg;sock_def_readable;__wake_up_sync_key;try_to_wake_up;select_task_rq_fair
     8.00%  hintq  [k] __napi_poll                                -      -
8 ret_from_fork;smpboot_thread_fn;run_ksoftirqd;handle_softirqs;net_rx_action;__napi_poll
     6.00%  hintq  [k] net_rx_action                              -      -
6 __libc_send;do_softirq;handle_softirqs;net_rx_action
     5.00%  hintq  [k] tcp_poll                                   -      -
5 0;__select;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pselect6;do_pselect.constprop.0;core_sys_select;do_select;sock_poll;tcp_poll
     5.00%  hintq  [k] __alloc_pages                              -      -
5 0;__libc_send;do_syscall_64;__x64_sys_sendto;tcp_sendmsg;sk_page_frag_refill;__alloc_pages
     4.00%  hintq  [k] get_page_from_freelist                     -      -
4 0;__libc_send;do_syscall_64;__x64_sys_sendto;tcp_sendmsg;sk_page_frag_refill;__alloc_pages;get_page_from_freelist
     3.00%  hintq  [.] <hintq::backend::select::Select as hintq::backend::Poller>::wait   -      -
3 <hintq::backend::select::Select as hintq::backend::Poller>::wait
     2.00%  hintq  [k] pollwake                                   -      -
2 ret_from_fork;run_ksoftirqd;handle_softirqs;net_rx_action;__napi_poll;tcp_v4_rcv;sock_def_readable;pollwake
    25.00%  hintq  [.] hintq_http::head::parse                    -      -
25 0x55d0;hintq_http::head::parse
";

    #[test]
    fn counts_the_functions_of_the_mechanism_and_not_their_namesakes() {
        // do_select 20, fdget under do_select 10 (not the 2 under recvfrom), tcp_poll under
        // do_select 5, hintq's select 3, pollwake 2.
        assert_eq!(flat_samples(REPORT, Mechanism::Select), Some(40));
        // None of it is epoll's: not the scheduler's select_task_rq_fair, not the softirq's
        // __napi_poll and net_rx_action, not the page allocator.
        assert_eq!(flat_samples(REPORT, Mechanism::Epoll), Some(0));
        // poll shares select's wake-up (pollwake) only.
        assert_eq!(flat_samples(REPORT, Mechanism::Poll), Some(2));
        // A report without call chains says nothing.
        assert_eq!(flat_samples("# nothing\n    30.00%  [k] do_sys_poll  -  -\n", Mechanism::Poll), None);
    }

    #[test]
    fn a_sample_counts_by_its_own_function_and_a_shared_helper_by_its_caller() {
        let m = Mechanism::Epoll;
        let chain = |c: &'static str| c.split(';').collect::<Vec<_>>();
        assert!(m.counts(&chain("net_rx_action;__napi_poll;tcp_v4_rcv;sock_def_readable;ep_poll_callback")));
        assert!(m.counts(&chain("do_epoll_wait;ep_send_events;ep_item_poll.isra.0;sock_poll;tcp_poll")));
        assert!(!m.counts(&["__x64_sys_recvfrom", "sock_recvmsg", "tcp_poll"]));
        // Flat: what the mechanism calls is not its own time (the switch away while waiting).
        assert!(!m.counts(&["do_epoll_wait", "schedule_hrtimeout_range", "schedule", "__schedule"]));
        use Mechanism::*;
        for f in
            "select_task_rq_fair __napi_poll net_rx_action __alloc_pages get_page_from_freelist".split(' ')
        {
            for m in [Select, Poll, Epoll, Uring, Rtsig] {
                assert!(!m.counts(&[f]), "{f} counted for {m:?}");
            }
        }
        // io_uring: the poll path and the wait, not the sends its ring carries.
        let u = Mechanism::Uring;
        assert!(u.counts(&["__x64_sys_io_uring_enter", "io_cqring_wait"]));
        assert!(!u.counts(&["__x64_sys_io_uring_enter", "io_cqring_wait", "schedule"]));
        assert!(u.counts(&["__x64_sys_io_uring_enter"]));
        assert!(!u.counts(&["__x64_sys_io_uring_enter", "io_submit_sqes", "io_issue_sqe", "tcp_sendmsg"]));
        assert!(Mechanism::Poll.counts(&["hintq::backend::pollset::PollSet::collect::h0123456789abcdef"]));
        assert_eq!(Mechanism::of_series("hintq-select-classic"), Some(Mechanism::Select));
        assert_eq!(Mechanism::of_series("nginx"), Some(Mechanism::Epoll));
    }

    #[test]
    fn only_the_server_s_own_processes_count_and_what_else_ran_on_the_core_does_not() {
        // On a shared core another program's select (a test thread named select::stale_a)
        // and softirqs are the core's time, not the server's event notification.
        let report = "\
# Overhead  Command  Symbol
    10.00%  hintq-reactor-0  [k] do_select  -  -
10 __select;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pselect6;do_pselect.constprop.0;core_sys_select;do_select
     7.00%  select::stale_a  [k] do_select  -  -
7 __select;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pselect6;do_pselect.constprop.0;core_sys_select;do_select
     3.00%  opt cgu.0  [k] do_select  -  -
3 __select;do_syscall_64;core_sys_select;do_select
     2.00%  nginx  [k] ep_poll_callback  -  -
2 net_rx_action;__napi_poll;tcp_v4_rcv;sock_def_readable;ep_poll_callback
";
        assert_eq!(flat_samples(report, Mechanism::Select), Some(10));
        assert_eq!(flat_samples(report, Mechanism::Epoll), Some(2));
        // The recording: the server's whole core, 1 ms samples, the monotonic clock, chains.
        let cmd = crate::runner::Cmd::new("/bin/hintq", &["serve", "--backend", "select"], 3);
        let server = crate::runner::Server::new(cmd, "127.0.0.1:1".parse().unwrap());
        let args = super::profiled(server).cmd.args.join(" ");
        starts(&args, "record -C 3 -c 1000000 -k mono -g -o perf.data -- /bin/hintq serve");
        assert!(super::REPORT_ARGS.join(" ").contains("--sort comm,symbol"));
    }

    /// Three profiles of a point: `v`, `v` + 1%, `v` − 1% of `v`.
    fn row(series: &str, x: f64, v: f64) -> Vec<Row> {
        [v, v * 1.01, v * 0.99]
            .into_iter()
            .enumerate()
            .map(|(rep, v)| Row { rep: rep as u32, ..Row::ok("E5", series, x, "event_cpu_pct", v) })
            .collect()
    }

    fn analyse(points: &[Vec<Row>]) -> crate::exp::Analysis {
        super::analyse(&points.concat())
    }

    #[test]
    fn the_section_and_the_first_table_judge_table2_at_750_cold_by_one_rule() {
        // At 750: classical above improved above epoll, epoll under a third of improved's.
        // At 5000 the order breaks, but 750 is Banga's point and the one judged.
        let a = analyse(&[
            row("hintq-epoll", 750.0, 3.0),
            row("hintq-epoll", 5000.0, 40.0),
            row("hintq-poll", 750.0, 20.0),
            row("hintq-select-classic", 750.0, 40.0),
            row("hintq-select-classic", 5000.0, 10.0),
            row("hintq-select", 750.0, 30.0),
        ]);
        assert_eq!(
            a.ours,
            "at 750 cold: classical select 40.0% (39.6–40.4, n=3), improved select 30.0% (29.7–30.3, n=3), \
             epoll 3.00% (2.97–3.03, n=3), poll 20.0% (19.8–20.2, n=3) of the server core's time (flat, idle included)"
        );
        assert_eq!(a.holds, "yes");
        let holds: Vec<&str> = a.figures.iter().map(|f| f.holds.split(' ').next().unwrap()).collect();
        assert_eq!(holds, ["yes", "yes", "yes"]);
        assert!(a.figures[2]
            .holds
            .contains("epoll 3.00 (2.97–3.03, n=3) below a third of improved select's share of 30.0% 10.0"));
        assert!(a.figures[2].literal.starts_with("no (rule: every profile's share under 1% of the CPU"));
        assert!(
            a.reading[0].starts_with("Each share is a flat profile")
                && a.reading[0].contains("Table 2 is judged at one cold count (750")
        );
        assert!(a.reading.iter().any(|r| r
            .starts_with("hintq-select-classic (classical select): 40.0% at 750 cold, 10.0% at 5000 cold")));
        assert!(a.reading.iter().any(|r| r.starts_with("hintq-select counts: __x64_sys_select")));
        // One profile a point: no verdict either way.
        let three = [
            row("hintq-epoll", 750.0, 3.0),
            row("hintq-select-classic", 750.0, 40.0),
            row("hintq-select", 750.0, 30.0),
        ];
        let one: Vec<Row> = three.concat().into_iter().filter(|r| r.rep == 0).collect();
        assert!(super::analyse(&one).holds.starts_with("cannot say: fewer than 3 launches"));
    }

    #[test]
    fn table2_fails_where_the_selects_tie_or_the_event_api_is_not_far_below() {
        // The full run's numbers at 750 cold: the two selects in the wrong order, epoll over
        // a third of the smaller select share.
        let a = analyse(&[
            row("hintq-epoll", 750.0, 30.7),
            row("hintq-select-classic", 750.0, 80.1),
            row("hintq-select", 750.0, 87.0),
        ]);
        assert_eq!(a.holds, "no");
        assert!(
            a.figures[0]
                .holds
                .starts_with("no (classical select 80.1 (79.3–80.9, n=3) below improved select"),
            "{}",
            a.figures[0].holds
        );
        starts(&a.figures[2].holds, "no (epoll 30.7");
        // Issue 26: 82.5% against 81.0% is within noise when the profiles overlap.
        let b = analyse(&[
            row("hintq-epoll", 750.0, 20.0),
            row("hintq-select-classic", 750.0, 82.5),
            row("hintq-select", 750.0, 81.5),
        ]);
        starts(&b.figures[0].holds, "within noise");
    }
}
