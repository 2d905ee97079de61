//! SECURITY.md states the default of each limit next to its flag (`10 s (`--header-timeout`)`,
//! `(`--send-buffer`, 16 KiB`, ``--max-answer-size` (default 256 MiB)`, `` `--listen
//! 127.0.0.1:8000` ``). This test reads every such pair from the page and checks it against the
//! default the command itself prints in `tokenmeter serve --help` or `tokenmeter bench --help`,
//! so the page cannot promise a limit the binary does not have.

// The real binary: the defaults are those `tokenmeter serve --help` prints (no server is started).
use std::collections::BTreeMap;
use std::process::Command;

/// A default as a kind and a number: a duration in microseconds, or a count or size in bytes.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Value {
    Micros(u64),
    Count(u64),
}

/// `10s`, `10 s`, `500ms`, `2MiB`, `16 KiB`, `8,192`, `16384`; `None` for anything else.
fn parse_value(text: &str) -> Option<Value> {
    let text: String = text.chars().filter(|c| *c != ',' && *c != ' ').collect();
    let digits = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let number: f64 = text[..digits].parse().ok()?;
    let value = |scale: f64| (number * scale).round() as u64;
    Some(match &text[digits..] {
        "" => Value::Count(value(1.0)),
        "us" => Value::Micros(value(1.0)),
        "ms" => Value::Micros(value(1e3)),
        "s" => Value::Micros(value(1e6)),
        "m" => Value::Micros(value(60e6)),
        "KiB" => Value::Count(value(1024.0)),
        "MiB" => Value::Count(value(1024.0 * 1024.0)),
        "GiB" => Value::Count(value(1024.0 * 1024.0 * 1024.0)),
        _ => return None,
    })
}

/// The `[default: …]` of each flag of `tokenmeter <command> --help`.
fn help_defaults(command: &str) -> BTreeMap<String, String> {
    let output = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .args([command, "--help"])
        .output()
        .expect("tokenmeter runs");
    assert!(
        output.status.success(),
        "tokenmeter {command} --help failed"
    );
    let text = String::from_utf8(output.stdout).expect("UTF-8 help");
    let mut defaults = BTreeMap::new();
    let mut flag = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('-') {
            flag = line
                .split([' ', ','])
                .find(|word| word.starts_with("--"))
                .map(str::to_owned);
        }
        if let (Some(flag), Some(rest)) = (&flag, line.strip_prefix("[default: ")) {
            defaults.insert(flag.clone(), rest.trim_end_matches(']').to_owned());
        }
    }
    defaults
}

/// `s` without a table's `|` or an opening parenthesis before it.
fn cell(s: &str) -> &str {
    s.trim_start_matches(['|', '('])
}

/// The number and unit `text` ends with (`| 10 s ` → `10 s `, `| 1024 ` → `1024`).
fn value_before(text: &str) -> Option<&str> {
    let words: Vec<&str> = text.split_whitespace().rev().take(2).collect();
    match words.as_slice() {
        [unit, number, ..] if parse_value(unit).is_none() => {
            let start = text.rfind(cell(number))?;
            parse_value(&text[start..]).map(|_| &text[start..])
        }
        [number, ..] => parse_value(cell(number)).map(|_| cell(number)),
        _ => None,
    }
}

/// Every (flag, default) pair the page states, in the four forms it uses.
fn stated_defaults(page: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    // The prose forms may be cut across lines: read them on the page as one line.
    let joined = page.replace('\n', " ");
    {
        let line = joined.as_str();
        // `10 s (`--header-timeout`)` and `(`--send-buffer`, 16 KiB`.
        for (at, _) in line.match_indices("(`--") {
            let flag: String = line[at + 2..].chars().take_while(|c| *c != '`').collect();
            if flag.contains(' ') {
                continue;
            }
            if let Some(value) = value_before(&line[..at]) {
                pairs.push((flag.clone(), value.to_owned()));
            }
            let after = line.get(at + 2 + flag.len() + 1..).unwrap_or("");
            if let Some(rest) = after.strip_prefix(", ") {
                let value: String = rest.split([',', ')']).next().unwrap_or("").to_owned();
                if parse_value(&value).is_some() {
                    pairs.push((flag.clone(), value));
                }
            }
        }
        // `(30 s, `tokenmeter serve --stall-limit`)`.
        for (at, _) in line.match_indices(", `tokenmeter serve --") {
            let flag: String = line[at + 20..].chars().take_while(|c| *c != '`').collect();
            let open = line[..at].rfind('(').map_or(0, |o| o + 1);
            if parse_value(&line[open..at]).is_some() {
                pairs.push((flag, line[open..at].to_owned()));
            }
        }
        // `` `--max-answer-size` (default 256 MiB) ``.
        for (at, _) in line.match_indices("` (default ") {
            let open = line[..at].rfind("`--").map(|o| o + 1);
            let value: String = line[at + 11..].chars().take_while(|c| *c != ')').collect();
            if let Some(open) = open
                && parse_value(&value).is_some()
            {
                pairs.push((line[open..at].to_owned(), value));
            }
        }
    }
    for line in page.lines() {
        // A table's default cell `` `--listen 127.0.0.1:8000` ``.
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() > 3
            && let Some(inner) = cells[2]
                .strip_prefix("`--")
                .and_then(|c| c.strip_suffix('`'))
            && let Some((flag, value)) = inner.split_once(' ')
        {
            pairs.push((format!("--{flag}"), value.to_owned()));
        }
    }
    pairs
}

#[test]
fn every_default_security_md_states_is_the_commands_default() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../SECURITY.md"))
        .expect("SECURITY.md");
    let serve = help_defaults("serve");
    let bench = help_defaults("bench");
    let stated = stated_defaults(&page);
    let mut wrong = Vec::new();
    for (flag, value) in &stated {
        let Some(actual) = serve.get(flag).or_else(|| bench.get(flag)) else {
            wrong.push(format!("{flag}: no default in serve's or bench's --help"));
            continue;
        };
        let same = match (parse_value(value), parse_value(actual)) {
            (Some(a), Some(b)) => a == b,
            _ => value == actual,
        };
        if !same {
            wrong.push(format!("{flag}: SECURITY.md says {value}, --help {actual}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "SECURITY.md states defaults the command does not have:\n{}",
        wrong.join("\n")
    );
    // The forms above must keep finding the page's defaults.
    let flags: Vec<&str> = stated.iter().map(|(flag, _)| flag.as_str()).collect();
    for flag in [
        "--listen",
        "--header-timeout",
        "--keep-alive-timeout",
        "--send-timeout",
        "--body-timeout",
        "--max-body-size",
        "--max-body-memory",
        "--max-connections",
        "--max-model-len",
        "--queue-limit",
        "--shutdown-grace",
        "--stall-limit",
        "--send-buffer",
        "--max-answer-size",
    ] {
        assert!(flags.contains(&flag), "{flag} not found in {stated:?}");
    }
}

#[test]
fn a_wrong_default_is_caught() {
    let page = "| A | 9 s (`--header-timeout`) | x |\n(`--send-buffer`, 8 KiB, …)\n";
    let serve = help_defaults("serve");
    for (flag, value) in stated_defaults(page) {
        assert_ne!(parse_value(&value), parse_value(&serve[&flag]), "{flag}");
    }
    assert_eq!(stated_defaults(page).len(), 2);
}
