//! # hintq-lab: the papers' experiments, run on this machine
//!
//! `hintq lab` runs the experiments E1–E12 of the design (Banga, Mogul & Druschel 1999; Provos
//! & Lever 2000; Gooch 1998; Strebelow & Prehofer; libevent's `bench.c` method) and writes a
//! directory a person can read:
//!
//! * `E<n>.csv`: the raw rows of every point of every experiment that ran (one measured value
//!   per row, with its repetition, status and the quiet check), and `raw/E<n>/` with each
//!   point's own output (the tools' CSV and JSON, stdout, stderr);
//! * `E<n>.svg` and `E<n>.png`: one plot per experiment, in the style of the paper's figure;
//! * `SETUP.md`: machine, kernel, CPU, pinning, versions, commit and every exact command;
//! * `REPORT.md`: a table of each paper's claim, our figure and whether it holds here, then a
//!   section per experiment with its plot, its numbers and a few sentences of reading.
//!
//! The plots, the verdicts and every number of the report are made from the CSV files after
//! they are written and read back ([`data::read_csv`]), never from values held in memory.
//!
//! Each experiment ([`exp::Experiment`]) says what it needs (a subcommand of `hintq`, a peer
//! library), plans its points, and reads its figures from rows. The [`runner`] runs each
//! point as a separate process (`hintq <subcommand>` or a peer's benchmark), pinned to its
//! own core, with the machine's quiet checked before, during and after; a disturbed point is
//! run once more, then kept and marked disturbed. A point that crashes or times out is
//! recorded as failed. An experiment whose tool is missing is reported as "not run: needs X".

#![warn(missing_docs)]

pub mod data;
pub mod exp;
pub mod machine;
pub mod peers;
pub mod plot;
pub mod progress;
pub mod report;
pub mod runner;
pub mod verdict;

use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// `hintq lab`.
#[derive(Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LabArgs {
    /// Fewer points and repetitions: a few minutes.
    #[arg(long)]
    pub quick: bool,
    /// Output directory [default: lab-<date>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Experiments to run, comma-separated (E1..E12) [default: all].
    #[arg(long, value_name = "E1,E3,...", value_delimiter = ',')]
    pub only: Option<Vec<String>>,
    /// Measure nothing: print each experiment's points and estimated time, and the total
    /// (never installs).
    #[arg(long)]
    pub plan: bool,
    /// Do not install missing peers. By default the lab first installs what is missing of
    /// nginx, libevent-dev, libev-dev and libuv1-dev with apt-get when it runs as root and
    /// apt-get is there; a peer still missing is named, with why, in the run's first lines.
    #[arg(long)]
    pub no_install: bool,
    /// Measure nothing: read back the `E<n>.csv` files of the run in DIR and write its plots
    /// and REPORT.md again with this binary's analyses (after an analysis changed, or to
    /// check a report). The peers and the points not measured are taken from its REPORT.md.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "only", "no_install"])]
    pub reanalyse: Option<PathBuf>,
    /// One tiny point per experiment (for the end-to-end test; never installs).
    #[arg(long, hide = true)]
    pub smoke: bool,
    /// Internal: the programs the lab runs as separate processes.
    #[command(subcommand)]
    pub internal: Option<Internal>,
}

/// Programs of the lab itself, which it runs as separate processes; a person can run them too
/// to repeat one point by hand.
#[derive(Subcommand, Debug, Clone)]
pub enum Internal {
    /// E9's point by hand: libevent's bench.c method over hintq or mio, µs per run.
    ///
    /// Socket pairs, a few written to at the start of each run, every write passed on to the
    /// next pair until the run's writes are done; prints the microseconds of each run, one a
    /// line. The lab runs it for E9 beside libevent, libev and libuv's own bench.c.
    PeerBench(peers::bench::BenchArgs),
}

/// Runs `hintq lab`.
pub fn main(args: LabArgs) -> ExitCode {
    let result = match args.internal.clone() {
        Some(Internal::PeerBench(b)) => peers::bench::main(&b),
        None => exp::run_lab(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hintq lab: {e}");
            ExitCode::FAILURE
        }
    }
}
