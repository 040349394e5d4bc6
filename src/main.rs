//! `hintq`: one command line for the library's tools.

use clap::{Args, Parser, Subcommand};
use hintq::Backend;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "hintq",
    version,
    about = "Explicit event delivery for Linux: backends, servers, load and lab"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the event backends and whether this kernel supports each.
    Backends,
    /// Run the papers' experiments (E1-E9) on this machine and write the report with plots.
    Lab(hintq_lab::LabArgs),
    /// Run benchmarks.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Micro-benchmarks after Banga et al. Figs. 6 and 7: get_next_event and declare_interest
    /// costs per backend, against a raw epoll loop in the same run.
    Micro(MicroArgs),
    /// The rtsig overflow path: readiness cycles with the RT signal queue below and above
    /// RLIMIT_SIGPENDING (hybrid off and on), the cost of one recovery scan, poll/epoll/uring beside.
    Rtsig(HistArgs),
    /// Gooch's figure: poll(2) cost per idle fd, the active/inactive split with 1% active, and
    /// the wake-up latency of a quiet fd.
    Gooch(HistArgs),
}

#[derive(Args)]
struct HistArgs {
    /// Fewer points, repetitions and shorter measurements (under 30 s).
    #[arg(long)]
    quick: bool,
    /// CSV file for the raw rows [default: hintq-<rtsig|gooch>-<date>.csv].
    #[arg(long, value_name = "FILE.csv")]
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
    /// CSV file for the raw rows [default: hintq-micro-<date>.csv].
    #[arg(long, value_name = "FILE.csv")]
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Backends => backends(),
        Command::Lab(args) => hintq_lab::main(args),
        Command::Bench { what: BenchCommand::Micro(args) } => bench_micro(args),
        Command::Bench { what: BenchCommand::Rtsig(args) } => bench_hist("rtsig", args),
        Command::Bench { what: BenchCommand::Gooch(args) } => bench_hist("gooch", args),
    }
}

fn bench_micro(args: MicroArgs) -> ExitCode {
    let cfg = hintq_bench::Config {
        quick: args.quick,
        reps: args.reps,
        backends: args.backends,
        cpu: args.cpu,
        out: args.out,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    match hintq_bench::run_micro(&cfg) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hintq bench micro: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench_hist(what: &str, args: HistArgs) -> ExitCode {
    let cfg = hintq_bench::Config {
        quick: args.quick,
        reps: args.reps,
        backends: None,
        cpu: args.cpu,
        out: args.out,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let run = if what == "rtsig" { hintq_bench::run_rtsig } else { hintq_bench::run_gooch };
    match run(&cfg) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hintq bench {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn backends() -> ExitCode {
    let recommended = Backend::recommended();
    println!("{:<14} {:<10} notes", "backend", "supported");
    for b in Backend::ALL {
        let (ok, why) = match b.probe() {
            Ok(()) => ("yes", String::new()),
            Err(why) => ("no", why),
        };
        let mark = if b == recommended { "recommended" } else { "" };
        println!("{:<14} {:<10} {}", b.name(), ok, [mark, &why].join(" ").trim());
    }
    ExitCode::SUCCESS
}
