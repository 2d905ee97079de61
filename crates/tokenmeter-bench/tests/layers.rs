//! The bench's modules import one way (the crate's design: settings → plan → run → records →
//! summary → outputs). Read from the source itself: every `crate::` and `super::` path outside
//! comments and test modules is an import of the file that defines that module; no file may
//! reach itself through them, and `lib.rs` declares and re-exports only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every source file under `dir` but the test files, by its path from `src/`.
fn files(dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        let rel = path
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if path.is_dir() {
            if rel != "tests" {
                files(&path, out);
            }
        } else if rel.ends_with(".rs") && !rel.ends_with("tests.rs") {
            out.insert(rel, std::fs::read_to_string(&path).expect("a source file"));
        }
    }
}

/// The code of a file without its comments and its inline test module.
fn code(text: &str) -> String {
    let text = text
        .split("#[cfg(test)]\nmod tests {")
        .next()
        .unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module path of a file: `workload/dataset.rs` → `[workload, dataset]`.
fn module(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The paths a `use` tree or an inline path names, from `text` just after `crate::` or
/// `super::`: `a::b::{c, d::e}` → `[a, b, c]`, `[a, b, d, e]`.
fn paths(text: &str) -> Vec<Vec<String>> {
    let mut head = Vec::new();
    let mut rest = text;
    loop {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end > 0 {
            head.push(rest[..end].to_owned());
        }
        rest = &rest[end..];
        if let Some(after) = rest.strip_prefix("::") {
            rest = after;
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 1;
                let close = group
                    .char_indices()
                    .find(|(_, c)| {
                        depth += match c {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .map_or(group.len(), |(i, _)| i);
                let mut out = Vec::new();
                let (mut depth, mut start) = (0, 0);
                let inner = &group[..close];
                for (i, c) in inner.char_indices().chain([(inner.len(), ',')]) {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            let item = inner[start..i].trim();
                            for tail in paths(item) {
                                out.push(head.iter().cloned().chain(tail).collect());
                            }
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                return out;
            }
            continue;
        }
        return vec![head];
    }
}

/// Which file imports which, among `files`.
fn imports(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeMap<Vec<String>, &String> = files.keys().map(|f| (module(f), f)).collect();
    let mut edges = BTreeMap::new();
    for (file, text) in files {
        let me = module(file);
        let code = code(text);
        for (at, _) in code.match_indices("::") {
            let before = &code[..at];
            let word_start = before
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            let base = match &before[word_start..] {
                "crate" => Vec::new(),
                "super" if word_start < 2 || &before[word_start - 2..word_start] != "::" => {
                    me[..me.len().saturating_sub(1)].to_vec()
                }
                _ => continue,
            };
            for path in paths(&code[at + 2..]) {
                let full: Vec<String> = base.iter().cloned().chain(path).collect();
                let target = (0..=full.len())
                    .rev()
                    .find_map(|n| modules.get(&full[..n]))
                    .copied();
                if let Some(target) = target.filter(|t| *t != file && *t != "lib.rs") {
                    edges
                        .entry(file.clone())
                        .or_insert_with(BTreeSet::new)
                        .insert(target.clone());
                }
            }
        }
    }
    edges
}

/// A loop of imports through `from`, if there is one: the files in order.
fn loop_through(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![(from.to_owned(), vec![from.to_owned()])];
    let mut seen = BTreeSet::new();
    while let Some((file, path)) = stack.pop() {
        for next in edges.get(&file).into_iter().flatten() {
            if next == from {
                return Some(path.iter().cloned().chain([next.clone()]).collect());
            }
            if seen.insert(next.clone()) {
                stack.push((
                    next.clone(),
                    path.iter().cloned().chain([next.clone()]).collect(),
                ));
            }
        }
    }
    None
}

#[test]
fn no_module_reaches_itself_through_its_imports() {
    let mut all = BTreeMap::new();
    files(&src(), &mut all);
    let edges = imports(&all);
    assert!(edges.len() > 30, "the imports were read: {edges:?}");
    assert!(
        edges["args.rs"].contains("load_args.rs"),
        "the reader sees `use crate::load_args::...`: {:?}",
        edges["args.rs"]
    );
    let loops: Vec<Vec<String>> = all.keys().filter_map(|f| loop_through(&edges, f)).collect();
    assert!(
        loops.is_empty(),
        "modules that import each other: {loops:#?}"
    );
}

#[test]
fn lib_rs_declares_and_re_exports_only() {
    let lib = code(&std::fs::read_to_string(src().join("lib.rs")).unwrap());
    for word in ["fn ", "struct ", "enum ", "impl ", "const "] {
        let found: Vec<&str> = lib
            .lines()
            .filter(|l| l.contains(word) && !l.trim_start().starts_with("struct ReadmeDoctests"))
            .collect();
        assert!(found.is_empty(), "lib.rs defines `{word}`: {found:?}");
    }
}
