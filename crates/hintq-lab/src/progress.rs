//! The progress line: experiment, point and time left, drawn only on a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// A progress bar over the estimated seconds of every planned point (hidden unless stderr is
/// a terminal; then plain lines go to stderr instead).
pub struct Progress {
    bar: ProgressBar,
    shown: bool,
}

impl Progress {
    /// A bar of `total` estimated time.
    pub fn new(total: Duration) -> Progress {
        let shown = std::io::stderr().is_terminal();
        let bar = ProgressBar::with_draw_target(
            Some(total.as_millis().max(1) as u64),
            if shown { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() },
        );
        let style =
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} about {eta} left  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(250));
        Progress { bar, shown }
    }

    /// Shows which point runs.
    pub fn point(&self, experiment: &str, name: &str, attempt: u32) {
        let again = if attempt > 0 { " (again: disturbed)" } else { "" };
        self.bar.set_message(format!("{experiment} {name}{again}"));
    }

    /// Counts `estimate` of work done.
    pub fn done(&self, estimate: Duration) {
        self.bar.inc(estimate.as_millis() as u64);
    }

    /// A line above the bar (or on stderr when there is no bar).
    pub fn println(&self, line: &str) {
        if self.shown {
            self.bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
