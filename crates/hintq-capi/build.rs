//! Gives `libhintq.so` its SONAME (`libhintq.so.0.<minor>` while the major version is 0, as
//! cargo-c does, since a 0.x minor release may break the ABI; `libhintq.so.<major>` after),
//! and writes, beside the libraries in target/<profile>/, the link `<SONAME> -> libhintq.so`
//! that programs linked there look for at run time, and `hintq.pc`, so that
//! `PKG_CONFIG_PATH=target/<profile> pkg-config --cflags --libs hintq` gives a C program
//! in this tree the header directory of this crate and `-L<that dir> -lhintq`; and
//! `hintq-static.pc`, whose `pkg-config --static --libs hintq-static` links `libhintq.a`.
//!
//! That `.pc` is for the tests of this tree: `install.sh` installs the libraries, the header
//! and a `.pc` naming the install prefix, from the same template.
//!
//! Cargo gives build scripts only `OUT_DIR` (target/<profile>/build/<pkg>-<hash>/out); the
//! profile directory, where Cargo puts the libraries, is three levels above it.

use std::path::{Path, PathBuf};
use std::{env, fs};

/// The two `.pc` files made from `hintq.pc.in` (install.sh makes the same): their names and
/// how each links the library.
const PC_FILES: [(&str, &str); 2] = [("hintq", "-lhintq"), ("hintq-static", "-l:libhintq.a")];

fn main() {
    println!("cargo:rerun-if-changed=hintq.pc.in");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let libdir = out.ancestors().nth(3).expect("OUT_DIR is target/<profile>/build/<pkg>/out");
    let template = fs::read_to_string(manifest.join("hintq.pc.in")).expect("hintq.pc.in");
    for (name, link) in PC_FILES {
        let pc = template
            .replace("@NAME@", name)
            .replace("@LINK@", link)
            .replace("@LIBDIR@", &path_str(libdir))
            .replace("@INCLUDEDIR@", &path_str(&manifest.join("include")))
            .replace("@VERSION@", &env::var("CARGO_PKG_VERSION").expect("set by cargo"));
        fs::write(libdir.join(format!("{name}.pc")), pc).expect("writing the .pc files");
    }

    let soname = soname();
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    let link = libdir.join(&soname);
    if fs::read_link(&link).ok().as_deref() != Some(Path::new("libhintq.so")) {
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink("libhintq.so", &link).expect("linking the SONAME to libhintq.so");
    }
}

/// `libhintq.so.0.<minor>` for 0.x versions, `libhintq.so.<major>` after (install.sh names
/// the same).
fn soname() -> String {
    let major = env::var("CARGO_PKG_VERSION_MAJOR").expect("set by cargo");
    let minor = env::var("CARGO_PKG_VERSION_MINOR").expect("set by cargo");
    match major.as_str() {
        "0" => format!("libhintq.so.0.{minor}"),
        _ => format!("libhintq.so.{major}"),
    }
}

fn path_str(p: &Path) -> String {
    let s = p.to_str().expect("a UTF-8 path");
    assert!(!s.contains(char::is_whitespace), "pkg-config paths cannot hold blanks: {s:?}");
    s.to_string()
}
