//! Outside programs the tests drive (curl, httperf, python3 with h11).

/// A program a test needs is missing: the test is skipped, saying why, unless
/// `HINTQ_REQUIRE_TOOLS` is set, as `.ci/run` sets it after installing them; there a skip
/// would let the test pass without checking anything, so it fails instead.
pub fn missing(what: &str) {
    assert!(std::env::var_os("HINTQ_REQUIRE_TOOLS").is_none(), "{what}, and HINTQ_REQUIRE_TOOLS is set");
    eprintln!("SKIP: {what}");
}
