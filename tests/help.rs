//! Every help text of the binary, hidden subcommands included, is checked for two faults a
//! reader trips on: a default given twice (`[default: 0, off] [default: 0]`: clap adds one
//! to a text that already says it) and a flag the text mentions that its command does not
//! have (`--foo` advised where it would be refused). The texts come from the command tree
//! itself (`Cli::command()`), rendered as `--help` renders them.

use clap::CommandFactory;
use hintq_cli::Cli;
use std::collections::BTreeSet;
use std::process::Command;

/// Every subcommand path (`bench floor`), hidden ones included, depth first (not clap's
/// generated `help` subcommands).
fn commands() -> Vec<String> {
    fn walk(cmd: &clap::Command, path: &str, all: &mut Vec<String>) {
        for sub in cmd.get_subcommands() {
            let p = format!("{path}{}", sub.get_name());
            all.push(p.clone());
            walk(sub, &format!("{p} "), all);
        }
    }
    let mut all = Vec::new();
    walk(&Cli::command(), "", &mut all);
    assert!(all.iter().any(|c| c == "bench floor") && all.iter().any(|c| c == "__load-worker"), "{all:?}");
    all
}

/// The help of `path` (empty: the top level), exactly as `hintq PATH --help` prints it:
/// clap's parser answers `--help` with the text as an error to display.
fn help(path: &str) -> String {
    let args = std::iter::once("hintq").chain(path.split_whitespace()).chain(["--help"]);
    let e = Cli::command().try_get_matches_from(args).err().unwrap_or_else(|| panic!("hintq {path} --help"));
    assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp, "hintq {path} --help: {e}");
    e.render().to_string()
}

/// The flags a help text lists as its own: the lines of its options that start with `-`.
fn defined(help: &str) -> BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .flat_map(|l| l.split([',', ' ', '=', '<', '[']).filter(|w| w.starts_with("--")).map(str::to_string))
        .collect()
}

/// `--flags` written in `text` (a hyphenated word such as `keep-alive` is no flag).
fn mentioned(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let b = text.as_bytes();
    for (i, _) in text.match_indices("--") {
        let before = if i > 0 { b[i - 1] } else { b' ' };
        let rest = &text[i + 2..];
        let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).unwrap_or(rest.len());
        let name = rest[..len].trim_end_matches('-');
        if !before.is_ascii_alphanumeric()
            && before != b'-'
            && name.starts_with(|c: char| c.is_ascii_lowercase())
        {
            found.insert(format!("--{name}"));
        }
    }
    found
}

/// The help without its list of subcommands (their summaries speak of the subcommands'
/// flags, and each is checked in the subcommand's own help).
fn own_text(help: &str) -> String {
    let mut keep = true;
    let mut out = String::new();
    for line in help.lines() {
        if line == "Commands:" {
            keep = false;
        } else if !line.starts_with(' ') && !line.is_empty() {
            keep = true;
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The help's entries, one per argument: from a line starting with `-` or `<` (after the
/// indent) to the next such line or the next section.
fn entries(help: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    let mut open = false;
    for line in help.lines() {
        let t = line.trim_start();
        if line.starts_with("  ") && (t.starts_with('-') || t.starts_with('<')) {
            all.push(String::new());
            open = true;
        } else if !line.starts_with(' ') && !line.is_empty() {
            open = false;
        }
        if let Some(e) = all.last_mut().filter(|_| open) {
            e.push_str(line);
            e.push('\n');
        }
    }
    all
}

#[test]
fn no_help_text_gives_a_default_twice() {
    let mut faults = Vec::new();
    for path in std::iter::once(String::new()).chain(commands()) {
        let text = help(&path);
        let entries = entries(&text);
        assert!(!entries.is_empty() && entries.iter().any(|e| e.contains("--help")), "{text}");
        for e in entries.iter().filter(|e| e.matches("[default:").count() > 1) {
            faults.push(format!("hintq {path}: {}", e.trim()));
        }
    }
    assert!(faults.is_empty(), "defaults given twice:\n{}", faults.join("\n"));
}

#[test]
fn every_flag_a_help_text_mentions_exists_on_its_command() {
    let mut faults = Vec::new();
    for path in std::iter::once(String::new()).chain(commands()) {
        let text = help(&path);
        let own = defined(&text);
        for flag in mentioned(&own_text(&text)).difference(&own) {
            faults.push(format!("hintq {path} --help mentions {flag}, which it does not have"));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// A command's summary, in the list of its parent's subcommands, fits on a line: the rest of
/// what it says belongs in its own `--help`.
#[test]
fn every_command_summary_fits_on_a_line() {
    for path in std::iter::once(String::new()).chain(commands()) {
        let text = help(&path);
        let Some(list) = text.split("Commands:\n").nth(1) else { continue };
        for line in list.split("\n\n").next().unwrap().lines() {
            assert!(line.chars().count() <= 100, "hintq {path} --help: a summary runs on:\n{line}");
        }
    }
}

/// `hintq lab peer-bench` repeats one point of E9 by hand, as the README shows: it is listed.
#[test]
fn lab_peer_bench_is_listed() {
    let lab = help("lab");
    assert!(lab.contains("\n  peer-bench  E9's point by hand"), "{lab}");
}

/// `bench floor --relay` still needs `--listen`: the help says so and the error names it.
#[test]
fn bench_floor_says_relay_needs_listen() {
    let floor = help("bench floor");
    assert!(floor.contains("--listen is needed either way"), "{floor}");
    assert!(floor.contains("hintq bench floor --listen 127.0.0.1:8081 --relay 127.0.0.1:8080"), "{floor}");
    let out = Command::new(env!("CARGO_BIN_EXE_hintq"))
        .args(["bench", "floor", "--relay", "127.0.0.1:8080"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("required arguments were not provided:\n  --listen <ADDR>"), "{err}");
}

/// The rendered texts are the binary's own: `hintq bench floor --help` prints what
/// [`help`] renders.
#[test]
fn rendered_help_is_what_the_binary_prints() {
    for path in ["", "load", "bench floor"] {
        let args: Vec<&str> = path.split_whitespace().chain(["--help"]).collect();
        let out = Command::new(env!("CARGO_BIN_EXE_hintq")).args(&args).output().unwrap();
        assert!(out.status.success(), "hintq {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), help(path), "hintq {path} --help");
    }
}

/// The checks see what they look for (else the tests above could not fail).
#[test]
fn the_checks_find_their_faults() {
    let text =
        "About --nope and keep-alive, see `--yes`\n\nOptions:\n      --yes <N>  Yes [default: 1]\n          \
                [default: 1]\n  -h, --help  Print help\n";
    assert_eq!(defined(text), ["--help", "--yes"].map(String::from).into());
    assert_eq!(mentioned(&own_text(text)), ["--help", "--nope", "--yes"].map(String::from).into());
    let e = entries(text);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[0].matches("[default:").count(), 2, "{e:?}");
}
