//! `hintq`: one command line for the library's tools. The command line ([`Cli`]) and what
//! each subcommand does; `src/bin/hintq.rs` only calls [`main`]. A library so that tests can walk
//! the command tree (`Cli::command()`) without a hook in the binary.

use clap::{Args, Parser, Subcommand};
use hintq::Backend;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

mod bench_patterns;
mod lab_args;
mod serve_args;

#[derive(Parser)]
#[command(
    name = "hintq",
    version,
    about = "Explicit event delivery for Linux: backends, servers, load and lab"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the event backends and whether this kernel supports each.
    Backends,
    /// Run the papers' experiments (E1-E12) on this machine and write the report with plots.
    Lab(lab_args::LabCli),
    /// Run benchmarks.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
    /// HTTP/1.1 load generator for loopback servers: hot and cold connections, honest latency.
    ///
    /// Hot connections run closed-loop or at a fixed rate (--rate), with latency from the
    /// intended send time and errors by kind; cold connections are held idle beside them. Exit
    /// status: 0 passed, 1 failed its rules (--max-error-rate), 2 usage error, 3 could not run.
    Load(Box<LoadArgs>),
    /// Non-caching HTTP/1.1 reverse proxy in front of one upstream server.
    ///
    /// The proxy Banga et al. measured; graceful drain on SIGINT/SIGTERM. Patterns: reactor,
    /// sharded and sharded-shared only (a proxied connection has two descriptors; the pool
    /// patterns would hand them to two threads, needing a per-session lock and a cross-core
    /// wake-up per request).
    Proxy(serve_args::ProxyCli),
    /// Static HTTP/1.1 server for the files under a directory.
    ///
    /// GET and HEAD of files under --root, keep-alive and pipelining, sendfile, ETag and
    /// Last-Modified validators, byte ranges, directory index.html, timeouts, graceful
    /// shutdown on SIGINT/SIGTERM.
    Serve(serve_args::ServeCli),
    /// Internal: a worker process of `hintq load` (reads its share on stdin).
    #[command(name = "__load-worker", hide = true)]
    LoadWorker,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Costs of get_next_event and declare_interest per backend (Banga et al. Figs. 6, 7).
    ///
    /// Against a raw epoll loop in the same run. Writes the lab's E3 and E4 rows
    /// (experiment,series,x,rep,metric,value,status,note) and prints E3's verdicts as the lab
    /// judges them.
    Micro(MicroArgs),
    /// The rtsig overflow path: readiness cycles below and above RLIMIT_SIGPENDING.
    ///
    /// With the hybrid off and on, the cost of one recovery scan, and poll, epoll and io_uring
    /// beside. Writes the lab's E8 rows (experiment,series,x,rep,metric,value,status,note).
    Rtsig(HistArgs),
    /// Gooch's figure: poll(2) cost per idle descriptor, active/inactive sets, wake-up latency.
    ///
    /// The active/inactive split with 1% active, and the wake-up latency of a quiet descriptor.
    /// Writes the lab's E7 rows (experiment,series,x,rep,metric,value,status,note).
    Gooch(HistArgs),
    /// Strebelow & Prehofer: threading patterns x backend x threads, 512 connections.
    ///
    /// Reactor, Leader/Followers, Half-Sync and sharded, over 512 request/response
    /// connections. Writes the lab's E6 rows (experiment,series,x,rep,metric,value,status,note).
    Patterns(bench_patterns::PatternsArgs),
    /// Wake-ups per readiness of a descriptor shared by 1, 2, 4 and 8 blocked threads.
    ///
    /// A Group with Delivery::One per backend, beside plain shared epoll and EPOLLEXCLUSIVE.
    /// Writes the lab's E10 rows (experiment,series,x,rep,metric,value,status,note).
    #[command(name = "wake-one")]
    WakeOne(WakeArgs),
    /// The floor under a server's CPU per request: answers (or relays) and does nothing else.
    ///
    /// A measuring instrument, not a server. With --file, answers every request on --listen
    /// with one response prepared from the file, doing nothing else (receive, send), on epoll
    /// or io_uring, until stopped: the floor under a static server's CPU per request. With
    /// --relay UPSTREAM instead, relays each connection's bytes to UPSTREAM and back: the floor
    /// under a proxy's. --listen is needed either way:
    ///
    ///   hintq bench floor --listen 127.0.0.1:8081 --file 1k.html
    ///   hintq bench floor --listen 127.0.0.1:8081 --relay 127.0.0.1:8080
    Floor(FloorArgs),
}

#[derive(Args)]
struct FloorArgs {
    /// Address to listen on (loopback), with --file and with --relay alike.
    #[arg(long, value_name = "ADDR")]
    listen: std::net::SocketAddr,
    /// epoll (recv and send system calls) or uring (multishot receive, sends in the ring).
    #[arg(long, default_value = "uring", value_name = "epoll|uring")]
    mechanism: hintq_bench::floor::Mechanism,
    /// The body of every response (- reads it from standard input).
    #[arg(long, value_name = "PATH|-", required_unless_present = "relay", conflicts_with = "relay")]
    file: Option<PathBuf>,
    /// Instead of answering: relay each connection's bytes to a connection of its own to this
    /// upstream and back, nothing parsed (the floor under a proxy's CPU per request).
    #[arg(long, value_name = "UPSTREAM")]
    relay: Option<std::net::SocketAddr>,
}

#[derive(Args)]
struct WakeArgs {
    /// One repetition of 100 readinesses per point (about 10 s).
    #[arg(long)]
    quick: bool,
    /// CSV file for the rows, the lab's format, under `# key: value` header lines
    /// [default: hintq-wake-one-<date>.csv].
    #[arg(long, value_name = "FILE.csv", value_parser = csv_file)]
    out: Option<PathBuf>,
    /// Group backends to measure, comma-separated [default: all; the raw epoll ones always run].
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    backends: Option<Vec<Backend>>,
    /// Repetitions of every point [default: 1 with --quick, else 3].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    reps: Option<u32>,
    /// Readinesses per point [default: 100 with --quick, else 200].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    rounds: Option<u64>,
    /// CPU to pin the member threads to [default: the last allowed one; the driver gets another].
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,
}

#[derive(Args)]
struct HistArgs {
    /// Fewer points, repetitions and shorter measurements (under 30 s).
    #[arg(long)]
    quick: bool,
    /// CSV file for the rows, the lab's format, under `# key: value` header lines
    /// [default: hintq-<rtsig|gooch>-<date>.csv].
    #[arg(long, value_name = "FILE.csv", value_parser = csv_file)]
    out: Option<PathBuf>,
    /// Repetitions of every point [default: 3 with --quick, else 5].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    reps: Option<u32>,
    /// CPU to pin the process to [default: the last allowed one].
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,
}

#[derive(Args)]
struct MicroArgs {
    /// Fewer points, repetitions and shorter measurements (under a minute).
    #[arg(long)]
    quick: bool,
    /// CSV file for the rows, the lab's format, under `# key: value` header lines
    /// [default: hintq-micro-<date>.csv].
    #[arg(long, value_name = "FILE.csv", value_parser = csv_file)]
    out: Option<PathBuf>,
    /// Backends to measure, comma-separated [default: all; the raw epoll loop always runs].
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    backends: Option<Vec<Backend>>,
    /// Repetitions of every point [default: 3 with --quick, else 5].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    reps: Option<u32>,
    /// CPU to pin the process to [default: the last allowed one].
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,
    /// io_uring rings (the uring backend's and the raw loop's) that defer their work to the
    /// one thread that waits (SINGLE_ISSUER | DEFER_TASKRUN, Linux 6.1); off: COOP_TASKRUN.
    #[arg(long, value_name = "on|off", default_value = "on", action = clap::ArgAction::Set, value_parser = on_off)]
    uring_defer: bool,
}

/// `on` or `off`.
fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{s:?}: on or off")),
    }
}

/// Parses the command line and runs what it says: the `hintq` binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Backends => backends(),
        Command::Lab(args) => hintq_lab::main(args.into()),
        Command::Load(args) => load(*args),
        Command::LoadWorker => load_worker(),
        Command::Proxy(args) => proxy(args.into()),
        Command::Serve(args) => serve(&args.into()),
        Command::Bench { what: BenchCommand::Micro(args) } => bench_micro(args),
        Command::Bench { what: BenchCommand::Rtsig(args) } => bench_hist("rtsig", args),
        Command::Bench { what: BenchCommand::Gooch(args) } => bench_hist("gooch", args),
        Command::Bench { what: BenchCommand::Patterns(args) } => bench_patterns::run(args),
        Command::Bench { what: BenchCommand::WakeOne(args) } => bench_wake(args),
        Command::Bench { what: BenchCommand::Floor(args) } => bench_floor(args),
    }
}

fn bench_floor(args: FloorArgs) -> ExitCode {
    let run = || -> std::io::Result<()> {
        let listener = std::net::TcpListener::bind(args.listen)
            .map_err(|e| std::io::Error::new(e.kind(), format!("--listen {}: {e}", args.listen)))?;
        let at = listener.local_addr()?;
        let (Some(file), None) = (&args.file, args.relay) else {
            let upstream = args.relay.expect("clap: --file or --relay");
            eprintln!("hintq bench floor: relaying http://{at} to {upstream} ({:?})", args.mechanism);
            return hintq_bench::relay::relay(listener, args.mechanism, upstream);
        };
        let body = if is_dash(file) {
            let mut body = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut body)?;
            body
        } else {
            std::fs::read(file)
                .map_err(|e| std::io::Error::new(e.kind(), format!("--file {}: {e}", file.display())))?
        };
        let kind = if file.extension().is_some_and(|e| e == "html") {
            "text/html"
        } else {
            "application/octet-stream"
        };
        eprintln!("hintq bench floor: {} on http://{at} ({:?})", file.display(), args.mechanism);
        hintq_bench::floor::serve(listener, args.mechanism, hintq_bench::floor::response(&body, kind))
    };
    done("floor", run())
}

fn bench_wake(args: WakeArgs) -> ExitCode {
    let cfg = hintq_bench::Config {
        quick: args.quick,
        reps: args.reps,
        backends: args.backends,
        cpu: args.cpu,
        out: args.out,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        ..Default::default()
    };
    done("wake-one", hintq_bench::run_wake(&cfg, args.rounds.map(|n| n as usize)))
}

fn bench_micro(args: MicroArgs) -> ExitCode {
    let cfg = hintq_bench::Config {
        quick: args.quick,
        reps: args.reps,
        backends: args.backends,
        cpu: args.cpu,
        out: args.out,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        uring_defer: args.uring_defer,
    };
    // The verdicts on these rows are the lab's (E3), printed by the lab's code.
    done("micro", hintq_bench::run_micro(&cfg).map(|o| print!("{}", hintq_lab::exp::e3::summary(&o.rows))))
}

fn bench_hist(what: &str, args: HistArgs) -> ExitCode {
    let cfg = hintq_bench::Config {
        quick: args.quick,
        reps: args.reps,
        backends: None,
        cpu: args.cpu,
        out: args.out,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        ..Default::default()
    };
    let run = if what == "rtsig" { hintq_bench::run_rtsig } else { hintq_bench::run_gooch };
    done(what, run(&cfg))
}

fn backends() -> ExitCode {
    let recommended = Backend::recommended();
    println!("{:<14} {:<10} notes", "backend", "supported");
    for b in Backend::ALL {
        let (ok, why) = match b.probe() {
            Ok(()) => ("yes", String::new()),
            Err(why) => ("no", why.to_string()),
        };
        let mark = if b == recommended { "recommended" } else { "" };
        println!("{:<14} {:<10} {}", b.name(), ok, [mark, &why].join(" ").trim());
    }
    ExitCode::SUCCESS
}

/// What `hintq load --help` adds after the flags: the self-check and the cold figures.
const LOAD_HELP: &str = "\
Self-check (is the tail the server's or the generator's own?):
  send lag     how late each hot request was written: open loop, past the later of its
               intended send time and the moment a connection was free; closed loop, past
               the moment the previous response was taken from the event queue
  receive lag  how long each response waited in its socket before it was read (kernel
               arrival stamps, SO_TIMESTAMPNS)
  own delay    send + receive lag of each request; server time: write to response arrival
  busy         CPU time of each worker thread over the run's wall time
  The run is marked GENERATOR LAGGED (self_check.generator_lagged in the JSON) when own-delay
  p99 (>= 0.2 ms) is at least a quarter of latency p99 or above server-time p99, or a hot
  thread was 90% busy. Latency stays measured from the intended send time.
Cold connections run on their own thread in each process, never on the hot one; sources
  (127.0.0.x) are planned for live connections plus the ports left in TIME_WAIT (closes/s x
  60 s). Cold connections are closed with FIN, as a client would. The summary gives the cold
  connections held second by second (min/max); the JSON has cold_per_second.
Exit status:
  0  the run passed
  1  the run happened and broke a rule, each named on standard error (\"hintq load: failed:
     ...\") and in the JSON's failed: no request succeeded; no cold connection opened of
     those asked for; the hot or the cold error rate above --max-error-rate
  2  usage error: an unknown flag, a bad value, flags that contradict each other
  3  the run could not be made, or its report not written: a bad $HINTQ_BACKEND, a limit of
     this machine (descriptors, ports), a worker that failed, --json FILE not writable";

/// `hintq load`'s exit statuses ([`LOAD_HELP`] documents them).
mod load_exit {
    /// The run happened and broke a rule of [`hintq_load::report::verdict`].
    pub const FAILED: u8 = 1;
    /// The command line was wrong (clap's own status for its errors).
    pub const USAGE: u8 = 2;
    /// The run could not be made, or its report not written.
    pub const ERROR: u8 = 3;
}

#[derive(Args)]
#[command(after_help = LOAD_HELP)]
struct LoadArgs {
    /// Target URLs (http://127.x.y.z[:port]/path, http://[::1]/..., http://localhost/...).
    /// Loopback only. Hot connection i goes to URL i mod the number of URLs.
    #[arg(required = true, value_name = "URL")]
    urls: Vec<hintq_load::Target>,
    /// Hot connections, each with at most one request in flight.
    #[arg(short, long, default_value_t = 10, value_name = "N")]
    connections: usize,
    /// Open loop: requests per second in total on a fixed schedule, latency from the intended
    /// send time [default: closed loop].
    #[arg(short, long, value_name = "R")]
    rate: Option<f64>,
    /// How long the hot load runs (e.g. 10s, 500ms, 2m).
    #[arg(short, long, default_value = "10s", value_parser = hintq_load::parse_duration, value_name = "D")]
    duration: std::time::Duration,
    /// Stop after this many requests (each ends as a success or an error).
    #[arg(short = 'n', long, value_name = "N")]
    requests: Option<u64>,
    /// Cold connections held beside the hot load (opened before it starts).
    #[arg(long, default_value_t = 0, value_name = "N")]
    cold: usize,
    /// What cold connections send: nothing, or a request head without its end.
    #[arg(long, default_value = "idle", value_name = "idle|partial")]
    cold_mode: hintq_load::ColdMode,
    /// Cold lifetimes: held all run, or lognormal after Banga Fig. 1 (median 0.20 s, mean 2.07 s).
    #[arg(long, default_value = "forever", value_name = "forever|heavy-tail")]
    cold_lifetime: hintq_load::ColdLifetime,
    /// Worker threads per process, each with its own event queue.
    #[arg(short, long, default_value_t = 1, value_name = "T")]
    threads: usize,
    /// Worker processes [default: as many as RLIMIT_NOFILE needs].
    #[arg(long, value_name = "P")]
    processes: Option<usize>,
    /// Event backend (see `hintq backends`) [default: $HINTQ_BACKEND or the recommended one].
    #[arg(long, value_name = "NAME", value_parser = backend_name)]
    backend: Option<String>,
    /// A request (or connect) unanswered this long is a timeout error.
    #[arg(long, default_value = "5s", value_parser = hintq_load::parse_duration, value_name = "D")]
    timeout: std::time::Duration,
    /// Close the connection after each response and open a new one for the next request.
    #[arg(long)]
    new_conn_per_request: bool,
    /// 127.0.0.x source addresses to spread over [default: as many as the ports need, live
    /// and in TIME_WAIT].
    #[arg(long, value_name = "N")]
    sources: Option<usize>,
    /// Open loop: wake this long before each request is due and poll until it is, instead of
    /// sleeping to the moment (e.g. 50us); keeps the generator's core busy. For machines where
    /// a wake-up from sleep is slow (see the report's self-check).
    #[arg(long, value_parser = hintq_load::parse_duration, value_name = "D")]
    spin: Option<std::time::Duration>,
    /// Write every figure and the exact settings as JSON to FILE, or to standard output with
    /// - (the summary then goes to standard error).
    #[arg(long, value_name = "FILE|-")]
    json: Option<PathBuf>,
    /// The run fails (exit status 1) when more than this share of the hot requests and
    /// connects, or of the cold connects, ended in an error: a fraction (0.05) or a percentage
    /// (5%). A run in which no request succeeded, or no cold connection opened, fails whatever
    /// this says.
    #[arg(long, default_value = "1%", value_parser = hintq_load::parse_error_rate, value_name = "RATE")]
    max_error_rate: f64,
    /// No progress bar (there is none anyway when stderr is not a terminal).
    #[arg(long)]
    quiet: bool,
}

/// `--backend NAME` of `hintq load`: a name `hintq backends` lists, kept as given (the
/// workers parse it again).
fn backend_name(s: &str) -> Result<String, String> {
    s.parse::<Backend>().map(|_| s.to_string()).map_err(|e| e.to_string())
}

fn load(a: LoadArgs) -> ExitCode {
    #[allow(
        clippy::needless_update,
        reason = "hintq-load's test-hooks feature adds fields when its tests share this build"
    )]
    let cfg = hintq_load::Config {
        targets: a.urls,
        connections: a.connections,
        rate: a.rate,
        duration: a.duration,
        requests: a.requests,
        cold: a.cold,
        cold_mode: a.cold_mode,
        cold_lifetime: a.cold_lifetime,
        threads: a.threads,
        processes: a.processes,
        backend: a.backend,
        timeout: a.timeout,
        new_conn_per_request: a.new_conn_per_request,
        sources: a.sources,
        port_range: None,
        progress: !a.quiet,
        spin: a.spin,
        max_error_rate: a.max_error_rate,
        ..hintq_load::Config::default()
    };
    if let Err(e) = cfg.validate() {
        eprintln!("hintq load: {e}");
        return ExitCode::from(load_exit::USAGE);
    }
    let spawner = std::env::current_exe()
        .ok()
        .map(|exe| hintq_load::Spawner { exe, args: vec!["__load-worker".to_string()] });
    let report = match hintq_load::run(&cfg, spawner.as_ref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("hintq load: {e}");
            return ExitCode::from(load_exit::ERROR);
        }
    };
    let json_to_stdout = a.json.as_deref().is_some_and(is_dash);
    if json_to_stdout {
        eprint!("{}", report.summary());
    } else {
        print!("{}", report.summary());
    }
    let mut status =
        if report.failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(load_exit::FAILED) };
    if let Some(path) = a.json {
        let written = output(&path).and_then(|mut w| {
            serde_json::to_writer_pretty(&mut w, &report)?;
            writeln!(w)?;
            w.flush()
        });
        if let Err(e) = written {
            eprintln!("hintq load: --json {}: {e}", path.display());
            // A report that was asked for and is missing outweighs the verdict.
            status = ExitCode::from(load_exit::ERROR);
        }
    }
    for rule in &report.failed {
        eprintln!("hintq load: failed: {rule}");
    }
    status
}

/// `--out` of the benchmarks: a file for the raw rows. `-` is refused rather than taken for
/// a file name: standard output carries the summary.
fn csv_file(s: &str) -> Result<PathBuf, String> {
    match s {
        "-" => Err("the raw rows need a file (standard output carries the summary)".into()),
        _ => Ok(PathBuf::from(s)),
    }
}

/// `-`, which stands for standard output (or input) wherever a file is asked for.
fn is_dash(path: &std::path::Path) -> bool {
    path.as_os_str() == "-"
}

/// A buffered writer to `path`, or to standard output for `-`.
fn output(path: &std::path::Path) -> std::io::Result<Box<dyn Write>> {
    Ok(if is_dash(path) {
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    } else {
        Box::new(std::io::BufWriter::new(std::fs::File::create(path)?))
    })
}

fn load_worker() -> ExitCode {
    if hintq_load::worker_main() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn serve(args: &hintq_serve::serve::ServeArgs) -> ExitCode {
    match hintq_serve::serve::run(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("hintq serve: {e}");
            ExitCode::FAILURE
        }
    }
}

fn proxy(args: hintq_serve::proxy::ProxyArgs) -> ExitCode {
    match hintq_serve::proxy::run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("hintq proxy: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The exit status of `hintq bench <what>`: success, or the error on stderr and failure.
fn done<T>(what: &str, result: Result<T, impl std::fmt::Display>) -> ExitCode {
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hintq bench {what}: {e}");
            ExitCode::FAILURE
        }
    }
}
