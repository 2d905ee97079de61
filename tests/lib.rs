//! Cross-crate and end-to-end tests live in this package's test targets. Its library holds the
//! helpers they and the other crates' integration tests share: a real Prometheus server on
//! loopback, a tiny HTTP client, the data points of an OpenTelemetry export, external binaries, temporary directories and free ports.
#![allow(missing_docs, unreachable_pub)]

pub mod http;
pub mod logged;
pub mod otel;
pub mod prometheus;
pub mod tokenizer;

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
