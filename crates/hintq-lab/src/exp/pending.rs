//! E6, E7, E8: their tools are being built (`hintq bench patterns`, `hintq bench gooch`,
//! `hintq bench rtsig`). Until the lab has a reader for their output they are reported as not
//! run, saying what they need: the lab never reports a number it did not measure.

use super::{Analysis, Experiment, Lab};
use crate::data::Row;
use crate::runner::Point;

macro_rules! pending {
    ($name:ident, $id:literal, $sub:literal, $title:literal, $paper:literal, $claim:literal) => {
        #[doc = concat!($id, ": ", $title, " (", $paper, ").")]
        pub struct $name;

        impl Experiment for $name {
            fn id(&self) -> &'static str {
                $id
            }
            fn title(&self) -> &'static str {
                $title
            }
            fn paper(&self) -> &'static str {
                $paper
            }
            fn claim(&self) -> &'static str {
                $claim
            }
            fn needs(&self, lab: &Lab) -> Result<(), String> {
                lab.need(&["bench", $sub])?;
                Err(format!("needs the lab's reader of `hintq bench {}` output (not written yet)", $sub))
            }
            fn plan(&self, _: &Lab) -> Vec<Point> {
                Vec::new()
            }
            fn analyse(&self, _: &[Row]) -> Analysis {
                Analysis {
                    panels: Vec::new(),
                    ours: String::new(),
                    holds: String::new(),
                    reading: Vec::new(),
                    metrics: Vec::new(),
                }
            }
        }
    };
}

pending!(
    E6,
    "E6",
    "patterns",
    "patterns x backends x threads, 512 request/response connections",
    "Strebelow & Prehofer Figs. 6-13",
    "Leader/Followers and the reactor scale differently with threads; edge-triggered epoll saves the re-activation cost."
);
pending!(
    E7,
    "E7",
    "gooch",
    "poll cost per idle descriptor; active/inactive migration",
    "Gooch 1998",
    "poll costs about 3 µs per descriptor per call (Pentium 100); splitting active from inactive descriptors removes most of it."
);
pending!(
    E8,
    "E8",
    "rtsig",
    "RT signals vs poll vs io_uring; queue overflow; hybrid switching",
    "Provos & Lever §4-6",
    "RT signals beat poll with many idle connections but overflow under load; a hybrid that falls back to polling keeps throughput."
);
