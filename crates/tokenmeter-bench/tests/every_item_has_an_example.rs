//! Every public item of the crate has an example in its documentation that compiles.
//!
//! A source scan: the crate denies `unreachable_pub` (the workspace lint, `-D warnings` in CI),
//! so an item declared bare `pub` in `src/` is an item of the public API, and one declared
//! `pub(crate)` or private is not. For each such item the doc comment above it must hold a code
//! block that rustdoc compiles (a fence with no info string, `rust`, `no_run` or
//! `should_panic`; not `ignore`, `text` or `compile_fail`). A method may instead share the
//! example of its `impl` block's doc comment; a `pub mod` has its example in its `//!` docs.
//! That the examples compile and pass is `cargo test --doc`'s part.

use std::path::{Path, PathBuf};

/// One public item found in the source, and whether its docs hold a compiled example.
#[derive(Debug)]
struct Item {
    /// `file:line: the declaration`, for the failure message.
    place: String,
    /// Whether the item's doc comment (or, for a method, its `impl` block's) has an example.
    has_example: bool,
}

/// Whether a fence's info string (what follows the opening ```) makes a code block rustdoc
/// compiles as a doc test.
fn compiled(info: &str) -> bool {
    info.split(',')
        .map(str::trim)
        .all(|token| matches!(token, "" | "rust" | "no_run" | "should_panic"))
}

/// Whether `docs` (doc comment lines with the `///` or `//!` removed) hold a compiled example:
/// a block whose opening fence is compiled (a closing fence is not an opening one).
fn has_example(docs: &[String]) -> bool {
    let mut open = false;
    for line in docs {
        if let Some(info) = line.trim().strip_prefix("```") {
            if !open && compiled(info) {
                return true;
            }
            open = !open;
        }
    }
    false
}

/// The kinds of item that need an example, as they follow `pub ` (a method is a `fn` indented
/// inside an `impl`).
const KINDS: [&str; 8] = [
    "fn ",
    "async fn ",
    "const fn ",
    "struct ",
    "enum ",
    "trait ",
    "type ",
    "const ",
];

/// Scans one file's text for its public items. `module_docs` finds the `//!` docs of a
/// `pub mod name;` declared in this file.
fn scan(
    file: &str,
    text: &str,
    module_docs: &dyn Fn(&str) -> Option<Vec<String>>,
    out: &mut Vec<Item>,
) {
    let mut docs: Vec<String> = Vec::new();
    let mut attribute_depth = 0i32;
    // The example status of the doc comment of the `impl` block the scan is inside.
    let mut impl_example = false;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if attribute_depth > 0 || trimmed.starts_with("#[") {
            attribute_depth += depth_change(trimmed);
            continue;
        }
        if let Some(doc) = trimmed.strip_prefix("///") {
            docs.push(doc.to_owned());
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with("//") {
            continue;
        }
        let indented = line.len() != trimmed.len();
        if !indented && (trimmed.starts_with("impl ") || trimmed.starts_with("impl<")) {
            impl_example = has_example(&docs);
        }
        if let Some(rest) = trimmed.strip_prefix("pub ") {
            if let Some(name) = rest.strip_prefix("mod ") {
                let name = name.trim_end_matches(';').trim();
                let inner = module_docs(name).unwrap_or_default();
                out.push(Item {
                    place: format!("{file}:{}: {}", index + 1, trimmed),
                    has_example: has_example(&docs) || has_example(&inner),
                });
            } else if KINDS.iter().any(|kind| rest.starts_with(kind)) {
                let method = indented && rest.contains("fn ");
                out.push(Item {
                    place: format!("{file}:{}: {}", index + 1, trimmed),
                    has_example: has_example(&docs) || (method && impl_example),
                });
            }
        }
        docs.clear();
    }
}

/// How a line changes the depth of `[` brackets: an attribute may span lines.
fn depth_change(line: &str) -> i32 {
    line.chars()
        .map(|c| match c {
            '[' => 1,
            ']' => -1,
            _ => 0,
        })
        .sum()
}

/// The `//!` lines of a file, with the prefix removed.
fn inner_docs(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("//!"))
        .map(str::to_owned)
        .collect()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The public items of the crate's `src/`.
fn public_items() -> Vec<Item> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut items = Vec::new();
    for path in rust_files(&src) {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let dir = path.parent().expect("a file has a directory").to_path_buf();
        let module_docs = |name: &str| {
            [
                dir.join(format!("{name}.rs")),
                dir.join(name).join("mod.rs"),
            ]
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .map(|text| inner_docs(&text))
        };
        let file = path
            .strip_prefix(&src)
            .unwrap_or(&path)
            .display()
            .to_string();
        scan(&file, &text, &module_docs, &mut items);
    }
    items
}

#[test]
fn every_public_item_has_an_example_that_compiles() {
    let items = public_items();
    // The API has dozens of items: a scan that finds few has stopped recognising them.
    assert!(
        items.len() >= 60,
        "the scan found only {} public items; it no longer reads the source right",
        items.len()
    );
    let missing: Vec<&str> = items
        .iter()
        .filter(|item| !item.has_example)
        .map(|item| item.place.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} public items have no example that compiles; add a doc test (```) to the \
         doc comment of each (a method may share its impl block's):\n{}",
        missing.len(),
        items.len(),
        missing.join("\n")
    );
}

#[test]
fn the_scan_tells_an_example_from_none() {
    let text = r#"
/// Documented, with an example.
///
/// ```
/// assert!(true);
/// ```
#[derive(
    Debug,
)]
pub struct WithExample;

/// Documented, with a block that is not compiled.
///
/// ```text
/// output
/// ```
pub enum TextOnly {}

/// Not compiled either.
///
/// ```ignore
/// x
/// ```
pub fn ignored() {}

/// Shared by the methods.
///
/// ```no_run
/// let _ = 1;
/// ```
impl WithExample {
    /// Covered by the impl block's example.
    pub fn method(&self) {}
}

impl TextOnly {
    /// Not covered.
    pub fn bare(&self) {}
}

pub(crate) fn internal() {}

/// ```
/// assert!(true);
/// ```
pub const ONE: u8 = 1;

pub mod documented;
"#;
    let module_docs =
        |name: &str| (name == "documented").then(|| vec![" ```".to_owned(), " ```".to_owned()]);
    let mut items = Vec::new();
    scan("t.rs", text, &module_docs, &mut items);
    let found: Vec<(String, bool)> = items
        .iter()
        .map(|i| {
            let name = i.place.split_once(": ").map_or("", |(_, d)| d).to_owned();
            (name, i.has_example)
        })
        .collect();
    let expected = [
        ("pub struct WithExample;", true),
        ("pub enum TextOnly {}", false),
        ("pub fn ignored() {}", false),
        ("pub fn method(&self) {}", true),
        ("pub fn bare(&self) {}", false),
        ("pub const ONE: u8 = 1;", true),
        ("pub mod documented;", true),
    ];
    let expected: Vec<(String, bool)> = expected
        .iter()
        .map(|(name, example)| ((*name).to_owned(), *example))
        .collect();
    assert_eq!(found, expected);
}
