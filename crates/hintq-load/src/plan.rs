//! Fitting a run into the machine: descriptors per process (RLIMIT_NOFILE) and ephemeral
//! ports per source address, decided before anything connects, so that a run that cannot fit
//! fails at once with a message that says why.

use crate::config::Config;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Descriptors a process keeps for itself beside its connections: the queue, its waker,
/// standard streams, pipes to worker processes, the JSON file.
pub const FD_RESERVE: u64 = 64;

/// Share of the ephemeral range planned per source address: the rest is slack for sockets
/// in TIME_WAIT and for other programs using the same destination.
const PORT_SHARE: f64 = 0.9;

/// The 127.0.0.x sources (x = 1..=254) a run may spread over.
pub const MAX_SOURCES: usize = 254;

/// How the run is laid out. Part of the report.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    /// Worker processes (1: this one only).
    pub processes: usize,
    /// Threads per process.
    pub threads: usize,
    /// Number of targets (connection `i` goes to target `i % targets`).
    pub targets: usize,
    /// Source addresses for IPv4 targets (127.0.0.1 upwards); 1 means no explicit bind.
    pub sources: usize,
    /// Connections (hot + cold) of the busiest destination.
    pub busiest_destination: usize,
    /// Ephemeral ports per source and destination (`ip_local_port_range` or `--port-range`).
    pub ports_per_source: u32,
    /// `RLIMIT_NOFILE` (soft, hard) after raising the soft limit to the hard one.
    pub nofile: (u64, u64),
    /// Descriptors the busiest process needs.
    pub fds_per_process: u64,
}

impl Plan {
    /// Worker `w` of `processes * threads` in total.
    pub fn workers(&self) -> usize {
        self.processes * self.threads
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
/// `can_spawn` whether worker processes can be started (the `hintq` binary can; a library
/// caller without one cannot).
///
/// # Errors
/// A message naming the limit that is in the way and what would fit.
pub fn plan(
    cfg: &Config,
    nofile: (u64, u64),
    port_range: (u16, u16),
    can_spawn: bool,
) -> Result<Plan, String> {
    let total = (cfg.connections + cfg.cold) as u64;
    let per_thread_fds = 4;
    let room = nofile.1.saturating_sub(FD_RESERVE + per_thread_fds * cfg.threads as u64).max(1);
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
    let fds_per_process = total.div_ceil(processes as u64) + FD_RESERVE + per_thread_fds * cfg.threads as u64;
    if fds_per_process > nofile.0 {
        return Err(format!(
            "{fds_per_process} descriptors needed per process, but RLIMIT_NOFILE is {} (soft) / {} (hard)",
            nofile.0, nofile.1
        ));
    }
    let ports = u32::from(port_range.1) - u32::from(port_range.0) + 1;
    let mut per_dest: HashMap<SocketAddr, usize> = HashMap::new();
    for i in 0..cfg.connections.max(cfg.cold) {
        let t = cfg.targets[i % cfg.targets.len()].addr;
        *per_dest.entry(t).or_default() += usize::from(i < cfg.connections) + usize::from(i < cfg.cold);
    }
    let (busiest_addr, busiest) =
        per_dest.into_iter().max_by_key(|&(_, n)| n).unwrap_or((cfg.targets[0].addr, 0));
    let capacity = ((f64::from(ports) * PORT_SHARE) as usize).max(1);
    let sources = match cfg.sources {
        Some(s) => s,
        None => busiest.div_ceil(capacity).max(1),
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
        targets: cfg.targets.len(),
        sources,
        busiest_destination: busiest,
        ports_per_source: ports,
        nofile,
        fds_per_process,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let p =
            plan(&cfg(50, 750, &["http://127.0.0.1:8080/"]), (20000, 20000), (32768, 60999), false).unwrap();
        assert_eq!((p.processes, p.sources, p.busiest_destination, p.ports_per_source), (1, 1, 800, 28232));
    }

    #[test]
    fn many_connections_spread_over_processes_and_sources() {
        let c = cfg(1000, 59_000, &["http://127.0.0.1:8080/"]);
        let p = plan(&c, (20000, 20000), (32768, 60999), true).unwrap();
        assert_eq!(p.processes, 4);
        assert_eq!(p.sources, 3, "60000 connections over 28232 ports need 3 sources");
        let e = plan(&c, (20000, 20000), (32768, 60999), false).unwrap_err();
        assert!(e.contains("RLIMIT_NOFILE 20000"), "{e}");
        let e = plan(&Config { processes: Some(2), ..c }, (20000, 20000), (32768, 60999), true).unwrap_err();
        assert!(e.contains("need 4 processes"), "{e}");
    }

    #[test]
    fn ipv6_loopback_has_one_source() {
        let e =
            plan(&cfg(0, 30_000, &["http://[::1]:8080/"]), (20000, 20000), (32768, 60999), true).unwrap_err();
        assert!(e.contains("::1"), "{e}");
    }

    #[test]
    fn sources_turn_over_per_connection() {
        let p = plan(
            &Config { sources: Some(3), ..cfg(3, 0, &["http://127.0.0.1:1/"]) },
            (100, 100),
            (1, 10),
            false,
        )
        .unwrap();
        let to: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let got: Vec<_> = (0..4).map(|i| p.source(to, i).unwrap().to_string()).collect();
        assert_eq!(got, ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.1"]);
    }
}
