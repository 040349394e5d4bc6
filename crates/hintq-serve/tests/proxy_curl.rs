//! A client no one here wrote: `curl` through `hintq proxy`, in front of `hintq serve` for
//! downloads and of a fake origin that checksums uploads, on every backend and pattern.
//! Status and bytes are checked. Skips (saying why) when curl is not installed.

mod proxy_util;
mod tools;

use hintq_patterns::Config as PatternConfig;
use hintq_serve::serve::{self, ServeConfig};
use proxy_util::*;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn curl(args: &[&str]) -> (String, Vec<u8>) {
    let out = Command::new("curl").args(["-sS", "--max-time", "20"]).args(args).output().expect("run curl");
    assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8_lossy(&out.stderr).into_owned(), out.stdout)
}

#[test]
fn curl_through_the_proxy_downloads_and_uploads_byte_exact() {
    if Command::new("curl").arg("--version").output().is_err() {
        tools::missing("curl_through_the_proxy: curl is not installed (.ci/run installs it)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("hintq-proxy-curl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = pattern_bytes(3 << 20, 9);
    std::fs::write(dir.join("big.bin"), &big).unwrap();
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    let upload = dir.join("upload.bin");
    std::fs::write(&upload, pattern_bytes(2 << 20, 11)).unwrap();
    let up_sum = checksum(&std::fs::read(&upload).unwrap());

    let echo = Fake::start(|g, s| {
        let text = format!("{:?} {} {}", g.framing, g.body.len(), checksum(&g.body));
        s.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{text}", text.len()).as_bytes())
            .unwrap();
        After::Keep
    });
    for (b, p) in combos() {
        eprintln!("curl on {b}/{p}");
        let server = serve::start(
            ServeConfig::new(&dir),
            PatternConfig::new(hintq_patterns::Pattern::Reactor, 1, b, "127.0.0.1:0".parse().unwrap()),
        )
        .expect("hintq serve");
        let px =
            start_proxy_with(server.local_addr(), b, p, |c| c.upstream_timeout = Duration::from_secs(10));
        let base = format!("http://{}", px.local_addr());

        let (_, body) = curl(&["-w", "\n%{http_code}", &format!("{base}/a.txt")]);
        assert_eq!(String::from_utf8_lossy(&body), "alpha\n\n200");
        let out = dir.join(format!("out-{b}-{p}.bin"));
        let (_, code) =
            curl(&["-o", out.to_str().unwrap(), "-w", "%{http_code}", &format!("{base}/big.bin")]);
        assert_eq!(String::from_utf8_lossy(&code), "200");
        assert_eq!(checksum(&std::fs::read(&out).unwrap()), checksum(&big), "download changed");
        std::fs::remove_file(&out).unwrap();
        let (_, head) = curl(&["-I", &format!("{base}/big.bin")]);
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.contains(&format!("Content-Length: {}", big.len())) && head.contains("Via: 1.1 hintq"),
            "{head}"
        );
        let (_, missing) = curl(&["-o", "/dev/null", "-w", "%{http_code}", &format!("{base}/nope")]);
        assert_eq!(String::from_utf8_lossy(&missing), "404");
        drop(px);
        server.shutdown();

        // Uploads: curl sends `Expect: 100-continue` for a body this large (P8 with a real
        // client), and chunked when told to.
        let px = start_proxy_with(echo.addr, b, p, |c| c.upstream_timeout = Duration::from_secs(10));
        let url = format!("http://{}/up", px.local_addr());
        let file = format!("@{}", upload.display());
        let (_, body) = curl(&["--data-binary", &file, &url]);
        assert_eq!(String::from_utf8_lossy(&body), format!("Length({}) {} {up_sum}", 2 << 20, 2 << 20));
        let (_, body) = curl(&["-H", "Transfer-Encoding: chunked", "--data-binary", &file, &url]);
        assert_eq!(String::from_utf8_lossy(&body), format!("Chunked {} {up_sum}", 2 << 20));
    }
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
