//! The peers: libevent, libev and libuv through our C benchmark of libevent's `bench.c`
//! method (compiled at run time against the system's -dev packages), mio and hintq through
//! the Rust one ([`mod@bench`]), nginx for the server experiments.

pub mod bench;

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
    let path = nginx_path().ok_or_else(|| format!("nginx is not installed: {}", apt(NGINX_APT)))?;
    let v = crate::machine::command_line(&path.to_string_lossy(), &["-v"]);
    Ok((path, v))
}

fn nginx_path() -> Option<PathBuf> {
    ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// nginx's Debian package.
pub const NGINX_APT: &str = "nginx";

/// The static template (see its header).
pub const NGINX_STATIC: &str = include_str!("../../peers/nginx-static.conf.in");
/// The reverse-proxy template (see its header).
pub const NGINX_PROXY: &str = include_str!("../../peers/nginx-proxy.conf.in");

/// Files up to this size are served with `sendfile off` (one `writev` from the open-file
/// cache costs less than `sendfile` for them: 5.6-6.1 against 9.0-9.5 µs per 1 KB request in
/// PERF.md); larger ones with `sendfile on`.
pub const SENDFILE_ABOVE: u64 = 16 * 1024;

/// What nginx is configured for.
#[derive(Clone, Copy, Debug)]
pub enum NginxRole<'a> {
    /// Static files from `root`, the largest `largest_file` bytes.
    Static {
        /// The document root (readable by nginx's worker).
        root: &'a Path,
        /// The size of the largest file served, which picks `sendfile`.
        largest_file: u64,
    },
    /// A reverse proxy to `upstream` (`host:port`).
    Proxy {
        /// The upstream server.
        upstream: &'a str,
    },
}

/// The configuration of nginx as its users tune it for `role`, listening on `port`, writing
/// its pid, logs and temporary files under `dir`, allowed `connections` connections.
pub fn nginx_conf(role: NginxRole, dir: &Path, port: u16, connections: usize) -> String {
    let common = |t: &str| {
        t.replace("@DIR@", &dir.to_string_lossy())
            .replace("@PORT@", &port.to_string())
            .replace("@CONNECTIONS@", &connections.to_string())
    };
    match role {
        NginxRole::Static { root, largest_file } => common(NGINX_STATIC)
            .replace("@ROOT@", &root.to_string_lossy())
            .replace("@SENDFILE@", if largest_file > SENDFILE_ABOVE { "on" } else { "off" }),
        NginxRole::Proxy { upstream } => common(NGINX_PROXY).replace("@UPSTREAM@", upstream),
    }
}

/// The tuning of a configuration in one line (its directives, comments left out), for the
/// raw rows' notes and SETUP.md.
pub fn tuning(conf: &str) -> String {
    let directives: Vec<&str> =
        conf.lines().map(|l| l.trim()).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    directives.join(" ")
}

/// The arguments that start nginx on `conf` as one process (master off: the measured
/// process is the worker) with `dir` as its prefix.
pub fn nginx_args(dir: &Path, conf: &Path) -> Vec<String> {
    vec![
        "-p".into(),
        dir.to_string_lossy().into_owned(),
        "-g".into(),
        "master_process off;".into(),
        "-c".into(),
        conf.to_string_lossy().into_owned(),
    ]
}

/// The peers missing on this machine: (name, Debian package).
pub fn missing() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> =
        C_PEERS.iter().filter(|p| !Path::new(p.header).exists()).map(|p| (p.name, p.apt)).collect();
    if nginx_path().is_none() {
        out.push(("nginx", NGINX_APT));
    }
    out
}

/// Why the lab may not install packages here, if it may not.
fn cannot_install(no_install: bool) -> Option<String> {
    if no_install {
        return Some("--no-install was given".into());
    }
    // SAFETY: geteuid has no memory effects.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not running as root".into());
    }
    let on_path = |p: &str| {
        std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(p).exists()))
    };
    (!on_path("apt-get")).then(|| "no package tool (apt-get) on this machine".into())
}

fn apt_get(args: &[&str], log: &Path) -> bool {
    let Ok(out) = std::fs::OpenOptions::new().create(true).append(true).open(log) else { return false };
    let Ok(err) = out.try_clone() else { return false };
    Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .is_ok_and(|s| s.success())
}

/// Before any experiment: installs the missing peers with apt-get when it may (root, apt-get
/// present, no `--no-install`), refreshing the package lists once if the first try fails
/// (a fresh machine has none), with apt-get's output in `log`. Returns what became of the
/// peers, in lines for the first lines of the run, REPORT.md and SETUP.md.
pub fn install_missing(no_install: bool, log: &Path) -> Vec<String> {
    let before = missing();
    let mut lines = Vec::new();
    let present: Vec<&str> = C_PEERS
        .iter()
        .map(|p| p.name)
        .chain(["nginx"])
        .filter(|n| !before.iter().any(|m| m.0 == *n))
        .collect();
    if !present.is_empty() {
        lines.push(format!("peers present: {}", present.join(", ")));
    }
    if before.is_empty() {
        return lines;
    }
    let pkgs: Vec<&str> = before.iter().map(|m| m.1).collect();
    let why = cannot_install(no_install).or_else(|| {
        let mut args = vec!["install", "-y", "-q"];
        args.extend(&pkgs);
        if apt_get(&args, log) || (apt_get(&["update", "-q"], log) && apt_get(&args, log)) {
            None
        } else {
            Some(format!("`apt-get install -y {}` failed (its output: {})", pkgs.join(" "), log.display()))
        }
    });
    let after = missing();
    let installed: Vec<&str> = before.iter().filter(|b| !after.contains(b)).map(|b| b.1).collect();
    if !installed.is_empty() {
        lines.push(format!("peers installed now with apt-get: {}", installed.join(" ")));
    }
    for (name, pkg) in after {
        let why = why.clone().unwrap_or_else(|| format!("{pkg} installed but {name} still not found"));
        lines.push(format!("peer missing: {name}, not installed: {why} (to install: {})", apt(pkg)));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_static_config_is_tuned_and_picks_sendfile_by_file_size() {
        let (root, dir) = (Path::new("/srv/www"), Path::new("/tmp/lab/nginx"));
        let small = nginx_conf(NginxRole::Static { root, largest_file: 6 * 1024 }, dir, 18080, 40000);
        for want in [
            "access_log off;",
            "keepalive_requests 100000000;",
            "open_file_cache max=10000 inactive=60s;",
            "open_file_cache_valid 60s;",
            "sendfile off;",
            "worker_connections 40000;",
            "worker_rlimit_nofile 40000;",
            "listen 127.0.0.1:18080",
            "root /srv/www;",
            "pid /tmp/lab/nginx/nginx-18080.pid;",
        ] {
            assert!(small.contains(want), "{want} missing:\n{small}");
        }
        assert!(!small.contains('@'), "a placeholder left:\n{small}");
        let large = nginx_conf(NginxRole::Static { root, largest_file: 1 << 20 }, dir, 18080, 40000);
        assert!(large.contains("sendfile on;") && !large.contains("sendfile off;"));
        let edge = nginx_conf(NginxRole::Static { root, largest_file: SENDFILE_ABOVE }, dir, 1, 1);
        assert!(edge.contains("sendfile off;"), "16 KB is still a small file");
    }

    #[test]
    fn nginx_proxy_config_keeps_an_upstream_keepalive_pool() {
        let conf = nginx_conf(NginxRole::Proxy { upstream: "127.0.0.1:9000" }, Path::new("/d"), 8080, 20000);
        for want in [
            "upstream up { server 127.0.0.1:9000; keepalive 64; keepalive_requests 100000000; }",
            "proxy_pass http://up;",
            "proxy_http_version 1.1;",
            "proxy_set_header Connection \"\";",
            "access_log off;",
            "keepalive_requests 100000000;",
        ] {
            assert!(conf.contains(want), "{want} missing:\n{conf}");
        }
        assert!(!conf.contains('@'), "a placeholder left:\n{conf}");
        assert!(!tuning(&conf).contains('#') && tuning(&conf).contains("keepalive 64"));
    }

    #[test]
    fn no_install_is_honoured_and_said() {
        let log = tempfile::tempdir().unwrap();
        let lines = install_missing(true, &log.path().join("install.log"));
        let missing = missing();
        assert_eq!(lines.iter().filter(|l| l.starts_with("peer missing:")).count(), missing.len());
        assert!(lines
            .iter()
            .filter(|l| l.starts_with("peer missing:"))
            .all(|l| l.contains("--no-install was given")));
        assert!(!log.path().join("install.log").exists(), "apt-get ran despite --no-install");
    }
}
