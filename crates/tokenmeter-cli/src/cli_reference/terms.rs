//! Every word of the bench's table is defined in `tokenmeter bench --help` (its Terms, from
//! `src/bench_terms.txt`) and in the guide's glossary.

use clap::CommandFactory as _;

use super::root;
use crate::Cli;

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
        "undefined table terms: define each where named (the help's Terms are \
         crates/tokenmeter-cli/src/bench_terms.txt, one `term, term: definition` a line; the \
         glossary's entries are **bold**):\n{}",
        missing.join("\n")
    );
}
