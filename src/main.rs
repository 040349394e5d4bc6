//! `hintq`: one command line for the library's tools.

use clap::{Parser, Subcommand};
use hintq::Backend;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "hintq", version, about = "Explicit event delivery for Linux: backends, servers, load and lab")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the event backends and whether this kernel supports each.
    Backends,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Backends => backends(),
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
