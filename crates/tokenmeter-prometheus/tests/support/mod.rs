//! Helpers shared by the integration tests: a canonical form of the exposition, a tiny HTTP
//! client, external binaries, and a real Prometheus server.
#![allow(dead_code)]

pub(crate) mod http;
pub(crate) mod prometheus;
pub(crate) mod server;
pub(crate) mod workload;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The exposition with its families sorted by name and, inside a family, its series sorted by
/// labels (bucket lines keep their order): `metrics-exporter-prometheus` renders from hash
/// maps, so the raw order changes between runs.
pub(crate) fn canonical(text: &str) -> String {
    let mut families: Vec<(String, Vec<&str>)> = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let lines: Vec<&str> = block.lines().collect();
        let name = lines
            .iter()
            .find_map(|l| l.strip_prefix("# TYPE "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or_default()
            .to_owned();
        let (mut header, mut samples): (Vec<&str>, Vec<&str>) =
            lines.into_iter().partition(|l| l.starts_with('#'));
        samples.sort_by_key(|line| series_key(line));
        header.append(&mut samples);
        families.push((name, header));
    }
    families.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::new();
    for (_, lines) in families {
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// A sample line's labels without `le`: the series a bucket, sum or count line belongs to.
fn series_key(line: &str) -> String {
    let Some((open, close)) = line.find('{').zip(line.rfind('}')) else {
        return String::new();
    };
    line[open + 1..close]
        .split("\",")
        .filter(|pair| !pair.starts_with("le="))
        .collect::<Vec<_>>()
        .join("\",")
}

/// The value of the sample line that starts with `series ` (name and labels exactly as
/// rendered), if any.
pub(crate) fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The path of an external binary, or a panic naming it and how to install it.
pub(crate) fn require_binary(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "`{name}` was not found on PATH. It is needed to check the exporter against the real \
             thing; install it with `apt-get install prometheus` (Debian package `prometheus` \
             ships both `prometheus` and `promtool`)."
        )
    })
}

/// Runs `promtool check metrics` on `text`.
pub(crate) fn promtool_check(text: &str) -> Output {
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
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
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
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}
