//! The guide checked against the command, so neither can drift from the other:
//!
//! - the CLI reference (`docs/src/reference/cli.md`) is rendered from the clap definitions
//!   ([`render`]) and compared with the committed file;
//! - every term the bench's table prints is defined in `tokenmeter bench --help` and in the
//!   guide's glossary ([`terms`]);
//! - every `--flag` the guide and the README name is one of the command's ([`flags`]).
//!
//! `TOKENMETER_BLESS=1 cargo test -p tokenmeter-cli --bin tokenmeter cli_reference` rewrites the
//! reference after a change to a flag.

mod flags;
mod render;
mod terms;

use std::path::PathBuf;

use clap::CommandFactory as _;

use crate::Cli;

/// The committed reference, relative to the workspace root.
const REFERENCE: &str = "docs/src/reference/cli.md";

/// The workspace root (the binary crate is `crates/tokenmeter-cli`).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_cli_reference_matches_the_clap_definitions() {
    let rendered = render::render(&mut Cli::command());
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
