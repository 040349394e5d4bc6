//! `--stats`: the runtime's counters per thread as JSON, the field names those of
//! [`Counters`] (the lab and scripts read them).

use hintq_patterns::Counters;

/// The runtime's counters per thread as JSON (`--stats`): `threads`, one object per thread
/// with every field of [`Counters`] (times in ns), and `array_max`.
pub fn stats_json(array_max: usize, counters: &[Counters]) -> String {
    #[derive(serde::Serialize)]
    struct Thread<'a> {
        thread: usize,
        #[serde(flatten)]
        counters: &'a Counters,
    }
    #[derive(serde::Serialize)]
    struct Stats<'a> {
        array_max: usize,
        threads: Vec<Thread<'a>>,
    }
    let threads = counters.iter().enumerate().map(|(thread, counters)| Thread { thread, counters }).collect();
    let mut s = serde_json::to_string_pretty(&Stats { array_max, threads }).expect("counters serialize");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_of_every_thread_under_its_name() {
        let mut c = Counters::default();
        (c.waits, c.ready_ns) = (3, 7);
        let json = stats_json(4, &[c, Counters::default()]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["array_max"], 4, "{json}");
        let threads = v["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 2, "{json}");
        assert_eq!((&threads[0]["thread"], &threads[1]["thread"]), (&0.into(), &1.into()), "{json}");
        assert_eq!((&threads[0]["waits"], &threads[0]["ready_ns"]), (&3.into(), &7.into()), "{json}");
        // Every counter, under the names scripts and the lab read.
        for k in [
            "handled",
            "accepted",
            "closed",
            "wait_ns",
            "events",
            "most_events",
            "ready_waits",
            "ready_events",
            "blocked_waits",
            "blocked_ns",
            "declares",
            "declare_ns",
            "declares_new",
            "declare_new_ns",
            "revokes",
            "revoke_ns",
            "inserts",
            "insert_ns",
            "rearms",
            "rearm_ns",
            "busy_ns",
            "wait_errors",
            "interest_errors",
            "again",
        ] {
            assert_eq!(threads[1][k], 0, "{k} in {json}");
        }
    }
}
