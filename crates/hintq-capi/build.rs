//! Writes `hintq.pc` beside `libhintq.so` and `libhintq.a` (target/<profile>/), so that
//! `PKG_CONFIG_PATH=target/<profile> pkg-config --cflags --libs hintq` gives a C program
//! the header directory of this crate and `-L<that dir> -lhintq`.
//!
//! Cargo gives build scripts only `OUT_DIR` (target/<profile>/build/<pkg>-<hash>/out); the
//! profile directory, where Cargo puts the libraries, is three levels above it. An install
//! step (a distribution package, cargo-c) would write its own `.pc` with its own paths.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    println!("cargo:rerun-if-changed=hintq.pc.in");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let libdir = out.ancestors().nth(3).expect("OUT_DIR is target/<profile>/build/<pkg>/out");
    let template = fs::read_to_string(manifest.join("hintq.pc.in")).expect("hintq.pc.in");
    let pc = template
        .replace("@LIBDIR@", &path_str(libdir))
        .replace("@INCLUDEDIR@", &path_str(&manifest.join("include")))
        .replace("@VERSION@", &env::var("CARGO_PKG_VERSION").expect("set by cargo"));
    fs::write(libdir.join("hintq.pc"), pc).expect("writing hintq.pc");
}

fn path_str(p: &Path) -> String {
    let s = p.to_str().expect("a UTF-8 path");
    assert!(!s.contains(char::is_whitespace), "pkg-config paths cannot hold blanks: {s:?}");
    s.to_string()
}
