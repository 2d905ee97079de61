//! The summary (`--json`) is recomputed from the raw timestamps of `--trace` with the formulas
//! of `vllm bench serve` (`docs/metrics.md` §5), implemented here independently, and agrees.

#[path = "bench_support/mod.rs"]
mod support;

use serde_json::Value;
use support::{Reply, bench, serve, temp_dir, text};

/// numpy.percentile (linear interpolation between closest ranks).
fn percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    let rank = p / 100.0 * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
}

fn close(a: f64, b: f64, what: &str) {
    let tolerance = 1e-9 * a.abs().max(b.abs()).max(1.0);
    assert!(
        (a - b).abs() <= tolerance,
        "{what}: recomputed {a}, summary {b}"
    );
}

fn check_stat(values: &[f64], stat: &Value, what: &str) {
    assert_eq!(
        stat["count"].as_u64(),
        Some(values.len() as u64),
        "{what} count"
    );
    if values.is_empty() {
        return;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    close(
        mean,
        stat["mean"].as_f64().unwrap(),
        &format!("{what} mean"),
    );
    for p in [50.0, 90.0, 95.0, 99.0] {
        let key = format!("p{p}");
        close(
            percentile(values, p),
            stat[key.as_str()].as_f64().unwrap(),
            &format!("{what} {key}"),
        );
    }
    close(
        percentile(values, 100.0),
        stat["max"].as_f64().unwrap(),
        &format!("{what} max"),
    );
}

struct Recomputed {
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    itl: Vec<f64>,
    e2e: Vec<f64>,
}

/// Recomputes every number of `summary` from `trace_lines`, with `slo` = (ttft, tpot, e2e) in s.
fn recompute_and_compare(trace_lines: &str, summary: &Value, slo: (f64, f64, f64)) {
    let traces: Vec<Value> = trace_lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("each trace line is JSON"))
        .collect();
    let s = |ns: &Value| ns.as_u64().expect("offsets are integer ns") as f64 * 1e-9;
    let mut r = Recomputed {
        ttft: vec![],
        tpot: vec![],
        itl: vec![],
        e2e: vec![],
    };
    let (mut good, mut good_tokens, mut ok, mut out_tokens, mut in_tokens) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut outcomes = std::collections::BTreeMap::<String, u64>::new();
    let start = traces
        .iter()
        .map(|t| t["send_ns"].as_u64().unwrap())
        .min()
        .unwrap();
    let end = traces
        .iter()
        .map(|t| t["end_ns"].as_u64().unwrap())
        .max()
        .unwrap();
    let duration = (end - start) as f64 * 1e-9;
    for t in &traces {
        let outcome = t["outcome"].as_str().unwrap();
        let key = match outcome {
            "error" => t["error_class"].as_str().unwrap().to_owned(),
            other => other.to_owned(),
        };
        *outcomes.entry(key).or_default() += 1;
        if outcome != "success" {
            continue;
        }
        ok += 1;
        let send = s(&t["send_ns"]);
        let chunks = t["chunks"].as_array().unwrap();
        let token_times: Vec<f64> = chunks
            .iter()
            .filter(|c| c[1].as_u64().unwrap() > 0)
            .map(|c| s(&c[0]))
            .collect();
        let last_event = chunks.last().map_or(s(&t["end_ns"]), |c| s(&c[0]));
        let e2e = last_event - send;
        let ttft = token_times.first().map(|first| first - send);
        assert_eq!(
            t["first_token_ns"].as_u64().map(|n| n as f64 * 1e-9),
            token_times.first().copied()
        );
        let output = t["usage"]["completion_tokens"]
            .as_u64()
            .unwrap_or_else(|| chunks.iter().map(|c| c[1].as_u64().unwrap()).sum());
        assert_eq!(t["output_tokens"].as_u64(), Some(output));
        let tpot = match ttft {
            Some(ttft) if output > 1 => Some((e2e - ttft) / (output - 1) as f64),
            _ => None,
        };
        r.itl.extend(token_times.windows(2).map(|w| w[1] - w[0]));
        r.ttft.extend(ttft);
        r.tpot.extend(tpot);
        r.e2e.push(e2e);
        out_tokens += output;
        in_tokens += t["usage"]["prompt_tokens"]
            .as_u64()
            .unwrap_or_else(|| t["input_tokens"].as_u64().unwrap());
        let met = ttft.is_some_and(|x| x <= slo.0 + 1e-12)
            && tpot.is_none_or(|x| x <= slo.1 + 1e-12)
            && e2e <= slo.2 + 1e-12;
        if met {
            good += 1;
            good_tokens += output;
        }
    }
    let n = traces.len() as f64;
    assert_eq!(summary["requests"].as_u64(), Some(traces.len() as u64));
    assert_eq!(summary["successful"].as_u64(), Some(ok));
    assert_eq!(summary["good_requests"].as_u64(), Some(good));
    assert_eq!(summary["total_output_tokens"].as_u64(), Some(out_tokens));
    assert_eq!(summary["total_input_tokens"].as_u64(), Some(in_tokens));
    close(
        duration,
        summary["duration_s"].as_f64().unwrap(),
        "duration",
    );
    close(
        ok as f64 / duration,
        summary["request_throughput"].as_f64().unwrap(),
        "throughput",
    );
    close(
        out_tokens as f64 / duration,
        summary["output_throughput"].as_f64().unwrap(),
        "output tok/s",
    );
    close(
        good as f64 / duration,
        summary["goodput"].as_f64().unwrap(),
        "goodput",
    );
    close(
        good_tokens as f64 / duration,
        summary["goodput_output_tokens"].as_f64().unwrap(),
        "goodput tok/s",
    );
    close(
        good as f64 / n,
        summary["attainment"].as_f64().unwrap(),
        "attainment",
    );
    check_stat(&r.ttft, &summary["ttft"], "ttft");
    check_stat(&r.tpot, &summary["tpot"], "tpot");
    check_stat(&r.itl, &summary["itl"], "itl");
    check_stat(&r.e2e, &summary["e2e"], "e2e");
    let o = &summary["outcomes"];
    assert_eq!(
        o["success"].as_u64(),
        Some(outcomes.get("success").copied().unwrap_or(0))
    );
    for (class, count) in o["errors"].as_object().unwrap() {
        assert_eq!(
            count.as_u64(),
            outcomes.get(class).copied(),
            "errors {class}"
        );
    }
}

fn run_and_check(url: Option<&str>, extra: &[&str], name: &str) -> Value {
    let dir = temp_dir(name);
    let (json, trace) = (dir.join("summary.json"), dir.join("trace.jsonl"));
    let mut args = vec![
        "--slo",
        "ttft=60ms,tpot=15ms,e2e=2s",
        "--json",
        json.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--no-progress",
    ];
    if let Some(url) = url {
        args.extend(["--url", url, "--model", "m"]);
    }
    args.extend(extra);
    let output = bench(&args);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "bench failed:\n{stdout}\n{stderr}");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let lines = std::fs::read_to_string(&trace).unwrap();
    recompute_and_compare(&lines, &summary["summary"], (0.060, 0.015, 2.0));
    summary
}

#[test]
fn the_summary_is_recomputed_from_the_trace_of_the_embedded_simulator() {
    let summary = run_and_check(
        None,
        &[
            "-n",
            "40",
            "--rate",
            "40",
            "--input-tokens",
            "16..256",
            "--output-tokens",
            "8..64",
            "--seed",
            "7",
        ],
        "trace-sim",
    );
    let s = &summary["summary"];
    assert_eq!(s["requests"].as_u64(), Some(40));
    assert!(s["successful"].as_u64().unwrap() > 0);
    assert!(s["itl"]["count"].as_u64().unwrap() > 100, "{s}");
    // The embedded server's engine steps: batch size → TPOT, one row per observed size.
    let rows = summary["server_batching"]["rows"]
        .as_array()
        .expect("the batch table");
    assert!(!rows.is_empty(), "{summary}");
    // Every decode step takes the simulator's default cost: 1 → 7 ms, 8 → 8 ms, 32 → 12 ms,
    // 64 → 18 ms, linear in between.
    let table = [(1.0, 7.0), (8.0, 8.0), (32.0, 12.0), (64.0, 18.0)];
    for row in rows {
        let batch = row["batch_size"].as_f64().unwrap();
        let (lo, hi) = table
            .windows(2)
            .map(|w| (w[0], w[1]))
            .find(|(_, hi)| batch <= hi.0)
            .unwrap_or((table[2], table[3]));
        let want_ms = lo.1 + (batch - lo.0) * (hi.1 - lo.1) / (hi.0 - lo.0);
        let got_ms = row["tpot_p50"].as_f64().unwrap() * 1e3;
        assert!(
            (got_ms - want_ms).abs() < 1e-6,
            "batch {batch}: {got_ms} ms, want {want_ms}"
        );
    }
}

#[test]
fn the_summary_is_recomputed_from_a_trace_with_failures() {
    let count = std::sync::atomic::AtomicU64::new(0);
    let addr = serve(
        move |_| match count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 3 {
            0 => Reply::stream(5),
            1 => Reply::stream(1),
            _ => Reply::json(429, r#"{"error":{"message":"slow down"}}"#),
        },
    );
    let url = format!("http://{addr}");
    let summary = run_and_check(
        Some(&url),
        &["-n", "30", "--rate", "inf", "--concurrency", "3"],
        "trace-faults",
    );
    assert_eq!(
        summary["summary"]["outcomes"]["errors"]["rate_limited"].as_u64(),
        Some(10)
    );
}
