//! The paper's own example code, Figure 3 of Banga, Mogul & Druschel (USENIX 1999), in C
//! against `hintq.h` and `libhintq`: built, run and driven by two clients.
//!
//! ```sh
//! cargo run --example figure3        # needs a C compiler (cc) and pkg-config
//! ```
//!
//! The C file is `crates/hintq-capi/tests/c/fig3.c`: the figure's 37 lines as printed (with
//! the four deviations its header lists: C99 return types, one `&`, one parenthesis) and
//! the procedures the figure leaves out, making it a line server that answers "L\n" with
//! "ok L\n" and exits once N connections were served. This program does by hand what a C
//! user does:
//!
//! 1. builds the C library (`cargo build -p hintq-capi`: `libhintq.so`, `libhintq.a` and a
//!    `hintq.pc` for this tree, in the target directory beside this example);
//! 2. compiles the figure with `cc fig3.c -o fig3 $(pkg-config --cflags --libs hintq)`,
//!    `PKG_CONFIG_PATH` naming that directory, and prints the command;
//! 3. runs it (`fig3 2`, the library found through `LD_LIBRARY_PATH`), reads the port it
//!    prints, and connects two clients that each send two lines and check the answers.
//!
//! `HINTQ_BACKEND` picks the backend under the C calls as it does for Rust programs.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    if let Err(e) = run() {
        eprintln!("figure3: {e}");
        std::process::exit(1);
    }
}

fn run() -> io::Result<()> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib_dir = build_library(repo)?;

    let src = repo.join("crates/hintq-capi/tests/c/fig3.c");
    let out_dir = lib_dir.join("c-examples");
    std::fs::create_dir_all(&out_dir)?;
    let exe = out_dir.join("fig3");
    let pkg = command_output(
        Command::new("pkg-config").args(["--cflags", "--libs", "hintq"]).env("PKG_CONFIG_PATH", &lib_dir),
        "pkg-config (apt-get install pkg-config)",
    )?;
    let flags: Vec<&str> = pkg.split_whitespace().collect();
    // -Wno-dangling-else: the figure's `else` binds to the inner `if`, as the paper means,
    // against its printed indentation; -Wall would warn (see the C file's header).
    let mut cc = Command::new("cc");
    cc.args(["-Wall", "-Wno-dangling-else"]).arg(&src).arg("-o").arg(&exe).args(&flags);
    println!("PKG_CONFIG_PATH={} \\", lib_dir.display());
    println!(
        "  cc -Wall -Wno-dangling-else {} -o {} $(pkg-config --cflags --libs hintq)",
        src.display(),
        exe.display()
    );
    command_output(&mut cc, "cc (apt-get install gcc)")?;

    let mut child = Command::new(&exe)
        .arg("2")
        .env("LD_LIBRARY_PATH", &lib_dir)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("running {}: {e}", exe.display())))?;
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("piped")).read_line(&mut first)?;
    let port: u16 = first
        .trim()
        .strip_prefix("port ")
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| io::Error::other(format!("fig3 printed {first:?}, not \"port P\"")))?;
    println!("fig3 2: Figure 3's main_loop serves 2 connections on 127.0.0.1:{port}");

    let clients: Vec<_> = (0..2).map(|id| std::thread::spawn(move || client(port, id))).collect();
    for c in clients {
        if let Err(e) = c.join().expect("client thread") {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    }
    let status = child.wait()?;
    if !status.success() {
        return Err(io::Error::other(format!("fig3 ended with {status}")));
    }
    println!("fig3 served both clients and exited 0");
    Ok(())
}

/// One client: two lines, each sent in two pieces; the answers are printed and checked.
fn client(port: u16, id: usize) -> io::Result<()> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut expected = String::new();
    for line in 0..2 {
        let text = format!("client {id} line {line}");
        let (a, b) = text.split_at(text.len() / 2);
        s.write_all(a.as_bytes())?;
        std::thread::sleep(Duration::from_millis(5));
        s.write_all(format!("{b}\n").as_bytes())?;
        expected.push_str(&format!("ok {text}\n"));
    }
    s.shutdown(Shutdown::Write)?;
    let mut got = String::new();
    s.read_to_string(&mut got)?;
    print!("{}", got.lines().map(|l| format!("  client {id} got: {l}\n")).collect::<String>());
    if got != expected {
        return Err(io::Error::other(format!("client {id}: expected {expected:?}, got {got:?}")));
    }
    Ok(())
}

/// Builds `libhintq.so`, `libhintq.a` and `hintq.pc` with the cargo that runs this example,
/// into the same target directory and profile, and returns that directory
/// (`target/<profile>/`; this example is `target/<profile>/examples/figure3`).
fn build_library(repo: &Path) -> io::Result<PathBuf> {
    let me = std::env::current_exe()?;
    let dir = me.parent().and_then(Path::parent).expect("target/<profile>/examples/figure3").to_path_buf();
    let profile = match dir.file_name().and_then(|p| p.to_str()) {
        Some("debug") => "dev",
        Some(other) => other,
        None => return Err(io::Error::other("the target directory's name is not UTF-8")),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    command_output(
        Command::new(cargo)
            .args(["build", "--quiet", "-p", "hintq-capi", "--profile", profile])
            .env("CARGO_TARGET_DIR", dir.parent().expect("the target directory"))
            .current_dir(repo),
        "cargo build -p hintq-capi",
    )?;
    Ok(dir)
}

/// Runs `cmd` and returns its standard output; an error names `what` and shows its stderr.
fn command_output(cmd: &mut Command, what: &str) -> io::Result<String> {
    let out = cmd.output().map_err(|e| io::Error::new(e.kind(), format!("{what}: {e}")))?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{what} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
