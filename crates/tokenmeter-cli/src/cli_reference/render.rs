//! The command tree as markdown: every subcommand, every visible flag with its help, default,
//! possible values and environment variable.

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command};

/// The whole command tree as markdown: one section per command, one entry per visible flag.
pub(super) fn render(command: &mut Command) -> String {
    command.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         <!-- Generated from the clap definitions by crates/tokenmeter-cli/src/cli_reference/. \
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

#[test]
fn escaping_leaves_code_spans_alone() {
    assert_eq!(escape("a <FILE> `x|y` *z*"), "a \\<FILE\\> `x|y` \\*z\\*");
}
