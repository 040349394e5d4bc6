//! Real clients no one here wrote, against `hintq serve` on every backend × pattern: `curl`
//! (status and bytes), Python's `h11` (accepts every response we produce, errors and pipelined
//! ones included) and `httperf`. A tool that is missing is a printed skip, not a failure;
//! `.ci/run` installs all three.

mod support;
mod tools;

use hintq::Backend;
use hintq_patterns::Pattern;
use std::process::Command;
use support::Srv;

/// The patterns every client test runs on, each on every backend: those whose threads own
/// their queue and listener here; the pool patterns in `clients_on_the_other_patterns`.
const PATTERNS: [Pattern; 2] = [Pattern::Reactor, Pattern::Sharded];
const OTHER_PATTERNS: [Pattern; 3] = [Pattern::LeaderFollowers, Pattern::HalfSync, Pattern::ShardedShared];

/// Every backend on `patterns`, where this kernel and the pattern accept it.
fn servers<'a>(case: &'a str, patterns: &'a [Pattern]) -> impl Iterator<Item = Srv> + 'a {
    patterns.iter().flat_map(move |&p| Backend::ALL.into_iter().filter_map(move |b| Srv::start(b, p, case)))
}

fn have(tool: &str, args: &[&str]) -> bool {
    let ok = Command::new(tool).args(args).output().is_ok_and(|o| o.status.success());
    if !ok {
        tools::missing(&format!("`{tool} {}` failed", args.join(" ")));
    }
    ok
}

#[test]
fn curl_fetches_files_byte_exact() {
    curl(&PATTERNS);
}

#[test]
fn h11_accepts_every_response() {
    h11(&PATTERNS);
}

/// Regression for the hintq-patterns race of a reused descriptor (see tests/rows.rs).
#[test]
fn clients_on_the_other_patterns() {
    curl(&OTHER_PATTERNS);
    h11(&OTHER_PATTERNS);
}

fn curl(patterns: &[Pattern]) {
    if !have("curl", &["--version"]) {
        return;
    }
    for srv in servers("curl", patterns) {
        let base = format!("http://{}", srv.addr);
        let out_dir = srv.root.dir.join("curl");
        std::fs::create_dir_all(&out_dir).unwrap();
        // One curl, several URLs: they share one keep-alive connection.
        let o = Command::new("curl")
            .args(["-sS", "--fail", "-w", "%{http_code} %{num_connects}\\n"])
            .args(["-o", out_dir.join("a").to_str().unwrap(), &format!("{base}/a.txt")])
            .args(["-o", out_dir.join("big").to_str().unwrap(), &format!("{base}/big.bin")])
            .args(["-o", out_dir.join("index").to_str().unwrap(), &format!("{base}/sub/")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: curl: {}", srv.combo(), String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "200 1\n200 0\n200 0\n",
            "statuses, one connection reused"
        );
        assert_eq!(std::fs::read(out_dir.join("a")).unwrap(), b"alpha\n");
        assert!(std::fs::read(out_dir.join("big")).unwrap() == support::big_bytes(), "big.bin byte-exact");
        assert_eq!(std::fs::read(out_dir.join("index")).unwrap(), b"<p>sub</p>\n");
        let o = Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--path-as-is"])
            .arg(format!("{base}/../secret.txt"))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), "400");
        let o = Command::new("curl")
            .args(["-sS", "-I", "-w", "%{http_code}"])
            .arg(format!("{base}/1k.bin"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_ascii_lowercase();
        assert!(text.contains("content-length: 1024") && text.ends_with("200"), "{text}");
        curl_conditional_and_ranges(&srv, &base, &out_dir);
    }
}

/// Runs curl with `args`; returns its `-w` output (it must exit 0).
fn curl_out(srv: &Srv, args: &[&str]) -> String {
    let o = Command::new("curl").args(["-sS", "--max-time", "20"]).args(args).output().unwrap();
    assert!(o.status.success(), "{}: curl {args:?}: {}", srv.combo(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `curl --range`, `-z`, `--etag-save`/`--etag-compare` and `-L` through a directory redirect.
fn curl_conditional_and_ranges(srv: &Srv, base: &str, out_dir: &std::path::Path) {
    let combo = srv.combo();
    let file = |name: &str| out_dir.join(name).to_str().unwrap().to_string();
    let big = support::big_bytes();
    let url = format!("{base}/big.bin");
    let code = curl_out(srv, &["--range", "10-99", "-o", &file("r1"), "-w", "%{http_code}", &url]);
    assert_eq!(code, "206", "{combo}");
    assert!(std::fs::read(file("r1")).unwrap() == big[10..100], "{combo}: range 10-99 byte-exact");
    let code = curl_out(srv, &["--range", "-1000", "-o", &file("r2"), "-w", "%{http_code}", &url]);
    assert_eq!(code, "206", "{combo}");
    assert!(std::fs::read(file("r2")).unwrap() == big[big.len() - 1000..], "{combo}: suffix range");
    // Resuming a download: -C - asks for the rest of a partial local file.
    std::fs::write(file("resume"), &big[..1_234_567]).unwrap();
    let code = curl_out(srv, &["-C", "-", "-o", &file("resume"), "-w", "%{http_code}", &url]);
    assert_eq!(code, "206", "{combo}");
    assert!(std::fs::read(file("resume")).unwrap() == big, "{combo}: resumed download byte-exact");
    // -z DATE: If-Modified-Since. A local file newer than the served one: 304.
    let a = format!("{base}/a.txt");
    let code =
        curl_out(srv, &["-z", "Sat, 01 Jan 2000 00:00:00 GMT", "-o", &file("z1"), "-w", "%{http_code}", &a]);
    assert_eq!((code.as_str(), std::fs::read(file("z1")).unwrap()), ("200", b"alpha\n".to_vec()), "{combo}");
    std::fs::write(file("newer"), "x").unwrap();
    let code = curl_out(srv, &["-z", &file("newer"), "-o", &file("z2"), "-w", "%{http_code}", &a]);
    assert_eq!(code, "304", "{combo}: -z with a newer local file");
    // --etag-save, then --etag-compare: If-None-Match with the saved tag gives 304.
    let code = curl_out(srv, &["--etag-save", &file("etag"), "-o", &file("e1"), "-w", "%{http_code}", &a]);
    assert_eq!(code, "200", "{combo}");
    let saved = std::fs::read_to_string(file("etag")).unwrap();
    assert!(saved.starts_with('"') && saved.trim_end().ends_with('"'), "{combo}: saved ETag {saved:?}");
    let code = curl_out(srv, &["--etag-compare", &file("etag"), "-o", &file("e2"), "-w", "%{http_code}", &a]);
    assert_eq!(code, "304", "{combo}: --etag-compare");
    std::fs::write(file("etag"), "\"stale\"\n").unwrap();
    let code = curl_out(srv, &["--etag-compare", &file("etag"), "-o", &file("e3"), "-w", "%{http_code}", &a]);
    assert_eq!((code.as_str(), std::fs::read(file("e3")).unwrap()), ("200", b"alpha\n".to_vec()), "{combo}");
    // -L through the directory redirect, query kept; //evil.com stays on this server.
    let w = "%{http_code} %{num_redirects} %{url_effective}";
    let out = curl_out(srv, &["-L", "-o", &file("d1"), "-w", w, &format!("{base}/sub?q=1")]);
    assert_eq!(out, format!("200 1 {base}/sub/?q=1"), "{combo}");
    assert_eq!(std::fs::read(file("d1")).unwrap(), b"<p>sub</p>\n");
    let out =
        curl_out(srv, &["-L", "--path-as-is", "-o", &file("d2"), "-w", w, &format!("{base}//evil.com")]);
    assert_eq!(out, format!("200 1 {base}/evil.com/"), "{combo}: never an open redirect");
    assert_eq!(std::fs::read(file("d2")).unwrap(), b"local\n");
    let code = curl_out(srv, &["-o", "/dev/null", "-w", "%{http_code}", &format!("{base}/noindex/")]);
    assert_eq!(code, "403", "{combo}: no listings");
}

fn h11(patterns: &[Pattern]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/h11_check.py");
    if !have("python3", &["-c", "import h11"]) {
        return;
    }
    for srv in servers("h11", patterns) {
        let o = Command::new("python3").arg(script).arg(srv.addr.port().to_string()).output().unwrap();
        assert!(
            o.status.success(),
            "{}: h11 refused a response: {}{}",
            srv.combo(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn httperf_sees_only_2xx() {
    if !have("httperf", &["--version"]) {
        return;
    }
    // httperf opens 20 connections one after another: the reused-descriptor issue described
    // at `PATTERNS` would reset one on the other patterns (seen on select/leader-followers).
    for srv in servers("httperf", &PATTERNS) {
        let port = srv.addr.port().to_string();
        let o = Command::new("httperf")
            .args([
                "--server",
                "127.0.0.1",
                "--port",
                &port,
                "--uri",
                "/1k.bin",
                "--num-conns",
                "20",
                "--num-calls",
                "10",
            ])
            .args(["--timeout", "5"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        let combo = srv.combo();
        assert!(text.contains("Reply status: 1xx=0 2xx=200 3xx=0 4xx=0 5xx=0"), "{combo}: {text}");
        assert!(text.contains("Errors: total 0 "), "{combo}: {text}");
    }
}
