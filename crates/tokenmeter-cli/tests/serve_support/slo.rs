//! The SLO spec the `serve` tests load with `--slo-spec`.

use std::path::{Path, PathBuf};

/// Writes `slo.toml` in `dir` and returns its path: one class, `chat` (every chat request), with
/// two objectives: a TTFT p95 within `ttft_p95` (`"25ms"`) and a 99% success rate.
pub fn write_chat_spec(dir: &Path, ttft_p95: &str) -> PathBuf {
    let spec = format!(
        r#"
[[class]]
name = "chat"
match = {{ operation = "chat" }}

[[class.objective]]
latency = "ttft"
percentile = 95
threshold = "{ttft_p95}"

[[class.objective]]
success_rate = 0.99
"#
    );
    let path = dir.join("slo.toml");
    std::fs::write(&path, spec)
        .unwrap_or_else(|e| panic!("cannot write the SLO spec {}: {e}", path.display()));
    path
}
