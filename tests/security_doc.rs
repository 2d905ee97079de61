//! SECURITY.md names the code and the test behind each promise; this test keeps those names
//! true. It reads every code span of the page and checks, against the repository's files:
//!
//! - a path (`crates/…/x.rs`, `serve/body.rs`, `tests/install.rs`, `src/listener/`, `x.rs`)
//!   names a file or directory that exists: from the repository root, or else as the end of
//!   some file's path (the page also writes paths relative to the crate or module at hand);
//! - a test name (a snake_case name of four words or more, such as
//!   `a_busy_address_is_reported_with_a_fix`, possibly behind `module::`, or cut with `…`) is a
//!   function: `fn NAME(` is in the file the page names right after it (`` `NAME` in `PATH` ``,
//!   also through a list `` `A`, `B` and `C` in `PATH` ``; a test binary `x.rs` includes its
//!   modules in `x/`), or anywhere under `crates/` and `tests/` when no file follows;
//! - any other name followed by `` in `PATH` `` (a function, a constant) is a word of that file;
//! - `Type::item` names a type defined in the code, and `item` as a function anywhere or a
//!   word of a file that defines the type; a bare `CamelCase` or `ALL_CAPS` name is a word of
//!   some Rust file.
//!
//! Metric names, flags, JSON fields and other vocabulary (anything else) are not checked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One Rust or other source file of the repository, by its path from the root.
struct Source {
    path: String,
    text: String,
}

/// The repository: every file's path, and the text of its Rust files.
struct Repo {
    root: PathBuf,
    files: Vec<String>,
    dirs: BTreeSet<String>,
    rust: Vec<Source>,
}

impl Repo {
    fn load() -> Repo {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("tests/ has a parent")
            .to_path_buf();
        let mut repo = Repo {
            root: root.clone(),
            files: Vec::new(),
            dirs: BTreeSet::new(),
            rust: Vec::new(),
        };
        repo.walk(&root, "");
        repo
    }

    fn walk(&mut self, dir: &Path, relative: &str) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {dir:?}: {e}"));
        for entry in entries {
            let entry = entry.expect("a directory entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            let path = format!("{relative}{name}");
            let kind = entry.file_type().expect("a file type");
            if kind.is_dir() {
                self.dirs.insert(format!("{path}/"));
                self.walk(&entry.path(), &format!("{path}/"));
            } else {
                if name.ends_with(".rs") {
                    let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                    self.rust.push(Source {
                        path: path.clone(),
                        text,
                    });
                }
                self.files.push(path);
            }
        }
    }

    /// The files and directories a path of the page can name: itself from the root, or the
    /// paths that end with it at a `/`.
    fn resolve(&self, cited: &str) -> Vec<String> {
        let all = self.files.iter().chain(self.dirs.iter());
        all.filter(|path| {
            path.as_str() == cited
                || path
                    .strip_suffix(cited)
                    .is_some_and(|head| head.ends_with('/'))
        })
        .cloned()
        .collect()
    }

    /// The Rust sources under the resolved paths (a test binary `x.rs` with its `x/` modules).
    fn sources_under(&self, resolved: &[String]) -> Vec<&Source> {
        let mut prefixes: Vec<String> = Vec::new();
        for path in resolved {
            prefixes.push(path.clone());
            if let Some(stem) = path.strip_suffix(".rs") {
                prefixes.push(format!("{stem}/"));
            }
        }
        self.rust
            .iter()
            .filter(|s| {
                prefixes
                    .iter()
                    .any(|p| s.path == *p || (p.ends_with('/') && s.path.starts_with(p.as_str())))
            })
            .collect()
    }

    fn code_sources(&self) -> Vec<&Source> {
        self.rust
            .iter()
            .filter(|s| s.path.starts_with("crates/") || s.path.starts_with("tests/"))
            // This file holds made-up names to show they are caught.
            .filter(|s| s.path != "tests/security_doc.rs")
            .collect()
    }
}

/// The code spans of a Markdown text with the text that follows each up to the next span.
fn code_spans(text: &str) -> Vec<(String, String)> {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let fence = &rest[start..start + ticks];
        let body_start = start + ticks;
        let Some(len) = rest[body_start..].find(fence) else {
            break;
        };
        let body = rest[body_start..body_start + len].trim().to_string();
        rest = &rest[body_start + len + ticks..];
        let next = rest.find('`').unwrap_or(rest.len());
        spans.push((body, rest[..next].to_string()));
    }
    spans
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `word` occurs in `text` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_word_char) && !after.is_some_and(is_word_char)
    })
}

/// Whether the sources define function `name` (`prefix`: any function whose name starts so).
fn has_fn(sources: &[&Source], name: &str, prefix: bool) -> bool {
    let needle = format!("fn {name}");
    sources.iter().any(|s| {
        s.text.match_indices(&needle).any(|(at, _)| {
            let after = s.text[at + needle.len()..].chars().next();
            prefix || matches!(after, Some('(') | Some('<'))
        })
    })
}

fn is_path(span: &str) -> bool {
    const EXTENSIONS: [&str; 7] = [".rs", ".md", ".toml", ".py", ".sh", ".json", ".yml"];
    !span.contains(char::is_whitespace)
        && span.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '.')
        && !span.contains('*')
        && (EXTENSIONS.iter().any(|e| span.ends_with(e))
            || (span.contains('/') && span.ends_with('/'))
            || ["crates/", "tests/", "scripts/", "examples/", "benches/"]
                .iter()
                .any(|p| span.starts_with(p)))
}

fn is_snake(name: &str) -> bool {
    !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// A test's name: snake_case, four words or more, not a metric.
fn is_test_name(name: &str) -> bool {
    is_snake(name)
        && name.split('_').count() >= 4
        && !["tokenmeter_", "gen_ai_", "vllm_", "http_"]
            .iter()
            .any(|p| name.starts_with(p))
}

fn is_camel(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
        && name.chars().any(|c| c.is_ascii_lowercase())
}

fn is_caps(name: &str) -> bool {
    name.len() > 1
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The path the page names right after a name: `` in `PATH` `` directly, or after a list of
/// other names (`` , `B` ``, `` and `C` ``) and short remarks in parentheses.
fn following_path(spans: &[(String, String)], index: usize) -> Option<&str> {
    let mut i = index;
    loop {
        let between = spans[i].1.trim();
        let between = strip_remark(between);
        if matches!(between, "in" | "in the same file" | "(unit) in") && i + 1 < spans.len() {
            let next = spans[i + 1].0.as_str();
            return is_path(next).then_some(next);
        }
        if matches!(between, "," | "and" | ", and") && i + 1 < spans.len() {
            let next = spans[i + 1].0.as_str();
            if is_path(next) || next.contains(' ') {
                return None;
            }
            i += 1;
            continue;
        }
        return None;
    }
}

/// `between` without a leading `(…)` remark.
fn strip_remark(between: &str) -> &str {
    if let Some(rest) = between.strip_prefix('(')
        && let Some(close) = rest.find(')')
    {
        return rest[close + 1..].trim();
    }
    between
}

/// Every name of the page that the repository does not hold, one line each.
fn check(page: &str, repo: &Repo) -> Vec<String> {
    let spans = code_spans(page);
    let code = repo.code_sources();
    let mut problems = Vec::new();
    for (index, (span, _)) in spans.iter().enumerate() {
        if is_path(span) {
            if repo.resolve(span).is_empty() && !repo.root.join(span).exists() {
                problems.push(format!("`{span}`: no such file or directory"));
            }
            continue;
        }
        let (name, prefix) = match span.strip_suffix('…') {
            Some(cut) => (cut, true),
            None => (span.as_str(), false),
        };
        let last = name.rsplit("::").next().unwrap_or(name);
        let scope: Option<Vec<&Source>> = following_path(&spans, index).map(|path| {
            let resolved = repo.resolve(path);
            repo.sources_under(&resolved)
        });
        if is_snake(name.split("::").next().unwrap_or(name)) && is_test_name(last) {
            let sources = scope.clone().unwrap_or_else(|| code.clone());
            if !has_fn(&sources, last, prefix) {
                let place = following_path(&spans, index).unwrap_or("crates/ or tests/");
                problems.push(format!("`{span}`: no `fn {last}` in {place}"));
            }
            continue;
        }
        if let Some((ty, item)) = name.split_once("::") {
            if is_camel(ty) && !item.contains("::") && (is_snake(item) || is_camel(item)) {
                let defining: Vec<&Source> = code
                    .iter()
                    .copied()
                    .filter(|s| has_word(&s.text, ty))
                    .collect();
                if defining.is_empty() {
                    problems.push(format!("`{span}`: `{ty}` is not in the code"));
                } else if !has_fn(&code, item, false)
                    && !defining.iter().any(|s| has_word(&s.text, item))
                {
                    problems.push(format!("`{span}`: `{ty}` has no `{item}`"));
                }
            } else if is_snake(ty) && is_snake(item) && !has_fn(&code, item, false) {
                problems.push(format!("`{span}`: no `fn {item}` in crates/ or tests/"));
            }
            continue;
        }
        if let Some(sources) = &scope {
            if (is_snake(last) || is_caps(last) || is_camel(last))
                && !sources.iter().any(|s| has_word(&s.text, last))
            {
                let place = following_path(&spans, index).unwrap_or_default();
                problems.push(format!("`{span}`: `{last}` is not in {place}"));
            }
            continue;
        }
        if (is_camel(name) || is_caps(name)) && !code.iter().any(|s| has_word(&s.text, name)) {
            problems.push(format!("`{span}`: not a name in the code"));
        }
    }
    problems
}

#[test]
fn every_name_in_security_md_is_in_the_code() {
    let repo = Repo::load();
    let page = std::fs::read_to_string(repo.root.join("SECURITY.md")).expect("SECURITY.md");
    let problems = check(&page, &repo);
    assert!(
        problems.is_empty(),
        "SECURITY.md names what the repository does not hold; fix the name or the path:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_bogus_name_or_path_is_caught() {
    let repo = Repo::load();
    let page = "`a_test_that_was_never_written` in `crates/tokenmeter/tests/outcomes.rs`; \
                `series_past_the_cap_fold_into_other` in `tests/cardinality.rs`; \
                `crates/tokenmeter/src/no_such_file.rs`; `an_unwritten_test_anywhere_at_all`; \
                `Meter::no_such_method`; `NoSuchType`";
    let problems = check(page, &repo);
    assert_eq!(problems.len(), 6, "{problems:#?}");
    let good = "`series_past_the_cap_fold_into_other` and `label_values_are_sanitised_and_bounded` \
                in `crates/tokenmeter/tests/outcomes.rs`; `display_url` in `tokenmeter-bench/src/url.rs`; \
                `Meter::folded_count`; `hang_ups_and_stalled_readers…`";
    assert_eq!(check(good, &repo), Vec::<String>::new());
}

/// The Prometheus listener's table states each default as `` 10 s (`header_timeout`) ``: each
/// must be the crate's constant, the one `Builder::new` starts from.
#[test]
fn the_prometheus_listener_defaults_are_the_crates() {
    use tokenmeter_prometheus::{
        DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_SEND_TIMEOUT,
    };
    let repo = Repo::load();
    let page = std::fs::read_to_string(repo.root.join("SECURITY.md")).expect("SECURITY.md");
    let expected = [
        (
            "header_timeout",
            format!("{} s", DEFAULT_HEADER_TIMEOUT.as_secs()),
        ),
        (
            "idle_timeout",
            format!("{} s", DEFAULT_IDLE_TIMEOUT.as_secs()),
        ),
        (
            "send_timeout",
            format!("{} s", DEFAULT_SEND_TIMEOUT.as_secs()),
        ),
        ("max_connections", DEFAULT_MAX_CONNECTIONS.to_string()),
    ];
    for (method, value) in expected {
        let cell = format!("| {value} (`{method}`) |");
        assert!(
            page.contains(&cell),
            "SECURITY.md's listener table must state `{cell}` (the crate's default)"
        );
    }
}

/// The page states the simulator's output queue as `` (`SimConfig::output_queue`, 16 tokens ``:
/// it must be the crate's default.
#[test]
fn the_simulator_output_queue_is_the_crates() {
    let repo = Repo::load();
    let page = std::fs::read_to_string(repo.root.join("SECURITY.md")).expect("SECURITY.md");
    let page = page.split_whitespace().collect::<Vec<_>>().join(" ");
    let stated = format!(
        "(`SimConfig::output_queue`, {} tokens",
        tokenmeter_sim::DEFAULT_OUTPUT_QUEUE
    );
    assert!(
        page.contains(&stated),
        "SECURITY.md must state `{stated}` (the crate's default)"
    );
}
