//! The result of a run: every figure plus the exact settings, for a person (`summary`) and
//! for programs (`--json`, via serde).

use crate::config::Config;
use crate::plan::Plan;
use crate::stats::{histogram, Cold, Errors, Hot, Percentiles};
use crate::worker::WorkerResult;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// CPU time the load generator used (all its threads and worker processes), from
/// `getrusage(2)`: so a reader can see whether the load side was the bottleneck.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Cpu {
    /// User time, seconds.
    pub user_s: f64,
    /// System time, seconds.
    pub system_s: f64,
    /// (user + system) per completed request (success or request error), µs.
    pub per_request_us: f64,
    /// (user + system) over wall time: cores kept busy.
    pub cores_busy: f64,
}

/// Successful responses in each whole second of the hot phase, over every worker, and their
/// mean, least and most: the reply rate of Provos & Lever's Figs. 4-9 (httperf's
/// `Reply rate [replies/s]: min avg max`). A last, partial second is left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplyRate {
    /// Replies in second 0, 1, ... of the hot phase.
    pub per_second: Vec<u64>,
    /// Their mean (0 with no whole second).
    pub mean: f64,
    /// The least.
    pub min: u64,
    /// The most.
    pub max: u64,
}

impl ReplyRate {
    /// Sums the workers' counts second by second and keeps the `whole` first seconds.
    pub fn of<'a>(workers: impl Iterator<Item = &'a [u64]>, whole: usize) -> ReplyRate {
        let mut per_second = vec![0u64; whole];
        for w in workers {
            per_second.iter_mut().zip(w).for_each(|(sum, n)| *sum += n);
        }
        let mean = if whole > 0 { per_second.iter().sum::<u64>() as f64 / whole as f64 } else { 0.0 };
        let min = per_second.iter().copied().min().unwrap_or(0);
        let max = per_second.iter().copied().max().unwrap_or(0);
        ReplyRate { per_second, mean, min, max }
    }
}

/// Everything a run measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// `hintq-load` version.
    pub version: String,
    /// The settings exactly as run.
    pub settings: Config,
    /// How the run was laid out (processes, threads, sources, limits).
    pub plan: Plan,
    /// The event backend the queues used.
    pub backend: String,
    /// Wall seconds of the hot phase (longest worker).
    pub hot_seconds: f64,
    /// Wall seconds spent opening cold connections before the hot phase (longest worker).
    pub warmup_seconds: f64,
    /// Wall seconds of the whole run, set-up included.
    pub wall_seconds: f64,
    /// Successful responses per second of the hot phase.
    pub throughput: f64,
    /// The reply rate second by second (httperf's reply-rate samples, one a second here).
    pub reply_rate: ReplyRate,
    /// Hot requests and their outcomes.
    pub hot: Hot,
    /// Cold connections.
    pub cold: Cold,
    /// Latency of successful responses, µs: from the intended send time in open loop, from
    /// the send time in closed loop.
    pub latency_us: Percentiles,
    /// Time to establish hot connections, µs.
    pub connect_us: Percentiles,
    /// Load-generator CPU.
    pub cpu: Cpu,
}

impl Report {
    /// Merges the workers' results.
    pub fn new(
        cfg: &Config,
        plan: &Plan,
        results: &[WorkerResult],
        wall_seconds: f64,
        cpu: (f64, f64),
    ) -> Report {
        let mut hot = Hot::default();
        let mut cold = Cold::default();
        let (mut latency, mut connect) = (histogram(), histogram());
        let (mut hot_seconds, mut warmup_seconds) = (0f64, 0f64);
        for r in results {
            hot.add(&r.hot);
            cold.add(&r.cold);
            r.latency.add_to(&mut latency);
            r.connect.add_to(&mut connect);
            hot_seconds = hot_seconds.max(r.hot_seconds);
            warmup_seconds = warmup_seconds.max(r.warmup_seconds);
        }
        let completed = hot.successes + hot.errors.request_errors();
        let busy = cpu.0 + cpu.1;
        Report {
            version: env!("CARGO_PKG_VERSION").to_string(),
            settings: cfg.clone(),
            plan: plan.clone(),
            backend: results.first().map(|r| r.backend.clone()).unwrap_or_default(),
            hot_seconds,
            warmup_seconds,
            wall_seconds,
            throughput: if hot_seconds > 0.0 { hot.successes as f64 / hot_seconds } else { 0.0 },
            // Workers start the hot phase together (a barrier): second k is the same for all.
            reply_rate: ReplyRate::of(
                results.iter().map(|r| r.replies_per_second.as_slice()),
                hot_seconds as usize,
            ),
            hot,
            cold,
            latency_us: Percentiles::of(&latency),
            connect_us: Percentiles::of(&connect),
            cpu: Cpu {
                user_s: cpu.0,
                system_s: cpu.1,
                per_request_us: if completed > 0 { busy * 1e6 / completed as f64 } else { 0.0 },
                cores_busy: if wall_seconds > 0.0 { busy / wall_seconds } else { 0.0 },
            },
        }
    }

    /// The summary a person reads.
    pub fn summary(&self) -> String {
        let s = &self.settings;
        let mut o = String::new();
        let targets: Vec<&str> = s.targets.iter().map(|t| t.url.as_str()).collect();
        let mode = match s.rate {
            Some(r) => format!("open loop at {r} req/s"),
            None => "closed loop".to_string(),
        };
        let conn = if s.new_conn_per_request { ", new connection per request" } else { "" };
        let _ = writeln!(o, "hintq load {}", targets.join(" "));
        let _ = writeln!(
            o,
            "  {} hot connections ({mode}{conn}), {} cold ({}, {}); {} thread(s) x {} process(es), {} source(s), backend {}",
            s.connections,
            s.cold,
            s.cold_mode,
            s.cold_lifetime,
            self.plan.threads,
            self.plan.processes,
            self.plan.sources,
            self.backend
        );
        let h = &self.hot;
        let _ = writeln!(
            o,
            "  {:.2} s: {} requests started, {} succeeded, {:.1} req/s, {} unfinished at the end",
            self.hot_seconds, h.started, h.successes, self.throughput, h.unfinished
        );
        let r = &self.reply_rate;
        if !r.per_second.is_empty() {
            let _ = writeln!(
                o,
                "  reply rate over {} whole seconds: min {} avg {:.1} max {} replies/s",
                r.per_second.len(),
                r.min,
                r.mean,
                r.max
            );
        }
        let from = if s.rate.is_some() { "from intended send time" } else { "from send time, closed loop" };
        let _ = writeln!(o, "  latency ({from}): {}", fmt_pct(&self.latency_us));
        let _ = writeln!(o, "  connect: {} ({} connects)", fmt_pct(&self.connect_us), h.connects);
        let _ = writeln!(o, "  errors: {}", fmt_errors(&h.errors));
        let _ = writeln!(
            o,
            "  not errors: {} idle connections closed by the server, {} responses that closed the connection",
            h.closed_idle, h.connection_close
        );
        if s.cold > 0 {
            let c = &self.cold;
            let _ = writeln!(
                o,
                "  cold: {} held at the end of {} (peak {}), {} opened, {} closed by the server and re-opened, \
                 {} expired and replaced; opening took {:.2} s; connect errors: {}",
                c.held_at_end,
                c.target,
                c.peak_held,
                c.opened,
                c.closed_by_server,
                c.expired,
                self.warmup_seconds,
                fmt_errors(&c.errors)
            );
        }
        let c = &self.cpu;
        let _ = writeln!(
            o,
            "  load CPU: {:.2} s user + {:.2} s system over {:.2} s ({:.2} cores busy), {:.2} us per request",
            c.user_s, c.system_s, self.wall_seconds, c.cores_busy, c.per_request_us
        );
        o
    }
}

fn fmt_pct(p: &Percentiles) -> String {
    if p.count == 0 {
        return "none recorded".to_string();
    }
    let ms = |us: u64| format!("{:.3} ms", us as f64 / 1000.0);
    format!(
        "p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  mean {:.3} ms",
        ms(p.p50),
        ms(p.p90),
        ms(p.p99),
        ms(p.p999),
        ms(p.max),
        p.mean / 1000.0
    )
}

fn fmt_errors(e: &Errors) -> String {
    let kinds = [
        ("connect", e.connect),
        ("connect timeout", e.connect_timeout),
        ("EADDRNOTAVAIL", e.addr_not_avail),
        ("reset", e.reset),
        ("closed before response", e.closed_before_response),
        ("truncated", e.truncated),
        ("bad status line / parse", e.parse),
        ("status >= 400", e.status),
        ("timeout", e.timeout),
        ("unsolicited bytes", e.unsolicited),
    ];
    let some: Vec<String> = kinds.iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {n}")).collect();
    if some.is_empty() {
        "none".to_string()
    } else {
        some.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::ReplyRate;

    #[test]
    fn reply_rate_sums_workers_by_second_and_drops_the_partial_last_second() {
        let a: &[u64] = &[100, 300, 200, 7];
        let b: &[u64] = &[50, 50];
        let r = ReplyRate::of([a, b].into_iter(), 3);
        assert_eq!(r, ReplyRate { per_second: vec![150, 350, 200], mean: 700.0 / 3.0, min: 150, max: 350 });
        let none = ReplyRate::of([a].into_iter(), 0);
        assert_eq!((none.mean, none.min, none.max), (0.0, 0, 0));
    }
}
