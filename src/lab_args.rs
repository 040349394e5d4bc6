//! `hintq lab`'s flags: the clap types, turned into the lab's plain options
//! ([`hintq_lab::LabArgs`], [`hintq_lab::peers::bench::BenchArgs`]).

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `hintq lab`.
#[derive(Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct LabCli {
    /// Fewer points and repetitions: a few minutes.
    #[arg(long)]
    quick: bool,
    /// Output directory [default: lab-<date>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Experiments to run, comma-separated (E1..E12) [default: all].
    #[arg(long, value_name = "E1,E3,...", value_delimiter = ',')]
    only: Option<Vec<String>>,
    /// Measure nothing: print each experiment's points and estimated time, and the total
    /// (never installs).
    #[arg(long)]
    plan: bool,
    /// Do not install missing peers. By default the lab first installs what is missing of
    /// nginx, libevent-dev, libev-dev and libuv1-dev with apt-get when it runs as root and
    /// apt-get is there; a peer still missing is named, with why, in the run's first lines.
    #[arg(long)]
    no_install: bool,
    /// Measure nothing: read back the `E<n>.csv` files of the run in DIR and write its plots
    /// and REPORT.md again with this binary's analyses (after an analysis changed, or to
    /// check a report). The peers and the points not measured are taken from its REPORT.md.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "only", "no_install"])]
    reanalyse: Option<PathBuf>,
    /// One tiny point per experiment (for the end-to-end test; never installs).
    #[arg(long, hide = true)]
    smoke: bool,
    /// Internal: the programs the lab runs as separate processes.
    #[command(subcommand)]
    internal: Option<InternalCli>,
}

/// Programs of the lab itself, which it runs as separate processes; a person can run them too
/// to repeat one point by hand.
#[derive(Subcommand, Debug, Clone)]
enum InternalCli {
    /// E9's point by hand: libevent's bench.c method over hintq or mio, µs per run.
    ///
    /// Socket pairs, a few written to at the start of each run, every write passed on to the
    /// next pair until the run's writes are done; prints the microseconds of each run, one a
    /// line. The lab runs it for E9 beside libevent, libev and libuv's own bench.c.
    PeerBench(PeerBenchCli),
}

/// `hintq lab peer-bench`.
#[derive(Args, Debug, Clone)]
struct PeerBenchCli {
    /// The library under the method: `hintq` or `mio`.
    #[arg(long, value_name = "hintq|mio")]
    lib: String,
    /// The hintq backend (ignored for mio, which is epoll).
    #[arg(long, default_value = "epoll", value_name = "NAME")]
    backend: String,
    /// Socket pairs.
    #[arg(short = 'n', default_value_t = 100)]
    pairs: usize,
    /// Pairs written to at the start of a run.
    #[arg(short = 'a', default_value_t = 1)]
    active: usize,
    /// Writes passed on in a run.
    #[arg(short = 'w', default_value_t = 100)]
    writes: usize,
    /// Runs (one line each).
    #[arg(short = 'r', default_value_t = 25)]
    runs: usize,
    /// Not used by the method: the launch's number in the lab's plan (E9 starts each point
    /// several times, as separate processes), so that every launch has a command line of its
    /// own and is run, not answered from the runner's record of an identical command.
    #[arg(short = 'l', long, default_value_t = 0)]
    launch: u32,
    /// A diagnostic, not the method: watchers are registered before the first run only and
    /// never re-armed, which is what libev's stop and start with an unchanged mask amount to
    /// in the kernel. Set beside a normal launch, it shows how much of the cost's growth with
    /// the pairs comes from the re-registration before each run.
    #[arg(long)]
    keep: bool,
}

impl From<LabCli> for hintq_lab::LabArgs {
    fn from(c: LabCli) -> hintq_lab::LabArgs {
        hintq_lab::LabArgs {
            quick: c.quick,
            out: c.out,
            only: c.only,
            plan: c.plan,
            no_install: c.no_install,
            reanalyse: c.reanalyse,
            smoke: c.smoke,
            internal: c.internal.map(|InternalCli::PeerBench(b)| {
                hintq_lab::Internal::PeerBench(hintq_lab::peers::bench::BenchArgs {
                    lib: b.lib,
                    backend: b.backend,
                    pairs: b.pairs,
                    active: b.active,
                    writes: b.writes,
                    runs: b.runs,
                    launch: b.launch,
                    keep: b.keep,
                })
            }),
        }
    }
}
