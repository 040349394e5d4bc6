//! The peers: libevent, libev and libuv through our C benchmark of libevent's `bench.c`
//! method (compiled at run time against the system's -dev packages), mio and hintq through
//! the Rust one ([`bench`]), nginx for the server experiments.

pub mod bench;

use crate::exp::Lab;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The C benchmark, written to the output directory and compiled there.
pub const BENCH_C: &str = include_str!("../../peers/bench_method.c");

/// A C event library.
pub struct CPeer {
    /// Its name in the rows.
    pub name: &'static str,
    /// The `-D` that selects it in `bench_method.c`.
    pub define: &'static str,
    /// Its `pkg-config` name, if it ships one.
    pub pkg: Option<&'static str>,
    /// Its header, to tell installed from not.
    pub header: &'static str,
    /// Link flags when there is no `pkg-config` file.
    pub libs: &'static str,
    /// The Debian package with its headers.
    pub apt: &'static str,
    /// Its backends that the method runs.
    pub methods: &'static [&'static str],
}

/// libevent, libev, libuv.
pub const C_PEERS: [CPeer; 3] = [
    CPeer {
        name: "libevent",
        define: "PEER_LIBEVENT",
        pkg: Some("libevent"),
        header: "/usr/include/event2/event.h",
        libs: "-levent",
        apt: "libevent-dev",
        methods: &["epoll", "poll", "select"],
    },
    CPeer {
        name: "libev",
        define: "PEER_LIBEV",
        pkg: None,
        header: "/usr/include/ev.h",
        libs: "-lev",
        apt: "libev-dev",
        methods: &["epoll", "poll", "select"],
    },
    CPeer {
        name: "libuv",
        define: "PEER_LIBUV",
        pkg: Some("libuv"),
        header: "/usr/include/uv.h",
        libs: "-luv",
        apt: "libuv1-dev",
        methods: &["epoll"],
    },
];

/// The install command of a Debian package.
pub fn apt(pkg: &str) -> String {
    format!("apt-get install -y {pkg}")
}

/// Compiles the C benchmark for `peer` into `dir`; returns the binary and the library's
/// version, or why not (with the command that installs what is missing).
pub fn build_c(peer: &CPeer, dir: &Path) -> Result<(PathBuf, String), String> {
    if !Path::new(peer.header).exists() {
        return Err(format!("{} is not installed (no {}): {}", peer.name, peer.header, apt(peer.apt)));
    }
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let src = dir.join("bench_method.c");
    std::fs::write(&src, BENCH_C).map_err(|e| e.to_string())?;
    let bin = dir.join(format!("bench-{}", peer.name));
    let flags: Vec<String> = peer
        .pkg
        .and_then(|p| {
            let o = Command::new("pkg-config").args(["--cflags", "--libs", p]).output().ok()?;
            o.status
                .success()
                .then(|| String::from_utf8_lossy(&o.stdout).split_whitespace().map(String::from).collect())
        })
        .unwrap_or_else(|| vec![peer.libs.to_string()]);
    let out = Command::new("cc")
        .args(["-O2", "-std=gnu11", "-o"])
        .arg(&bin)
        .arg(&src)
        .arg(format!("-D{}", peer.define))
        .args(&flags)
        .output()
        .map_err(|e| format!("cc: {e} (apt-get install -y gcc)"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{} did not compile: {}", peer.name, err.lines().next().unwrap_or("")));
    }
    let probe = Command::new(&bin).args(["-n", "2", "-w", "2", "-r", "1", "-m", peer.methods[0]]).output();
    let probe = probe.map_err(|e| format!("{}: {e}", bin.display()))?;
    let err = String::from_utf8_lossy(&probe.stderr);
    if !probe.status.success() {
        return Err(format!("{} benchmark does not run: {}", peer.name, err.trim()));
    }
    let version = err.split_whitespace().nth(1).unwrap_or("unknown").to_string();
    Ok((bin, version))
}

/// nginx, if installed: its path and version line.
pub fn nginx() -> Result<(PathBuf, String), String> {
    let path = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or_else(|| format!("nginx is not installed: {}", apt("nginx-light")))?;
    let v = crate::machine::command_line(&path.to_string_lossy(), &["-v"]);
    Ok((path, v))
}

/// `--install-peers`: installs the missing peers with apt-get, saying what it did.
pub fn install_missing(lab: &Lab) {
    let mut pkgs: Vec<&str> =
        C_PEERS.iter().filter(|p| !Path::new(p.header).exists()).map(|p| p.apt).collect();
    if nginx().is_err() {
        pkgs.push("nginx-light");
    }
    if pkgs.is_empty() {
        return;
    }
    eprintln!("hintq lab: installing {}", pkgs.join(" "));
    let ok = Command::new("apt-get")
        .args(["install", "-y", "-q"])
        .args(&pkgs)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        lab.missing.borrow_mut().push(format!("`apt-get install -y {}` failed", pkgs.join(" ")));
    }
}
