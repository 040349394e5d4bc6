//! [`AccessLog`]: the optional access log (Common Log Format), off unless asked for.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The access log: one Common Log Format line per response,
/// `127.0.0.1 - - [22/Nov/2026:13:47:30 +0000] "GET /a.html HTTP/1.1" 200 1024`.
/// Lines are written whole under a lock (threads never interleave inside a line) and flushed
/// per line, so `tail -f` sees them at once.
pub struct AccessLog {
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessLog")
    }
}

impl AccessLog {
    /// `-` for standard output, else a file opened for appending (created if missing).
    ///
    /// # Errors
    /// Opening the file.
    pub fn open(spec: &str) -> io::Result<AccessLog> {
        let out: Box<dyn Write + Send> = if spec == "-" {
            Box::new(io::stdout())
        } else {
            Box::new(std::fs::OpenOptions::new().create(true).append(true).open(spec)?)
        };
        Ok(AccessLog { out: Mutex::new(out) })
    }

    /// Logs one response. `request` is the request line as received (method, target, version).
    pub fn log(&self, peer: Option<SocketAddr>, request: &str, status: u16, bytes: u64) {
        let mut line = String::with_capacity(128);
        match peer {
            Some(p) => {
                let _ = write!(line, "{}", p.ip());
            }
            None => line.push('-'),
        }
        let _ = writeln!(
            line,
            " - - [{}] \"{}\" {status} {bytes}",
            clf_time(SystemTime::now()),
            request.escape_default()
        );
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
    }
}

/// `22/Nov/2026:13:47:30 +0000` (UTC): the fields of the IMF-fixdate that
/// [`hintq_http::http_date`] writes for the Date header (`Sun, 22 Nov 2026 13:47:30 GMT`), in
/// the Common Log Format's order, so that no second calendar routine is needed.
fn clf_time(t: SystemTime) -> String {
    let imf = hintq_http::http_date(t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs());
    let imf = std::str::from_utf8(&imf).unwrap_or_default();
    match imf.split(' ').collect::<Vec<_>>()[..] {
        [_, day, month, year, time, _] => format!("{day}/{month}/{year}:{time} +0000"),
        _ => imf.to_owned(), // not reached: http_date writes IMF-fixdate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn clf_dates() {
        assert_eq!(clf_time(UNIX_EPOCH), "01/Jan/1970:00:00:00 +0000");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_355_250);
        assert_eq!(clf_time(t), "22/Nov/2026:13:47:30 +0000");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(clf_time(leap), "29/Feb/2000:00:00:00 +0000");
    }
}
