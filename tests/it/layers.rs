//! The layers of `src/lib.rs`, held: every `crate::` import between top-level
//! modules points down the list `lib.rs` states (or within a layer), and no
//! two top-level modules import each other, even through others. The list is
//! read from `lib.rs` itself, so it is stated once.

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
