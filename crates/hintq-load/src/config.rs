//! What a run is asked to do: targets (loopback only), hot and cold connections, bounds.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

/// One target URL, resolved without a resolver: the host must be a loopback literal or
/// `localhost` (127.0.0.1). This is a rule of the machines hintq is run on: load goes to
/// loopback only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// The URL as given.
    pub url: String,
    /// Where to connect.
    pub addr: SocketAddr,
    /// The `Host` header value (`host[:port]` as written in the URL).
    pub host: String,
    /// The request target (path and query), `/` when the URL has none.
    pub path: String,
}

impl FromStr for Target {
    type Err = String;

    /// Parses `http://HOST[:PORT][/PATH]`; `https` and non-loopback hosts are refused.
    fn from_str(url: &str) -> Result<Target, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("{url}: only http:// URLs are supported (plain HTTP/1.1 to a loopback server)")
        })?;
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('?') => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        if authority.contains('@') {
            return Err(format!("{url}: user information in URLs is not supported"));
        }
        let (host, port) = split_host_port(authority).ok_or_else(|| format!("{url}: bad host or port"))?;
        let ip = match host {
            h if h.eq_ignore_ascii_case("localhost") => IpAddr::V4(Ipv4Addr::LOCALHOST),
            h => h.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().map_err(|_| {
                format!("{url}: host {h:?} is not an IP address or localhost (names are not resolved)")
            })?,
        };
        if !ip.is_loopback() {
            return Err(format!(
                "{url}: refusing a non-loopback target {ip}: on this machine load may only go to \
                 127.0.0.0/8, ::1 or localhost"
            ));
        }
        Ok(Target {
            url: url.to_string(),
            addr: SocketAddr::new(ip, port),
            host: authority.to_string(),
            path,
        })
    }
}

fn split_host_port(authority: &str) -> Option<(&str, u16)> {
    let (host, port) = if let Some(end) = authority.strip_prefix('[').and_then(|a| a.find(']')) {
        let (h, p) = authority.split_at(end + 2);
        (h, p.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok().filter(|&p| p != 0)?,
        None => 80,
    };
    (!host.is_empty()).then_some((host, port))
}

/// What cold connections send after connecting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColdMode {
    /// Nothing: the load-adding client of Banga et al.
    Idle,
    /// The start of a request head without its end (`GET / HTTP/1.1\r\nHost: ...\r\n`):
    /// a slow client that keeps the server's header parser waiting.
    Partial,
}

/// How long a cold connection lives before it is closed and replaced by a fresh one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColdLifetime {
    /// Held for the whole run (re-opened only when the server closes it).
    Forever,
    /// Lognormal lifetimes with Banga Fig. 1's median 0.20 s and mean 2.07 s; see
    /// [`crate::lifetime`].
    HeavyTail,
}

macro_rules! kebab_enum_parse {
    ($t:ty { $($s:literal => $v:expr),* $(,)? }) => {
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s { $($s => Ok($v),)* _ => Err(format!("expected one of: {}", [$($s),*].join(", "))) }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let s = match self { $(v if *v == $v => $s,)* _ => unreachable!() };
                f.write_str(s)
            }
        }
    };
}
kebab_enum_parse!(ColdMode { "idle" => ColdMode::Idle, "partial" => ColdMode::Partial });
kebab_enum_parse!(ColdLifetime { "forever" => ColdLifetime::Forever, "heavy-tail" => ColdLifetime::HeavyTail });

/// Everything a run is asked to do. [`Config::validate`] checks it; the report repeats it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Config {
    /// Targets; hot connection `i` uses target `i % len` (and so does cold connection `i`).
    pub targets: Vec<Target>,
    /// Hot connections, each with at most one request in flight.
    pub connections: usize,
    /// Open loop at this many requests per second in total; `None`: closed loop.
    pub rate: Option<f64>,
    /// Wall-clock bound of the hot phase.
    pub duration: Duration,
    /// Stop after this many requests were started (each ends as a success or an error).
    pub requests: Option<u64>,
    /// Cold connections held beside the hot load.
    pub cold: usize,
    /// What cold connections send.
    pub cold_mode: ColdMode,
    /// How long cold connections live.
    pub cold_lifetime: ColdLifetime,
    /// Worker threads per process.
    pub threads: usize,
    /// Worker processes; `None`: as many as the descriptor limit needs.
    pub processes: Option<usize>,
    /// Event backend name (`None`: `HINTQ_BACKEND` or the recommended one).
    pub backend: Option<String>,
    /// A request (or a connect) unanswered this long is a timeout error. In open loop the
    /// clock starts at the request's intended send time.
    pub timeout: Duration,
    /// Close the connection after every response and open a new one (HTTP/1.0 style).
    pub new_conn_per_request: bool,
    /// Number of 127.0.0.x source addresses to spread over; `None`: as many as the ephemeral
    /// port range needs for the busiest destination.
    pub sources: Option<usize>,
    /// Per-socket ephemeral port range (`IP_LOCAL_PORT_RANGE`, Linux 6.3+), inclusive.
    /// `None`: the system's `ip_local_port_range`. Mainly for tests of port exhaustion.
    pub port_range: Option<(u16, u16)>,
    /// Show a progress bar (only drawn when stderr is a terminal).
    pub progress: bool,
    /// Open loop: each hot worker wakes this long before a request is due and polls its
    /// queue without sleeping until the moment comes, so that requests leave on time where
    /// a wake-up from sleep is slow or late; the worker's core is kept busy meanwhile. The
    /// self-check's busy share leaves the spinning out. `None` (the default): sleep until due.
    #[serde(default)]
    pub spin: Option<Duration>,
    /// Test hook (only with the `test-hooks` feature, which only this crate's tests enable):
    /// every hot worker sleeps this long on each turn of its loop. A generator made to lag on
    /// purpose, so tests can check that the self-check ([`crate::report::SelfCheck`]) notices.
    #[cfg(feature = "test-hooks")]
    #[serde(default)]
    pub stall_hot_turns: Option<Duration>,
    /// The run fails (see [`crate::Report::failed`]) when more than this fraction of the hot
    /// requests and connects, or of the cold connects, ended in an error; a run with no
    /// success, or in which no cold connection opened, fails whatever this is.
    #[serde(default = "default_max_error_rate")]
    pub max_error_rate: f64,
    /// Test hook (only with the `test-hooks` feature): every hot worker sleeps this long
    /// before each hot connect it starts, so that a connect time measured from anything but
    /// the connect's own start would show the sleeps.
    #[cfg(feature = "test-hooks")]
    #[serde(default)]
    pub stall_hot_connects: Option<Duration>,
}

/// [`Config::max_error_rate`] unless told: 1%.
pub const MAX_ERROR_RATE: f64 = 0.01;

fn default_max_error_rate() -> f64 {
    MAX_ERROR_RATE
}

impl Default for Config {
    fn default() -> Config {
        Config {
            targets: Vec::new(),
            connections: 10,
            rate: None,
            duration: Duration::from_secs(10),
            requests: None,
            cold: 0,
            cold_mode: ColdMode::Idle,
            cold_lifetime: ColdLifetime::Forever,
            threads: 1,
            processes: None,
            backend: None,
            timeout: Duration::from_secs(5),
            new_conn_per_request: false,
            sources: None,
            port_range: None,
            progress: false,
            spin: None,
            #[cfg(feature = "test-hooks")]
            stall_hot_turns: None,
            max_error_rate: MAX_ERROR_RATE,
            #[cfg(feature = "test-hooks")]
            stall_hot_connects: None,
        }
    }
}

impl Config {
    /// Checks what can be checked without touching the system.
    ///
    /// # Errors
    /// A message saying which setting is wrong and why.
    pub fn validate(&self) -> Result<(), String> {
        if self.targets.is_empty() {
            return Err("no target URL given".into());
        }
        if let Some(t) = self.targets.iter().find(|t| !t.addr.ip().is_loopback()) {
            return Err(format!("{}: only loopback targets are allowed", t.url));
        }
        if self.connections == 0 && self.cold == 0 {
            return Err("nothing to do: --connections 0 and --cold 0".into());
        }
        if self.duration.is_zero() || self.duration > Duration::from_secs(24 * 3600) {
            return Err("--duration must be above 0 and at most 24h: every run is bounded".into());
        }
        if self.timeout.is_zero() {
            return Err("--timeout must be above 0".into());
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err("--rate must be a positive number of requests per second".into());
            }
            if self.connections == 0 {
                return Err("--rate needs at least one hot connection (--connections)".into());
            }
        }
        if self.spin.is_some() && self.rate.is_none() {
            return Err("--spin needs --rate: only an open loop has send moments to wait for".into());
        }
        if self.spin.is_some_and(|d| d > Duration::from_millis(100)) {
            return Err("--spin must be at most 100ms".into());
        }
        if self.threads == 0 || self.processes == Some(0) || self.sources == Some(0) {
            return Err("--threads, --processes and --sources must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.max_error_rate) {
            return Err("--max-error-rate must be between 0 and 1 (or 0% and 100%)".into());
        }
        if let Some((lo, hi)) = self.port_range {
            if lo == 0 || lo > hi {
                return Err(format!("bad port range {lo}-{hi}"));
            }
        }
        Ok(())
    }
}

pub use hintq_sys::parse_duration;

/// Parses an error rate: a fraction (`0.01`) or a percentage (`1%`), from 0 to 1 (100%).
///
/// # Errors
/// A message naming the accepted forms.
pub fn parse_error_rate(s: &str) -> Result<f64, String> {
    let bad = || format!("bad error rate {s:?}: expected a fraction from 0 to 1 (0.01) or a percentage (1%)");
    let (num, scale) = match s.trim().strip_suffix('%') {
        Some(pct) => (pct, 0.01),
        None => (s.trim(), 1.0),
    };
    let r = num.trim().parse::<f64>().map_err(|_| bad())? * scale;
    (0.0..=1.0).contains(&r).then_some(r).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_parse_and_others_are_refused() {
        let t: Target = "http://localhost:8080/a?b".parse().unwrap();
        assert_eq!(
            (t.addr, t.host.as_str(), t.path.as_str()),
            ("127.0.0.1:8080".parse().unwrap(), "localhost:8080", "/a?b")
        );
        let t: Target = "http://[::1]:81".parse().unwrap();
        assert_eq!((t.addr, t.path.as_str()), ("[::1]:81".parse().unwrap(), "/"));
        let t: Target = "http://127.3.4.5?x".parse().unwrap();
        assert_eq!((t.addr.port(), t.path.as_str()), (80, "/?x"));
        for bad in [
            "http://10.0.0.1/",
            "http://example.com/",
            "https://127.0.0.1/",
            "http://127.0.0.1:0/",
            "http://[::2]/",
        ] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
        let e = "http://192.168.1.1:80/".parse::<Target>().unwrap_err();
        assert!(e.contains("non-loopback"), "{e}");
    }

    #[test]
    fn spin_is_for_an_open_loop_and_bounded() {
        let base = Config { targets: vec!["http://127.0.0.1:1/".parse().unwrap()], ..Config::default() };
        let spin = Some(Duration::from_micros(50));
        let e = Config { spin, ..base.clone() }.validate().unwrap_err();
        assert!(e.contains("--spin needs --rate"), "{e}");
        assert_eq!(Config { spin, rate: Some(100.0), ..base.clone() }.validate(), Ok(()));
        let long = Some(Duration::from_secs(1));
        assert!(Config { spin: long, rate: Some(100.0), ..base }.validate().is_err());
    }

    #[test]
    fn error_rates_are_fractions_or_percentages() {
        assert_eq!(parse_error_rate("0.05"), Ok(0.05));
        assert_eq!(parse_error_rate("5%"), Ok(0.05));
        assert_eq!(parse_error_rate("0"), Ok(0.0));
        assert_eq!(parse_error_rate("100%"), Ok(1.0));
        for bad in ["1.5", "-1%", "101%", "x", "%", "NaN"] {
            assert!(parse_error_rate(bad).is_err(), "{bad}");
        }
    }
}
