//! `include/hintq.h` against the library: every function it declares is exported by
//! `libhintq.so`, every C symbol the library exports is declared (but `close`, which the
//! library provides in place of the C library's and `<unistd.h>` declares), and the
//! `EVENT_*` values are the core's bits.

mod common;

use hintq::{Interest, State};
use std::collections::BTreeSet;
use std::process::Command;

fn header() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/hintq.h")).expect("hintq.h")
}

/// The header without comments and preprocessor lines.
fn declarations(h: &str) -> String {
    let mut code = String::new();
    let mut rest = h;
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        rest = &rest[start + 2..];
        rest = &rest[rest.find("*/").expect("unterminated comment") + 2..];
    }
    code.push_str(rest);
    code.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n")
}

/// Names of the functions the header declares: in each `;`-terminated declaration that has
/// a parameter list, the identifier just before the first `(`.
fn declared_functions() -> BTreeSet<String> {
    declarations(&header())
        .split(';')
        .filter_map(|decl| {
            let before = &decl[..decl.find('(')?];
            let name = before.trim_end().rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).next()?;
            Some(name.to_string())
        })
        .collect()
}

/// C functions the library exports (Rust's cdylib exports only `#[no_mangle]` ones).
fn exported_functions() -> BTreeSet<String> {
    let lib = common::lib_dir().join("libhintq.so");
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(&lib).output().expect("running nm");
    assert!(out.status.success(), "nm: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "T", name] => Some(name.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn declared_functions_are_exactly_the_exported_ones() {
    let declared = declared_functions();
    for paper in ["declare_interest", "get_next_event"] {
        assert!(declared.contains(paper), "{paper} missing from hintq.h: {declared:?}");
    }
    assert!(declared.len() >= 26, "the header parser found too little: {declared:?}");
    let mut exported = exported_functions();
    assert!(exported.remove("close"), "libhintq.so does not provide close(): closing would not revoke");
    let missing: Vec<_> = declared.difference(&exported).collect();
    assert!(missing.is_empty(), "declared in hintq.h but not exported by libhintq.so: {missing:?}");
    let undeclared: Vec<_> = exported.difference(&declared).collect();
    assert!(undeclared.is_empty(), "exported by libhintq.so but not declared in hintq.h: {undeclared:?}");
}

#[test]
fn event_constants_are_the_core_bits() {
    let defines: Vec<(String, u32)> = header()
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (Some("#define"), Some(name), Some(value)) = (w.next(), w.next(), w.next()) else {
                return None;
            };
            let value = u32::from_str_radix(value.strip_prefix("0x")?, 16).ok()?;
            Some((name.to_string(), value))
        })
        .collect();
    let expected = [
        ("EVENT_READ", Interest::READ.bits()),
        ("EVENT_WRITE", Interest::WRITE.bits()),
        ("EVENT_EXCEPT", Interest::EXCEPT.bits()),
        ("EVENT_READ", State::READ.bits()),
        ("EVENT_WRITE", State::WRITE.bits()),
        ("EVENT_EXCEPT", State::EXCEPT.bits()),
        ("EVENT_HUP", State::HUP.bits()),
        ("EVENT_ERR", State::ERR.bits()),
    ];
    for (name, bits) in expected {
        let found: Vec<u32> = defines.iter().filter(|(n, _)| n == name).map(|&(_, v)| v).collect();
        assert_eq!(found, [bits], "{name} in hintq.h");
    }
    assert_eq!(defines.len(), 5, "an EVENT_ constant the core does not have: {defines:?}");
    // RECEIVE is Rust's alone: C has no call to take what the ring received.
    assert_eq!(
        (Interest::all() - Interest::RECEIVE).bits(),
        0x7,
        "the core has interest bits the header lacks"
    );
    // `State::SENT` reports a completion of `RingIo::send`, which the C API does not offer: a C
    // queue never reports it, so the header has no constant for it.
    assert_eq!((State::all() - State::SENT).bits(), 0x1f, "the core has state bits the header lacks");
}

/// `hintq.pc` points at this crate's header and at the built library.
#[test]
fn pkg_config_names_header_and_library() {
    if !common::can_build_c() {
        return;
    }
    let flags = common::pkg_config(&["--cflags", "--libs"]);
    let include = format!("-I{}", concat!(env!("CARGO_MANIFEST_DIR"), "/include"));
    let libdir = format!("-L{}", common::lib_dir().display());
    assert!(flags.contains(&include), "{flags:?} lacks {include}");
    assert!(flags.contains(&libdir), "{flags:?} lacks {libdir}");
    assert!(flags.contains(&"-lhintq".to_string()), "{flags:?} lacks -lhintq");
}
