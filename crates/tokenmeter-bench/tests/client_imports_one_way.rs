//! The bench's client imports one way (issue 27: no circles, no import from a lower module to a
//! higher one): the request's pieces (its API, key, shape, URL, sanitiser, measurements,
//! sizes and durations as printed, redirects, refusals) import nothing above them; the client
//! imports those; model discovery and the test request before a run sit on top.
//!
//! The imports are read from the crate's source as written: every `crate::…` path, every
//! `super::…` path and, in a module's `mod.rs`, every path through one of its children, outside
//! comments and outside `#[cfg(test)] mod tests` (a test may reach anything).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The parts of the client, lowest first: no module of a part may reach (through any chain of
/// imports) a module of a later part.
const LAYERS: [(&str, &[&str]); 3] = [
    (
        "the request's pieces",
        &[
            "api",
            "api_key",
            "format",
            "measured",
            "oddities",
            "redirect",
            "refusal",
            "request_shape",
            "sanitize",
            "sanitize::controls",
            "sanitize::key",
            "url",
        ],
    ),
    (
        "the client",
        &["client", "client::kept", "client::media", "client::plain"],
    ),
    ("discovery and the test request", &["discover", "preflight"]),
];

/// The imports of every module of the crate: module path (`client::kept`) → modules it names.
type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn no_import_circle_passes_through_the_client() {
    let graph = read_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let client: BTreeSet<&str> = LAYERS.iter().flat_map(|(_, m)| m.iter().copied()).collect();
    for module in &client {
        assert!(
            graph.contains_key(*module),
            "no module `{module}` in the crate: update LAYERS in this test"
        );
    }
    let mut circles = Vec::new();
    for module in &client {
        for next in &graph[*module] {
            if let Some(back) = path(&graph, next, module) {
                circles.push(format!("{module} -> {}", back.join(" -> ")));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles through the client's modules (move what both sides need into a leaf \
         module):\n{}",
        circles.join("\n")
    );
}

#[test]
fn no_part_of_the_client_reaches_a_higher_one() {
    let graph = read_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let mut upward = Vec::new();
    for (rank, (part, modules)) in LAYERS.iter().enumerate() {
        for (higher, above) in &LAYERS[rank + 1..] {
            for module in *modules {
                for target in *above {
                    if let Some(chain) = path(&graph, module, target) {
                        upward.push(format!("{part} -> {higher}: {}", chain.join(" -> ")));
                    }
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run back up (a lower part must not reach a higher one):\n{}",
        upward.join("\n")
    );
}

/// The shortest chain of imports from `from` to `to` (both included), if any.
fn path(graph: &Graph, from: &str, to: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut chain = vec![to.to_owned()];
            let mut step = to;
            while let Some(&prev) = came_from.get(step) {
                chain.push(prev.to_owned());
                step = prev;
            }
            chain.reverse();
            return Some(chain);
        }
        for next in graph.get(at).into_iter().flatten() {
            if seen.insert(next) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

/// Every module under `src` (but `lib.rs`, the crate's root, and the test-only `tests/`) with
/// the modules it imports.
fn read_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    walk(src, &mut files);
    let modules: BTreeMap<String, PathBuf> = files
        .into_iter()
        .filter_map(|file| Some((module_of(src, &file)?, file)))
        .collect();
    let names: BTreeSet<&str> = modules.keys().map(String::as_str).collect();
    let mut graph = Graph::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let code = code_of(&text);
        // `super::` is the parent of the module, of `client/mod.rs` as of `client/kept.rs`.
        let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
        let mut imports = BTreeSet::new();
        for (prefix, base) in [("crate::", ""), ("super::", parent)] {
            for segments in paths_after(&code, prefix) {
                imports.extend(resolve(&names, base, &segments));
            }
        }
        // A module names its own children without a prefix (`kept::Kept` in `client/mod.rs`).
        let children = names
            .iter()
            .filter(|n| n.rsplit_once("::").map(|(p, _)| p) == Some(module.as_str()));
        for child in children {
            let short = child.rsplit_once("::").map_or(*child, |(_, c)| c);
            if !paths_after(&code, &format!("{short}::")).is_empty() {
                imports.insert((*child).to_owned());
            }
        }
        imports.remove(module);
        graph.insert(module.clone(), imports);
    }
    graph
}

/// The `.rs` files under `dir`, but its `tests/` folder.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                walk(&path, files);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// `client/kept.rs` → `client::kept`, `client/mod.rs` → `client`; `None` for `lib.rs`.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    (parts != ["lib"]).then(|| parts.join("::"))
}

/// The code of a file: no comment lines, nothing from `#[cfg(test)] mod tests` on.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let end = lines
        .windows(2)
        .position(|w| w[0] == "#[cfg(test)]" && w[1].starts_with("mod tests"))
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .filter(|line| !line.starts_with("//"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths that follow each `prefix` not preceded by an identifier character or `::`: for
/// `crate::a::{b, c::d}`, `[a, b]` and `[a, c, d]` (segments only, names of items included).
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find(prefix) {
        let start = from + at;
        from = start + prefix.len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        expand(&code[from..], Vec::new(), &mut found);
    }
    found
}

/// Reads a path (`a::b`, `a::{b, c}`) at the start of `rest` onto `head`.
fn expand(rest: &str, mut head: Vec<String>, found: &mut Vec<Vec<String>>) {
    let rest = rest.trim_start();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut item = String::new();
        for c in inner.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&std::mem::take(&mut item), head.clone(), found);
                    continue;
                }
                _ => {}
            }
            item.push(c);
        }
        expand(&item, head, found);
        return;
    }
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if name.is_empty() {
        if !head.is_empty() {
            found.push(head);
        }
        return;
    }
    let after = &rest[name.len()..];
    head.push(name);
    match after.strip_prefix("::") {
        Some(more) => expand(more, head, found),
        None => found.push(head),
    }
}

/// The longest module named by `segments` under `base` (`""`: the crate's root); `base` itself
/// when they name only an item of it (none for the root's items).
fn resolve(names: &BTreeSet<&str>, base: &str, segments: &[String]) -> Option<String> {
    let longest = (1..=segments.len()).rev().find_map(|n| {
        let tail = segments[..n].join("::");
        let module = if base.is_empty() {
            tail
        } else {
            format!("{base}::{tail}")
        };
        names.contains(module.as_str()).then_some(module)
    });
    longest.or_else(|| (!base.is_empty()).then(|| base.to_owned()))
}
