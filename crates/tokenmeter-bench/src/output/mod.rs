//! What a run leaves behind: the table on stdout, `--json`, `--trace` and `--html` files.

pub(crate) mod charts;
pub(crate) mod classes;
pub(crate) mod html;
mod paths;
pub(crate) mod percentiles;
pub(crate) mod repeat;
mod repeat_html;
pub(crate) mod samples_json;
pub(crate) mod single;
pub(crate) mod slices;
pub(crate) mod slo_classes;
pub(crate) mod stages;
pub(crate) mod table;
pub(crate) mod turns;
pub(crate) mod vllm_json;

pub(crate) use crate::run_block::RunInfo;

use std::path::Path;

use anyhow::Context as _;

pub(crate) use crate::console::is_stdout;

/// Checks every output path before the first request: at most one may be `-` (stdout), none
/// may be a symbolic link, no two may name the same file (also through `..`, a linked
/// directory or a hard link), none may be one of `inputs` (the files the command reads, each
/// with its flag), and each must be writable ([`check_writable`]).
pub(crate) fn check_paths(
    paths: &[(Option<&Path>, &str)],
    inputs: &[(&Path, &str)],
) -> anyhow::Result<()> {
    let to_stdout: Vec<&str> = paths
        .iter()
        .filter(|(p, _)| p.is_some_and(is_stdout))
        .map(|(_, flag)| *flag)
        .collect();
    if to_stdout.len() > 1 {
        anyhow::bail!(
            "{} all write to stdout (`-`); give all but one a file name",
            to_stdout.join(" and ")
        );
    }
    let files: Vec<(&Path, &str)> = paths
        .iter()
        .filter_map(|(path, flag)| path.filter(|p| !is_stdout(p)).map(|p| (p, *flag)))
        .collect();
    for (path, flag) in &files {
        paths::refuse_symlink(path, flag)?;
    }
    paths::refuse_collisions(&files)?;
    paths::refuse_inputs(&files, inputs)?;
    for (path, flag) in &files {
        check_writable(path, flag)?;
    }
    Ok(())
}

/// Prints human-readable `text`: on stdout, or on stderr when an output file is `-`
/// (`to_stderr`), so that stdout holds that file only.
pub(crate) fn show(to_stderr: bool, text: &str) {
    if to_stderr {
        crate::console::err(text);
    } else {
        crate::console::out(text);
    }
}

/// Checks before the first request that `path` (given to `flag`) can be written: its
/// directory exists and the file can be created or appended to. A file created for the check
/// is removed again; an existing one is left as it is until the run writes it.
pub(crate) fn check_writable(path: &Path, flag: &str) -> anyhow::Result<()> {
    if is_stdout(path) {
        return Ok(());
    }
    let existed = path.exists();
    if path.is_dir() {
        anyhow::bail!("{flag} {} is a directory; give a file name", path.display());
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .with_context(|| {
            format!(
                "cannot write {} (checked before the run); check the path given to {flag}",
                path.display()
            )
        })?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Writes `text` to `path`, or to stdout for `-`.
pub(crate) fn write_text(path: &Path, text: &str, flag: &str) -> anyhow::Result<()> {
    if is_stdout(path) {
        return crate::console::write_stdout(text.as_bytes())
            .with_context(|| format!("cannot write {flag} to stdout"));
    }
    std::fs::write(path, text).with_context(|| {
        format!(
            "cannot write {}; check the path given to {flag}",
            path.display()
        )
    })
}

/// Writes `value` as pretty JSON to `path` (`-`: stdout); to a file as it is serialized,
/// with no copy of the text in memory.
pub(crate) fn write_json(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    if is_stdout(path) {
        let text = serde_json::to_string_pretty(value)?;
        return write_text(path, &(text + "\n"), "--json");
    }
    let cannot = || {
        format!(
            "cannot write {}; check the path given to --json",
            path.display()
        )
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).with_context(cannot)?);
    serde_json::to_writer_pretty(&mut out, value).with_context(cannot)?;
    std::io::Write::write_all(&mut out, b"\n")
        .and_then(|()| std::io::Write::flush(&mut out))
        .with_context(cannot)
}

/// Writes the HTML report to `path` (`-`: stdout).
pub(crate) fn write_html(path: &Path, html: Result<String, String>) -> anyhow::Result<()> {
    let html = html.map_err(|e| anyhow::anyhow!("building the HTML report failed: {e}"))?;
    write_text(path, &html, "--html")
}
