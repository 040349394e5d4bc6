//! What E1, E2 and E5 share: the document root, `hintq serve` or nginx as the server on the
//! measured core, `hintq load` on the other, and reading `hintq load --json`.

use super::Lab;
use crate::data::{Row, Status};
use crate::runner::{Cmd, Ran, Server};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU16, Ordering};

static PORT: AtomicU16 = AtomicU16::new(0);

/// A fresh loopback port for one point.
pub fn port() -> u16 {
    let base = 20_000 + (std::process::id() % 20_000) as u16;
    base + PORT.fetch_add(1, Ordering::Relaxed)
}

/// The document root, with a 1 KB file (Banga's) and a 6 KB one (Provos').
pub fn root(lab: &Lab) -> PathBuf {
    let dir = lab.out.join("raw").join("www");
    let _ = std::fs::create_dir_all(&dir);
    for (name, size) in [("1k.html", 1024), ("6k.html", 6 * 1024)] {
        let _ = std::fs::write(dir.join(name), "x".repeat(size));
    }
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// `hintq serve` on the measured core, or nginx (one process, one worker) for `nginx`.
pub fn server(lab: &Lab, series: &str, port: u16) -> Result<Server, String> {
    let listen = format!("127.0.0.1:{port}");
    let ready: SocketAddr = listen.parse().map_err(|e| format!("{listen}: {e}"))?;
    let root = root(lab);
    let cmd = if series == "nginx" {
        let (nginx, _) = crate::peers::nginx()?;
        let conf_dir = lab.out.join("raw").join("nginx");
        std::fs::create_dir_all(&conf_dir).map_err(|e| e.to_string())?;
        let conf_dir = std::fs::canonicalize(&conf_dir).map_err(|e| e.to_string())?;
        let conf = conf_dir.join(format!("nginx-{port}.conf"));
        let text = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log {d}/error-{port}.log;\npid {d}/nginx-{port}.pid;\n\
             events {{ worker_connections 40000; }}\nworker_rlimit_nofile 40000;\n\
             http {{ access_log off; keepalive_requests 1000000; client_body_temp_path {d}; proxy_temp_path {d};\n\
             fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
             server {{ listen {listen}; root {r}; }} }}\n",
            d = conf_dir.display(),
            r = root.display()
        );
        std::fs::write(&conf, text).map_err(|e| e.to_string())?;
        Cmd::new(nginx, &["-p", &conf_dir.to_string_lossy(), "-c", &conf.to_string_lossy()], lab.cores.bench)
    } else {
        let backend = series.strip_prefix("hintq-").unwrap_or(series);
        let root = root.to_string_lossy();
        lab.hintq(
            &["serve", "--root", &root, "--listen", &listen, "--backend", backend, "--threads", "1"],
            lab.cores.bench,
        )
    };
    Ok(Server { cmd, ready })
}

/// `hintq load` on the load core, writing `load.json` into the point's directory.
pub fn load(lab: &Lab, port: u16, file: &str, hot: usize, cold: usize, rate: Option<f64>, secs: f64) -> Cmd {
    let url = format!("http://127.0.0.1:{port}/{file}");
    let (hot, cold, dur) = (hot.to_string(), cold.to_string(), format!("{secs}s"));
    let mut args =
        vec!["load", &url, "--connections", &hot, "--cold", &cold, "--duration", &dur, "--json", "load.json"];
    let rate = rate.map(|r| format!("{r}"));
    if let Some(r) = &rate {
        args.extend(["--rate", r.as_str()]);
    }
    lab.hintq(&args, lab.cores.load)
}

/// The first number found under any of `keys`, searched depth first.
pub fn find(v: &serde_json::Value, keys: &[&str]) -> Option<f64> {
    match v {
        serde_json::Value::Object(m) => keys
            .iter()
            .find_map(|k| m.get(*k).and_then(serde_json::Value::as_f64))
            .or_else(|| m.values().find_map(|c| find(c, keys))),
        serde_json::Value::Array(a) => a.iter().find_map(|c| find(c, keys)),
        _ => None,
    }
}

/// The load generator's report of one point.
pub fn load_json(ran: &Ran) -> Result<serde_json::Value, String> {
    let path = ran.dir.join("load.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Rows of the named numbers of `json` (every one must be there: a missing one fails the
/// point rather than being guessed).
pub fn rows(
    exp: &str,
    series: &str,
    x: f64,
    json: &serde_json::Value,
    wanted: &[(&str, &[&str], f64)],
) -> Result<Vec<Row>, String> {
    wanted
        .iter()
        .map(|(metric, keys, scale)| {
            let v = find(json, keys).ok_or_else(|| format!("load.json has none of {keys:?}"))?;
            Ok(Row {
                experiment: exp.into(),
                series: series.into(),
                x,
                rep: 0,
                metric: metric.to_string(),
                value: Some(v * scale),
                status: Status::Ok,
                note: String::new(),
            })
        })
        .collect()
}

/// The number of completed requests in `json`.
pub const REQUESTS: &[&str] = &["requests_ok", "completed", "ok", "responses", "requests"];
/// Achieved throughput.
pub const THROUGHPUT: &[&str] = &["achieved_rps", "achieved_rate", "throughput_rps", "throughput", "rps"];
/// Errors of every kind.
pub const ERRORS: &[&str] = &["errors_total", "errors"];

#[cfg(test)]
mod tests {
    #[test]
    fn finds_numbers_by_any_name_at_any_depth_and_never_guesses() {
        let v: serde_json::Value = serde_json::from_str(
            r#"{"config":{"rate":5},"result":{"throughput_rps":1234.5,"latency_ms":{"p99":0.4}}}"#,
        )
        .unwrap();
        assert_eq!(super::find(&v, super::THROUGHPUT), Some(1234.5));
        assert_eq!(super::find(&v, &["p99"]), Some(0.4));
        let rows = super::rows(
            "E1",
            "nginx",
            0.0,
            &v,
            &[("rps", super::THROUGHPUT, 1.0), ("p50_ms", &["p50"], 1.0)],
        );
        assert!(rows.unwrap_err().contains("p50"));
    }
}
