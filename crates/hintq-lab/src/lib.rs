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

use std::path::PathBuf;
use std::process::ExitCode;

/// What `hintq lab` was asked (the binary's flags, `src/lab_args.rs`, fill it in).
#[derive(Debug, Clone, Default)]
pub struct LabArgs {
    /// `--quick`: fewer points and repetitions.
    pub quick: bool,
    /// `--out`: the output directory (`None`: `lab-<date>`).
    pub out: Option<PathBuf>,
    /// `--only`: the experiments to run (`None`: all).
    pub only: Option<Vec<String>>,
    /// `--plan`: measure nothing, print the points and the estimated time.
    pub plan: bool,
    /// `--no-install`: do not install missing peers.
    pub no_install: bool,
    /// `--reanalyse`: measure nothing, analyse the run in this directory again.
    pub reanalyse: Option<PathBuf>,
    /// One tiny point per experiment (the end-to-end test).
    pub smoke: bool,
    /// One of the programs the lab runs as separate processes, instead of the lab.
    pub internal: Option<Internal>,
}

/// Programs of the lab itself, which it runs as separate processes; a person can run them too
/// to repeat one point by hand.
#[derive(Debug, Clone)]
pub enum Internal {
    /// E9's point by hand (`hintq lab peer-bench`): libevent's bench.c method over hintq or
    /// mio, µs per run.
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
