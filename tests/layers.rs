//! The modules of the core (`crates/hintq`), the runtime (`crates/hintq-patterns`) and the
//! servers (`crates/hintq-serve`) form layers: no module uses one that uses it.
//!
//! Read from the sources, outside tests and comments: a module *uses* another when it names
//! it (`crate::m::…`, `use crate::{m, …}`, or an item the crate root re-exports from it), and
//! a backend or other child file uses its parent when it names `super::ITEM` for an item of
//! the parent's own (not a sibling module). A pair that uses each other either way fails the
//! test, with the two names.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The source a module is made of, without `#[cfg(test)]` parts and comment lines.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let before_tests = text.split("#[cfg(test)]").next().unwrap_or("");
    before_tests.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The identifiers in `text` (ASCII letters, digits, `_`) that follow `prefix`.
fn after(text: &str, prefix: &str) -> BTreeSet<String> {
    text.match_indices(prefix)
        .map(|(at, _)| {
            text[at + prefix.len()..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
        })
        .filter(|s: &String| !s.is_empty())
        .collect()
}

/// The names inside `use crate::{…}` and `use super::{…}` groups of `text` (first segment
/// of each path).
fn grouped(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in text.match_indices(prefix) {
        let rest = &text[at + prefix.len()..];
        let group = &rest[..rest.find('}').unwrap_or(0)];
        for part in group.split(',') {
            let first = part.trim().split("::").next().unwrap_or("").trim();
            if !first.is_empty() {
                out.insert(first.to_string());
            }
        }
    }
    out
}

/// A file's declared child modules (`mod x;`, `pub mod x;`, `pub(crate) mod x;`).
fn declared(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub(crate) ").or_else(|| l.strip_prefix("pub ")).unwrap_or(l);
            l.strip_prefix("mod ")?.strip_suffix(';').map(str::to_string)
        })
        .collect()
}

/// The file of child module `name` of the module in `file`.
fn child_file(file: &Path, name: &str) -> Option<PathBuf> {
    let dir = match file.file_name()?.to_str()? {
        "lib.rs" | "mod.rs" => file.parent()?.to_path_buf(),
        f => file.parent()?.join(f.strip_suffix(".rs")?),
    };
    [dir.join(format!("{name}.rs")), dir.join(name).join("mod.rs")].into_iter().find(|p| p.exists())
}

/// Every pair of one crate's modules that use each other.
fn mutual(src: &Path) -> Vec<String> {
    let lib = src.join("lib.rs");
    let root = code(&lib);
    let top = declared(&root);
    // Items the crate root re-exports, by the module they come from (`pub use m::{A, B}`).
    let mut reexported = BTreeMap::new();
    for line in root.lines().filter(|l| l.trim_start().starts_with("pub use ")) {
        let path = line.trim_start().trim_start_matches("pub use ");
        let module = path.split("::").next().unwrap_or("");
        if top.iter().any(|m| m == module) {
            for item in path.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').skip(1) {
                if item.starts_with(|c: char| c.is_ascii_uppercase()) {
                    reexported.insert(item.to_string(), module.to_string());
                }
            }
        }
    }
    // Top-level modules: what each uses of the others (its children's code counted as its own).
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut failures = Vec::new();
    for m in &top {
        let file = child_file(&lib, m).unwrap_or_else(|| panic!("{}: no file for module {m}", src.display()));
        let mut text = code(&file);
        let mut stack = vec![file.clone()];
        while let Some(f) = stack.pop() {
            let own = code(&f);
            let kids = declared(&own);
            for k in &kids {
                let Some(kf) = child_file(&f, k) else { continue };
                let kid = code(&kf);
                text.push_str(&kid);
                // The child against its parent.
                let mut ups = after(&kid, "super::");
                ups.extend(grouped(&kid, "use super::{"));
                ups.retain(|n| !kids.contains(n) && n != "self" && n != "*");
                if !ups.is_empty() && own.contains(&format!("{k}::")) {
                    failures
                        .push(format!("{} and its child {k} use each other ({k} uses {ups:?})", f.display()));
                }
                stack.push(kf);
            }
        }
        let mut names = after(&text, "crate::");
        names.extend(grouped(&text, "use crate::{"));
        let used = names
            .iter()
            .filter_map(|n| if top.contains(n) { Some(n.clone()) } else { reexported.get(n).cloned() })
            .filter(|n| n != m)
            .collect();
        uses.insert(m.clone(), used);
    }
    for (a, used) in &uses {
        for b in used {
            if a < b && uses.get(b).is_some_and(|u| u.contains(a)) {
                failures.push(format!("{}: modules {a} and {b} use each other", src.display()));
            }
        }
    }
    failures
}

#[test]
fn no_module_of_the_core_runtime_or_servers_uses_one_that_uses_it() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut failures = Vec::new();
    for name in ["hintq", "hintq-patterns", "hintq-serve"] {
        failures.extend(mutual(&crates.join(name).join("src")));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The scan sees a cycle where there is one: two modules that name each other, and a child
/// that uses its parent's item while the parent calls into it.
#[test]
fn the_scan_finds_a_pair_that_uses_each_other() {
    let dir = std::env::temp_dir().join(format!("hintq-layers-{}", std::process::id()));
    let src = dir.join("src");
    fs::create_dir_all(src.join("p")).unwrap();
    fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod p;\npub use b::Thing;\n").unwrap();
    fs::write(src.join("a.rs"), "use crate::Thing;\npub fn f() {}\n").unwrap();
    fs::write(src.join("b.rs"), "pub struct Thing;\npub fn g() { crate::a::f() }\n").unwrap();
    fs::write(src.join("p.rs"), "mod c;\npub struct Item;\npub fn h() { c::k() }\n").unwrap();
    fs::write(src.join("p").join("c.rs"), "use super::Item;\npub fn k() {}\n").unwrap();
    let found = mutual(&src);
    fs::remove_dir_all(&dir).unwrap();
    assert!(found.iter().any(|f| f.contains("modules a and b use each other")), "{found:?}");
    assert!(found.iter().any(|f| f.contains("its child c use each other")), "{found:?}");
    assert_eq!(found.len(), 2, "{found:?}");
}
