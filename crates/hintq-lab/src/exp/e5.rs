//! E5, Banga Table 2: the share of the server core's CPU time spent in event notification at
//! a fixed load with many cold connections, as Banga measured it: a flat profile (each sample
//! counted by its own function only) of the whole core the server is pinned to, idle
//! included (`perf record -C <core>`, software clock, no call chains: this machine has no
//! hardware counters).
//!
//! What counts is an exact list of functions per mechanism ([`Mechanism::kernel`],
//! [`Mechanism::user`]), each found in this kernel's `/proc/kallsyms` (6.18; functions it
//! inlines, like `ep_poll` into `do_epoll_wait`, count through their caller), not symbol
//! substrings: `select_task_rq_fair` (the scheduler), `__napi_poll` (network softirq) or
//! `__alloc_pages` are no event notification. In a flat profile a sample counts when its own
//! function is one of the mechanism's: helpers the mechanism calls (`fdget`, `sock_poll`,
//! `tcp_poll`) are not its functions, as in Banga's table. A report with call chains (an older
//! profile) still counts a sample whose chain passes through one of them, so a shared helper
//! counts exactly when the mechanism called it: under `do_select` it does, under
//! `__sys_recvfrom` it does not. io_uring's ring also carries sends, so for it only the poll
//! path and the wait count, not the whole `io_uring_enter`.

use super::e1::servers;
use super::serve::{self};
use super::{panel, Analysis, Experiment, Lab};
use crate::data::{num, Row, Status};
use crate::plot::label;
use crate::runner::{Cmd, Point, Server};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// E5.
pub struct E5;

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

/// Kernel functions of `poll(2)` and its wake-up; `select` shares the wake-up.
const POLL: &[&str] = &["__x64_sys_poll", "__x64_sys_ppoll", "do_sys_poll", "do_restart_poll"];
/// The poll-table wake-up and bookkeeping select and poll share.
const POLL_TABLE: &[&str] = &[
    "pollwake",
    "__pollwait",
    "poll_initwait",
    "poll_freewait",
    "poll_select_set_timeout",
    "poll_select_finish",
];
const SELECT: &[&str] = &[
    "__x64_sys_select",
    "__x64_sys_pselect6",
    "do_pselect",
    "kern_select",
    "core_sys_select",
    "do_select",
    "select_estimate_accuracy",
];
const EPOLL: &[&str] = &[
    "__x64_sys_epoll_wait",
    "__x64_sys_epoll_pwait",
    "__x64_sys_epoll_pwait2",
    "do_epoll_wait",
    "do_epoll_pwait",
    "ep_send_events",
    "ep_item_poll",
    "ep_start_scan",
    "ep_done_scan",
    "ep_poll_callback",
    "ep_autoremove_wake_function",
    "__x64_sys_epoll_ctl",
    "do_epoll_ctl",
    "ep_remove",
    "ep_remove_epi",
    "ep_remove_file",
    "ep_ptable_queue_proc",
];
/// io_uring's poll requests and the wait for completions; not `io_submit_sqes`, which also
/// issues the ring's sends.
const URING: &[&str] = &[
    "io_poll_add",
    "io_poll_issue",
    "io_poll_task_func",
    "__io_poll_execute",
    "io_poll_execute",
    "io_poll_wake",
    "io_poll_queue_proc",
    "__io_queue_proc",
    "io_poll_remove",
    "io_poll_remove_entries",
    "io_poll_cancel",
    "io_poll_find",
    "io_arm_poll_handler",
    "__io_arm_poll_handler",
    "io_cqring_wait",
];
/// Counted only as the sample's own function: the rest of `io_uring_enter` submits sends.
const URING_SELF: &[&str] = &["__x64_sys_io_uring_enter", "__do_sys_io_uring_enter"];
const RTSIG: &[&str] =
    &["__x64_sys_rt_sigtimedwait", "do_sigtimedwait", "kill_fasync", "send_sigio", "send_sigio_to_task"];

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

    /// Kernel functions whose samples count, with everything they call.
    pub fn kernel(self) -> Vec<&'static str> {
        let lists: &[&[&str]] = match self {
            Mechanism::Select => &[SELECT, POLL_TABLE],
            Mechanism::Poll => &[POLL, POLL_TABLE],
            Mechanism::Epoll => &[EPOLL],
            Mechanism::Uring => &[URING],
            Mechanism::Rtsig => &[RTSIG, POLL, POLL_TABLE],
        };
        lists.concat()
    }

    /// Kernel functions that count only as the sample's own function.
    pub fn kernel_self(self) -> &'static [&'static str] {
        if self == Mechanism::Uring {
            URING_SELF
        } else {
            &[]
        }
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
    /// last) is in event notification by this mechanism.
    pub fn counts(self, chain: &[&str]) -> bool {
        let Some(leaf) = chain.last().map(|f| base(f)) else { return false };
        let kernel = self.kernel();
        let user = |f: &str| {
            let f = f.trim_start_matches('<');
            self.user().iter().any(|p| f.starts_with(p))
        };
        self.kernel_self().contains(&leaf) || user(leaf) || chain.iter().any(|f| kernel.contains(&base(f)))
    }

    /// The functions counted, for the report.
    pub fn describe(self) -> String {
        let mut all = self.kernel();
        all.extend(self.kernel_self());
        let user: Vec<String> = self.user().iter().map(|p| format!("{p}*")).collect();
        format!("{} (kernel, with their callees); {} (own time)", all.join(", "), user.join(", "))
    }
}

/// A function name without the compiler's clone suffixes (`do_pselect.constprop.0`,
/// `ep_item_poll.isra.0`, `core_sys_select.cold`) and without a Rust hash (`::h0123…`).
fn base(f: &str) -> &str {
    let f = f.trim();
    let f = match f.find('.') {
        Some(i) if i > 0 => &f[..i],
        _ => f,
    };
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

/// The `perf report` arguments whose output [`event_share`] reads: one entry per function,
/// its share of all the samples of the recording (of the whole core, idle included, for a
/// [`profiled`] server) by its own time.
pub const REPORT_ARGS: &[&str] = &["report", "--stdio", "--no-children", "--sort", "comm,symbol"];

/// The commands (thread names' beginnings) of the servers profiled: `hintq` (and its
/// `hintq-reactor-N` threads), `nginx`. Other processes on the core (this machine is shared)
/// count in the core's time, never in event notification.
pub const SERVER_COMMS: &[&str] = &["hintq", "nginx"];

/// The share (%) of samples in `mechanism`'s event notification, from a `perf report` made
/// with [`REPORT_ARGS`]: an entry without call chains (a flat profile, [`profiled`]'s) counts
/// by its own function only; one followed by folded call chains (`-g folded,0,caller,count`
/// of a `perf record -g`) by its chains. `None` if the report has no samples.
pub fn event_share(report: &str, mechanism: Mechanism) -> Option<f64> {
    // Per entry: its percentage, and its chains' counts (all, counted).
    let mut entries: Vec<(f64, bool, u64, u64)> = Vec::new();
    for line in report.lines().filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty()) {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some(pct) = first.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()) {
            // `  10.85%  [k] sock_poll  -  -`: the function (which may hold spaces) follows
            // the `[k]`/`[.]` column.
            let symbol = line.split_once("] ").map_or("", |(_, rest)| rest.trim_end_matches([' ', '-']));
            entries.push((pct, mechanism.counts(&[symbol]), 0, 0));
        } else if let (Some(e), Some((n, chain))) = (entries.last_mut(), line.trim().split_once(' ')) {
            let Ok(n) = n.parse::<u64>() else { continue };
            let frames: Vec<&str> = chain.split(';').collect();
            e.2 += n;
            if mechanism.counts(&frames) {
                e.3 += n;
            }
        }
    }
    (!entries.is_empty()).then(|| {
        entries
            .iter()
            .map(|&(pct, own, all, counted)| match all {
                0 if own => pct,
                0 => 0.0,
                _ => pct * counted as f64 / all as f64,
            })
            .sum()
    })
}

/// `server` run under `perf record` sampling the whole core it is pinned to, every process
/// and the idle loop (`-a -C <core>`, software clock `cpu-clock` at 999 Hz, flat: no call
/// chains), writing `perf.data` into the point's directory until the server exits; E5's and
/// E11's profiles. Its report's shares are of all the core's time, idle included (Banga's
/// denominator: the whole machine's time).
pub fn profiled(mut server: Server) -> Server {
    let core = server.cmd.cpu.to_string();
    let mut args: Vec<String> =
        ["record", "-e", "cpu-clock", "-a", "-C", &core, "-F", "999", "-o", "perf.data", "--"]
            .into_iter()
            .map(String::from)
            .collect();
    args.push(server.cmd.program.to_string_lossy().into());
    args.extend(server.cmd.args.clone());
    server.cmd = Cmd { program: "perf".into(), args, cpu: server.cmd.cpu };
    server
}

/// The share (%) of all the core's time in `mechanism`'s event notification: the software
/// clock samples nothing while the core idles, so [`event_share`]'s share of the samples in
/// `report` is scaled by the time they cover (its `Event count`, ns of `cpu-clock`) over the
/// time the recording spanned (`header`'s `sample duration`, first to last sample: the
/// server's start to its end, `perf report --header-only`). `None` without either.
pub fn core_share(report: &str, header: &str, mechanism: Mechanism) -> Option<f64> {
    // Only the server's entries (`  4.74%  hintq-reactor-0  [k] do_epoll_wait`); their
    // percentages stay of all the samples (perf's default, --percentage absolute).
    let server: String = report
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            let Some((pct, rest)) = t.split_once(char::is_whitespace) else { return true };
            !pct.ends_with('%') || SERVER_COMMS.iter().any(|c| rest.trim_start().starts_with(c))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let report = server.as_str();
    let field = |text: &str, key: &str| {
        text.lines().find_map(|l| {
            let v = l.trim_start_matches(['#', ' ']).strip_prefix(key)?.trim_start_matches([' ', ':']);
            v.split_whitespace().next()?.parse::<f64>().ok()
        })
    };
    let busy_ns = field(report, "Event count (approx.)")?;
    let span_ns = field(header, "sample duration")? * 1e6;
    let samples = event_share(report, mechanism)?;
    (span_ns > 0.0).then(|| samples * (busy_ns / span_ns).min(1.0))
}

/// The [`core_share`] of `mechanism` in the `perf.data` a [`profiled`] server left in `dir`
/// (its report and header are kept there as `perf-report.txt` and `perf-header.txt`).
pub fn profile_share(dir: &Path, mechanism: Mechanism) -> Result<f64, String> {
    let perf = |args: &[&str], keep: &str| -> Result<String, String> {
        let out = Command::new("perf")
            .args(args)
            .args(["-i", "perf.data"])
            .current_dir(dir)
            .output()
            .map_err(|e| format!("perf report: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let _ = std::fs::write(dir.join(keep), text.as_bytes());
        Ok(text)
    };
    let report = perf(REPORT_ARGS, "perf-report.txt")?;
    let header = perf(&["report", "--header-only"], "perf-header.txt")?;
    core_share(&report, &header, mechanism)
        .ok_or_else(|| "perf report gave no samples, event count or sample duration".into())
}

impl Experiment for E5 {
    fn id(&self) -> &'static str {
        "E5"
    }
    fn title(&self) -> &'static str {
        "share of the server core's time (idle included) in event notification, fixed load, many cold connections"
    }
    fn paper(&self) -> &'static str {
        "Banga et al. Table 2"
    }
    fn claim(&self) -> &'static str {
        "Classical select took 34% of the server's CPU (750 cold, 50 hot, 400 req/s); the event \
         API took under 1%."
    }
    fn needs(&self, lab: &Lab) -> Result<(), String> {
        lab.need(&["serve"]).and(lab.need(&["load"])).and(perf_ok())
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        // Banga's cold count only: the full run's time goes to 3 profiles of each line there.
        let colds: Vec<usize> = lab.pick(vec![750], vec![750], vec![100]);
        // Banga's three lines (classical select, improved select, the event API on a kernel
        // event queue), and poll.
        let backends = lab.pick(
            &["uring", "epoll", "poll", "select-classic", "select"][..],
            &["epoll", "poll", "select-classic", "select"][..],
            &["epoll"][..],
        );
        let secs = lab.pick(4.0, 2.0, 0.5);
        // Three profiles (launches) of each point: a verdict needs 3 (verdict.rs).
        let launches: u32 = lab.pick(3, 3, 1);
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
                        let share = profile_share(&ran.dir, mechanism)?;
                        Ok(vec![Row {
                            experiment: "E5".into(),
                            series: name.clone(),
                            x: cold as f64,
                            rep,
                            metric: "event_cpu_pct".into(),
                            value: Some(share),
                            status: Status::Ok,
                            note: String::new(),
                        }])
                    }),
                });
            }
        }
        points
    }
    fn analyse(&self, rows: &[Row]) -> Analysis {
        let p = panel(
            rows,
            "event_cpu_pct",
            "400 req/s, 50 hot",
            "cold connections",
            "% of the server core's samples (idle included)",
            (false, false),
        );
        let mut reading: Vec<String> = p
            .lines
            .iter()
            .map(|l| {
                let at: Vec<String> = l
                    .points
                    .iter()
                    .map(|pt| format!("{}% at {} cold", num(pt.spread.median), pt.x))
                    .collect();
                format!("{}: {}.", label(&l.name), at.join(", "))
            })
            .collect();
        for l in &p.lines {
            if let Some(m) = Mechanism::of_series(&l.name) {
                reading.push(format!("{} counts: {}.", l.name, m.describe()));
            }
        }
        // Banga's Table 2: the section's verdict is the first table's rows', by one rule.
        let t2 = super::banga::table2(super::banga::Setting::Server, rows, "event_cpu_pct");
        reading.insert(0, format!("{}.", super::banga::TABLE2_RULE));
        reading.splice(1..1, t2.figures.iter().map(|f| format!("{}: {}.", f.figure, f.holds)));
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
}

#[cfg(test)]
mod tests {
    use super::{event_share, Experiment, Mechanism, E5};
    use crate::data::Row;

    /// A `perf report` of a select server made with `REPORT_ARGS`, as perf 6.1 prints it
    /// (trailing columns after the function, then its folded call chains with counts):
    /// 100 samples, 40 of them in select's own path.
    const REPORT: &str = "\
# Samples: 100  of event 'cpu-clock:ppp'
# Overhead  Symbol
#
    20.00%  [k] do_select                                  -      -
20 0;__select;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pselect6;do_pselect.constprop.0;core_sys_select;do_select
    12.00%  [k] fdget                                      -      -
10 0;__select;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pselect6;do_pselect.constprop.0;core_sys_select;do_select;fdget
2 0;__libc_recv;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_recvfrom;__sys_recvfrom;fdget
    10.00%  [k] select_task_rq_fair                        -      -
10 0;__libc_send;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_sendto;tcp_sendmsg;sock_def_readable;__wake_up_sync_key;try_to_wake_up;select_task_rq_fair
     8.00%  [k] __napi_poll                                -      -
8 ret_from_fork;smpboot_thread_fn;run_ksoftirqd;handle_softirqs;net_rx_action;__napi_poll
     6.00%  [k] net_rx_action                              -      -
6 __libc_send;do_softirq;handle_softirqs;net_rx_action
     5.00%  [k] tcp_poll                                   -      -
5 0;__select;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pselect6;do_pselect.constprop.0;core_sys_select;do_select;sock_poll;tcp_poll
     5.00%  [k] __alloc_pages                              -      -
5 0;__libc_send;do_syscall_64;__x64_sys_sendto;tcp_sendmsg;sk_page_frag_refill;__alloc_pages
     4.00%  [k] get_page_from_freelist                     -      -
4 0;__libc_send;do_syscall_64;__x64_sys_sendto;tcp_sendmsg;sk_page_frag_refill;__alloc_pages;get_page_from_freelist
     3.00%  [.] <hintq::backend::select::Select as hintq::backend::Poller>::wait   -      -
3 <hintq::backend::select::Select as hintq::backend::Poller>::wait
     2.00%  [k] pollwake                                   -      -
2 ret_from_fork;run_ksoftirqd;handle_softirqs;net_rx_action;__napi_poll;tcp_v4_rcv;sock_def_readable;pollwake
    25.00%  [.] hintq_http::head::parse                    -      -
25 0x55d0;hintq_http::head::parse
";

    #[test]
    fn counts_the_functions_of_the_mechanism_and_not_their_namesakes() {
        // do_select 20, fdget under do_select 10 (not the 2 under recvfrom), tcp_poll 5,
        // hintq's select 3, pollwake 2.
        let select = event_share(REPORT, Mechanism::Select).unwrap();
        assert!((select - 40.0).abs() < 1e-9, "{select}");
        // None of it is epoll's: not the scheduler's select_task_rq_fair, not the softirq's
        // __napi_poll and net_rx_action, not the page allocator.
        assert_eq!(event_share(REPORT, Mechanism::Epoll), Some(0.0));
        // poll shares select's wake-up (pollwake) only.
        assert_eq!(event_share(REPORT, Mechanism::Poll), Some(2.0));
        assert_eq!(event_share("# nothing\n", Mechanism::Select), None);
    }

    #[test]
    fn a_function_counts_by_its_chain_and_a_report_without_chains_by_its_name() {
        let m = Mechanism::Epoll;
        assert!(m.counts(&[
            "net_rx_action",
            "__napi_poll",
            "tcp_v4_rcv",
            "sock_def_readable",
            "ep_poll_callback"
        ]));
        assert!(m.counts(&[
            "do_epoll_wait",
            "ep_send_events",
            "ep_item_poll.isra.0",
            "sock_poll",
            "tcp_poll"
        ]));
        assert!(!m.counts(&["__x64_sys_recvfrom", "sock_recvmsg", "tcp_poll"]));
        for f in
            ["select_task_rq_fair", "__napi_poll", "net_rx_action", "__alloc_pages", "get_page_from_freelist"]
        {
            for m in
                [Mechanism::Select, Mechanism::Poll, Mechanism::Epoll, Mechanism::Uring, Mechanism::Rtsig]
            {
                assert!(!m.counts(&[f]), "{f} counted for {m:?}");
            }
        }
        // io_uring: the poll path and the wait, not the sends its ring carries.
        let u = Mechanism::Uring;
        assert!(u.counts(&["__x64_sys_io_uring_enter", "io_cqring_wait", "schedule"]));
        assert!(u.counts(&["__x64_sys_io_uring_enter"]));
        assert!(!u.counts(&["__x64_sys_io_uring_enter", "io_submit_sqes", "io_issue_sqe", "tcp_sendmsg"]));
        let plain = "    30.00%  [k] do_sys_poll  -  -\n    10.00%  [k] fdget  -  -\n    \
                     4.00%  [.] hintq::backend::pollset::PollSet::collect::h0123456789abcdef  -  -\n";
        assert_eq!(event_share(plain, Mechanism::Poll), Some(34.0));
        assert_eq!(Mechanism::of_series("hintq-select-classic"), Some(Mechanism::Select));
        assert_eq!(Mechanism::of_series("nginx"), Some(Mechanism::Epoll));
    }

    /// A flat `perf report` (REPORT_ARGS) of the whole server core, idle included: 60% idle,
    /// the rest the server, its load's softirqs and select's helpers.
    const FLAT: &str = "\
# Samples: 1K of event 'cpu-clock'
# Overhead  Command  Symbol
#
    60.00%  swapper          [k] pv_native_safe_halt                            -      -
    10.00%  hintq            [k] do_select                                      -      -
     6.00%  hintq            [k] fdget                                          -      -
     5.00%  hintq            [k] tcp_poll                                       -      -
     4.00%  ksoftirqd/1      [k] __napi_poll                                    -      -
     3.00%  hintq-reactor-0  [k] pollwake                                       -      -
     2.00%  hintq-reactor-0  [.] <hintq::backend::select::Select as hintq::backend::Poller>::wait   -      -
     1.00%  hintq            [.] hintq::queue::Queue::get_next_event::h0123456789abcdef   -      -
     6.00%  nginx            [.] hintq_http::head::parse                        -      -
     2.00%  select::stale_a  [k] do_select                                      -      -
     1.00%  opt cgu.0        [k] do_select                                      -      -
";

    #[test]
    fn the_share_is_of_the_core_s_whole_time_the_idle_core_unsampled_included() {
        // 100 samples, 0.1 s of the core busy, over a 0.4 s recording: the core idled 0.3 s,
        // which the software clock did not sample. select's 16% of the samples is 4% of the core.
        let report = format!("# Event count (approx.): 100100100\n{FLAT}");
        let header = "# time of first sample : 14939.5\n# sample duration :    400.4004 ms\n";
        let s = super::core_share(&report, header, Mechanism::Select).unwrap();
        assert!((s - 4.0).abs() < 1e-9, "{s}");
        // Another process's select on the shared core (a test named select::stale_a, "opt
        // cgu.0") is the core's time, not the server's event notification.
        assert!((event_share(&report, Mechanism::Select).unwrap() - 19.0).abs() < 1e-9);
        // Busier than the span (rounding): never over the samples' share.
        let full = "# sample duration :    50.0 ms\n";
        assert!((super::core_share(&report, full, Mechanism::Select).unwrap() - 16.0).abs() < 1e-9);
        assert_eq!(super::core_share(FLAT, header, Mechanism::Select), None, "no event count");
        assert_eq!(super::core_share(&report, "", Mechanism::Select), None, "no duration");
    }

    #[test]
    fn a_flat_profile_of_the_core_counts_the_mechanism_s_own_functions_over_all_its_time() {
        // do_select 10 + pollwake 3 + hintq's select 2 + hintq's queue 1, of the core's 100
        // (idle's 60 included); not the helpers it calls (fdget, tcp_poll).
        // (The core busy all the recording: the share of the samples is the core's.)
        let report = format!("# Event count (approx.): 1000000\n{FLAT}");
        let share = |m| super::core_share(&report, "# sample duration : 1.0 ms\n", m);
        let select = share(Mechanism::Select).unwrap();
        assert!((select - 16.0).abs() < 1e-9, "{select}");
        assert_eq!(share(Mechanism::Epoll), Some(1.0), "hintq's queue only");
        // The recording samples the server's whole core (every process, idle), flat.
        let cmd = crate::runner::Cmd::new("/bin/hintq", &["serve", "--backend", "select"], 3);
        let server = crate::runner::Server::new(cmd, "127.0.0.1:1".parse().unwrap());
        let p = super::profiled(server);
        assert_eq!(p.cmd.program.to_str(), Some("perf"));
        let args = p.cmd.args.join(" ");
        assert!(
            args.starts_with("record -e cpu-clock -a -C 3 -F 999 -o perf.data -- /bin/hintq serve"),
            "{args}"
        );
        assert!(!p.cmd.args.iter().any(|a| a == "-g"), "{args}");
        assert!(!super::REPORT_ARGS.contains(&"-g"));
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
        E5.analyse(&points.concat())
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
            .contains("epoll 3.00 (2.97–3.03, n=3) below a third of improved select's 10.0"));
        assert!(a.figures[2].literal.starts_with("no (rule: every profile's share under 1% of the CPU"));
        assert!(a.reading[0].contains("Table 2 is judged at one cold count (750"));
        assert!(a.reading.iter().any(|r| r
            .starts_with("hintq-select-classic (classical select): 40.0% at 750 cold, 10.0% at 5000 cold")));
        assert!(a.reading.iter().any(|r| r.starts_with("hintq-select counts: __x64_sys_select")));
        // One profile a point: no verdict either way.
        let one: Vec<Row> = a_rows().into_iter().filter(|r| r.rep == 0).collect();
        assert!(E5.analyse(&one).holds.starts_with("cannot say: fewer than 3 launches"));
    }

    fn a_rows() -> Vec<Row> {
        [
            row("hintq-epoll", 750.0, 3.0),
            row("hintq-select-classic", 750.0, 40.0),
            row("hintq-select", 750.0, 30.0),
        ]
        .concat()
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
        assert!(a.figures[2].holds.starts_with("no (epoll 30.7"), "{}", a.figures[2].holds);
        // Issue 26: 82.5% against 81.0% is within noise when the profiles overlap.
        let b = analyse(&[
            row("hintq-epoll", 750.0, 20.0),
            row("hintq-select-classic", 750.0, 82.5),
            row("hintq-select", 750.0, 81.5),
        ]);
        assert!(b.figures[0].holds.starts_with("within noise"), "{}", b.figures[0].holds);
    }
}
