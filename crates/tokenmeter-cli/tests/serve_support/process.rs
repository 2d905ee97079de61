//! The real processes: `tokenmeter serve` (killed on drop) and `tokenmeter bench --json`.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokenmeter_tests::TempDir;

use super::http;
use super::reads::Target;

/// A `tokenmeter serve` process on a loopback port the kernel picked, killed on drop (also when
/// the test fails).
#[derive(Debug)]
pub struct Serve {
    child: Child,
    pub addr: SocketAddr,
    /// Where stdout and stderr go, when kept.
    pub logs: Option<(PathBuf, PathBuf)>,
    /// Where stdout and stderr go when they are not kept (removed on drop).
    scratch: Option<TempDir>,
}

impl Serve {
    /// Starts `tokenmeter serve ARGS` with its output in a temporary directory (removed on
    /// drop), and waits until it answers.
    pub fn start(args: &[impl AsRef<OsStr>]) -> Self {
        Self::spawn(args, &[], None)
    }

    /// The same with `env` set, and stdout and stderr written to `stdout.log` and
    /// `stderr.log` in `dir`.
    pub fn start_logged(args: &[impl AsRef<OsStr>], env: &[(&str, &str)], dir: &Path) -> Self {
        Self::spawn(args, env, Some(dir))
    }

    fn spawn(args: &[impl AsRef<OsStr>], env: &[(&str, &str)], dir: Option<&Path>) -> Self {
        // Port 0: serve binds a port the kernel picks and prints its URL, so no other process
        // can take the port between its choice and the bind (as it could with a port that was
        // free a moment ago), nor answer in serve's place.
        let scratch = dir.is_none().then(|| TempDir::new("serve"));
        let out_dir = dir.or(scratch.as_ref().map(|s| s.0.as_path()));
        let out_dir = out_dir.expect("a directory for the output");
        let (out, err) = (out_dir.join("stdout.log"), out_dir.join("stderr.log"));
        let file = |path: &PathBuf| std::fs::File::create(path).expect("create a log file");
        let child = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(file(&out))
            .stderr(file(&err))
            .spawn()
            .expect("tokenmeter serve starts");
        let logs = dir.map(|_| (out, err.clone()));
        let mut server = Self {
            child,
            addr: ([127, 0, 0, 1], 0).into(),
            logs,
            scratch,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        server.addr = server.listening(&err, deadline);
        let addr = server.addr;
        while !http::request(addr, "GET", "/health", &[], b"").is_ok_and(|r| r.status == 200) {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("tokenmeter serve on {addr} exited: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "tokenmeter serve on {addr} did not answer /health within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// The address serve prints on stderr once it listens (`tokenmeter serve: model M on
    /// http://ADDR  (…`); panics if it exits first or prints none before `deadline`.
    fn listening(&mut self, stderr: &Path, deadline: Instant) -> SocketAddr {
        let limit = deadline.saturating_duration_since(Instant::now());
        tokenmeter_tests::logged::listening_address(&mut self.child, stderr, limit, |line| {
            let rest = line.strip_prefix("tokenmeter serve: model ")?;
            let (_, rest) = rest.split_once(" on http://")?;
            rest.split_whitespace().next()
        })
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The resident set size now, in KiB (`VmRSS` of `/proc/PID/status`).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read /proc/PID/status of tokenmeter serve");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmRSS in /proc/{}/status:\n{status}", self.pid()))
    }

    /// Sends SIGINT (what Ctrl-C sends) and waits up to `limit` for the process to exit.
    pub fn interrupt(&mut self, limit: Duration) -> ExitStatus {
        let sent = Command::new("kill")
            .args(["-INT", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -INT {} failed", self.pid());
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for serve") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "tokenmeter serve did not stop within {limit:?} of SIGINT"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `tokenmeter serve` arguments for an engine that keeps a steady pace however many requests
/// run: every decode step takes `step` (`"20ms"`) whatever the batch, up to 512 requests share
/// a batch, and prefill costs next to nothing; then `extra`.
pub fn steady_engine(step: &str, extra: &[&str]) -> Vec<String> {
    let table = format!("1={step}");
    let steady = [
        "--decode-table",
        &table,
        "--max-batch",
        "512",
        "--prefill-base",
        "1ms",
        "--prefill-per-token",
        "1us",
    ];
    steady
        .iter()
        .chain(extra)
        .map(|a| (*a).to_owned())
        .collect()
}

impl Target for Serve {
    const WHO: &'static str = "tokenmeter serve";

    fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a `tokenmeter bench` run printed and summarised.
#[derive(Debug)]
pub struct BenchRun {
    /// `summary` of `--json`.
    pub summary: serde_json::Value,
    /// The whole `--json`.
    pub json: serde_json::Value,
    /// The lines of `--trace`, in order.
    pub trace: Vec<serde_json::Value>,
    pub stdout: String,
    pub stderr: String,
    /// Wall time of the whole process.
    pub wall: Duration,
}

impl BenchRun {
    /// Requests sent.
    pub fn requests(&self) -> u64 {
        self.number("requests") as u64
    }

    /// A number of the summary, by JSON pointer below `summary` (`/itl/max`).
    pub fn number(&self, pointer: &str) -> f64 {
        let pointer = if pointer.starts_with('/') {
            pointer.to_owned()
        } else {
            format!("/{pointer}")
        };
        self.summary
            .pointer(&pointer)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or_else(|| panic!("no number at {pointer} in {}", self.summary))
    }

    /// Requests with an outcome: successes, fallbacks, cancellations and errors of every class.
    pub fn with_outcome(&self) -> u64 {
        let outcomes = &self.summary["outcomes"];
        let errors: u64 = outcomes["errors"]
            .as_object()
            .map(|m| m.values().filter_map(serde_json::Value::as_u64).sum())
            .unwrap_or(0);
        ["success", "degraded", "cancelled"]
            .iter()
            .filter_map(|k| outcomes[k].as_u64())
            .sum::<u64>()
            + errors
    }
}

/// Runs `tokenmeter bench --url URL --no-progress --json FILE ARGS` to the end; panics with its
/// output if it fails.
pub fn bench(url: &str, args: &[&str]) -> BenchRun {
    let dir = TempDir::new("serve-bench");
    let (json, trace) = (dir.0.join("summary.json"), dir.0.join("trace.jsonl"));
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .env_remove("OPENAI_API_KEY")
        .args(["bench", "--url", url, "--no-progress", "--json"])
        .arg(&json)
        .arg("--trace")
        .arg(&trace)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("tokenmeter bench runs");
    let wall = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "tokenmeter bench {args:?} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let text = std::fs::read_to_string(&json).expect("bench wrote --json");
    let value: serde_json::Value = serde_json::from_str(&text).expect("--json is JSON");
    let mut trace: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .expect("bench wrote --trace")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a --trace line is JSON"))
        .collect();
    // Lines are written as requests end; the tests read them by id (and sweep step).
    trace.sort_by(|a, b| {
        let key = |l: &serde_json::Value| (l["rate"].as_f64().unwrap_or(0.0), l["id"].as_u64());
        key(a)
            .partial_cmp(&key(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    BenchRun {
        summary: value["summary"].clone(),
        json: value,
        trace,
        stdout,
        stderr,
        wall,
    }
}
