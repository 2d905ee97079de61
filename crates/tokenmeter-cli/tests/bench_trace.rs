//! The summary (`--json`) is recomputed from the raw timestamps of `--trace` with the formulas of
//! `vllm bench serve` 0.33's `calculate_metrics`, re-implemented here ([`vllm`]), and every
//! statistic agrees to 1e-9 relative: TTFT, TPOT, ITL and E2E (mean, std, median, p90, p95,
//! p99, max), throughput, output throughput and goodput.
//!
//! Two inputs are the bench's own, documented where they differ from vLLM's harness: the
//! duration is the last end − the first send of the trace (vLLM times its whole `benchmark()`
//! call), and the input tokens are `usage.prompt_tokens` when the server sent them.

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

/// numpy.mean and numpy.std (population: ddof = 0).
fn mean_std(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

fn close(a: f64, b: f64, what: &str) {
    let tolerance = 1e-9 * a.abs().max(b.abs()).max(1e-12);
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
    let (mean, std) = mean_std(values);
    close(
        mean,
        stat["mean"].as_f64().unwrap(),
        &format!("{what} mean"),
    );
    // A std of exactly 0 (all equal) is compared absolutely.
    let got_std = stat["std"].as_f64().unwrap();
    if std == 0.0 {
        assert!(got_std.abs() < 1e-15, "{what} std: {got_std}");
    } else {
        close(std, got_std, &format!("{what} std"));
    }
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

/// `vllm bench serve` 0.33, re-implemented on the trace: per request its `RequestFuncOutput`
/// (the client times), then `calculate_metrics`.
mod vllm {
    use serde_json::Value;

    /// What vLLM's request function keeps of one streamed response (times in seconds, floats
    /// of `time.perf_counter()`, here the trace's nanoseconds × 1e-9).
    pub(crate) struct Output {
        pub(crate) success: bool,
        /// First token-bearing chunk − send.
        pub(crate) ttft: f64,
        /// Gaps between consecutive token-bearing chunks.
        pub(crate) itl: Vec<f64>,
        /// Last token-bearing chunk − send (`most_recent_timestamp − st`).
        pub(crate) latency: f64,
        /// `usage.completion_tokens` (the tokenizer count of the text when absent: here the
        /// tokens the chunks carried).
        pub(crate) output_tokens: u64,
        pub(crate) prompt_len: u64,
    }

    /// One trace line as vLLM's request function would have timed it.
    pub(crate) fn output(t: &Value) -> Output {
        let s = |ns: &Value| ns.as_u64().expect("offsets are integer ns") as f64 * 1e-9;
        let send = s(&t["send_ns"]);
        let chunks = t["chunks"].as_array().unwrap();
        let times: Vec<f64> = chunks
            .iter()
            .filter(|c| c[1].as_u64().unwrap() > 0)
            .map(|c| s(&c[0]))
            .collect();
        // vLLM's `success`: an HTTP 200 that carried a token-bearing chunk ("Never received a
        // valid chunk" fails it), derived here from the chunks, not from the bench's outcome.
        let answered = t["outcome"] == "success"
            || (t["outcome"] == "error" && t["error_class"] == "empty_response");
        let success = answered && !times.is_empty();
        let (first, last) = (
            times.first().copied().unwrap_or(send),
            times.last().copied().unwrap_or(send),
        );
        let counted: u64 = chunks.iter().map(|c| c[1].as_u64().unwrap()).sum();
        let usage = &t["usage"];
        let output_tokens = if usage["unusable"] == true {
            counted
        } else {
            usage["completion_tokens"].as_u64().unwrap_or(counted)
        };
        Output {
            success,
            ttft: first - send,
            itl: times.windows(2).map(|w| w[1] - w[0]).collect(),
            latency: last - send,
            output_tokens,
            prompt_len: usage["prompt_tokens"]
                .as_u64()
                .unwrap_or_else(|| t["input_tokens"].as_u64().unwrap()),
        }
    }

    /// `calculate_metrics`' lists and totals.
    #[derive(Default)]
    pub(crate) struct Metrics {
        pub(crate) completed: u64,
        pub(crate) total_input: u64,
        pub(crate) total_output: u64,
        pub(crate) ttfts: Vec<f64>,
        pub(crate) tpots: Vec<f64>,
        pub(crate) itls: Vec<f64>,
        pub(crate) e2els: Vec<f64>,
        pub(crate) good_completed: u64,
        pub(crate) good_output: u64,
    }

    /// `slo_ms`: the `--goodput` thresholds in milliseconds (ttft, tpot, e2el).
    pub(crate) fn calculate_metrics(outputs: &[Output], slo_ms: (f64, f64, f64)) -> Metrics {
        let mut m = Metrics::default();
        let mut all_tpots = Vec::new();
        let mut good_outputs = Vec::new();
        for o in outputs.iter().filter(|o| o.success) {
            let output_len = o.output_tokens;
            m.total_input += o.prompt_len;
            m.total_output += output_len;
            let mut tpot = 0.0;
            if output_len > 1 {
                let latency_minus_ttft = o.latency - o.ttft;
                tpot = latency_minus_ttft / (output_len - 1) as f64;
                m.tpots.push(tpot);
            }
            // Note: if output_len <= 1, vLLM regards tpot as 0 for goodput.
            all_tpots.push(tpot);
            m.itls.extend(&o.itl);
            m.ttfts.push(o.ttft);
            m.e2els.push(o.latency);
            good_outputs.push(output_len);
            m.completed += 1;
        }
        let slo_s = (slo_ms.0 / 1e3, slo_ms.1 / 1e3, slo_ms.2 / 1e3);
        for (i, ((ttft, tpot), e2el)) in m.ttfts.iter().zip(&all_tpots).zip(&m.e2els).enumerate() {
            // `all([s >= r for s, r in zip(slo_values, req_metric)])`
            if slo_s.0 >= *ttft && slo_s.1 >= *tpot && slo_s.2 >= *e2el {
                m.good_completed += 1;
                m.good_output += good_outputs[i];
            }
        }
        m
    }
}

/// Recomputes every number of `summary` from `trace_lines` with [`vllm`], with `slo_ms` =
/// (ttft, tpot, e2e) in ms; returns (successful, good).
fn recompute_and_compare(
    trace_lines: &str,
    summary: &Value,
    slo_ms: (f64, f64, f64),
) -> (u64, u64) {
    let traces: Vec<Value> = trace_lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("each trace line is JSON"))
        .collect();
    let outputs: Vec<vllm::Output> = traces.iter().map(vllm::output).collect();
    let m = vllm::calculate_metrics(&outputs, slo_ms);
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
    let mut outcomes = std::collections::BTreeMap::<String, u64>::new();
    let mut stream_ends = Vec::new();
    for (t, o) in traces.iter().zip(&outputs) {
        let outcome = t["outcome"].as_str().unwrap();
        let key = match outcome {
            "error" => t["error_class"].as_str().unwrap().to_owned(),
            other => other.to_owned(),
        };
        *outcomes.entry(key).or_default() += 1;
        if o.success {
            assert_eq!(t["output_tokens"].as_u64(), Some(o.output_tokens));
            let first = t["chunks"][0][0].as_u64();
            assert_eq!(
                t["first_token_ns"].as_u64(),
                first,
                "the first chunk is the TTFT's"
            );
            let (send, end) = (
                t["send_ns"].as_u64().unwrap(),
                t["end_ns"].as_u64().unwrap(),
            );
            stream_ends.push((end - send) as f64 * 1e-9);
        }
    }
    let n = traces.len() as f64;
    assert_eq!(summary["requests"].as_u64(), Some(traces.len() as u64));
    assert_eq!(summary["successful"].as_u64(), Some(m.completed));
    assert_eq!(summary["good_requests"].as_u64(), Some(m.good_completed));
    assert_eq!(
        summary["total_output_tokens"].as_u64(),
        Some(m.total_output)
    );
    assert_eq!(summary["total_input_tokens"].as_u64(), Some(m.total_input));
    close(
        duration,
        summary["duration_s"].as_f64().unwrap(),
        "duration",
    );
    let per_s = |x: u64| x as f64 / duration;
    close(
        per_s(m.completed),
        summary["request_throughput"].as_f64().unwrap(),
        "throughput",
    );
    close(
        per_s(m.total_output),
        summary["output_throughput"].as_f64().unwrap(),
        "output tok/s",
    );
    close(
        per_s(m.total_input + m.total_output),
        summary["total_token_throughput"].as_f64().unwrap(),
        "total tok/s",
    );
    close(
        per_s(m.good_completed),
        summary["goodput"].as_f64().unwrap(),
        "goodput",
    );
    close(
        per_s(m.good_output),
        summary["goodput_output_tokens"].as_f64().unwrap(),
        "goodput tok/s",
    );
    close(
        m.good_completed as f64 / n,
        summary["attainment"].as_f64().unwrap(),
        "attainment",
    );
    check_stat(&m.ttfts, &summary["ttft"], "ttft");
    check_stat(&m.tpots, &summary["tpot"], "tpot");
    check_stat(&m.itls, &summary["itl"], "itl");
    check_stat(&m.e2els, &summary["e2e"], "e2e");
    // The end of the stream, what a caller waits, under its own name.
    check_stat(&stream_ends, &summary["e2e_stream"], "e2e_stream");
    // From the schedule: vLLM 0.33's client queue time (send − due) over every request, and
    // its E2E plus that queue over the successful ones.
    let queue = |t: &Value| {
        (t["send_ns"].as_u64().unwrap() - t["due_ns"].as_u64().expect("due_ns")) as f64 * 1e-9
    };
    let queues: Vec<f64> = traces.iter().map(queue).collect();
    check_stat(&queues, &summary["client_queue"], "client_queue");
    let from_schedule: Vec<f64> = traces
        .iter()
        .zip(&outputs)
        .filter(|(_, o)| o.success)
        .map(|(t, o)| o.latency + queue(t))
        .collect();
    check_stat(
        &from_schedule,
        &summary["e2e_from_schedule"],
        "e2e_from_schedule",
    );
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
    (m.completed, m.good_completed)
}

/// Runs the bench with `--slo` `slo` (ttft, tpot, e2e in ms) and checks its summary against
/// the trace; returns the JSON and (successful, good).
fn run_and_check(
    url: Option<&str>,
    slo_ms: (f64, f64, f64),
    extra: &[&str],
    name: &str,
) -> (Value, (u64, u64)) {
    let dir = temp_dir(name);
    let (json, trace) = (dir.join("summary.json"), dir.join("trace.jsonl"));
    let slo = format!("ttft={}ms,tpot={}ms,e2e={}ms", slo_ms.0, slo_ms.1, slo_ms.2);
    let mut args = vec![
        "--slo",
        slo.as_str(),
        "--json",
        json.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--no-progress",
        // vLLM's goodput judges from the send.
        "--slo-from",
        "send",
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
    let counts = recompute_and_compare(&lines, &summary["summary"], slo_ms);
    (summary, counts)
}

#[test]
fn the_summary_is_recomputed_from_the_trace_of_the_embedded_simulator() {
    let (summary, _) = run_and_check(
        None,
        (60.0, 15.0, 2000.0),
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
    let (summary, _) = run_and_check(
        Some(&url),
        (60.0, 15.0, 2000.0),
        &["-n", "30", "--rate", "inf", "--concurrency", "3"],
        "trace-faults",
    );
    assert_eq!(
        summary["summary"]["outcomes"]["errors"]["rate_limited"].as_u64(),
        Some(10)
    );
}

/// An E2E objective that some requests meet and some miss (outputs of 4 to 64 tokens from the
/// simulator, a few ms per token), the others loose: goodput is the share the E2E objective,
/// judged at the last token as vLLM does, lets through.
#[test]
fn goodput_with_an_e2e_objective_is_vllms() {
    let (_, (successful, good)) = run_and_check(
        None,
        (5_000.0, 1_000.0, 250.0),
        &[
            "-n",
            "40",
            "--rate",
            "50",
            "--input-tokens",
            "16..128",
            "--output-tokens",
            "4..64",
            "--seed",
            "11",
        ],
        "trace-e2e-slo",
    );
    assert!(
        good > 0 && good < successful,
        "the E2E objective should split the run: {good} good of {successful}"
    );
}

/// The stream shapes real servers send, counted as vLLM 0.33's client counts them: llama.cpp's
/// role frame then `[DONE]` with no token (a failure, not a success), and its empty `content`
/// chunks without a role (one per byte of an incomplete UTF-8 character: tokens, each a chunk
/// of its own); and `--no-stream` answers, which have no TPOT or ITL sample.
#[test]
fn the_stream_shapes_of_real_servers_are_counted_as_vllm_counts_them() {
    let count = std::sync::atomic::AtomicU64::new(0);
    let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n";
    let empty = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}}]}\n\n";
    let word = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"é\"}}]}\n\n";
    let finish =
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n";
    let done = "data: [DONE]\n\n";
    let addr = serve(move |_| {
        let body = match count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 {
            0 => format!("{role}{done}"),
            _ => format!("{role}{empty}{word}{empty}{word}{finish}{done}"),
        };
        Reply::new(200, "text/event-stream", body)
    });
    let url = format!("http://{addr}");
    let (summary, (successful, _)) = run_and_check(
        Some(&url),
        (60.0, 15.0, 2000.0),
        &[
            "--no-preflight",
            "-n",
            "20",
            "--rate",
            "inf",
            "--concurrency",
            "1",
            "--output-tokens",
            "4",
        ],
        "trace-shapes",
    );
    let s = &summary["summary"];
    assert_eq!(successful, 10);
    assert_eq!(s["outcomes"]["errors"]["empty_response"], 10, "{s}");
    // Four token-bearing chunks per answer (two of them empty): three gaps, four tokens.
    assert_eq!(s["itl"]["count"], 30, "{s}");
    assert_eq!(s["total_output_tokens"], 40, "{s}");
    assert_eq!(
        summary["counts"]["length_chunks_exact"], 10,
        "{}",
        summary["counts"]
    );

    // Whole answers: TTFT = E2E, and no TPOT or ITL sample (not zeros).
    let answer = |_: &_| {
        Reply::json(
            200,
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"a b c d"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
        )
    };
    let addr = serve(answer);
    let url = format!("http://{addr}");
    let json = temp_dir("trace-shapes").join("summary.json");
    let output = bench(&[
        "--url",
        &url,
        "--model",
        "m",
        "--no-preflight",
        "--no-progress",
        "--no-stream",
        "-n",
        "6",
        "--rate",
        "inf",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{:?}", text(&output));
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = &summary["summary"];
    assert_eq!(s["successful"], 6, "{s}");
    assert_eq!(s["tpot"]["count"], 0, "{s}");
    assert_eq!(s["itl"]["count"], 0, "{s}");
    assert_eq!(s["ttft"]["p50"], s["e2e"]["p50"], "{s}");
}
