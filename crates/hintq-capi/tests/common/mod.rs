//! Helpers for the C tests: find the built library, compile the programs in `tests/c/` with
//! the flags `pkg-config` gives for `hintq.pc`, and run them (bounded in time, optionally under
//! valgrind or AddressSanitizer).

#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Seconds after which `timeout(1)` kills a C program (valgrind is slow; nothing should
/// come near this).
const KILL_AFTER_SECS: &str = "120";

/// `target/<profile>/`, holding an up-to-date `libhintq.so`, `libhintq.a` and `hintq.pc`.
///
/// Cargo does not build a library that is only a `cdylib` and a `staticlib` before the
/// integration tests (there is nothing for them to link to), so the first call builds it
/// with the cargo that runs these tests, into the same target directory and profile
/// (`target/<profile>/deps/<test>-<hash>` is this test). Cargo does not hold the build lock
/// while tests run.
pub fn lib_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(build_library).clone()
}

fn build_library() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf();
    let profile = match dir.file_name().and_then(|p| p.to_str()).expect("a UTF-8 profile name") {
        "debug" => "dev",
        other => other,
    };
    let out = Command::new(env!("CARGO"))
        .args(["build", "-p", "hintq-capi", "--profile", profile])
        .env("CARGO_TARGET_DIR", dir.parent().expect("target dir"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running cargo build");
    assert!(out.status.success(), "cargo build -p hintq-capi:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join("libhintq.so").exists(), "no libhintq.so in {}", dir.display());
    dir
}

/// Whether this machine can build the C tests: a C compiler (`cc`) and `pkg-config`. When
/// one is missing, the calling test is skipped with the reason through `hintq-testkit` (a
/// failure under `HINTQ_REQUIRE_TOOLS`), and this returns false.
pub fn can_build_c() -> bool {
    static FOUND: OnceLock<Result<(), String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        for (tool, what) in [("cc", "a C compiler (cc)"), ("pkg-config", "pkg-config")] {
            if !Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success()) {
                return Err(format!("{what} is not installed"));
            }
        }
        Ok(())
    });
    hintq_testkit::runs("the C program", found.clone())
}

/// `pkg-config ARGS hintq` with `PKG_CONFIG_PATH` set to [`lib_dir`], split into words.
pub fn pkg_config(args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .args(args)
        .arg("hintq")
        .env("PKG_CONFIG_PATH", lib_dir())
        .output()
        .expect("running pkg-config");
    assert!(out.status.success(), "pkg-config {args:?} hintq: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8").split_whitespace().map(String::from).collect()
}

/// The backend names `hintq backends` lists.
pub fn backends() -> Vec<&'static str> {
    hintq::Backend::ALL.iter().map(|b| b.name()).collect()
}

/// A checker of memory errors for the C programs and the library under them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checker {
    /// No checker: run the program as it is.
    Plain,
    /// `valgrind --error-exitcode=99 --leak-check=full`.
    Valgrind,
    /// The program compiled with `-fsanitize=address` (the Rust library is not instrumented,
    /// but every access the C side makes to memory the library hands out is).
    Asan,
}

impl Checker {
    /// Valgrind when installed, else AddressSanitizer when the compiler has it, else `Err`
    /// with the reason (the caller prints it and skips).
    pub fn available() -> Result<Checker, String> {
        static FOUND: OnceLock<Result<Checker, String>> = OnceLock::new();
        FOUND.get_or_init(probe_checker).clone()
    }

    fn cflags(self) -> &'static [&'static str] {
        match self {
            Checker::Asan => &["-fsanitize=address", "-fno-omit-frame-pointer"],
            _ => &[],
        }
    }

    /// A command that runs `exe` under this checker, killed after [`KILL_AFTER_SECS`], with
    /// the library found through `LD_LIBRARY_PATH`.
    pub fn command(self, exe: &Path) -> Command {
        let mut cmd = Command::new("timeout");
        cmd.args(["-k", "5", KILL_AFTER_SECS]);
        if self == Checker::Valgrind {
            cmd.args(["valgrind", "-q", "--error-exitcode=99", "--leak-check=full"]);
        }
        cmd.arg(exe).env("LD_LIBRARY_PATH", lib_dir());
        cmd
    }
}

fn probe_checker() -> Result<Checker, String> {
    if Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Ok(Checker::Valgrind);
    }
    let dir = out_dir();
    let src = dir.join("asan-probe.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").expect("writing asan-probe.c");
    let exe = dir.join("asan-probe");
    let built = Command::new("cc").args(Checker::Asan.cflags()).arg(&src).arg("-o").arg(&exe).status();
    if built.is_ok_and(|s| s.success()) && Command::new(&exe).status().is_ok_and(|s| s.success()) {
        return Ok(Checker::Asan);
    }
    Err("neither valgrind nor AddressSanitizer (cc -fsanitize=address) is available".into())
}

/// Where compiled test programs go: `target/<profile>/c-tests/`.
fn out_dir() -> PathBuf {
    let dir = lib_dir().join("c-tests");
    std::fs::create_dir_all(&dir).expect("creating c-tests dir");
    dir
}

/// Compiles `tests/c/<src>` into `target/<profile>/c-tests/<out>` with `-g -Wall -Wextra
/// -Werror`, `extra`, the checker's flags and `pkg-config --cflags --libs hintq`, then the
/// `libs` (linking order matters for `-l`). Panics with the compiler's messages on failure.
pub fn compile(src: &str, out: &str, checker: Checker, extra: &[&str], libs: &[String]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(src);
    let exe = out_dir().join(out);
    let pc = if libs.is_empty() { pkg_config(&["--cflags", "--libs"]) } else { pkg_config(&["--cflags"]) };
    let output = Command::new("cc")
        .args(["-g", "-Wall", "-Wextra", "-Werror"])
        .args(extra)
        .args(checker.cflags())
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .args(pc)
        .args(libs)
        .output()
        .expect("running cc");
    assert!(output.status.success(), "cc {}:\n{}", src.display(), String::from_utf8_lossy(&output.stderr));
    exe
}

/// Asserts that a finished C program exited 0, showing its output otherwise.
pub fn assert_success(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what}: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
