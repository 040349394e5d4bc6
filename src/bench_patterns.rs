//! `hintq bench patterns`: the Strebelow & Prehofer experiment (see `hintq_bench::patterns`).

use clap::Args;
use hintq::Backend;
use hintq_patterns::Pattern;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct PatternsArgs {
    /// Threads 1, 2, 4, one repetition, short windows (under a minute).
    #[arg(long)]
    quick: bool,
    /// CSV file for the rows, the lab's format, under `# key: value` header lines
    /// [default: hintq-patterns-<time>.csv].
    #[arg(long, value_name = "FILE.csv", value_parser = crate::csv_file)]
    out: Option<PathBuf>,
    /// Busy-wait per request in microseconds (the paper's simulated work).
    #[arg(long, default_value_t = 0, value_name = "US")]
    work_us: u64,
    /// Patterns, comma-separated [default: all].
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    patterns: Option<Vec<Pattern>>,
    /// Backends, comma-separated [default: select,epoll,epoll-et,epoll-oneshot,uring].
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    backends: Option<Vec<Backend>>,
    /// Thread counts, comma-separated [default: 1,2,3,4; quick 1,2,4].
    #[arg(long, value_name = "N,M", value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// Repetitions of every point [default: 3; quick 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    reps: Option<u32>,
    /// CPU for the server's threads [default: the first allowed].
    #[arg(long, value_name = "N")]
    server_cpu: Option<usize>,
    /// CPU for the load generator [default: the last allowed].
    #[arg(long, value_name = "N")]
    client_cpu: Option<usize>,
}

pub fn run(a: PatternsArgs) -> ExitCode {
    let bc = hintq_bench::patterns::BenchConfig {
        quick: a.quick,
        out: a.out,
        work_us: a.work_us,
        patterns: a.patterns,
        backends: a.backends,
        threads: a.threads,
        reps: a.reps,
        server_cpu: a.server_cpu,
        client_cpu: a.client_cpu,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    match hintq_bench::patterns::run(&bc) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hintq bench patterns: {e}");
            ExitCode::FAILURE
        }
    }
}
