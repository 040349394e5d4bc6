//! The result of a run: every figure plus the exact settings, for a person (`summary`) and
//! for programs (`--json`, via serde).

use crate::config::Config;
use crate::plan::Plan;
use crate::stats::{histogram, Cold, ColdSecond, Errors, Hot, Percentiles};
use crate::worker::{Role, WorkerResult};
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

/// An own delay (p99) at or above this share of the latency p99 could explain the tail.
pub const LAG_SHARE: f64 = 0.25;
/// Own delays (p99) below this, µs, are not counted against a run: a few wake-ups across CPUs
/// (30–40 µs each on the machines of PERF.md).
pub const LAG_FLOOR_US: u64 = 200;
/// A hot thread busy this share of the hot phase has no slack left to send on time.
pub const BUSY_LIMIT: f64 = 0.9;

/// The generator checking itself, as Lancet does: was the tail it reports the server's, or
/// its own? It measures, per hot request, how late it was written (the *send lag*: open
/// loop, past the later of the intended send time and the moment a connection was free for
/// the request; closed loop, past the moment the previous response was taken from the
/// queue) and how long its complete response waited in the socket before being read (the
/// *receive lag*, from the kernel's arrival stamp, `SO_TIMESTAMPNS`); their sum is the
/// request's *own delay*. And how busy its worker threads were (thread CPU time over wall
/// time, `getrusage(RUSAGE_THREAD)`). Latency stays measured from the intended send time;
/// the self-check only says how much of it was the generator's.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SelfCheck {
    /// Send lag of hot requests, µs.
    pub send_lag_us: Percentiles,
    /// Receive lag of successful hot requests, µs.
    pub receive_lag_us: Percentiles,
    /// Send plus receive lag of each successful hot request, µs.
    pub own_delay_us: Percentiles,
    /// From the write of each successful hot request to its response's arrival, µs.
    pub server_time_us: Percentiles,
    /// The busiest hot worker thread, % of the hot phase.
    pub hot_busy_max_pct: f64,
    /// Hot worker threads on average, %.
    pub hot_busy_mean_pct: f64,
    /// The busiest cold worker thread, % (0 without cold connections).
    pub cold_busy_max_pct: f64,
    /// Hot worker threads on average, % of the hot phase spent spinning until a send was due
    /// (`--spin`; left out of the busy shares).
    #[serde(default)]
    pub hot_spun_mean_pct: f64,
    /// The generator's own delay could explain the tail it reports: own-delay p99 (send lag
    /// alone where the kernel gave no arrival stamps) at least [`LAG_FLOOR_US`] and either at
    /// least [`LAG_SHARE`] of latency p99 or above the server-time p99 (then the backlog of
    /// requests waiting for a connection may be the generator's doing too: a connection
    /// whose response waits unread is not free); or a hot thread busy [`BUSY_LIMIT`] or more.
    pub generator_lagged: bool,
    /// Why, in words (empty when it kept up).
    pub reasons: Vec<String>,
    /// No request succeeded, so there was no latency to compare the generator's own delay
    /// with: `generator_lagged` then speaks of its busy threads only.
    #[serde(default)]
    pub no_latency: bool,
}

impl SelfCheck {
    fn new(results: &[WorkerResult], latency: &Percentiles) -> SelfCheck {
        let (mut lag, mut receive, mut own, mut server) =
            (histogram(), histogram(), histogram(), histogram());
        let (mut hot_max, mut hot_sum, mut hot_n, mut cold_max) = (0f64, 0f64, 0, 0f64);
        let mut spun = 0f64;
        for r in results {
            r.send_lag.add_to(&mut lag);
            r.receive_lag.add_to(&mut receive);
            r.own_delay.add_to(&mut own);
            r.server_time.add_to(&mut server);
            match r.role {
                Role::Hot => {
                    (hot_max, hot_sum, hot_n) = (hot_max.max(r.busy), hot_sum + r.busy, hot_n + 1);
                    spun += r.spun;
                }
                Role::Cold => cold_max = cold_max.max(r.busy),
            }
        }
        let (send_lag_us, own_delay_us) = (Percentiles::of(&lag), Percentiles::of(&own));
        let (what, l) = match own_delay_us.count {
            0 => ("send lag", send_lag_us.p99),
            _ => ("own delay (send + receive lag)", own_delay_us.p99),
        };
        let server_time_us = Percentiles::of(&server);
        let mut reasons = Vec::new();
        let (p, s) = (latency.p99, server_time_us.p99);
        if latency.count == 0 {
            // No success, no latency: nothing the generator's delay could be compared with.
        } else if l >= LAG_FLOOR_US && l as f64 >= LAG_SHARE * p as f64 {
            reasons.push(format!(
                "{what} p99 {} is {:.0}% of latency p99 {}",
                ms(l),
                100.0 * l as f64 / p.max(1) as f64,
                ms(p)
            ));
        } else if l >= LAG_FLOOR_US && server_time_us.count > 0 && l > s {
            reasons.push(format!(
                "{what} p99 {} exceeds the server's time p99 {} (write to response arrival), so the \
                 requests queued waiting for a connection may have waited on the generator",
                ms(l),
                ms(s)
            ));
        }
        if hot_max >= BUSY_LIMIT {
            reasons.push(format!("a hot thread was busy {:.0}% of the run", 100.0 * hot_max));
        }
        SelfCheck {
            send_lag_us,
            receive_lag_us: Percentiles::of(&receive),
            own_delay_us,
            server_time_us,
            hot_busy_max_pct: 100.0 * hot_max,
            hot_busy_mean_pct: 100.0 * hot_sum / f64::from(hot_n.max(1)),
            cold_busy_max_pct: 100.0 * cold_max,
            hot_spun_mean_pct: 100.0 * spun / f64::from(hot_n.max(1)),
            generator_lagged: !reasons.is_empty(),
            reasons,
            no_latency: latency.count == 0,
        }
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
    /// Cold connections second by second of the hot phase, summed over worker processes
    /// (each process counts its seconds from its own start; whole seconds only).
    pub cold_per_second: Vec<ColdSecond>,
    /// Latency of successful responses, µs: from the intended send time in open loop, from
    /// the send time in closed loop.
    pub latency_us: Percentiles,
    /// Time to establish hot connections, µs.
    pub connect_us: Percentiles,
    /// Load-generator CPU.
    pub cpu: Cpu,
    /// Whether the generator kept up ([`SelfCheck`]).
    pub self_check: SelfCheck,
    /// Errors over successes plus errors: of the hot requests and connects, or of the cold
    /// connects in a run with no hot connection.
    #[serde(default)]
    pub error_rate: f64,
    /// Cold connect errors over cold connects opened plus failed (0 without cold connections).
    #[serde(default)]
    pub cold_error_rate: f64,
    /// The rules the run broke, in words (empty: the run passed); `hintq load` exits non-zero
    /// when there is any. See [`verdict`].
    #[serde(default)]
    pub failed: Vec<String>,
}

/// Whether a run passed: its error rates and the rules it broke.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    /// Errors over successes plus errors of the hot requests and connects, or of the cold
    /// connects in a run with no hot connection ([`Report::error_rate`]).
    pub error_rate: f64,
    /// Cold connect errors over cold connects made plus failed (0 without cold connections).
    pub cold_error_rate: f64,
    /// Each broken rule in words, saying which connections broke it; empty: the run passed.
    pub failed: Vec<String>,
}

/// Judges a run. Hot connections (when asked for) fail it when no request succeeded or when
/// their error rate (errors over successes plus errors) is above `max_error_rate`; cold
/// connections (when asked for) fail it when none opened or when their connect error rate
/// (failed connects over opened plus failed) is above `max_error_rate`. Both are judged in a
/// run that has both: cold connections that all failed to connect fail the run however well
/// the hot ones did. Connect errors count: a server that is not there fails a run as surely
/// as one answering 404.
pub fn verdict(settings: &Config, hot: &Hot, cold: &Cold) -> Verdict {
    let rate = |ok: u64, bad: u64| if ok + bad > 0 { bad as f64 / (ok + bad) as f64 } else { 0.0 };
    let max = settings.max_error_rate;
    let mut v = Verdict::default();
    if settings.connections > 0 {
        let (ok, bad) = (hot.successes, hot.errors.total());
        v.error_rate = rate(ok, bad);
        if ok == 0 {
            v.failed.push(format!("no request succeeded (errors: {})", fmt_errors(&hot.errors)));
        }
        if v.error_rate > max {
            v.failed.push(format!(
                "error rate {} ({bad} errors, {ok} successes) is above --max-error-rate {}",
                pct(v.error_rate),
                pct(max)
            ));
        }
    }
    let asked = cold.target.max(settings.cold as u64);
    if asked > 0 {
        let (ok, bad) = (cold.opened, cold.errors.total());
        v.cold_error_rate = rate(ok, bad);
        if settings.connections == 0 {
            v.error_rate = v.cold_error_rate;
        }
        if ok == 0 {
            v.failed.push(format!(
                "no cold connection opened of {asked} asked for (connect errors: {})",
                fmt_errors(&cold.errors)
            ));
        }
        if v.cold_error_rate > max {
            v.failed.push(format!(
                "cold connect error rate {} ({bad} failed, {ok} opened) is above --max-error-rate {}",
                pct(v.cold_error_rate),
                pct(max)
            ));
        }
    }
    v
}

fn pct(f: f64) -> String {
    format!("{}%", (f * 1e6).round() / 1e4)
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
            if r.role == Role::Hot {
                hot_seconds = hot_seconds.max(r.hot_seconds);
            }
            warmup_seconds = warmup_seconds.max(r.warmup_seconds);
        }
        let latency_us = Percentiles::of(&latency);
        let Verdict { error_rate, cold_error_rate, failed } = verdict(cfg, &hot, &cold);
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
            cold_per_second: cold_per_second(results),
            self_check: SelfCheck::new(results, &latency_us),
            latency_us,
            connect_us: Percentiles::of(&connect),
            cpu: Cpu {
                user_s: cpu.0,
                system_s: cpu.1,
                per_request_us: if completed > 0 { busy * 1e6 / completed as f64 } else { 0.0 },
                cores_busy: if wall_seconds > 0.0 { busy / wall_seconds } else { 0.0 },
            },
            error_rate,
            cold_error_rate,
            failed,
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
            "  {} hot connections ({mode}{conn}), {} cold ({}, {}); {} thread(s) x {} process(es){}, {} source(s){}, backend {}",
            s.connections,
            s.cold,
            s.cold_mode,
            s.cold_lifetime,
            self.plan.threads,
            self.plan.processes,
            if self.plan.cold_threads > 0 { " + a cold thread per process" } else { "" },
            self.plan.sources,
            fmt_time_wait(&self.plan),
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
        let k = &self.self_check;
        let _ = writeln!(
            o,
            "  self-check: send lag {}; receive lag {}",
            fmt_lag(&k.send_lag_us),
            fmt_lag(&k.receive_lag_us),
        );
        let _ = writeln!(
            o,
            "  self-check: own delay (send + receive lag) {}; server time (write to response arrival) {}",
            fmt_lag(&k.own_delay_us),
            fmt_lag(&k.server_time_us),
        );
        let _ = writeln!(
            o,
            "  self-check: generator busy: hot threads max {:.0}% (mean {:.0}%), cold threads max {:.0}%{}",
            k.hot_busy_max_pct,
            k.hot_busy_mean_pct,
            k.cold_busy_max_pct,
            if k.hot_spun_mean_pct > 0.0 {
                format!(
                    "; hot threads spun {:.0}% waiting for send moments (--spin, not counted as busy)",
                    k.hot_spun_mean_pct
                )
            } else {
                String::new()
            }
        );
        if k.generator_lagged {
            let _ = writeln!(
                o,
                "  self-check: GENERATOR LAGGED: {}; the latency tail above may be the generator's own delay, \
                 not the server's (spread the load: --threads, --processes; or lower --rate)",
                k.reasons.join("; ")
            );
        } else if k.no_latency {
            let _ = writeln!(
                o,
                "  self-check: cannot say whether the generator kept up: no request succeeded, so there \
                 is no latency to compare its own delay with"
            );
        } else {
            let _ = writeln!(
                o,
                "  self-check: the generator kept up: its own delay is small beside the latency above"
            );
        }
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
            let held = self.cold_per_second.iter().map(|s| s.held);
            if let (Some(min), Some(max)) = (held.clone().min(), held.max()) {
                let _ = writeln!(
                    o,
                    "  cold held, second by second: min {min}  max {max} over {} s (cold_per_second in the JSON)",
                    self.cold_per_second.len()
                );
            }
        }
        let c = &self.cpu;
        let _ = writeln!(
            o,
            "  load CPU: {:.2} s user + {:.2} s system over {:.2} s ({:.2} cores busy), {:.2} us per request",
            c.user_s, c.system_s, self.wall_seconds, c.cores_busy, c.per_request_us
        );
        let _ = match self.failed.as_slice() {
            [] if s.connections > 0 && s.cold > 0 => writeln!(
                o,
                "  passed: error rate {}, cold connect error rate {}, each at most {}",
                pct(self.error_rate),
                pct(self.cold_error_rate),
                pct(s.max_error_rate)
            ),
            [] => writeln!(
                o,
                "  passed: error rate {}, at most {}",
                pct(self.error_rate),
                pct(s.max_error_rate)
            ),
            f => writeln!(o, "  FAILED: {}", f.join("; ")),
        };
        o
    }
}

/// The cold workers' seconds summed: as many as the shortest series has, so that every
/// entry counts every process.
fn cold_per_second(results: &[WorkerResult]) -> Vec<ColdSecond> {
    let cold = || results.iter().filter(|r| r.role == Role::Cold);
    let len = cold().map(|r| r.cold_per_second.len()).min().unwrap_or(0);
    let mut sum = vec![ColdSecond::default(); len];
    for r in cold() {
        sum.iter_mut().zip(&r.cold_per_second).for_each(|(s, x)| s.add(x));
    }
    sum
}

fn ms(us: u64) -> String {
    format!("{:.3} ms", us as f64 / 1000.0)
}

fn fmt_lag(p: &Percentiles) -> String {
    if p.count == 0 {
        return "none recorded".to_string();
    }
    format!("p50 {}  p99 {}  max {}", ms(p.p50), ms(p.p99), ms(p.max))
}

fn fmt_time_wait(p: &Plan) -> String {
    if p.time_wait == 0 {
        return String::new();
    }
    format!(
        " (for {} live and {} in TIME_WAIT: {:.0} closes/s x {} s)",
        p.busiest_destination,
        p.time_wait,
        p.churn_per_s,
        crate::plan::TIME_WAIT.as_secs()
    )
}

fn fmt_pct(p: &Percentiles) -> String {
    if p.count == 0 {
        return "none recorded".to_string();
    }
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
    use super::{verdict, ReplyRate};
    use crate::stats::{Cold, Hot};
    use crate::Config;

    fn hot(successes: u64, status: u64, connect: u64) -> Hot {
        let mut h = Hot { successes, ..Hot::default() };
        (h.errors.status, h.errors.connect) = (status, connect);
        h
    }

    #[test]
    fn a_run_fails_above_its_error_rate_and_passes_at_it() {
        let cfg = Config { max_error_rate: 0.01, ..Config::default() };
        let cold = Cold::default();
        let v = verdict(&cfg, &hot(99, 1, 0), &cold);
        assert_eq!((v.error_rate, v.failed.len()), (0.01, 0), "{:?}", v.failed);
        let v = verdict(&cfg, &hot(98, 1, 1), &cold);
        assert_eq!(v.error_rate, 0.02);
        assert_eq!(v.failed, ["error rate 2% (2 errors, 98 successes) is above --max-error-rate 1%"]);
        let lenient = Config { max_error_rate: 0.5, ..cfg.clone() };
        assert!(verdict(&lenient, &hot(98, 1, 1), &cold).failed.is_empty());
        let strict = Config { max_error_rate: 0.0, ..cfg.clone() };
        assert!(verdict(&strict, &hot(100, 0, 0), &cold).failed.is_empty());
        assert_eq!(verdict(&strict, &hot(100, 1, 0), &cold).failed.len(), 1);
    }

    #[test]
    fn a_run_without_a_success_fails_whatever_the_error_rate() {
        let all = Config { max_error_rate: 1.0, ..Config::default() };
        let v = verdict(&all, &hot(0, 0, 100), &Cold::default());
        assert_eq!(v.failed, ["no request succeeded (errors: connect 100)"]);
        let v = verdict(&all, &hot(0, 0, 0), &Cold::default());
        assert_eq!(v.failed, ["no request succeeded (errors: none)"]);
        let cold_only = Config { connections: 0, cold: 5, ..all };
        let opened = Cold { target: 5, opened: 5, ..Cold::default() };
        assert!(verdict(&cold_only, &Hot::default(), &opened).failed.is_empty());
        assert_eq!(verdict(&cold_only, &Hot::default(), &Cold::default()).failed.len(), 1);
    }

    fn cold(target: u64, opened: u64, connect_errors: u64) -> Cold {
        let mut c = Cold { target, opened, ..Cold::default() };
        c.errors.connect = connect_errors;
        c
    }

    #[test]
    fn cold_connections_are_judged_beside_hot_ones() {
        let cfg = Config { cold: 4, max_error_rate: 0.01, ..Config::default() };
        // Every hot request succeeded; not one of the 4 cold connects did.
        let v = verdict(&cfg, &hot(100, 0, 0), &cold(4, 0, 40));
        assert_eq!(
            v.failed,
            [
                "no cold connection opened of 4 asked for (connect errors: connect 40)",
                "cold connect error rate 100% (40 failed, 0 opened) is above --max-error-rate 1%",
            ]
        );
        assert_eq!((v.error_rate, v.cold_error_rate), (0.0, 1.0));
        // Some opened, but too many connects failed.
        let v = verdict(&cfg, &hot(100, 0, 0), &cold(4, 90, 10));
        assert_eq!(
            v.failed,
            ["cold connect error rate 10% (10 failed, 90 opened) is above --max-error-rate 1%"]
        );
        let lenient = Config { max_error_rate: 0.1, ..cfg.clone() };
        assert!(verdict(&lenient, &hot(100, 0, 0), &cold(4, 90, 10)).failed.is_empty());
        // Even at 100% a cold side that never opened fails the run.
        let all = Config { max_error_rate: 1.0, ..cfg.clone() };
        assert_eq!(verdict(&all, &hot(100, 0, 0), &cold(4, 0, 40)).failed.len(), 1);
        // Both sides judged and both named.
        let v = verdict(&cfg, &hot(0, 0, 10), &cold(4, 0, 10));
        assert_eq!(v.failed.len(), 4, "{:?}", v.failed);
        // No cold connection asked for: nothing to judge there.
        let hot_only = Config { cold: 0, ..cfg };
        assert!(verdict(&hot_only, &hot(100, 0, 0), &Cold::default()).failed.is_empty());
    }

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
