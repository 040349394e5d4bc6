//! An independent parser checks what `hintq proxy` sends: Python's `h11` must accept every
//! response byte stream the proxy produces (a normal GET, HEAD, a chunked upstream body with
//! a trailer, a close-delimited one, 404, 204, 304 from the upstream, `Expect: 100-continue`,
//! a chunked request body, pipelining, HTTP/1.0, `502` with the upstream down, `504` on the
//! upstream timeout, `400` for ambiguous framing), with the statuses and bodies expected, on
//! every supported backend × every pattern the proxy offers. The cases are in
//! `tests/py/h11_proxy_check.py`. Without `python3` and `h11` the test says so and skips;
//! `.ci/run` installs them.

mod proxy_util;
mod tools;

use proxy_util::*;
use std::io::Write;
use std::process::Command;

fn have_h11() -> bool {
    let ok = Command::new("python3").args(["-c", "import h11"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        tools::missing("python3 with h11 is not available (python3 -m pip install h11)");
    }
    ok
}

#[test]
fn h11_accepts_every_response_through_the_proxy() {
    if !have_h11() {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/h11_proxy_check.py");
    let fake = Fake::start(|g, s| {
        let bytes: Vec<u8> = match (g.method.as_str(), g.target.as_str()) {
            ("HEAD", "/head") => b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec(),
            (_, "/chunked") => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                5\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n"
                .to_vec(),
            (_, "/close") => {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close");
                return After::Close;
            }
            (_, "/missing") => {
                b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nnot found"
                    .to_vec()
            }
            (_, "/204") => b"HTTP/1.1 204 No Content\r\n\r\n".to_vec(),
            (_, "/304") => b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n".to_vec(),
            (_, "/upload") => {
                let body = format!("got {}", g.body.len());
                format!("HTTP/1.1 201 Created\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
            }
            (_, "/silent") => {
                std::thread::sleep(UPSTREAM_TIMEOUT * 3);
                return After::Close;
            }
            _ => b"HTTP/1.1 500 Unexpected\r\nContent-Length: 0\r\n\r\n".to_vec(),
        };
        let _ = s.write_all(&bytes);
        After::Keep
    });
    let refusing = hintq_testkit::Refusing::new(); // bound, never listening, for the whole test
    let down = refusing.addr;
    let mut ran = 0;
    for (b, p) in combos() {
        let up = start_proxy(fake.addr, b, p);
        let gone = start_proxy(down, b, p);
        let out = Command::new("python3")
            .arg(script)
            .arg(up.local_addr().port().to_string())
            .arg(gone.local_addr().port().to_string())
            .output()
            .unwrap();
        let report =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        eprintln!("h11 through the proxy on {b}/{p}:\n{report}");
        assert!(out.status.success(), "{b}/{p}: h11 refused a response of the proxy:\n{report}");
        assert_eq!(report.lines().filter(|l| l.starts_with("ok ")).count(), 16, "{b}/{p}: every case ran");
        // The 504 and 502 cases were answered by the proxy, not by chance.
        assert_eq!(up.stats().gateway_timeout, 1, "{b}/{p}");
        assert_eq!(gone.stats().bad_gateway, 2, "{b}/{p}");
        still_serves(&up);
        ran += 1;
    }
    assert!(ran >= 2, "at least epoll and uring (or what this kernel supports) ran");
}
