//! Fitting a run into the machine: descriptors per process (RLIMIT_NOFILE) and ephemeral
//! ports per source address, decided before anything connects, so that a run that cannot fit
//! fails at once with a message that says why.

use crate::config::{ColdLifetime, Config};
use crate::lifetime;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Descriptors a process keeps for itself beside its connections: the queue, its waker,
/// standard streams, pipes to worker processes, the JSON file.
pub const FD_RESERVE: u64 = 64;

/// Share of the ephemeral range planned per source address. Not nearly all of it: the kernel
/// picks a connect's port by walking from an offset for the destination past the ports
/// already in use, so a `connect` costs in proportion to the connections its source already
/// has to that destination. Measured here (`hintq load --cold 100000` against `hintq serve
/// --processes 6`): 4 sources at 90% of the range took 111 s of warm-up (1.1 ms of system
/// time per connect), 16 sources at 22% took 3.3 s. A quarter keeps each connect short and
/// leaves slack for TIME_WAIT and for other programs using the same destination.
const PORT_SHARE: f64 = 0.25;

/// How long a connection the generator closes first holds its port in TIME_WAIT: Linux's
/// `TCP_TIMEWAIT_LEN`, fixed at 60 s when the kernel is built (no sysctl changes it). A port in
/// TIME_WAIT cannot carry a new connection to the same destination from the same source
/// (loopback's `tcp_tw_reuse = 2` lets some be taken back after a second, but `connect` pays a
/// longer port search for each). So a run that closes `c` connections per second keeps about
/// `60 c` ports busy beside its live ones: at the churn of 8,000 heavy-tailed cold connections,
/// over 400,000, fifteen times one source's range. Planned for, the search stays short;
/// left out, it fills the range and each `connect` scans it (issue 13).
pub const TIME_WAIT: Duration = Duration::from_secs(60);

/// The 127.0.0.x sources (x = 1..=254) a run may spread over.
pub const MAX_SOURCES: usize = 254;

/// How the run is laid out. Part of the report.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    /// Worker processes (1: this one only).
    pub processes: usize,
    /// Hot worker threads per process.
    pub threads: usize,
    /// Cold worker threads per process: one when there are cold connections, else none.
    /// Cold connections never share a thread with hot ones (see [`crate::worker`]).
    pub cold_threads: usize,
    /// Number of targets (connection `i` goes to target `i % targets`).
    pub targets: usize,
    /// Source addresses for IPv4 targets (127.0.0.1 upwards); 1 means no explicit bind.
    pub sources: usize,
    /// Connections (hot + cold) of the busiest destination.
    pub busiest_destination: usize,
    /// Connections to the busiest destination closed by the generator per second, expected:
    /// cold ones at the end of heavy-tailed lifetimes, hot ones with
    /// `--new-conn-per-request`.
    pub churn_per_s: f64,
    /// Ports of the busiest destination expected in TIME_WAIT: `churn_per_s` × [`TIME_WAIT`],
    /// at most the kernel's `tcp_max_tw_buckets`. The sources are planned for these and for
    /// the live connections.
    pub time_wait: u64,
    /// Ephemeral ports per source and destination (`ip_local_port_range` or `--port-range`).
    pub ports_per_source: u32,
    /// `RLIMIT_NOFILE` (soft, hard) after raising the soft limit to the hard one.
    pub nofile: (u64, u64),
    /// Descriptors the busiest process needs.
    pub fds_per_process: u64,
}

impl Plan {
    /// Hot worker threads in all processes.
    pub fn hot_workers(&self) -> usize {
        self.processes * self.threads
    }

    /// Cold worker threads in all processes.
    pub fn cold_workers(&self) -> usize {
        self.processes * self.cold_threads
    }

    /// The source address for hot (or cold) connection `index`, or `None` (let the kernel
    /// choose). Connection `index` goes to target `index % targets`, so `index / targets`
    /// counts the connections of one destination, and the sources turn over with it.
    pub fn source(&self, to: SocketAddr, index: usize) -> Option<IpAddr> {
        (to.is_ipv4() && self.sources > 1).then(|| {
            let x = 1 + (index / self.targets) % self.sources;
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, x as u8))
        })
    }
}

/// Lays the run out, or says why it cannot fit.
///
/// `nofile` is the descriptor limit after raising; `port_range` the ephemeral range in use;
/// `max_time_wait` the kernel's `tcp_max_tw_buckets`; `can_spawn` whether worker processes can be started (the `hintq` binary can; a library
/// caller without one cannot).
///
/// # Errors
/// A message naming the limit that is in the way and what would fit.
pub fn plan(
    cfg: &Config,
    nofile: (u64, u64),
    port_range: (u16, u16),
    max_time_wait: u64,
    can_spawn: bool,
) -> Result<Plan, String> {
    let total = (cfg.connections + cfg.cold) as u64;
    let cold_threads = usize::from(cfg.cold > 0);
    let thread_fds = 4 * (cfg.threads + cold_threads) as u64;
    let room = nofile.1.saturating_sub(FD_RESERVE + thread_fds).max(1);
    let needed = total.div_ceil(room).max(1) as usize;
    let processes = match cfg.processes {
        Some(p) if p < needed => {
            return Err(format!(
                "{total} connections need {needed} processes under RLIMIT_NOFILE {} (hard limit; the soft \
                 limit was raised to it), but --processes is {p}",
                nofile.1
            ))
        }
        Some(p) => p,
        None => needed,
    };
    if processes > 1 && !can_spawn {
        return Err(format!(
            "{total} connections exceed RLIMIT_NOFILE {} of one process and this caller cannot start \
             worker processes: run it through the `hintq load` command, or raise the hard limit",
            nofile.1
        ));
    }
    let fds_per_process = total.div_ceil(processes as u64) + FD_RESERVE + thread_fds;
    if fds_per_process > nofile.0 {
        return Err(format!(
            "{fds_per_process} descriptors needed per process, but RLIMIT_NOFILE is {} (soft) / {} (hard)",
            nofile.0, nofile.1
        ));
    }
    let ports = u32::from(port_range.1) - u32::from(port_range.0) + 1;
    let (busiest_addr, busiest, churn) = busiest_destination(cfg, max_time_wait);
    // Ports a destination needs from each source: its live connections, plus the closed ones
    // still in TIME_WAIT (never more than the kernel's table holds).
    let time_wait = ((churn * TIME_WAIT.as_secs_f64()).round() as u64).min(max_time_wait);
    let capacity = ((f64::from(ports) * PORT_SHARE) as usize).max(1);
    let for_live = busiest.div_ceil(capacity).max(1);
    let sources = match cfg.sources {
        Some(s) => s,
        None if busiest_addr.is_ipv6() => 1,
        None => (busiest + time_wait as usize).div_ceil(capacity).clamp(for_live, MAX_SOURCES.max(for_live)),
    };
    if sources > MAX_SOURCES || (busiest_addr.is_ipv6() && busiest > ports as usize) {
        return Err(format!(
            "{busiest} connections to {busiest_addr} need {sources} source addresses at {ports} ephemeral ports \
             each; {} has at most {}",
            if busiest_addr.is_ipv6() { "::1" } else { "127.0.0.0/8" },
            if busiest_addr.is_ipv6() { "one (use a 127.0.0.x target)".to_string() } else { MAX_SOURCES.to_string() }
        ));
    }

    Ok(Plan {
        processes,
        threads: cfg.threads,
        cold_threads,
        targets: cfg.targets.len(),
        sources,
        busiest_destination: busiest,
        churn_per_s: churn,
        time_wait,
        ports_per_source: ports,
        nofile,
        fds_per_process,
    })
}

/// The destination with the most connections (hot + cold), how many, and how many of them the
/// generator is expected to close per second.
fn busiest_destination(cfg: &Config, max_time_wait: u64) -> (SocketAddr, usize, f64) {
    // Heavy-tailed cold connections turn over every `mean_lifetime_within(run)` seconds on
    // average. Hot ones with a new connection per request turn over at the offered rate; in
    // closed loop nothing bounds it but the server, so plan for a churn that fills the
    // kernel's TIME_WAIT table.
    let cold_churn = match cfg.cold_lifetime {
        ColdLifetime::HeavyTail => 1.0 / lifetime::mean_lifetime_within(cfg.duration),
        ColdLifetime::Forever => 0.0,
    };
    let hot_churn = match (cfg.new_conn_per_request, cfg.rate) {
        (false, _) => 0.0,
        (true, Some(rate)) => rate / cfg.connections.max(1) as f64,
        (true, None) => max_time_wait as f64 / TIME_WAIT.as_secs_f64() / cfg.connections.max(1) as f64,
    };
    let mut per_dest: HashMap<SocketAddr, (usize, f64)> = HashMap::new();
    for i in 0..cfg.connections.max(cfg.cold) {
        let d = per_dest.entry(cfg.targets[i % cfg.targets.len()].addr).or_default();
        if i < cfg.connections {
            *d = (d.0 + 1, d.1 + hot_churn);
        }
        if i < cfg.cold {
            *d = (d.0 + 1, d.1 + cold_churn);
        }
    }
    per_dest
        .into_iter()
        .map(|(a, (n, churn))| (a, n, churn))
        .max_by(|a, b| (a.1, a.2).partial_cmp(&(b.1, b.2)).expect("no NaN"))
        .unwrap_or((cfg.targets[0].addr, 0, 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tcp_max_tw_buckets` on the 2-core machine of PERF.md.
    const TW: u64 = 131_072;

    fn cfg(hot: usize, cold: usize, targets: &[&str]) -> Config {
        Config {
            targets: targets.iter().map(|t| t.parse().unwrap()).collect(),
            connections: hot,
            cold,
            ..Config::default()
        }
    }

    #[test]
    fn small_runs_fit_in_one_process_and_one_source() {
        let p = plan(&cfg(50, 750, &["http://127.0.0.1:8080/"]), (20000, 20000), (32768, 60999), TW, false)
            .unwrap();
        assert_eq!((p.processes, p.sources, p.busiest_destination, p.ports_per_source), (1, 1, 800, 28232));
    }

    #[test]
    fn many_connections_spread_over_processes_and_sources() {
        let c = cfg(1000, 59_000, &["http://127.0.0.1:8080/"]);
        let p = plan(&c, (20000, 20000), (32768, 60999), TW, true).unwrap();
        assert_eq!(p.processes, 4);
        assert_eq!(p.sources, 9, "60000 connections at a quarter of 28232 ports a source need 9 sources");
        let e = plan(&c, (20000, 20000), (32768, 60999), TW, false).unwrap_err();
        assert!(e.contains("RLIMIT_NOFILE 20000"), "{e}");
        let e =
            plan(&Config { processes: Some(2), ..c }, (20000, 20000), (32768, 60999), TW, true).unwrap_err();
        assert!(e.contains("need 4 processes"), "{e}");
    }

    /// Issue 13: 8,000 heavy-tailed cold connections close about 6,000 a second; on one
    /// source their TIME_WAIT ports filled the range and every `connect` became a long port
    /// search on the hot thread. The concurrency alone (8,064) fits one source; the churn
    /// does not.
    #[test]
    fn issue_13_heavy_tail_churn_needs_sources_for_time_wait() {
        let c = Config {
            rate: Some(4000.0),
            cold_lifetime: ColdLifetime::HeavyTail,
            duration: Duration::from_secs(20),
            ..cfg(64, 8000, &["http://127.0.0.1:8080/"])
        };
        let p = plan(&c, (20000, 20000), (32768, 60999), TW, true).unwrap();
        assert!((5000.0..7000.0).contains(&p.churn_per_s), "churn {}", p.churn_per_s);
        assert_eq!(p.time_wait, TW, "more than the kernel's table: capped by it");
        assert_eq!(p.sources, (8064 + TW as usize).div_ceil(28232 / 4), "{p:?}");
        assert!(p.sources > 1);
        let held = Config { cold_lifetime: ColdLifetime::Forever, ..c.clone() };
        let p = plan(&held, (20000, 20000), (32768, 60999), TW, true).unwrap();
        assert_eq!((p.sources, p.time_wait), (2, 0), "connections held all run leave no TIME_WAIT");
        // A table smaller than the churn's: planned for what it can hold.
        let p = plan(&c, (20000, 20000), (32768, 60999), 30_000, true).unwrap();
        assert_eq!((p.time_wait, p.sources), (30_000, (30_000 + 8064usize).div_ceil(28232 / 4)));
    }

    #[test]
    fn new_connection_per_request_counts_its_churn() {
        let c = Config {
            new_conn_per_request: true,
            rate: Some(2000.0),
            ..cfg(8, 0, &["http://127.0.0.1:8080/"])
        };
        let p = plan(&c, (20000, 20000), (32768, 60999), TW, true).unwrap();
        assert_eq!((p.churn_per_s, p.time_wait, p.sources), (2000.0, 120_000, 18), "{p:?}");
        let closed = Config { rate: None, ..c };
        let p = plan(&closed, (20000, 20000), (32768, 60999), TW, true).unwrap();
        assert_eq!(p.time_wait, TW, "closed loop: bounded only by the table");
        // An explicit --sources is obeyed.
        let p =
            plan(&Config { sources: Some(1), ..closed }, (20000, 20000), (32768, 60999), TW, true).unwrap();
        assert_eq!(p.sources, 1);
    }

    #[test]
    fn ipv6_loopback_has_one_source() {
        let e = plan(&cfg(0, 30_000, &["http://[::1]:8080/"]), (20000, 20000), (32768, 60999), TW, true)
            .unwrap_err();
        assert!(e.contains("::1"), "{e}");
    }

    #[test]
    fn sources_turn_over_per_connection() {
        let p = plan(
            &Config { sources: Some(3), ..cfg(3, 0, &["http://127.0.0.1:1/"]) },
            (100, 100),
            (1, 10),
            TW,
            false,
        )
        .unwrap();
        let to: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let got: Vec<_> = (0..4).map(|i| p.source(to, i).unwrap().to_string()).collect();
        assert_eq!(got, ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.1"]);
    }
}
