//! `install.sh` installs a library a C program can use without this source tree: the
//! program is compiled with the flags `pkg-config` finds under the prefix, runs against the
//! installed shared library found through its SONAME, and the installed `.pc` names only
//! the prefix; linked with `pkg-config --static --libs hintq-static`, it needs no
//! `libhintq.so` at all.

mod common;

use common::{assert_success, lib_dir, Checker};
use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert_success(&format!("{cmd:?}"), &out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn installed_copy_serves_a_c_program_through_pkg_config() {
    if !common::can_build_c() {
        return;
    }
    let built = lib_dir();
    let profile = match built.file_name().and_then(|p| p.to_str()).unwrap() {
        "debug" => "dev".to_string(),
        other => other.to_string(),
    };
    let prefix = built.join("install-test");
    let _ = std::fs::remove_dir_all(&prefix);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh");
    run(Command::new(&script)
        .arg("--prefix")
        .arg(&prefix)
        .args(["--profile", &profile])
        .env("CARGO_TARGET_DIR", built.parent().unwrap()));

    let libdir = prefix.join("lib");
    let installed = [
        "libhintq.so.0.1.0",
        "libhintq.so.0.1",
        "libhintq.so",
        "libhintq.a",
        "pkgconfig/hintq.pc",
        "pkgconfig/hintq-static.pc",
    ];
    for f in installed {
        assert!(libdir.join(f).exists(), "{f} not installed");
    }
    assert!(prefix.join("include/hintq.h").exists(), "hintq.h not installed");
    for pc in ["hintq.pc", "hintq-static.pc"] {
        let pc = std::fs::read_to_string(libdir.join("pkgconfig").join(pc)).unwrap();
        let target = built.parent().unwrap().to_str().unwrap();
        assert!(
            !pc.replace(prefix.to_str().unwrap(), "PREFIX").contains(target),
            "the .pc points into {target}:\n{pc}"
        );
    }

    // Compiled with only what pkg-config says, and an rpath to the installed libraries.
    let flags: Vec<String> = run(Command::new("pkg-config")
        .args(["--cflags", "--libs", "hintq"])
        .env("PKG_CONFIG_PATH", libdir.join("pkgconfig")))
    .split_whitespace()
    .map(String::from)
    .collect();
    assert!(flags.contains(&format!("-I{}", prefix.join("include").display())), "{flags:?}");
    let exe = prefix.join("api");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/api.c");
    run(Command::new("cc")
        .args(["-g", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .args(&flags)
        .arg(format!("-Wl,-rpath,{}", libdir.display())));

    let needed = run(Command::new("readelf").arg("-d").arg(&exe));
    assert!(needed.contains("Shared library: [libhintq.so.0.1]"), "not linked by SONAME:\n{needed}");
    let ldd = run(Command::new("ldd").arg(&exe).env_remove("LD_LIBRARY_PATH"));
    let resolved = format!("libhintq.so.0.1 => {}", libdir.join("libhintq.so.0.1").display());
    assert!(ldd.contains(&resolved), "{resolved:?} not in:\n{ldd}");

    let out =
        Checker::Plain.command(&exe).args(["epoll", "poll"]).env_remove("LD_LIBRARY_PATH").output().unwrap();
    assert_success("api against the installed library", &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok hq_queue poll"));

    // Statically, with the documented command: the same program, and no libhintq.so.
    let flags: Vec<String> = run(Command::new("pkg-config")
        .args(["--static", "--cflags", "--libs", "hintq-static"])
        .env("PKG_CONFIG_PATH", libdir.join("pkgconfig")))
    .split_whitespace()
    .map(String::from)
    .collect();
    let exe = prefix.join("api-static");
    run(Command::new("cc")
        .args(["-g", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .args(&flags));
    let needed = run(Command::new("readelf").arg("-d").arg(&exe));
    assert!(!needed.contains("libhintq"), "a static link needs no libhintq:\n{needed}");
    let ldd = run(Command::new("ldd").arg(&exe).env_remove("LD_LIBRARY_PATH"));
    assert!(!ldd.contains("libhintq"), "{ldd}");
    let out =
        Checker::Plain.command(&exe).args(["epoll", "poll"]).env_remove("LD_LIBRARY_PATH").output().unwrap();
    assert_success("api linked statically", &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok hq_queue poll"));
}
