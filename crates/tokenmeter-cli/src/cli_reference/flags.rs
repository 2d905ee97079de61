//! Every `--flag` the guide and the README name is a flag of `tokenmeter`, or a listed flag of
//! another program.

use std::path::PathBuf;

use clap::CommandFactory as _;

use super::{REFERENCE, render::render, root};
use crate::Cli;

/// Flags the guide names that belong to other programs (cargo, `scripts/test.sh`, cargo-fuzz,
/// the router `smg` in serve.md's "Behind a router", the engine example `tokenmeter-engine` and
/// `scripts/real_engine.py` in engine.md and development.md): every other `--flag` it names
/// must be one of `tokenmeter`'s.
const OTHER_PROGRAMS_FLAGS: &[&str] = &[
    "--all-targets",
    "--check",
    "--doc",
    "--each-feature",
    "--example",
    "--features",
    "--fresh",
    "--git",
    "--host",
    "--ignored",
    "--kv-tokens",
    "--lib",
    "--locked",
    "--open",
    "--path",
    "--policy",
    "--port",
    "--prometheus-host",
    "--prometheus-port",
    "--quick",
    "--release",
    "--sanitizer",
    "--test",
    "--threads",
    "--worker-urls",
];

/// Every `--flag` word of `text` (a `--` at the start of a word, then lowercase letters, digits
/// and dashes).
fn flags_in(text: &str) -> Vec<&str> {
    let mut flags = Vec::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(found) = text[at..].find("--") {
        let start = at + found;
        let mut end = start + 2;
        while end < bytes.len() && matches!(bytes[end], b'a'..=b'z' | b'0'..=b'9' | b'-') {
            end += 1;
        }
        let word_start = start == 0
            || !matches!(bytes[start - 1], b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_');
        if word_start && end > start + 2 && bytes[start + 2].is_ascii_lowercase() {
            flags.push(&text[start..end]);
        }
        at = end.max(start + 2);
    }
    flags
}

/// The markdown files under `dir`, recursively.
fn markdown_files(dir: &std::path::Path, found: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).expect("the guide's directory");
    for entry in entries.map(|entry| entry.expect("a directory entry").path()) {
        if entry.is_dir() {
            markdown_files(&entry, found);
        } else if entry.extension().is_some_and(|ext| ext == "md") {
            found.push(entry);
        }
    }
}

#[test]
fn every_flag_the_guide_names_exists() {
    let reference = render(&mut Cli::command());
    let known: Vec<&str> = flags_in(&reference);
    let mut files = vec![root().join("README.md")];
    markdown_files(&root().join("docs/src"), &mut files);
    let mut unknown = Vec::new();
    for file in files.iter().filter(|file| !file.ends_with(REFERENCE)) {
        let text = std::fs::read_to_string(file).expect("a chapter of the guide");
        for flag in flags_in(&text) {
            if !known.contains(&flag) && !OTHER_PROGRAMS_FLAGS.contains(&flag) {
                unknown.push(format!("{}: {flag}", file.display()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "the guide names flags `tokenmeter` does not have (renamed or removed? fix the text, or \
         list another program's flag in OTHER_PROGRAMS_FLAGS):\n{}",
        unknown.join("\n")
    );
}

#[test]
fn flags_are_found_at_word_starts_only() {
    assert_eq!(
        flags_in("`--rate 5 --slo-from send` a--b ---x --Upper (--json)"),
        ["--rate", "--slo-from", "--json"]
    );
}
