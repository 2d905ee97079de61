//! The guide's CLI reference (`docs/src/reference/cli.md`) is rendered from the clap definitions
//! and compared with the committed file, so it cannot drift from the command; and every term the
//! bench table prints is defined both in `tokenmeter bench --help` and in the guide's glossary.
//!
//! `TOKENMETER_BLESS=1 cargo test -p tokenmeter-cli --bin tokenmeter cli_reference` rewrites the
//! reference after a change to a flag.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Arg, ArgAction, Command, CommandFactory as _};

use crate::Cli;

/// The committed reference, relative to the workspace root.
const REFERENCE: &str = "docs/src/reference/cli.md";
/// The guide's glossary, relative to the workspace root.
const GLOSSARY: &str = "docs/src/glossary.md";

/// The words the bench's table (plain, `--sweep`, `--slice`, `--concurrency` levels, the server's
/// view) prints that a reader may not know. Each must be defined in `bench --help` and in the
/// glossary.
const TABLE_TERMS: &[&str] = &[
    "TTFT",
    "TTFOT",
    "TTST",
    "TPOT",
    "NTPOT",
    "ITL",
    "E2E",
    "to end",
    "client queue",
    "TTFT sched.",
    "E2E sched.",
    "throughput",
    "goodput",
    "good/s",
    "attainment",
    "outcomes",
    "load",
    "dispatch lag",
    "slot wait",
    "CPU",
    "note",
    "diagnosis",
    "slice",
    "wait",
    "run",
    "KV%",
    "srv p95 bucket",
    "c−s mean",
    "client − server",
    "judged",
    "served",
    "95% interval",
    "verdict",
    "capacity",
    "stage",
    "hit",
    "miss",
];

/// Flags the guide names that belong to other programs (cargo, `scripts/test.sh`, cargo-fuzz):
/// every other `--flag` it names must be one of `tokenmeter`'s.
const OTHER_PROGRAMS_FLAGS: &[&str] = &[
    "--doc",
    "--each-feature",
    "--example",
    "--features",
    "--git",
    "--locked",
    "--path",
    "--quick",
    "--release",
    "--sanitizer",
    "--test",
];

/// The workspace root (the binary crate is `crates/tokenmeter-cli`).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The whole command tree as markdown: one section per command, one entry per visible flag.
fn render(command: &mut Command) -> String {
    command.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         <!-- Generated from the clap definitions by crates/tokenmeter-cli/src/cli_reference.rs. \
         Do not edit: run `TOKENMETER_BLESS=1 cargo test -p tokenmeter-cli --bin tokenmeter \
         cli_reference` after changing a flag. -->\n\n\
         Every subcommand and flag of `tokenmeter`, with its help, default and possible values, \
         exactly as `--help` prints them.\n",
    );
    section(&mut out, command, "tokenmeter");
    out
}

fn section(out: &mut String, command: &Command, path: &str) {
    let _ = write!(out, "\n## `{path}`\n\n");
    if let Some(about) = command.get_long_about().or(command.get_about()) {
        let _ = writeln!(out, "{}\n", escape(&about.to_string()));
    }
    let usage = command.clone().render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ");
    let _ = writeln!(out, "```text\n{usage}\n```");
    let subcommands: Vec<&Command> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .collect();
    if !subcommands.is_empty() {
        out.push_str("\n**Subcommands:**\n\n");
        for sub in &subcommands {
            let about = sub.get_about().map(|a| escape(&a.to_string()));
            let _ = writeln!(out, "- `{}`: {}", sub.get_name(), about.unwrap_or_default());
        }
    }
    let positionals: Vec<&Arg> = command
        .get_positionals()
        .filter(|arg| !arg.is_hide_set())
        .collect();
    if !positionals.is_empty() {
        out.push_str("\n**Arguments:**\n\n");
        for arg in positionals {
            entry(out, arg);
        }
    }
    let options: Vec<&Arg> = command
        .get_arguments()
        .filter(|arg| !arg.is_positional() && !arg.is_hide_set())
        .collect();
    if !options.is_empty() {
        out.push_str("\n**Options:**\n\n");
        for arg in options {
            entry(out, arg);
        }
    }
    if let Some(after) = command.get_after_long_help().or(command.get_after_help()) {
        let _ = writeln!(out, "\n```text\n{}\n```", after.to_string().trim_end());
    }
    for sub in subcommands {
        section(out, sub, &format!("{path} {}", sub.get_name()));
    }
}

/// One flag: its spellings, value, help, default, possible values and environment variable.
fn entry(out: &mut String, arg: &Arg) {
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    for alias in arg.get_visible_aliases().unwrap_or_default() {
        names.push(format!("--{alias}"));
    }
    let value = if arg.is_positional() {
        format!("<{}>", value_names(arg).join("> <"))
    } else if takes_values(arg) {
        format!(" <{}>", value_names(arg).join("> <"))
    } else {
        String::new()
    };
    let spelled = if names.is_empty() {
        value.clone()
    } else {
        names
            .iter()
            .map(|name| format!("{name}{value}"))
            .collect::<Vec<_>>()
            .join("`, `")
    };
    let _ = write!(out, "- `{spelled}`");
    let help = arg.get_long_help().or(arg.get_help());
    if let Some(help) = help {
        let text = escape(&help.to_string()).replace('\n', "\n  ");
        let _ = write!(out, ": {text}");
    }
    let _ = writeln!(out);
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|value| value.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && takes_values(arg) {
        let _ = writeln!(out, "\n  Default: `{}`", defaults.join(","));
    }
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|value| !value.is_hide_set())
        .map(|value| format!("`{}`", value.get_name()))
        .collect();
    if !possible.is_empty() && takes_values(arg) {
        let _ = writeln!(out, "\n  Possible values: {}", possible.join(", "));
    }
    if let Some(env) = arg.get_env() {
        let _ = writeln!(out, "\n  Environment: `{}`", env.to_string_lossy());
    }
}

fn takes_values(arg: &Arg) -> bool {
    !matches!(
        arg.get_action(),
        ArgAction::SetTrue
            | ArgAction::SetFalse
            | ArgAction::Count
            | ArgAction::Help
            | ArgAction::HelpShort
            | ArgAction::HelpLong
            | ArgAction::Version
    )
}

fn value_names(arg: &Arg) -> Vec<String> {
    match arg.get_value_names() {
        Some(names) => names.iter().map(ToString::to_string).collect(),
        None => vec![arg.get_id().as_str().to_uppercase()],
    }
}

/// Escapes what markdown would read as markup (`<`, `*`, `_`, `[`, `|`, …) outside backtick code
/// spans; inside them, text is shown as is.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code && matches!(c, '\\' | '*' | '_' | '<' | '>' | '[' | ']' | '|' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The long help of `tokenmeter bench`, as `tokenmeter bench --help` prints it.
fn bench_help() -> String {
    let mut command = Cli::command();
    command.build();
    command
        .find_subcommand_mut("bench")
        .expect("the bench subcommand")
        .render_long_help()
        .to_string()
}

#[test]
fn the_cli_reference_matches_the_clap_definitions() {
    let rendered = render(&mut Cli::command());
    let path = root().join(REFERENCE);
    if std::env::var_os("TOKENMETER_BLESS").is_some_and(|value| value == "1") {
        std::fs::write(&path, &rendered).expect("write the CLI reference");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != rendered {
        let line = committed
            .lines()
            .zip(rendered.lines())
            .position(|(old, new)| old != new)
            .unwrap_or(committed.lines().count().min(rendered.lines().count()));
        panic!(
            "{REFERENCE} is out of date with the clap definitions (first difference at line \
             {}). Regenerate it with\n\n    TOKENMETER_BLESS=1 cargo test -p tokenmeter-cli \
             --bin tokenmeter cli_reference\n\nand commit the result.",
            line + 1
        );
    }
}

#[test]
fn every_bench_table_term_is_defined_in_the_help_and_the_glossary() {
    let help = bench_help();
    let terms_section = help
        .split("\nTerms ")
        .nth(1)
        .expect("`tokenmeter bench --help` has a \"Terms\" section");
    // Each line of the section is `  term, term: definition`.
    let defined: Vec<&str> = terms_section
        .lines()
        .filter_map(|line| line.trim().split_once(": "))
        .flat_map(|(names, _)| names.split(", "))
        .collect();
    let glossary = std::fs::read_to_string(root().join(GLOSSARY)).expect("the glossary");
    let mut missing = Vec::new();
    for term in TABLE_TERMS {
        if !defined.contains(term) {
            missing.push(format!(
                "{term:?} in the Terms of `tokenmeter bench --help`"
            ));
        }
        if !glossary.contains(&format!("**{term}**")) {
            missing.push(format!("{term:?} as a **bold** entry of {GLOSSARY}"));
        }
    }
    assert!(
        missing.is_empty(),
        "undefined table terms (define each where named; the bench's Bench variant in \
         crates/tokenmeter-cli/src/main.rs holds the help's Terms):\n{}",
        missing.join("\n")
    );
}

#[test]
fn escaping_leaves_code_spans_alone() {
    assert_eq!(escape("a <FILE> `x|y` *z*"), "a \\<FILE\\> `x|y` \\*z\\*");
}

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
