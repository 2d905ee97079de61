//! `tokenmeter bench --repeat N`: the same plan run N times against a simulated server in
//! process, the "across N runs" table with its intervals, `--json` holding each run's complete
//! report and every figure across the runs, a trace per run, the cool-down honoured, and the
//! combinations refused before anything is sent.
#[path = "serve_support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{Hosted, steady_config};

/// A directory of its own for one test's files, removed after.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("tokenmeter-repeat-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        Self(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `tokenmeter bench` with `args` against `url` (a small, fast workload: the default
/// 256-token prompts, 4 output tokens).
fn bench(url: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tokenmeter"));
    command.env_remove("OPENAI_API_KEY").arg("bench");
    if let Some(url) = url {
        command.args(["--url", url, "--model", "sim-llama-3-8b"]);
    }
    command
        .args(["--no-progress", "--output-tokens", "4"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("tokenmeter bench runs")
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("--json written");
    serde_json::from_str(&text).expect("--json is JSON")
}

fn trace_lines(path: &Path) -> Vec<serde_json::Value> {
    let mut lines: Vec<serde_json::Value> = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} written: {e}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).expect("a trace line is JSON"))
        .collect();
    lines.sort_by_key(|l| l["id"].as_u64());
    lines
}

fn f(value: &serde_json::Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("a number: {value}"))
}

#[test]
fn three_runs_print_the_across_run_table_and_the_json_holds_each_runs_report() {
    let server = Hosted::start(steady_config(Duration::from_millis(2)));
    let dir = Dir::new("three");
    let (json, trace) = (dir.0.join("out.json"), dir.0.join("trace.jsonl"));
    let output = bench(
        Some(&server.url()),
        &[
            "-n",
            "12",
            "--rate",
            "200",
            "--repeat",
            "3",
            "--cooldown",
            "0s",
            "--json",
            json.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");

    // One line per run as it ends, then the table: every key figure, the pooled value and
    // the across-run mean each with a 95% interval, and each run's value.
    for k in 1..=3 {
        assert!(
            stdout.contains(&format!("run {k} of 3: 12 sent, 12 succeeded")),
            "{stdout}"
        );
    }
    assert!(stdout.contains("across 3 runs"), "{stdout}");
    assert!(stdout.contains("[95% interval]"), "{stdout}");
    assert!(stdout.contains("Student t, 2 degrees of"), "{stdout}");
    let row = |label: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no row {label}:\n{stdout}"))
            .to_owned()
    };
    for label in [
        "TTFT p50 ms",
        "TTFT p95 ms",
        "TTFT p99 ms",
        "TPOT p50 ms",
        "ITL p95 ms",
        "E2E p95 ms",
        "throughput req/s",
        "output tok/s",
        "goodput req/s",
        "attainment %",
    ] {
        row(label);
    }
    // TTFT p50: 36 pooled requests bound a median; across runs a t interval: two intervals.
    assert_eq!(
        row("TTFT p50 ms").matches('[').count(),
        2,
        "{}",
        row("TTFT p50 ms")
    );
    // TTFT p99 of 36 requests has no interval: it says the sample it needs.
    assert!(
        row("TTFT p99 ms").contains("(n<368)"),
        "{}",
        row("TTFT p99 ms")
    );

    let value = read_json(&json);
    let repeat = &value["repeat"];
    assert_eq!(repeat["n"], 3, "{repeat}");
    assert_eq!(repeat["cooldown_s"], 0.0);
    assert_eq!(repeat["confidence"], 0.95);
    // Each run's complete report, as a run without --repeat writes it.
    let runs = value["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3);
    for run in runs {
        assert_eq!(run["summary"]["successful"], 12, "{run}");
        assert!(
            run["run"]["url"].is_string() && run["load"].is_object(),
            "{run}"
        );
    }
    // Each figure's runs are those reports' figures; the mean is theirs, inside its interval.
    let ttft = &repeat["figures"]["ttft_p50"];
    let each: Vec<f64> = runs
        .iter()
        .map(|r| f(&r["summary"]["ttft"]["p50"]))
        .collect();
    let listed: Vec<f64> = ttft["runs"].as_array().unwrap().iter().map(f).collect();
    assert_eq!(listed, each);
    let mean = f(&ttft["mean"]);
    assert!(
        (mean - each.iter().sum::<f64>() / 3.0).abs() < 1e-12,
        "{ttft}"
    );
    let (lo, hi) = (f(&ttft["ci"][0]), f(&ttft["ci"][1]));
    assert!(lo <= mean && mean <= hi, "{ttft}");
    let pooled = f(&ttft["pooled"]);
    assert!(
        f(&ttft["pooled_ci"][0]) <= pooled && pooled <= f(&ttft["pooled_ci"][1]),
        "{ttft}"
    );
    let p99 = &repeat["figures"]["ttft_p99"];
    assert!(
        p99["pooled_ci"].is_null() && p99["pooled_ci_needs"] == 368,
        "{p99}"
    );
    let rate = &repeat["figures"]["request_throughput"];
    let durations: f64 = runs.iter().map(|r| f(&r["summary"]["duration_s"])).sum();
    assert!(
        (f(&rate["pooled"]) - 36.0 / durations).abs() < 1e-9,
        "{rate}"
    );
    assert!(rate["pooled_ci"].is_null(), "{rate}");
    let attainment = &repeat["figures"]["attainment"];
    assert_eq!(
        attainment["pooled_ci"].as_array().map(Vec::len),
        Some(2),
        "{attainment}"
    );

    // One trace per run, each the same requests at the same offsets (the same seed).
    let traces: Vec<Vec<serde_json::Value>> = (1..=3)
        .map(|k| trace_lines(&dir.0.join(format!("trace.run{k}.jsonl"))))
        .collect();
    assert!(
        !trace.exists(),
        "no trace under the name given: one per run"
    );
    let shape = |lines: &[serde_json::Value]| -> Vec<(u64, i128)> {
        let first = lines[0]["due_ns"].as_u64().unwrap() as i128;
        lines
            .iter()
            .map(|l| {
                (
                    l["input_tokens"].as_u64().unwrap(),
                    l["due_ns"].as_u64().unwrap() as i128 - first,
                )
            })
            .collect()
    };
    assert_eq!(traces[0].len(), 12);
    for other in &traces[1..] {
        assert_eq!(other.len(), 12);
        for ((tokens_a, due_a), (tokens_b, due_b)) in
            shape(&traces[0]).into_iter().zip(shape(other))
        {
            assert_eq!(tokens_a, tokens_b);
            // The due instant is put on the bench clock from the runtime's with two reads of
            // the time (runner.rs `on_clock`): under load a thread can be preempted between
            // them, so offsets agree to within that (1.25 µs was seen), not to the nanosecond.
            assert!(
                (due_a - due_b).abs() < 100_000,
                "arrival offsets {due_a} vs {due_b} ns"
            );
        }
    }
}

#[test]
fn the_cooldown_is_the_pause_between_runs() {
    let server = Hosted::start(steady_config(Duration::from_millis(2)));
    let dir = Dir::new("cooldown");
    let trace = dir.0.join("t.jsonl");
    let pause = Duration::from_millis(600);
    let started = Instant::now();
    let output = bench(
        Some(&server.url()),
        &[
            "-n",
            "3",
            "--rate",
            "inf",
            "--repeat",
            "2",
            "--cooldown",
            "600ms",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    let wall = started.elapsed();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // Run 2 starts (its clock's origin, on the wall clock) at least the cool-down after run 1
    // ended (its last request's end on run 1's clock).
    let first = trace_lines(&dir.0.join("t.run1.jsonl"));
    let second = trace_lines(&dir.0.join("t.run2.jsonl"));
    let origin = |lines: &[serde_json::Value]| lines[0]["run_start_unix_ns"].as_u64().unwrap();
    let first_end = first
        .iter()
        .map(|l| l["end_ns"].as_u64().unwrap())
        .max()
        .unwrap();
    let gap = origin(&second) as i128 - (origin(&first) + first_end) as i128;
    assert!(
        gap >= pause.as_nanos() as i128,
        "run 2 began {gap} ns after run 1 ended"
    );
    // Bounded: the pause is not much more than asked (a loaded machine: generous).
    assert!(
        gap < (pause + Duration::from_secs(20)).as_nanos() as i128,
        "{gap} ns"
    );
    assert!(wall >= pause, "{wall:?}");
}

#[test]
fn fail_under_judges_the_pooled_attainment() {
    let server = Hosted::start(steady_config(Duration::from_millis(2)));
    // No request can meet a 1 µs TTFT: the pooled attainment is 0.
    let output = bench(
        Some(&server.url()),
        &[
            "-n",
            "3",
            "--rate",
            "inf",
            "--repeat",
            "2",
            "--slo",
            "ttft=1us",
            "--fail-under",
            "0.5",
        ],
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("across 2 runs"), "{stdout}");
    assert!(
        stderr.contains("SLO attainment 0.00% is below --fail-under 50.00%"),
        "{stderr}"
    );
}

#[test]
fn combinations_that_make_no_sense_are_refused_before_anything_is_sent() {
    // No --url and nothing is started: each is refused while checking the flags.
    for (args, says) in [
        (&["--repeat", "0"][..], "--repeat"),
        (&["--cooldown", "5s"][..], "add --repeat N"),
        (
            &["--repeat", "2", "--sweep"][..],
            "--sweep runs its own steps",
        ),
        (&["--repeat", "2", "--shard", "1/2"][..], "--shard"),
        (
            &["--repeat", "2", "--result-format", "vllm"][..],
            "--result-format vllm",
        ),
        (
            &["--repeat", "2", "--slo-spec", "spec.toml"][..],
            "--slo-spec",
        ),
        (&["--repeat", "2", "--trace", "-"][..], "--trace -"),
    ] {
        let output = bench(None, args);
        let (stdout, stderr) = text(&output);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {stdout}\n{stderr}"
        );
        assert!(
            stderr.contains(says),
            "{args:?} should say {says:?}: {stderr}"
        );
    }
    // A run's trace file is checked with the other outputs: --json may not overwrite run 1's
    // trace at the end.
    let dir = Dir::new("collide");
    let (trace, json) = (dir.0.join("t.jsonl"), dir.0.join("t.run1.jsonl"));
    let output = bench(
        None,
        &[
            "--repeat",
            "2",
            "--trace",
            trace.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("name the same file"), "{stderr}");
    assert!(!json.exists(), "nothing written");
}

/// Every run sends the same prompts: a server with a prefix cache (the simulator's is on by
/// default) serves later runs' prompts from it, and the report says the runs were not served
/// alike; with the cache off, it says nothing.
#[test]
fn a_prompt_cache_that_warms_later_runs_is_said() {
    let note = "served unequal shares of the prompts from its prompt cache";
    let run = |server: &Hosted| {
        let output = bench(
            Some(&server.url()),
            &["-n", "6", "--rate", "inf", "--repeat", "2"],
        );
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        stdout
    };
    let cached = run(&Hosted::start(steady_config(Duration::from_millis(2))));
    assert!(cached.contains(note), "{cached}");
    assert!(
        cached.contains("(0%, "),
        "run 1's prompts were new: {cached}"
    );
    let uncached = Hosted::start(steady_config(Duration::from_millis(2)).no_prefix_caching(true));
    let stdout = run(&uncached);
    assert!(!stdout.contains(note), "{stdout}");
}

/// Ctrl-C during a cool-down ends the series at once: the runs made are reported and written
/// (`repeat.n` below `asked`), and the exit code is 130 — not after the 120 s pause.
#[cfg(unix)]
#[test]
fn an_interrupt_during_the_cooldown_ends_the_series_with_what_was_run() {
    use std::io::{BufRead as _, BufReader};
    use std::sync::mpsc::channel;

    const DEADLINE: Duration = Duration::from_secs(30);
    let server = Hosted::start(steady_config(Duration::from_millis(2)));
    let dir = Dir::new("interrupt");
    let json = dir.0.join("out.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .env_remove("OPENAI_API_KEY")
        .args(["bench", "--url", &server.url(), "--model", "sim-llama-3-8b"])
        .args([
            "--no-progress",
            "--output-tokens",
            "4",
            "-n",
            "3",
            "--rate",
            "inf",
        ])
        .args(["--repeat", "2", "--cooldown", "120s", "--json"])
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tokenmeter bench starts");
    // Wait (bounded) for run 1's line: the cool-down has begun.
    let stdout = child.stdout.take().expect("stdout");
    let (line_tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let started = Instant::now();
    while !seen.iter().any(|l: &String| l.starts_with("run 1 of 2")) {
        let left = DEADLINE.saturating_sub(started.elapsed());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no run 1 line: {seen:?}"));
        seen.push(line);
    }
    let interrupted = Instant::now();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let (done, result) = channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = result
        .recv_timeout(DEADLINE)
        .expect("the bench exits in time, not after the cool-down")
        .expect("its output");
    assert!(interrupted.elapsed() < DEADLINE);
    let rest: Vec<String> = lines.try_iter().collect();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(130),
        "{seen:?} {rest:?}\n{stderr}"
    );
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        rest.iter().any(|l| l.contains("across 1 run ·")),
        "{rest:?}"
    );
    let value = read_json(&json);
    assert_eq!(
        (
            value["repeat"]["n"].as_u64(),
            value["repeat"]["asked"].as_u64()
        ),
        (Some(1), Some(2))
    );
    assert_eq!(value["runs"].as_array().map(Vec::len), Some(1));
}

/// Screenshots `html` in headless Chromium (Debian's `chromium`) at 1200×900: RGB pixels.
fn screenshot(html: &Path, dir: &Path) -> Vec<[u8; 3]> {
    let chromium = [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .into_iter()
    .find(|c| Path::new(c).exists())
    .expect("headless Chromium is needed: apt-get install -y chromium");
    let png = dir.join("shot.png");
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .args([
            "--disable-background-networking",
            "--disable-component-update",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,900")
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    assert!(
        png.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    let pixels = (info.width * info.height) as usize;
    buf[..pixels * channels]
        .chunks(channels)
        .map(|px| [px[0], px[1], px[2]])
        .collect()
}

#[test]
fn the_html_page_draws_each_figure_with_both_intervals_in_chromium() {
    let server = Hosted::start(steady_config(Duration::from_millis(2)));
    let dir = Dir::new("html");
    let html = dir.0.join("repeat.html");
    let output = bench(
        Some(&server.url()),
        &[
            "-n",
            "12",
            "--rate",
            "200",
            "--repeat",
            "3",
            "--html",
            html.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let page = std::fs::read_to_string(&html).expect("--html written");
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("across 3 runs"));
    // 13 figures, each with a dot per run on its own axis.
    assert_eq!(page.matches("<tr class=\"figure\">").count(), 13);
    assert_eq!(page.matches("<circle").count(), 13 * 3);
    // 36 requests bound no p99: the page says the sample it needs, as the table does.
    assert!(page.contains("(n&lt;368)"), "{page}");
    // Drawn: the across-run bars (#1f77b4) and the pooled ones (#ff7f0e) are on screen.
    let pixels = screenshot(&html, &dir.0);
    let count = |rgb: [u8; 3]| pixels.iter().filter(|p| **p == rgb).count();
    let (across, pooled) = (count([31, 119, 180]), count([255, 127, 14]));
    assert!(across > 200, "across-run bars: {across} pixels");
    assert!(pooled > 200, "pooled bars: {pooled} pixels");
}
