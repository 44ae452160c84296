//! The layers of `src/lib.rs`, held: every `crate::` import between top-level
//! modules points down the list `lib.rs` states (or within a layer), and no
//! two top-level modules import each other, even through others. The list is
//! read from `lib.rs` itself, so it is stated once.
//!
//! Within each folder of `src/` likewise: no two sibling files (the folder's
//! `mod.rs` one of them) import each other, even through others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `lib.rs`'s layers, top first: each `//! - name: `a`, `b`` line.
fn stated_layers() -> Vec<(String, Vec<String>)> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut layers = Vec::new();
    let mut in_section = false;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if doc == "# Layers" {
            in_section = true;
            continue;
        }
        if !in_section {
            continue;
        }
        if doc.starts_with('#') {
            break;
        }
        if let Some(item) = doc.strip_prefix("- ") {
            let (name, mods) = item.split_once(':').expect("`- layer: `module`, …`");
            let mods: Vec<String> = mods
                .split(',')
                .map(|m| m.trim().trim_matches('`').to_owned())
                .filter(|m| !m.is_empty())
                .collect();
            layers.push((name.trim().to_owned(), mods));
        }
    }
    layers
}

/// The code of a source file without its comments and its test module (at
/// the end, by the crate's habit).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|l| match l.trim_start().starts_with("//") {
            true => "",
            false => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `code` names through `crate::` (macros by the module
/// that defines them).
fn uses(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            // `crate::{a, b::c, d}`: the first segment of each item.
            Some(group) => {
                let end = group.find('}').unwrap_or(group.len());
                group[..end]
                    .split(',')
                    .map(|item| item.trim().split("::").next().unwrap_or(""))
                    .collect()
            }
            None => vec![rest
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("")],
        };
        for name in names {
            let name = match name.trim() {
                // `#[macro_export]` macros of `log`.
                "debug" | "error" => "log",
                other => other,
            };
            if !name.is_empty() {
                out.insert(name.to_owned());
            }
        }
    }
    out
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// module → the top-level modules it uses (`lib.rs` and `main.rs` left out:
/// they declare and dispatch).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = src();
    let mut all = Vec::new();
    files(&root, &mut all);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in all {
        let rel = f.strip_prefix(&root).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&f).unwrap());
        let entry = g.entry(module.clone()).or_default();
        entry.extend(uses(&code).into_iter().filter(|m| *m != module));
    }
    g
}

#[test]
fn every_module_is_in_one_stated_layer() {
    let layers = stated_layers();
    assert!(layers.len() >= 4, "lib.rs states its layers: {layers:?}");
    let mut seen = BTreeSet::new();
    for (_, mods) in &layers {
        for m in mods {
            assert!(seen.insert(m.clone()), "{m} is in two layers");
        }
    }
    let modules: BTreeSet<String> = graph().keys().cloned().collect();
    let unplaced: Vec<&String> = modules.difference(&seen).collect();
    assert!(
        unplaced.is_empty(),
        "modules lib.rs places in no layer: {unplaced:?}"
    );
}

#[test]
fn imports_point_down_the_stated_layers() {
    let layers = stated_layers();
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, (_, mods))| mods.iter().map(move |m| (m.as_str(), i)))
        .collect();
    let mut wrong = Vec::new();
    for (from, tos) in graph() {
        let Some(&lf) = layer_of.get(from.as_str()) else {
            continue;
        };
        for to in tos {
            // Names that are no module (a crate-root item) are not edges.
            let Some(&lt) = layer_of.get(to.as_str()) else {
                continue;
            };
            if lt < lf {
                wrong.push(format!(
                    "{from} ({}) → {to} ({})",
                    layers[lf].0, layers[lt].0
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "imports that point up: {wrong:#?}");
}

#[test]
fn no_two_modules_import_each_other_even_through_others() {
    let g = graph();
    // Each module's reach; a module that reaches itself is on a circle.
    let mut circles = Vec::new();
    for start in g.keys() {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&String> = g[start].iter().collect();
        while let Some(m) = todo.pop() {
            if !seen.insert(m.clone()) {
                continue;
            }
            if let Some(next) = g.get(m) {
                todo.extend(next.iter());
            }
        }
        if seen.contains(start) {
            circles.push(start.clone());
        }
    }
    assert!(
        circles.is_empty(),
        "modules on an import circle: {circles:?}"
    );
}

#[test]
fn the_reader_finds_what_it_looks_for() {
    let code = code_of(
        "use crate::{a, b::c, debug};\n// crate::commented\nfn f() { crate::d::e(); }\n\
         #[cfg(test)]\nmod tests { use crate::t; }\n",
    );
    let found: Vec<String> = uses(&code).into_iter().collect();
    assert_eq!(found, ["a", "b", "d", "log"]);
}

// Sibling files: within each folder of `src/`, the files (and the folder's
// own `mod.rs`) import one another without a circle either, so each folder
// reads as layers too: `mod.rs` declares, re-exports and holds the entry
// points; what its children share lives in a named sibling below them.

/// `text` with its comments removed and the insides of its string and char
/// literals blanked, so that neither is read as code.
fn bare_code(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        match c[i] {
            '/' if c.get(i + 1) == Some(&'/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if c.get(i + 1) == Some(&'*') => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            }
            // A raw string: `r"…"`, `r#"…"#`, `br#"…"#`.
            'r' if (i == 0
                || !ident(c[i - 1])
                || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
                && {
                    let mut j = i + 1;
                    while c.get(j) == Some(&'#') {
                        j += 1;
                    }
                    c.get(j) == Some(&'"')
                } =>
            {
                let mut hashes = 0;
                i += 1;
                while c[i] == '#' {
                    hashes += 1;
                    i += 1;
                }
                i += 1;
                loop {
                    if i >= c.len() {
                        break;
                    }
                    if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                        i += 1 + hashes;
                        break;
                    }
                    i += 1;
                }
                out.push_str("\"\"");
            }
            '"' => {
                i += 1;
                while i < c.len() && c[i] != '"' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A char literal (`'x'`, `'\n'`, `'{'`), not a lifetime.
            '\'' if c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'') => {
                i += 1;
                while i < c.len() && c[i] != '\'' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("' '");
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

/// The tokens of bare code that paths are made of: identifiers, `::`, and
/// single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphabetic() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".to_owned());
            i += 2;
        } else if c[i].is_whitespace() || c[i].is_ascii_digit() {
            i += 1;
        } else {
            out.push(c[i].to_string());
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// The path tree starting at `tokens[i]` under `prefix`: one path per leaf
/// (`a::{b, c::d}` gives `a::b` and `a::c::d`); and where it ends.
fn path_tree(tokens: &[String], mut i: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    let mut segments = prefix.to_vec();
    let at = |i: usize| tokens.get(i).map(String::as_str).unwrap_or("");
    while is_ident(at(i)) {
        segments.push(tokens[i].clone());
        i += 1;
        if at(i) != "::" {
            break;
        }
        i += 1;
        if at(i) == "{" {
            i += 1;
            let mut out = Vec::new();
            while i < tokens.len() && at(i) != "}" {
                let (paths, next) = path_tree(tokens, i, &segments);
                out.extend(paths);
                i = next;
                // `x as y`, or anything else, up to the next item.
                let mut depth = 0;
                while i < tokens.len() && !(depth == 0 && (at(i) == "," || at(i) == "}")) {
                    match at(i) {
                        "{" => depth += 1,
                        "}" => depth -= 1,
                        _ => {}
                    }
                    i += 1;
                }
                if at(i) == "," {
                    i += 1;
                }
            }
            return (out, i + 1);
        }
    }
    (vec![segments], i)
}

/// Each path `code` writes (`use` trees expanded), with the module it is
/// written in: `file` or an inline module inside it. Items under
/// `#[cfg(test)]` are left out, and so is the path of `pub(in path)`.
fn written_paths(code: &str, file: &[String]) -> Vec<(Vec<String>, Vec<String>)> {
    let tokens = tokens(&bare_code(code));
    let at = |i: usize| tokens.get(i).map(String::as_str).unwrap_or("");
    let mut out = Vec::new();
    // Inline modules open here: name and the brace depth inside them.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        // `#[cfg(test)]`: skip the item it marks.
        if tokens[i..].starts_with(&["#", "[", "cfg", "(", "test", ")", "]"].map(String::from)) {
            i += 7;
            while i < tokens.len() && at(i) != "{" && at(i) != ";" {
                i += 1;
            }
            if at(i) == "{" {
                let mut d = 0;
                while i < tokens.len() {
                    match at(i) {
                        "{" => d += 1,
                        "}" => {
                            d -= 1;
                            if d == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            i += 1;
            continue;
        }
        match at(i) {
            "{" => {
                depth += 1;
                if at(i.wrapping_sub(2)) == "mod" && is_ident(at(i - 1)) {
                    inline.push((tokens[i - 1].clone(), depth));
                }
            }
            "}" => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            _ => {}
        }
        let starts = is_ident(at(i)) && at(i + 1) == "::" && (i == 0 || at(i - 1) != "::");
        if !starts {
            i += 1;
            continue;
        }
        let (paths, next) = path_tree(&tokens, i, &[]);
        let restricted = i >= 2 && at(i - 1) == "in" && at(i - 2) == "(";
        if !restricted {
            let mut module = file.to_vec();
            module.extend(inline.iter().map(|(name, _)| name.clone()));
            out.extend(paths.into_iter().map(|p| (p, module.clone())));
        }
        i = next;
    }
    out
}

/// `path`, written in module `at`, as a path from the crate root; `None` for
/// what is no module of this crate's (`std::…`, other crates, a local name).
fn resolve(path: &[String], at: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let (mut base, mut rest) = match path.first()?.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (at.to_vec(), &path[1..]),
        "super" => (at.to_vec(), path),
        child => {
            let mut m = at.to_vec();
            m.push(child.to_owned());
            if !modules.contains(&m) {
                return None;
            }
            (at.to_vec(), path)
        }
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop()?;
        rest = &rest[1..];
    }
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(base)
}

/// Each `.rs` file under `src/` with its module path
/// (`cli/doctor/checks.rs` → `cli::doctor::checks`, `cli/mod.rs` → `cli`).
fn module_files() -> Vec<(Vec<String>, PathBuf)> {
    let root = src();
    let mut all = Vec::new();
    files(&root, &mut all);
    all.sort();
    all.into_iter()
        .map(|f| {
            let rel = f.strip_prefix(&root).unwrap();
            let mut module: Vec<String> = rel
                .components()
                .map(|c| {
                    c.as_os_str()
                        .to_string_lossy()
                        .trim_end_matches(".rs")
                        .to_owned()
                })
                .collect();
            if module
                .last()
                .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
            {
                module.pop();
            }
            (module, f)
        })
        .collect()
}

/// One folder's siblings, each → the siblings it uses. A sibling is a file
/// of the folder or a folder in it (with all its files); `mod` is the
/// folder's own file (`mod.rs`, or `doctor.rs` for `doctor/`), where what a
/// path names that is no child module is defined or re-exported.
type Siblings = BTreeMap<String, BTreeSet<String>>;

/// Per folder of `src/`, by its module path (`cli::doctor`): its siblings'
/// imports, from `sources` (each file's module path and text).
fn sibling_graphs_of(sources: &[(Vec<String>, String)]) -> BTreeMap<String, Siblings> {
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|(m, _)| m.clone()).collect();
    // A folder is a module with a module below it (the crate root aside:
    // the tests above hold it).
    let folders: BTreeSet<Vec<String>> = modules
        .iter()
        .filter(|m| m.len() > 1)
        .map(|m| m[..m.len() - 1].to_vec())
        .collect();
    let used: Vec<(Vec<String>, Vec<Vec<String>>)> = sources
        .iter()
        .map(|(module, code)| {
            let targets = written_paths(code, module)
                .into_iter()
                .filter_map(|(path, at)| resolve(&path, &at, &modules))
                .collect();
            (module.clone(), targets)
        })
        .collect();
    let mut out = BTreeMap::new();
    for folder in folders {
        let n = folder.len();
        let node = |m: &[String]| -> String {
            if m.len() > n && modules.contains(&m[..=n]) {
                m[n].clone()
            } else {
                "mod".to_owned()
            }
        };
        let mut g: Siblings = BTreeMap::new();
        for (module, targets) in &used {
            if !module.starts_with(&folder) {
                continue;
            }
            let from = node(module);
            let edges = g.entry(from.clone()).or_default();
            for t in targets.iter().filter(|t| t.starts_with(&folder)) {
                let to = node(t);
                if to != from {
                    edges.insert(to);
                }
            }
        }
        out.insert(folder.join("::"), g);
    }
    out
}

fn sibling_graphs() -> BTreeMap<String, Siblings> {
    let sources: Vec<(Vec<String>, String)> = module_files()
        .into_iter()
        .map(|(m, f)| (m, std::fs::read_to_string(f).unwrap()))
        .collect();
    sibling_graphs_of(&sources)
}

/// The circles of `g`, each once and as short as it goes, as `a → b → a`.
fn circles(g: &Siblings) -> Vec<String> {
    let mut out = Vec::new();
    let mut on_one: BTreeSet<&String> = BTreeSet::new();
    for start in g.keys() {
        if on_one.contains(start) {
            continue;
        }
        // Breadth first from `start`, back to it.
        let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
        let mut todo: std::collections::VecDeque<&String> = std::collections::VecDeque::new();
        todo.push_back(start);
        let mut closed = None;
        'search: while let Some(m) = todo.pop_front() {
            for next in g.get(m).into_iter().flatten() {
                if next == start {
                    closed = Some(m);
                    break 'search;
                }
                if !came_from.contains_key(next) {
                    came_from.insert(next, m);
                    todo.push_back(next);
                }
            }
        }
        let Some(mut last) = closed else {
            continue;
        };
        let mut path = vec![start.clone()];
        let mut back = vec![last];
        while last != start {
            last = came_from[last];
            back.push(last);
        }
        back.pop();
        for m in back.into_iter().rev() {
            on_one.insert(m);
            path.push(m.clone());
        }
        on_one.insert(start);
        path.push(start.clone());
        out.push(path.join(" → "));
    }
    out
}

/// Folders whose circles are known and not broken yet, with why: every
/// other folder is held, and the test fails once one of these has none left
/// (take it off the list then).
const NOT_YET: &[(&str, &str)] = &[];

#[test]
fn no_two_sibling_files_import_each_other_even_through_others() {
    let graphs = sibling_graphs();
    assert!(
        ["cli", "dialect", "runner", "turn", "cli::doctor"]
            .iter()
            .all(|f| graphs.contains_key(*f)),
        "the folders are found: {:?}",
        graphs.keys()
    );
    let mut found = Vec::new();
    let mut broken = Vec::new();
    for (folder, g) in &graphs {
        let circles = circles(g);
        match NOT_YET.iter().any(|(f, _)| f == folder) {
            true if circles.is_empty() => broken.push(folder.clone()),
            true => {}
            false => found.extend(circles.into_iter().map(|c| format!("{folder}: {c}"))),
        }
    }
    assert!(
        found.is_empty(),
        "sibling files on an import circle (`mod` is the folder's mod.rs): {found:#?}"
    );
    assert!(
        broken.is_empty(),
        "no circle left in {broken:?}: take it off NOT_YET"
    );
}

#[test]
fn the_sibling_reader_finds_what_it_looks_for() {
    let module = |m: &str| m.split("::").map(String::from).collect::<Vec<_>>();
    let sources = [
        (
            "f",
            "mod a; mod b; pub use a::Thing;\n\
             // b::commented\n\
             fn g() { let _ = \"b::in_a_string\"; let _ = '{'; }\n\
             #[cfg(test)]\nmod tests { use super::b::t; }\n",
        ),
        (
            "f::a",
            "use super::{b::{self, X}, Shared};\n\
             pub(in crate::f) fn h() { std::mem::drop(crate::other::x()); }\n\
             mod inner { use super::super::b; }\n",
        ),
        (
            "f::b",
            "pub struct X; #[cfg(test)]\nfn only_in_tests() { crate::f::a::h() }\n",
        ),
        (
            "f::c",
            "use self::d::Y; fn k() -> crate::f::Shared { d::z() }",
        ),
        ("f::c::d", "use super::super::b::X;"),
        ("other", ""),
    ]
    .map(|(m, code)| (module(m), code.to_owned()));
    let graphs = sibling_graphs_of(&sources);
    let f = &graphs["f"];
    let edges = |m: &str| f[m].iter().map(String::as_str).collect::<Vec<_>>();
    assert_eq!(edges("mod"), ["a"]);
    assert_eq!(edges("a"), ["b", "mod"]);
    assert!(edges("b").is_empty());
    assert_eq!(edges("c"), ["b", "mod"]);
    assert_eq!(circles(f), ["a → mod → a"]);
    let c = &graphs["f::c"];
    assert!(c["d"].is_empty());
    assert_eq!(
        c["mod"].iter().map(String::as_str).collect::<Vec<_>>(),
        ["d"]
    );
    assert!(!graphs.contains_key(""));
}

/// Lines a function of `src/` may take, its signature and closing brace
/// included: past this it holds more than one step, and wants names for them.
const FUNCTION_LINES: usize = 120;
/// Lines of a file of `src/` before its test module.
const FILE_LINES: usize = 600;

/// Functions still longer than [`FUNCTION_LINES`] (`file`, `fn`), each
/// waiting to be split; the test fails when one is no longer long, so the
/// list only shrinks.
const LONG_YET: &[(&str, &str)] = &[];

/// Each function of `code` (outside its test module): name, first line and
/// length in lines. A function ends at the first line that is its own
/// indentation and `}` (rustfmt's layout).
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let after = [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ]
        .iter()
        .fold(body, |b, p| b.strip_prefix(p).unwrap_or(b));
        let Some(rest) = after.strip_prefix("fn ") else {
            continue;
        };
        if line.trim_end().ends_with(';') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            out.push((name, i + 1, end + 2));
        }
    }
    out
}

#[test]
fn no_function_or_file_of_src_grows_past_its_bound() {
    let mut long = Vec::new();
    let mut files_long = Vec::new();
    for (_, path) in module_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let code = match text.find("#[cfg(test)]\nmod ") {
            Some(at) => &text[..at],
            None => &text,
        };
        let rel = path.strip_prefix(src()).unwrap().display().to_string();
        if code.lines().count() > FILE_LINES {
            files_long.push(format!("{rel}: {} lines", code.lines().count()));
        }
        for (name, at, lines) in functions(code) {
            if lines > FUNCTION_LINES {
                long.push((rel.clone(), name, at, lines));
            }
        }
    }
    assert!(
        files_long.is_empty(),
        "files of src/ past {FILE_LINES} lines before their tests: {files_long:#?}"
    );
    let new: Vec<_> = long
        .iter()
        .filter(|(f, n, ..)| !LONG_YET.contains(&(f.as_str(), n.as_str())))
        .map(|(f, n, at, lines)| format!("{f}:{at} fn {n}: {lines} lines"))
        .collect();
    assert!(
        new.is_empty(),
        "functions past {FUNCTION_LINES} lines (name their steps): {new:#?}"
    );
    let short: Vec<_> = LONG_YET
        .iter()
        .filter(|(f, n)| !long.iter().any(|(lf, ln, ..)| lf == f && ln == n))
        .collect();
    assert!(
        short.is_empty(),
        "no longer long: take off LONG_YET: {short:?}"
    );
}

#[test]
fn the_function_reader_measures_what_rustfmt_writes() {
    let code = "fn a() {\n    x();\n}\n\nimpl T {\n    pub fn b(\n        y: u8,\n    ) -> u8 {\n        y\n    }\n    fn c();\n}\n";
    assert_eq!(
        functions(code),
        [("a".to_owned(), 1, 3), ("b".to_owned(), 6, 5)]
    );
}

/// Every environment variable the shim reads is read by a getter of
/// `env.rs`, which lists them (`claude-shim` documents them from there).
#[test]
fn the_environment_is_read_in_env_rs_alone() {
    let mut found = Vec::new();
    for (module, path) in module_files() {
        if module == ["env"] {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&path).unwrap());
        for (n, line) in code.lines().enumerate() {
            if line.contains("env::var") {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "environment reads outside env.rs: {found:#?}"
    );
}
