//! Cross-crate and end-to-end tests live in this package's test targets. Its library holds the
//! helpers they and the other crates' integration tests share: a real Prometheus server on
//! loopback, a tiny HTTP client, the data points of an OpenTelemetry export, the model-server
//! protocol's table (`gaie`), external binaries, temporary directories and free ports.
#![allow(missing_docs, unreachable_pub)]

pub mod gaie;
pub mod http;
pub mod logged;
pub mod orca;
pub mod otel;
pub mod prometheus;
pub mod tokenizer;

/// The README's snippets and the guide's chapters (`docs/src`), so that `cargo test --doc` compiles (and, unless marked
/// `no_run`, runs) every ```` ```rust ```` block in them.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../README.md")]
    mod readme {}
    #[doc = include_str!("../docs/src/introduction.md")]
    mod introduction {}
    #[doc = include_str!("../docs/src/install.md")]
    mod install {}
    #[doc = include_str!("../docs/src/library.md")]
    mod library {}
    #[doc = include_str!("../docs/src/exporters.md")]
    mod exporters {}
    #[doc = include_str!("../docs/src/slo.md")]
    mod slo {}
    #[doc = include_str!("../docs/src/engine.md")]
    mod engine {}
    #[doc = include_str!("../docs/src/bench/index.md")]
    mod bench {}
    #[doc = include_str!("../docs/src/bench/workloads.md")]
    mod bench_workloads {}
    #[doc = include_str!("../docs/src/bench/load.md")]
    mod bench_load {}
    #[doc = include_str!("../docs/src/bench/sweeps.md")]
    mod bench_sweeps {}
    #[doc = include_str!("../docs/src/bench/repeat.md")]
    mod bench_repeat {}
    #[doc = include_str!("../docs/src/bench/slices.md")]
    mod bench_slices {}
    #[doc = include_str!("../docs/src/bench/server-view.md")]
    mod bench_server_view {}
    #[doc = include_str!("../docs/src/bench/outputs.md")]
    mod bench_outputs {}
    #[doc = include_str!("../docs/src/bench/intervals.md")]
    mod bench_intervals {}
    #[doc = include_str!("../docs/src/bench/hostile.md")]
    mod bench_hostile {}
    #[doc = include_str!("../docs/src/serve.md")]
    mod serve {}
    #[doc = include_str!("../docs/src/scale.md")]
    mod scale {}
    #[doc = include_str!("../docs/src/reference/metrics.md")]
    mod reference_metrics {}
    #[doc = include_str!("../docs/src/reference/gateways.md")]
    mod reference_gateways {}
    #[doc = include_str!("../docs/src/reference/cli.md")]
    mod reference_cli {}
    #[doc = include_str!("../docs/src/reference/formats.md")]
    mod reference_formats {}
    #[doc = include_str!("../docs/src/reference/exit-codes.md")]
    mod reference_exit_codes {}
    #[doc = include_str!("../docs/src/reference/development.md")]
    mod reference_development {}
    #[doc = include_str!("../docs/src/glossary.md")]
    mod glossary {}
}

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The value of the sample line that starts with `series ` (name and labels exactly as
/// rendered), if any.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The path of an external binary, or a panic naming it and how to install it.
pub fn require_binary(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "`{name}` was not found on PATH. It is needed to check against the real thing; install it with `apt-get install prometheus` (Debian package `prometheus` \
             ships both `prometheus` and `promtool`)."
        )
    })
}

/// Runs `promtool check metrics` on `text`.
pub fn promtool_check(text: &str) -> Output {
    use std::io::Write;
    let promtool = require_binary("promtool");
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(text.as_bytes()).expect("write to promtool");
    drop(stdin);
    child.wait_with_output().expect("promtool runs")
}

/// A fresh directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let path =
            std::env::temp_dir().join(format!("tokenmeter-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).expect("create temp dir");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}
