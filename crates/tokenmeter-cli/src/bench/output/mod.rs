//! What a run leaves behind: the table on stdout, `--json`, `--trace` and `--html` files.

pub(crate) mod charts;
pub(crate) mod html;
pub(crate) mod table;
pub(crate) mod vllm_json;

pub(crate) use table::RunInfo;

use std::path::Path;

use anyhow::Context as _;

/// Writes `value` as pretty JSON to `path`.
pub(crate) fn write_json(path: &Path, value: &serde_json::Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").with_context(|| {
        format!(
            "cannot write {}; check the path given to --json",
            path.display()
        )
    })
}

/// Writes the HTML report to `path`.
pub(crate) fn write_html(path: &Path, html: Result<String, String>) -> anyhow::Result<()> {
    let html = html.map_err(|e| anyhow::anyhow!("building the HTML report failed: {e}"))?;
    std::fs::write(path, html).with_context(|| {
        format!(
            "cannot write {}; check the path given to --html",
            path.display()
        )
    })
}
