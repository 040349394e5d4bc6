//! What E1, E2, E5, E11 and E12 share: the servers measured, the document root, `hintq serve` or nginx as the
//! server on the measured core (or `hintq proxy` or nginx as a proxy there, relaying to
//! `hintq serve` on the other core), `hintq load` on the other, and reading `hintq load --json`.

use super::Lab;
use crate::data::{self, num, Line, Row, Status};
use crate::runner::{Cmd, Ran, Samples, Server};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU16, Ordering};

static PORT: AtomicU16 = AtomicU16::new(0);

/// A free loopback port for one point, below the ephemeral range (32768 and up by default)
/// so that the load generator's own connections can never hold it.
pub fn port() -> u16 {
    let base = 10_000 + (std::process::id() % 10_000) as u16;
    loop {
        let p = base + PORT.fetch_add(1, Ordering::Relaxed) % 12_000;
        if std::net::TcpListener::bind(("127.0.0.1", p)).is_ok() {
            return p;
        }
    }
}

/// The files of the document root: a 1 KB file (Banga's) and a 6 KB one (Provos').
const FILES: [(&str, u64); 2] = [("1k.html", 1024), ("6k.html", 6 * 1024)];

/// Connections nginx's one worker may hold (E1 holds up to 15,000 cold ones).
const NGINX_CONNECTIONS: usize = 40_000;

/// nginx tuned for the files of [`FILES`].
fn nginx_role(root: &std::path::Path) -> crate::peers::NginxRole<'_> {
    let largest_file = FILES.iter().map(|f| f.1).max().unwrap_or(0);
    crate::peers::NginxRole::Static { root, largest_file }
}

/// The document root, with [`FILES`].
pub fn root(lab: &Lab) -> PathBuf {
    let dir = lab.out.join("raw").join("www");
    let _ = std::fs::create_dir_all(&dir);
    for (name, size) in FILES {
        let _ = std::fs::write(dir.join(name), "x".repeat(size as usize));
    }
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// `hintq serve` on the measured core, or nginx (one process, one worker) for `nginx`.
pub fn server(lab: &Lab, series: &str, port: u16) -> Result<Server, String> {
    server_processes(lab, series, port, 1)
}

/// Connections one process of a multi-process server may hold: the descriptor limit every
/// process here has (the hard `RLIMIT_NOFILE` the lab raised itself to), 20,000 when unknown.
pub fn per_process_limit() -> usize {
    hintq_sys::nofile().map_or(20_000, |(_, hard)| hard.min(1 << 20) as usize)
}

/// The connections each process of a multi-process server is planned to hold at most (a
/// margin under [`per_process_limit`] for the kernel's uneven `SO_REUSEPORT` hashing).
pub const PER_PROCESS: usize = 15_000;

/// Processes that hold `connections` at [`PER_PROCESS`] each: 1 up to it.
pub fn processes_for(connections: usize) -> usize {
    connections.div_ceil(PER_PROCESS).max(1)
}

/// nginx for `processes` workers (more than 1): a master and that many workers, each with its
/// own `reuseport` listener (as `hintq serve --processes` has; one shared listener would let
/// one worker take connections beyond its `worker_connections` and drop them), each allowed
/// [`per_process_limit`] descriptors and connections; the workers run as root when the lab
/// does (its document root may not be readable by nginx's default user).
pub fn nginx_workers_conf(conf: &str, processes: usize) -> String {
    // SAFETY: geteuid(2) has no memory effects.
    let user = if unsafe { libc::geteuid() } == 0 { "user root;\n" } else { "" };
    let conf = conf
        .replace("worker_processes 1;", &format!("{user}worker_processes {processes};"))
        .replace(" backlog=4096;", " backlog=4096 reuseport;");
    assert!(conf.contains(&format!("worker_processes {processes};")) && conf.contains("reuseport;"));
    // The one-worker configuration's opening comment (one worker, master off) is not true of
    // this one: say what this one is.
    let directives: Vec<&str> = conf.lines().skip_while(|l| l.starts_with('#')).collect();
    format!(
        "# nginx as its users tune it for static files (PERF.md, \"Peers as their users run them\"), \
         spread\n# over {processes} workers under a master, each with its own `reuseport` listener and at \
         most\n# {PER_PROCESS} cold connections; otherwise the one-worker configuration: no access log, \
         unlimited\n# keep-alive requests, an open file cache, sendfile by the size of the files served. \
         The lab\n# runs it with its master (no `-g \"master_process off;\"`) and measures the master and \
         its workers.\n{}\n",
        directives.join("\n")
    )
}

/// The note of nginx's rows: its tuning (paths and port left as placeholders), for
/// `processes` workers.
pub fn nginx_note(processes: usize) -> String {
    let root = Path::new("ROOT");
    let conf = if processes > 1 {
        let one = crate::peers::nginx_conf(nginx_role(root), Path::new("DIR"), 0, per_process_limit());
        nginx_workers_conf(&one, processes)
    } else {
        crate::peers::nginx_conf(nginx_role(root), Path::new("DIR"), 0, NGINX_CONNECTIONS)
    };
    format!("nginx config: {}", crate::peers::tuning(&conf))
}

/// [`server`] spread over `processes` processes when more than 1: `hintq serve --processes N`
/// (and an idle timeout of 600 s, nginx's `keepalive_timeout`, so that cold connections opened
/// early outlast the time it takes to open the rest), or nginx with a master and N workers
/// ([`nginx_workers_conf`]). Its processes are all waited for before the point starts.
pub fn server_processes(lab: &Lab, series: &str, port: u16, processes: usize) -> Result<Server, String> {
    let listen = format!("127.0.0.1:{port}");
    let ready: SocketAddr = listen.parse().map_err(|e| format!("{listen}: {e}"))?;
    let root = root(lab);
    let cmd = if series == "nginx" {
        let (nginx, _) = crate::peers::nginx()?;
        let conf_dir = lab.out.join("raw").join("nginx");
        std::fs::create_dir_all(&conf_dir).map_err(|e| e.to_string())?;
        let conf_dir = std::fs::canonicalize(&conf_dir).map_err(|e| e.to_string())?;
        let conf = conf_dir.join(format!("nginx-{port}.conf"));
        let text = if processes > 1 {
            let one = crate::peers::nginx_conf(nginx_role(&root), &conf_dir, port, per_process_limit());
            nginx_workers_conf(&one, processes)
        } else {
            crate::peers::nginx_conf(nginx_role(&root), &conf_dir, port, NGINX_CONNECTIONS)
        };
        std::fs::write(&conf, &text).map_err(|e| e.to_string())?;
        let mut configs = lab.configs.borrow_mut();
        let what = if processes > 1 { format!("{processes} workers") } else { "one worker".into() };
        if !configs.iter().any(|c| c.0.contains(&what)) {
            configs.push((
                format!(
                    "nginx, static files, {what} (each point: its own port; this one {})",
                    conf.display()
                ),
                text,
            ));
        }
        let mut args = crate::peers::nginx_args(&conf_dir, &conf);
        if processes > 1 {
            // A master and its workers: the runner reads the CPU and memory of them all.
            args.retain(|a| a != "-g" && a != "master_process off;");
        }
        Cmd::new(nginx, &args.iter().map(String::as_str).collect::<Vec<_>>(), lab.cores.bench)
    } else {
        let backend = series.strip_prefix("hintq-").unwrap_or(series);
        let root = root.to_string_lossy();
        let n = processes.to_string();
        let mut args =
            vec!["serve", "--root", &root, "--listen", &listen, "--backend", backend, "--threads", "1"];
        if processes > 1 {
            args.extend(["--processes", &n, "--idle-timeout", "600s"]);
        }
        lab.hintq(&args, lab.cores.bench)
    };
    // nginx's master is one more process.
    let tree = if processes > 1 { processes + 1 } else { 1 };
    Ok(Server { processes: tree, ..Server::new(cmd, ready) })
}

/// The upstream every proxy point relays to: `hintq serve` (epoll, one thread) on the load
/// core, so that the proxy alone has the measured core.
pub const UPSTREAM_BACKEND: &str = "epoll";

/// A proxy on the measured core listening on `port`, relaying to `hintq serve` on
/// `upstream_port` (on the load core, started first): `hintq proxy --backend B` for
/// `hintq-B`, nginx for `nginx`. Also returns the proxy's configuration in a line, for the
/// rows' notes.
pub fn proxy(lab: &Lab, series: &str, port: u16, upstream_port: u16) -> Result<(Server, String), String> {
    let upstream = server(lab, &format!("hintq-{UPSTREAM_BACKEND}"), upstream_port)?;
    let upstream = Server { cmd: Cmd { cpu: lab.cores.load, ..upstream.cmd }, ..upstream };
    let (listen, up) = (format!("127.0.0.1:{port}"), format!("127.0.0.1:{upstream_port}"));
    let ready: SocketAddr = listen.parse().map_err(|e| format!("{listen}: {e}"))?;
    let (cmd, conf) = if series == "nginx" {
        let (nginx, _) = crate::peers::nginx()?;
        let dir = lab.out.join("raw").join("nginx").join(format!("proxy-{port}"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let dir = std::fs::canonicalize(&dir).map_err(|e| e.to_string())?;
        let d = dir.to_string_lossy();
        // One process, as the lab's nginx server runs: its CPU is read from its pid.
        let role = crate::peers::NginxRole::Proxy { upstream: &up };
        let text = crate::peers::nginx_conf(role, &dir, port, NGINX_CONNECTIONS)
            .replace("daemon off;", "daemon off;\nmaster_process off;");
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, text).map_err(|e| e.to_string())?;
        let note = format!(
            "nginx proxy as its users run it: upstream keepalive 64, keepalive_requests 100000000, \
             proxy_http_version 1.1, Connection \"\", 1 worker, master_process off; config {}",
            conf.display()
        );
        (Cmd::new(nginx, &["-p", &d, "-c", &conf.to_string_lossy()], lab.cores.bench), note)
    } else {
        let backend = series.strip_prefix("hintq-").unwrap_or(series);
        let args = ["proxy", "--listen", &listen, "--upstream", &up, "--backend", backend];
        let note = format!("hintq proxy --backend {backend} (reactor, idle upstream pool of 64 by default)");
        (lab.hintq(&args, lab.cores.bench), note)
    };
    let note = format!("{conf}; upstream hintq serve --backend {UPSTREAM_BACKEND} on CPU {}", lab.cores.load);
    Ok((Server { upstream: Some(Box::new(upstream)), ..Server::new(cmd, ready) }, note))
}

/// `hintq load` on the load core, writing `load.json` into the point's directory. Errors are
/// one of the figures a point records (`--max-error-rate 100%`): the point fails only when no
/// request succeeded.
pub fn load(lab: &Lab, port: u16, file: &str, hot: usize, cold: usize, rate: Option<f64>, secs: f64) -> Cmd {
    let url = format!("http://127.0.0.1:{port}/{file}");
    let (hot, cold, dur) = (hot.to_string(), cold.to_string(), format!("{secs}s"));
    let mut args = vec!["load", &url, "--connections", &hot, "--cold", &cold, "--duration", &dur];
    args.extend(["--max-error-rate", "100%", "--json", "load.json"]);
    let rate = rate.map(|r| format!("{r}"));
    if let Some(r) = &rate {
        args.extend(["--rate", r.as_str()]);
    }
    lab.hintq(&args, lab.cores.load)
}

/// The number at a JSON pointer (`/latency_us/p99`) of `hintq load --json`.
pub fn at(v: &serde_json::Value, pointer: &str) -> Option<f64> {
    v.pointer(pointer).and_then(serde_json::Value::as_f64)
}

/// Errors of every kind, hot and cold: the sum of the counts under `/hot/errors` and
/// `/cold/errors`.
pub fn errors(v: &serde_json::Value) -> Option<f64> {
    let sum = |p: &str| -> Option<f64> {
        Some(v.pointer(p)?.as_object()?.values().filter_map(|c| c.as_f64()).sum())
    };
    Some(sum("/hot/errors")? + sum("/cold/errors").unwrap_or(0.0))
}

/// The load generator's report of one point.
pub fn load_json(ran: &Ran) -> Result<serde_json::Value, String> {
    let path = ran.dir.join("load.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Rows of the numbers of `json` at the given pointers, scaled, plus its errors (every one
/// must be there: a missing one fails the point rather than being guessed).
pub fn rows(
    exp: &str,
    series: &str,
    x: f64,
    json: &serde_json::Value,
    wanted: &[(&str, &str, f64)],
) -> Result<Vec<Row>, String> {
    // nginx's rows carry its tuning (paths and port left as placeholders).
    let note = if series == "nginx" { nginx_note(1) } else { String::new() };
    let row = |metric: &str, v: f64| Row {
        experiment: exp.into(),
        series: series.into(),
        x,
        rep: 0,
        metric: metric.to_string(),
        value: Some(v),
        status: Status::Ok,
        note: note.clone(),
    };
    let mut out = wanted
        .iter()
        .map(|(metric, pointer, scale)| {
            let v = at(json, pointer).ok_or_else(|| format!("load.json has no number at {pointer}"))?;
            Ok(row(metric, v * scale))
        })
        .collect::<Result<Vec<_>, String>>()?;
    out.push(row("errors", errors(json).ok_or("load.json has no /hot/errors")?));
    if let Some(busy) = at(json, LOAD_HOT_BUSY) {
        out.push(row(LOAD_BUSY, busy));
    }
    Ok(out)
}

/// Where load.json has the busiest hot thread's share of the hot phase (%).
pub const LOAD_HOT_BUSY: &str = "/self_check/hot_busy_max_pct";
/// The rows' metric of the load generator's busiest hot thread, % of the hot phase.
pub const LOAD_BUSY: &str = "load_hot_busy_pct";
/// A judged point's load generator must keep its busiest hot thread under this (%): over it,
/// the load generator may be what limits the point, not the server (Banga made sure the
/// clients were never the bottleneck, §7).
pub const LOAD_BUSY_LIMIT_PCT: f64 = 70.0;

/// Why the points of `series` at `x` cannot be judged, if a launch's load generator had its
/// busiest hot thread at or over [`LOAD_BUSY_LIMIT_PCT`] busy (rows without the figure say
/// nothing).
pub fn load_bound(rows: &[Row], series: &str, x: f64) -> Option<String> {
    load_bound_in(rows, LOAD_BUSY, series, x)
}

/// [`load_bound`] where the rows keep the busiest thread under `metric` (an experiment whose
/// points of one x differ in another setting, E12's inactive counts).
pub fn load_bound_in(rows: &[Row], metric: &str, series: &str, x: f64) -> Option<String> {
    let busiest = rows
        .iter()
        .filter(|r| r.series == series && r.x == x && r.metric == metric)
        .filter(|r| matches!(r.status, Status::Ok | Status::Disturbed))
        .filter_map(|r| r.value)
        .fold(f64::NEG_INFINITY, f64::max);
    (busiest >= LOAD_BUSY_LIMIT_PCT).then(|| {
        format!(
            "the load generator's busiest hot thread was {}% busy for {series} at {} (under {}% needed): \
             it, not the server, may have set the figure",
            crate::data::num(busiest),
            crate::data::num(x),
            LOAD_BUSY_LIMIT_PCT
        )
    })
}

/// Completed requests.
pub const REQUESTS: &str = "/hot/successes";
/// Achieved throughput, requests per second.
pub const THROUGHPUT: &str = "/throughput";
/// The load generator's CPU per request, to show it was not the bottleneck.
pub const LOAD_CPU: &str = "/cpu/per_request_us";

/// What the server's side says of a point, from its samples and the load generator's phases
/// (seconds from its start: `warmup` opening cold connections, then `hot`, `wall` in all).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServerSide {
    /// Connections held: descriptors beyond those before the load, the least over the samples
    /// of the hot phase (the hot connections counted).
    pub held: f64,
    /// Bytes of user space per connection held, at that sample: the processes' summed RSS
    /// minus before the load, ÷ held.
    pub user: f64,
    /// Bytes of kernel memory per connection held, at that sample: the machine's slab plus
    /// TCP socket memory minus before the load, ÷ held (both ends of each connection).
    pub kernel: f64,
}

/// The server's side of a point, if a sample fell in the hot phase. The hot phase starts
/// after the generator's set-up (unknown: at most what its wall time has beyond warm-up and
/// hot phase, taken as 0.5 s at most) and warm-up, and ends at the latest `hot` later; samples
/// outside are left out (cold connections still opening or already closing).
pub fn server_side(s: &Samples, warmup: f64, hot: f64, wall: f64) -> Option<ServerSide> {
    let setup = (wall - warmup - hot).clamp(0.0, 0.5);
    let (from, to) = (warmup + setup, warmup + hot);
    let at = s.during.iter().filter(|x| x.t > from && x.t <= to).min_by_key(|x| x.descriptors)?;
    let b = &s.baseline;
    let held = at.descriptors.saturating_sub(b.descriptors) as f64;
    let per = |v: f64| if held > 0.0 { v / held } else { f64::NAN };
    Some(ServerSide {
        held,
        user: per(at.rss as f64 - b.rss as f64),
        kernel: per((at.slab + at.tcp_mem) as f64 - (b.slab + b.tcp_mem) as f64),
    })
}

/// The series of the server experiments: hintq backends the kernel supports, and nginx when
/// installed (else said, with its install command).
pub fn servers(lab: &Lab, backends: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = backends
        .iter()
        .filter(|b| b.parse::<hintq::Backend>().is_ok_and(|b| b.probe().is_ok()))
        .map(|b| format!("hintq-{b}"))
        .collect();
    match crate::peers::nginx() {
        Ok((_, v)) => {
            lab.peers.borrow_mut().push(("nginx".into(), v));
            out.push("nginx".into());
        }
        Err(why) => lab.missing.borrow_mut().push(why),
    }
    out
}

/// The load generator's hot thread busier than this (%) may limit the throughput.
const LOAD_BUSY_PCT: f64 = LOAD_BUSY_LIMIT_PCT;

/// PERF.md: whether the load generator, not the server, may have limited a throughput. From
/// its busiest hot thread in the hot phase (`load_hot_busy_pct`) where the rows have it; else
/// from its CPU per request (all its CPU over the run ÷ the hot phase's requests) times the
/// throughput, read at 0 cold only: with cold connections that CPU includes opening them.
pub fn load_limits(rows: &[Row], throughput: &[Line]) -> Vec<String> {
    let mut out = Vec::new();
    let (busy, load) = (data::lines(rows, "load_hot_busy_pct"), data::lines(rows, "load_cpu_us_per_request"));
    let mut whole_run = false;
    for l in throughput {
        if let Some(b) = busy.iter().find(|b| b.name == l.name) {
            let top = b.points.iter().max_by(|a, b| a.spread.median.total_cmp(&b.spread.median));
            if let Some(p) = top.filter(|p| p.spread.median > LOAD_BUSY_PCT) {
                out.push(format!(
                    "{}: the load generator's busiest hot thread was {}% busy in the hot phase at {} cold: \
                     it, not the server, may limit this throughput.",
                    l.name,
                    num(p.spread.median),
                    p.x
                ));
            }
            continue;
        }
        let Some(lc) = load.iter().find(|c| c.name == l.name) else { continue };
        whole_run |= l.points.iter().any(|p| p.x > 0.0);
        let cores = l.median(0.0).zip(lc.median(0.0)).map(|(t, c)| t * c / 1e6);
        if let Some(cores) = cores.filter(|&c| c > LOAD_BUSY_PCT / 100.0) {
            out.push(format!(
                "{}: at 0 cold the load generator used {} cores' worth of CPU (its CPU per request times \
                 the throughput): it, not the server, may limit this throughput.",
                l.name,
                num(cores)
            ));
        }
    }
    if whole_run {
        out.push(
            "The load generator is judged at 0 cold only: with cold connections, its CPU in these rows \
             is all of its CPU over the run (opening the cold connections included) divided by the hot \
             phase's requests, not its hot phase's load."
                .into(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{server_side, Samples};
    use crate::exp::check::{contains, starts};
    use crate::runner::Sample;

    fn sample(t: f64, descriptors: usize, rss: u64, slab: u64) -> Sample {
        Sample { t, processes: 8, descriptors, rss, slab, tcp_mem: 1000 }
    }

    #[test]
    fn held_is_the_least_in_the_hot_phase_and_memory_is_per_connection_held_then() {
        // Warm-up 20 s (cold connections opening), hot phase 3 s after a set-up of at most
        // 0.5 s, then 1.5 s closing: only samples in (20.5, 23] count.
        let s = Samples {
            baseline: sample(0.0, 40, 10_000_000, 50_000_000),
            during: vec![
                sample(10.0, 50_000, 30_000_000, 90_000_000),   // opening
                sample(20.4, 100_000, 40_000_000, 150_000_000), // set-up, maybe
                sample(21.0, 100_072, 40_000_000, 150_000_000),
                sample(22.0, 100_040, 40_500_000, 150_100_000), // the least held
                sample(23.0, 100_072, 40_000_000, 150_000_000),
                sample(24.0, 10, 10_000_000, 50_000_000), // closing
            ],
        };
        let side = server_side(&s, 20.0, 3.0, 25.0).unwrap();
        assert_eq!(side.held, 100_000.0);
        assert_eq!(side.user, 305.0);
        assert_eq!(side.kernel, 1001.0);
        // No sample in the hot phase: nothing, rather than a guess.
        assert_eq!(server_side(&s, 30.0, 3.0, 34.0), None);
    }
    const JSON: &str = r#"{"throughput":1234.5,"connect_us":{"p50":9,"p99":10},"latency_us":{"p50":400,"p99":900,"max":5000},
        "hot":{"successes":100,"errors":{"reset":2,"timeout":1}},"cold":{"errors":{"connect":3}}}"#;

    #[test]
    fn reads_load_json_by_pointer_sums_errors_and_never_guesses() {
        let v: serde_json::Value = serde_json::from_str(JSON).unwrap();
        assert_eq!(super::at(&v, super::THROUGHPUT), Some(1234.5));
        assert_eq!(super::errors(&v), Some(6.0));
        let rows = super::rows("E2", "nginx", 1.0, &v, &[("p99_ms", "/latency_us/p99", 1e-3)]).unwrap();
        assert_eq!(
            rows.iter().map(|r| (r.metric.as_str(), r.value.unwrap())).collect::<Vec<_>>(),
            [("p99_ms", 0.9), ("errors", 6.0)]
        );
        let missing = super::rows("E1", "nginx", 0.0, &v, &[("x", "/nothing", 1.0)]);
        assert!(missing.unwrap_err().contains("/nothing"));
    }

    #[test]
    fn a_configuration_of_several_workers_says_so_and_keeps_the_directives() {
        let one = crate::peers::nginx_conf(
            super::nginx_role(std::path::Path::new("ROOT")),
            std::path::Path::new("DIR"),
            8080,
            1000,
        );
        let four = super::nginx_workers_conf(&one, 4);
        assert!(!four.contains("-g \"master_process off;\"` so"), "{four}");
        starts(&four, "# nginx as its users tune it for static files");
        contains(&four, "over 4 workers under a master");
        contains(&four, "no `-g \"master_process off;\"`");
        assert!(four.contains("worker_processes 4;") && four.contains("reuseport;"), "{four}");
        assert_eq!(crate::peers::tuning(&four).matches("worker_processes").count(), 1);
    }
}
