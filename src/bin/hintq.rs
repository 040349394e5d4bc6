//! The `hintq` binary: everything is in the library (`src/lib.rs`).

fn main() -> std::process::ExitCode {
    hintq_cli::main()
}
