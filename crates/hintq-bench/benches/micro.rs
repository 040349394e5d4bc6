//! `cargo bench -p hintq-bench`: the quick variant of `hintq bench micro`, raw rows written
//! to the target directory.

fn main() {
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hintq-micro-quick.csv");
    let cfg = hintq_bench::Config {
        quick: true,
        out: Some(out),
        command: "cargo bench -p hintq-bench (quick)".into(),
        ..Default::default()
    };
    if let Err(e) = hintq_bench::run_micro(&cfg) {
        eprintln!("hintq-bench: {e}");
        std::process::exit(1);
    }
}
