//! `.ci/test` repeats only the tests that reach what a repeat changes: the
//! portable run (`PORTABLE`: the fallbacks of the Linux-only calls of
//! `src/platform.rs`) and the packaged run (`PACKAGED`: what a static glibc
//! changes). Those tables are held to the code here, so that a new call
//! cannot slip out of its repeat:
//! - every file of `src/` that calls a Linux-only function of
//!   `src/platform.rs` (one with a `cfg(target_os = "linux")` path, or the
//!   `portable()` switch itself) has its line in `PORTABLE`, and every file
//!   there still makes such a call;
//! - every file of `src/` that makes a call a static glibc serves differently
//!   (user and host names through NSS, iconv, dlopen) has its line in
//!   `PACKAGED`;
//! - every `SUITE:FILTER` names a module of that suite that has tests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The lines of the bash array `name=( "…" … )` in `.ci/test`, unquoted.
fn table(name: &str) -> Vec<Vec<String>> {
    let script = std::fs::read_to_string(root().join(".ci/test")).expect("read .ci/test");
    let start = format!("{name}=(");
    let body = script
        .split_once(&start)
        .unwrap_or_else(|| panic!(".ci/test has no {start}"))
        .1;
    let body = &body[..body.find("\n)").expect("the table's closing `)`")];
    let rows: Vec<Vec<String>> = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let l = l.strip_prefix('"').and_then(|l| l.strip_suffix('"'));
            let l = l.unwrap_or_else(|| panic!("{name}: a row is one quoted string"));
            l.split_whitespace().map(str::to_owned).collect()
        })
        .collect();
    assert!(!rows.is_empty(), "{name} is empty");
    rows
}

/// Every `.rs` file under `dir`, as a path relative to the root.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.strip_prefix(root()).unwrap().to_path_buf());
        }
    }
    out.sort();
    out
}

fn read(rel: &Path) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap()
}

/// The functions of `src/platform.rs` that behave differently under
/// `CLAUDE_SHIM_PLATFORM=portable`: `portable` itself, and each with a
/// Linux-only path (its body, up to the next item, says `target_os = "linux"`).
fn linux_only_calls() -> BTreeSet<String> {
    let text = read(Path::new("src/platform.rs"));
    let text = &text[..text.find("#[cfg(test)]\nmod ").unwrap_or(text.len())];
    let mut found = BTreeSet::from(["portable".to_owned()]);
    let parts: Vec<&str> = text.split("\npub fn ").skip(1).collect();
    for part in parts {
        let name: String = part
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if part.contains("target_os = \"linux\"") {
            found.insert(name);
        }
    }
    assert!(
        found.contains("die_with_parent") && found.contains("splice_all"),
        "the reading of src/platform.rs missed a known call: {found:?}"
    );
    found
}

/// The files of `src/` (but `platform.rs`) whose text matches any of `calls`.
fn files_calling(calls: &[String]) -> BTreeSet<String> {
    rust_files(&root().join("src"))
        .into_iter()
        .filter(|f| f != Path::new("src/platform.rs"))
        .filter(|f| {
            let text = read(f);
            calls.iter().any(|c| text.contains(c.as_str()))
        })
        .map(|f| f.display().to_string())
        .collect()
}

/// Whether `filter` names tests of `suite` (lib, it, e2e): a module path
/// (`runner::`, `a::b::`) with a test in it, or a module path and the start
/// of a test's name (`warm::warm_turns_`) with such a test.
fn names_tests(suite: &str, filter: &str) -> bool {
    let (module, name) = match filter.strip_suffix("::") {
        Some(module) => (module, None),
        None => match filter.rsplit_once("::") {
            Some((module, name)) if !name.is_empty() => (module, Some(name)),
            _ => return false,
        },
    };
    let module = module.replace("::", "/");
    let base = match suite {
        "lib" => root().join("src"),
        "it" | "e2e" => root().join("tests").join(suite),
        _ => return false,
    };
    let file = base.join(format!("{module}.rs"));
    let dir = base.join(&module);
    let mut files = Vec::new();
    if file.is_file() {
        files.push(file);
    } else if let (Some((parent, last)), None) = (module.rsplit_once('/'), name) {
        // A module a macro makes in its parent (`matrix! { sigint: … }`).
        let text = std::fs::read_to_string(base.join(format!("{parent}.rs"))).unwrap_or_default();
        return text.contains("#[test]")
            && text
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{last}: ")));
    }
    if dir.is_dir() && name.is_none() {
        files.extend(rust_files(&dir).into_iter().map(|f| root().join(f)));
    }
    files.iter().any(|f| {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        match name {
            None => text.contains("#[test]"),
            Some(name) => text
                .split("#[test]")
                .skip(1)
                .any(|after| after.trim_start().starts_with(&format!("fn {name}"))),
        }
    })
}

/// Every `SUITE:FILTER` of `rows` (after each row's first word) names tests.
fn filters_name_tests(name: &str, rows: &[Vec<String>]) {
    let mut wrong = Vec::new();
    for row in rows {
        assert!(row.len() >= 2, "{name}: {row:?} names no tests");
        for word in &row[1..] {
            match word.split_once(':') {
                Some((suite, filter)) if names_tests(suite, filter) => {}
                _ => wrong.push(word.clone()),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{name} in .ci/test: these name no tests (SUITE:MODULE:: or SUITE:MODULE::NAME_START, \
         SUITE one of lib, it, e2e): {wrong:?}"
    );
}

/// Table `name` holds `callers` (the files of `src/` that `what`): each has
/// its row, every row but `own` names such a file, `own` is there, and every
/// filter names tests.
fn held(name: &str, rows: &[Vec<String>], callers: &BTreeSet<String>, own: &str, what: &str) {
    let listed: BTreeSet<String> = rows.iter().map(|r| r[0].clone()).collect();
    let missing: Vec<&String> = callers.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "these files {what} but have no line in .ci/test's {name}, so its run would not \
         reach them: {missing:?}"
    );
    let stale: Vec<&String> = listed
        .iter()
        .filter(|f| *f != own && !callers.contains(*f))
        .collect();
    assert!(
        stale.is_empty(),
        "{name} names files that make no such call: {stale:?}"
    );
    assert!(listed.contains(own), "{name} must have its `{own}` line");
    filters_name_tests(name, rows);
}

#[test]
fn every_call_of_a_linux_only_function_is_in_the_portable_run() {
    let rows = table("PORTABLE");
    let calls: Vec<String> = linux_only_calls()
        .into_iter()
        .map(|f| format!("platform::{f}"))
        .collect();
    let callers = files_calling(&calls);
    let what = format!("call a Linux-only function of src/platform.rs ({calls:?})");
    held("PORTABLE", &rows, &callers, "src/platform.rs", &what);
}

/// The calls a static glibc serves differently from a dynamic one, as the
/// code of `src/` spells them (the std, nix and tokio-postgres APIs over them).
const STATIC_GLIBC_CALLS: [&str; 15] = [
    "connect(NoTls)",
    "User::from_",
    "Group::from_",
    "getpwuid",
    "getpwnam",
    "getgrgid",
    "getgrnam",
    "getaddrinfo",
    "gethostbyname",
    "lookup_host",
    "to_socket_addrs",
    "home_dir(",
    "dlopen",
    "libloading",
    "iconv",
];

#[test]
fn every_call_a_static_glibc_changes_is_in_the_packaged_run() {
    let rows = table("PACKAGED");
    let calls: Vec<String> = STATIC_GLIBC_CALLS.iter().map(|c| c.to_string()).collect();
    let callers = files_calling(&calls);
    assert!(
        callers.contains("src/store/postgres/open.rs"),
        "the search for static-glibc calls missed the store's connection: {callers:?}"
    );
    let what = "make a call a static glibc serves differently (NSS, iconv, dlopen)";
    held("PACKAGED", &rows, &callers, "start", what);
}

#[test]
fn a_filter_that_names_no_tests_is_caught() {
    assert!(names_tests("it", "runner::"));
    assert!(names_tests("e2e", "warm::"));
    assert!(names_tests("lib", "runner::"));
    assert!(!names_tests("it", "no_such_module::"));
    assert!(!names_tests("e2e", "runner::"));
    assert!(!names_tests("unit", "runner::"));
    assert!(names_tests(
        "e2e",
        "warm::warm_turns_print_what_cold_turns_print_in_"
    ));
    assert!(!names_tests("e2e", "warm::no_such_test_"));
    assert!(!names_tests("e2e", "warm"));
    assert!(names_tests("e2e", "differential::sigint::"));
    assert!(!names_tests("e2e", "differential::no_such_fault::"));
}

/// The words of the bash array `name=( … )` in `.ci/test`, without comments.
fn words(name: &str) -> Vec<String> {
    let script = std::fs::read_to_string(root().join(".ci/test")).expect("read .ci/test");
    let start = format!("\n{name}=(");
    let body = script
        .split_once(&start)
        .unwrap_or_else(|| panic!(".ci/test has no {name}=("))
        .1;
    let body = &body[..body.find("\n)").expect("the array's closing `)`")];
    body.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(str::split_whitespace)
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_filter_of_the_core_suite_on_other_releases_names_tests() {
    let filters = words("CORE_E2E");
    assert!(filters.len() >= 10, "{filters:?}");
    let wrong: Vec<&String> = filters.iter().filter(|f| !names_tests("e2e", f)).collect();
    assert!(
        wrong.is_empty(),
        "CORE_E2E in .ci/test: these name no e2e tests: {wrong:?}"
    );
}
