#!/usr/bin/env python3
"""`tokenmeter bench` against a real inference engine metered with tokenmeter: the example in
examples/engine (a tiny Llama on candle, random weights, continuous batching, one compute
thread), issue 31.

    python3 scripts/real_engine.py            # build (incremental), run, check
    python3 scripts/real_engine.py --fresh    # first empty examples/engine/target: the build
                                              # time of a fresh machine (registry cache kept)

What it does:
  1. Builds the example in release (its own workspace) and prints how long that took, and the
     release `tokenmeter` binary (`cargo build --release -p tokenmeter-cli`).
  2. Starts `tokenmeter-engine` on a free loopback port and runs the bench against it:
     (a) light load (concurrency 1): client − server TTFT per request (the server's own
         `metrics` object, written from the engine's measurement) between 0 and 5 ms at p50,
         none negative; and from the server's /metrics (scraped before and after the run:
         exact means of its histograms) client − server TTFT mean between 0 and 5 ms and the
         client's mean ITL within 1 ms of the server's;
     (b) input length 100, 500, 1000, 2000 at concurrency 1: TTFT p50 (client and server)
         beside the engine's mean prefill time from /metrics (Δsum / Δcount of the prefill
         step histogram); TTFT must rise with length, 2000 must be at least 3× 100, and the
         mean prefill must be within the server's mean TTFT (at least half of it from 500 on);
     (c) batch 1, 2, 4, 8 (concurrency = batch, fixed input and output): TPOT p50, tokens/s
         per user and per engine, beside the engine's mean decode step time and mean batch
         size from /metrics; TPOT must rise with the batch and stay within 35 % of the step
         time (TPOT is paced by the step), and tokens/s per engine must rise from 1 to 8;
     (d) offered load above capacity with --slice: the server's queue (mean queue time of the
         requests sent in each slice) rises in an earlier or the same slice as TTFT;
     (e) hang-ups (--cancel-fraction): every request the bench cancelled is counted cancelled
         on the server (vllm:request_success_total{finished_reason="abort"}), with at least the
         tokens the client read and at most 4 more per request (tokens the engine had handed to
         the socket before the hang-up reached it);
     (f) `promtool check metrics` on its /metrics (vLLM's metric names): it must parse, and
         promtool's lint must object to nothing but vLLM's own names (as
         crates/tokenmeter-prometheus/tests/promtool.rs requires); then on a second server with
         `--profile semconv` after 4 requests, where it must pass with no problem at all. A
         missing promtool fails the check (`source scripts/tools.sh && install_test_tools`
         installs it).
     (g) vLLM 0.33's own benchmark client (the request functions `vllm bench serve` uses, read
         out of its PyPI wheel by scripts/vllm_client_gaps.py; needs aiohttp) against the
         engine's completions and chat: each answer of n tokens succeeds with n output tokens
         and n - 1 gaps, and vLLM's client reads the engine's per-request `metrics`.
  3. Prints the tables and exits non-zero on any failed check.

Each bench run is bounded (-n and a timeout); the whole script takes a few minutes once built.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_child import Checks, scrape, stop, total, wait_for_address  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "examples" / "engine"
MODEL = "tiny-llama"
check = Checks()


def build(fresh):
    if fresh and (ENGINE / "target").exists():
        shutil.rmtree(ENGINE / "target")
    started = time.monotonic()
    subprocess.run(["cargo", "build", "--release", "--locked"], cwd=ENGINE, check=True)
    took = time.monotonic() - started
    print(f"==> examples/engine release build: {took:.0f} s "
          f"({'fresh: empty target/' if fresh else 'incremental'}; load {load()})")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "tokenmeter-cli"], cwd=ROOT,
                   check=True)
    return ENGINE / "target" / "release" / "tokenmeter-engine", ROOT / "target" / "release" / "tokenmeter"


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def metric_means(addr, kind):
    """Sums and counts of the engine's step duration and batch size of `kind`, now."""
    text = scrape(addr)
    return {
        "dur_sum": total(text, "tokenmeter_engine_step_duration_seconds_sum", kind=kind),
        "dur_count": total(text, "tokenmeter_engine_step_duration_seconds_count", kind=kind),
        "batch_sum": total(text, "tokenmeter_engine_batch_size_sum", kind=kind),
        "busy": total(text, "tokenmeter_engine_step_duration_seconds_sum"),
        "aborted": total(text, "vllm:request_success_total", finished_reason="abort"),
        "generated": total(text, "vllm:generation_tokens_total"),
    }


def delta(before, after):
    return {k: after[k] - before[k] for k in after}


def bench(tm, addr, work, name, args, timeout=240, preflight=False):
    """A bench run. Without its preflight request (one of the run's shape, outside the
    measurements) unless asked: the engine's /metrics deltas must hold the run's requests only."""
    json_path, trace_path = work / f"{name}.json", work / f"{name}.trace.jsonl"
    cmd = [str(tm), "bench", "--url", f"http://{addr}/v1", "--model", MODEL, "--no-progress",
           "--json", str(json_path), "--trace", str(trace_path)] + args
    if not preflight:
        cmd.append("--no-preflight")
    print("==> " + " ".join(cmd[1:]))
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if run.returncode not in (0, 3):
        print(run.stdout[-3000:])
        print(run.stderr[-3000:])
    check(run.returncode in (0, 3), f"{name}: the bench ran (exit code {run.returncode})")
    result = json.loads(json_path.read_text())
    traces = [json.loads(line) for line in trace_path.read_text().splitlines() if line.strip()]
    return result, traces, run.stdout


def p50(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def ms(seconds):
    return "—" if seconds is None else f"{seconds * 1e3:.1f}"


def client_ttft(t):
    return (t["first_token_ns"] - t["send_ns"]) / 1e9 if t.get("first_token_ns") else None


def server_ttft(t):
    return t["server_ttft_ns"] / 1e9 if t.get("server_ttft_ns") is not None else None


def light_load(tm, addr, work):
    print("\n(a) light load: client − server TTFT per request")
    result, traces, _ = bench(tm, addr, work, "light", ["-n", "20", "--concurrency", "1",
                                                   "--input-tokens", "100",
                                                   "--output-tokens", "16",
                                                   "--server-metrics", "auto"],
                                   preflight=True)
    diffs = [client_ttft(t) - server_ttft(t) for t in traces
             if client_ttft(t) is not None and server_ttft(t) is not None]
    check(len(diffs) == len(traces) == 20,
          f"(a) every request carried the server's metrics ({len(diffs)} of {len(traces)})")
    d = p50(diffs)
    print(f"    client − server TTFT: p50 {ms(d)} ms, min {ms(min(diffs))} ms, "
          f"max {ms(max(diffs))} ms over {len(diffs)} requests")
    print(f"    the bench's own client_minus_server_ttft_per_request: "
          f"{json.dumps(result['summary'].get('client_minus_server_ttft_per_request'))}")
    check(d is not None and 0 <= d <= 0.005 and min(diffs) >= 0,
          f"(a) client − server TTFT p50 {ms(d)} ms is between 0 and 5 ms, none negative")
    # The same run against the server's /metrics (scraped before and after): exact means of
    # the server's TTFT and ITL histograms (Δsum / Δcount) beside the client's.
    run = result["slices"].get("server_run") or {}
    ttft_gap = run.get("client_minus_server_ttft_mean")
    itl_server = (run.get("itl_server_mean") or {}).get("mean_s")
    itl_client = result["summary"]["itl"]["mean"]
    print(f"    /metrics: client − server TTFT mean {ms(ttft_gap)} ms; ITL mean client "
          f"{ms(itl_client)} ms, server {ms(itl_server)} ms")
    check(ttft_gap is not None and 0 <= ttft_gap <= 0.005,
          "(a) client − server TTFT mean from /metrics is between 0 and 5 ms")
    check(itl_server is not None and abs(itl_client - itl_server) <= 0.001,
          "(a) the client's mean ITL is within 1 ms of the server's from /metrics")
    return d, diffs


def input_lengths(tm, addr, work):
    print("\n(b) TTFT by input length (concurrency 1)")
    rows = []
    for n_in, n_req in ((100, 8), (500, 6), (1000, 4), (2000, 4)):
        before = metric_means(addr, "prefill")
        _, traces, _ = bench(tm, addr, work, f"input{n_in}",
                             ["-n", str(n_req), "--concurrency", "1", "--input-tokens",
                              str(n_in), "--output-tokens", "4"], timeout=300)
        d = delta(before, metric_means(addr, "prefill"))
        prefill = d["dur_sum"] / d["dur_count"] if d["dur_count"] else None
        ok_prompts = all(t.get("usage", {}).get("prompt_tokens") == n_in for t in traces)
        check(ok_prompts, f"(b) usage.prompt_tokens is {n_in} for every request")
        server = [server_ttft(t) for t in traces if server_ttft(t) is not None]
        rows.append((n_in, n_req, p50(map(client_ttft, traces)), p50(server), prefill,
                     sum(server) / len(server) if server else None))
    print("\n| input tokens | requests | TTFT p50 client (ms) | TTFT p50 server (ms) | "
          "TTFT mean server (ms) | engine prefill mean (ms) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n_in, n_req, c, s, p, sm in rows:
        print(f"| {n_in} | {n_req} | {ms(c)} | {ms(s)} | {ms(sm)} | {ms(p)} |")
    ttfts = [r[2] for r in rows]
    check(all(a < b for a, b in zip(ttfts, ttfts[1:])),
          "(b) client TTFT p50 rises with the input length")
    check(ttfts[-1] >= 3 * ttfts[0], f"(b) TTFT at 2000 tokens is at least 3× that at 100 "
                                      f"({ms(ttfts[-1])} vs {ms(ttfts[0])} ms)")
    check(all(r[4] is not None and r[5] is not None and r[4] <= r[5] for r in rows),
          "(b) the engine's mean prefill is within the server's mean TTFT at every length")
    check(all(r[4] >= 0.5 * r[5] for r in rows[1:]),
          "(b) from 500 tokens on, the prefill is at least half of the server's TTFT")
    return rows


def batches(tm, addr, work):
    print("\n(c) TPOT by batch size (concurrency = batch, 200 input, 64 output tokens)")
    rows = []
    for b in (1, 2, 4, 8):
        before = metric_means(addr, "decode")
        result, traces, _ = bench(tm, addr, work, f"batch{b}",
                                  ["-n", str(4 * b), "--concurrency", str(b),
                                   "--input-tokens", "200", "--output-tokens", "64"])
        d = delta(before, metric_means(addr, "decode"))
        step = d["dur_sum"] / d["dur_count"] if d["dur_count"] else None
        mean_batch = d["batch_sum"] / d["dur_count"] if d["dur_count"] else None
        tpot = result["summary"]["tpot"]["p50"]
        tpot_mean = result["summary"]["tpot"]["mean"]
        per_step = d["busy"] / d["dur_count"] if d["dur_count"] else None
        rows.append((b, mean_batch, tpot, 1 / tpot, result["summary"]["output_throughput"], step,
                     per_step, result["summary"]["request_throughput"], tpot_mean))
    print("\n| batch (concurrency) | mean decode batch | TPOT p50 (ms) | TPOT mean (ms) | "
          "tokens/s per user (1 / TPOT p50) | tokens/s per engine (client) | "
          "engine decode step mean (ms) | engine time per decode step, prefills included (ms) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b, mb, tpot, per_user, per_engine, step, per_step, _, tpot_mean in rows:
        print(f"| {b} | {mb:.2f} | {ms(tpot)} | {ms(tpot_mean)} | {per_user:.0f} | "
              f"{per_engine:.0f} | {ms(step)} | {ms(per_step)} |")
    tpots = [r[2] for r in rows]
    check(tpots[-1] > tpots[0], f"(c) TPOT p50 rises from batch 1 to 8 "
                                f"({ms(tpots[0])} → {ms(tpots[-1])} ms)")
    check(rows[-1][4] > rows[0][4], "(c) tokens/s per engine rises from batch 1 to 8")
    check(rows[-1][5] > rows[0][5], f"(c) the engine's decode step at batch 8 is longer than at "
                                    f"1 ({ms(rows[-1][5])} vs {ms(rows[0][5])} ms)")
    if not all(b[5] > a[5] for a, b in zip(rows, rows[1:])):
        print("    note: the decode step did not grow at every batch size (not a check: gemm's "
              "kernels for 2 and 4 rows, and the machine's other work, move it)")
    check(all(abs(r[8] - r[6]) <= 0.25 * r[6] for r in rows),
          "(c) TPOT mean is within 25 % of the engine's time per decode step (prefills of the "
          "requests that join the batch included: no chunked prefill) at every batch size")
    return rows


def overload(tm, addr, work, capacity):
    rate = max(2.0, round(2 * capacity, 1))
    n = int(rate * 8)
    print(f"\n(d) offered load above capacity: {rate} req/s (twice the {capacity:.1f} req/s "
          f"served at batch 8), {n} requests, --slice 1s, the server's /metrics scraped")
    result, _, _ = bench(tm, addr, work, "overload",
                         ["-n", str(n), "--rate", str(rate), "--input-tokens", "200",
                          "--output-tokens", "64", "--slice", "1s", "--server-metrics", "auto"],
                         timeout=300)
    table = []
    for sl in result["slices"]["slices"]:
        server = sl.get("server") or {}
        waiting = (server.get("waiting") or {}).get("mean")
        queue = (server.get("queue_server_mean") or {}).get("mean_s")
        ttft_stat = sl["summary"].get("ttft") or {}
        ttft = ttft_stat.get("p50") if ttft_stat.get("count") else None
        table.append((sl["index"], sl["start_s"], waiting, queue, ttft))
    print("| slice | start (s) | server waiting, mean | server queue time, mean of the requests "
          "that ended in it (ms) | client TTFT p50 (ms) |")
    print("|---:|---:|---:|---:|---:|")
    for i, start_s, waiting, queue, ttft in table:
        w = "—" if waiting is None else f"{waiting:.1f}"
        print(f"| {i} | {start_s:.0f} | {w} | {ms(queue)} | {ms(ttft)} |")
    base = next((t for *_, t in table if t is not None), None)
    first_q = next((i for i, _, w, _, _ in table if w is not None and w >= 2), None)
    first_t = next((i for i, *_, t in table if t is not None and base and t > 2 * base), None)
    print(f"    first slice with 2 or more waiting: {first_q}; first with TTFT p50 over twice "
          f"the first slice's: {first_t}")
    check(first_q is not None and first_t is not None and first_q <= first_t,
          "(d) the server's queue rises in an earlier or the same slice as TTFT")
    return table


def hangups(tm, addr, work):
    print("\n(e) hang-ups: --cancel-fraction 0.5 --cancel-after 8tok")
    before = metric_means(addr, "decode")
    result, traces, _ = bench(tm, addr, work, "hangups",
                              ["-n", "20", "--concurrency", "4", "--input-tokens", "100",
                               "--output-tokens", "200", "--cancel-fraction", "0.5",
                               "--cancel-after", "8tok"])
    time.sleep(0.5)  # the engine sees a hang-up at its next step boundary (a few ms); bounded
    d = delta(before, metric_means(addr, "decode"))
    cancelled = [t for t in traces if t["outcome"] == "cancelled"]
    succeeded = [t for t in traces if t["outcome"] == "success"]
    client_read = sum(t["output_tokens"] for t in cancelled)
    server_cancelled_tokens = d["generated"] - sum(t["output_tokens"] for t in succeeded)
    print(f"    client: {len(cancelled)} cancelled having read {client_read} tokens, "
          f"{len(succeeded)} succeeded; server: {d['aborted']:.0f} aborted, "
          f"{server_cancelled_tokens:.0f} tokens sent to them")
    check(len(cancelled) > 0 and d["aborted"] == len(cancelled),
          f"(e) the server counts {d['aborted']:.0f} cancelled = the client's {len(cancelled)}")
    check(client_read <= server_cancelled_tokens <= client_read + 4 * len(cancelled),
          "(e) the server's tokens of the cancelled requests are at least what the client read "
          "and at most 4 more per request")
    return len(cancelled), client_read, server_cancelled_tokens


def promtool_check(tool, text, path):
    path.write_text(text)
    with open(path) as f:
        run = subprocess.run([tool, "check", "metrics"], stdin=f, capture_output=True,
                             text=True, timeout=30)
    return run.returncode, [p for p in (run.stdout + run.stderr).splitlines() if p.strip()]


def promtool(engine, tm, addr, work):
    print("\n(f) promtool check metrics: the vLLM profile (promtool's lint objects to vLLM's "
          "names and to nothing else), then a second server with --profile semconv (no "
          "objection at all)")
    tool = shutil.which("promtool")
    if tool is None:
        check(False, "(f) SKIPPED: promtool is not installed (source scripts/tools.sh && "
                     "install_test_tools); a skipped check is not a pass")
        return
    path = work / "metrics-vllm.txt"
    code, problems = promtool_check(tool, scrape(addr), path)
    # As crates/tokenmeter-prometheus/tests/promtool.rs: exit 3 is "lint problems found" (1
    # would be a parse error), and the only problems are vLLM's own names.
    expected = [p for p in problems
                if (p.startswith("vllm:") and p.endswith("metric names should not contain ':'"))
                or p == 'vllm:iteration_tokens_total non-counter metrics should not have '
                        '"_total" suffix']
    unexpected = [p for p in problems if p not in expected]
    print(f"    vllm: exit code {code}; {len(expected)} objections to vLLM's names; "
          f"other problems: {unexpected or 'none'}")
    check(code in (0, 3) and not unexpected,
          f"(f) promtool parses the vLLM profile's /metrics ({path.stat().st_size} bytes) and "
          f"reports nothing but vLLM's names")
    log_path = work / "engine-semconv.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen([str(engine), "--addr", "127.0.0.1:0", "--model", MODEL,
                                   "--profile", "semconv"], stdout=log, stderr=subprocess.STDOUT)
        try:
            other = wait_for_address(server, log_path)
            bench(tm, other, work, "semconv", ["-n", "4", "--concurrency", "2",
                                               "--input-tokens", "50", "--output-tokens", "8"])
            path = work / "metrics-semconv.txt"
            code, problems = promtool_check(tool, scrape(other), path)
        finally:
            stop(server, 10)
    print(f"    semconv: exit code {code}; problems: {problems or 'none'}")
    check(code == 0 and not problems,
          f"(f) promtool check metrics passes on the semconv profile's /metrics after 4 requests "
          f"({path.stat().st_size} bytes), with no problem reported")


def vllm_client(addr):
    """(g) vLLM 0.33's own benchmark client against the engine: a client we did not write."""
    import asyncio

    import vllm_client_gaps

    print("\n(g) vLLM 0.33's benchmark client (its request functions, read out of its PyPI wheel "
          "by scripts/vllm_client_gaps.py): completions and chat, n = 1, 2, 5, 16 tokens")
    vllm = vllm_client_gaps.load_vllm_client()
    asyncio.run(asyncio.wait_for(vllm_client_gaps.run(vllm, addr, check, MODEL), 120))


def main():
    fresh = "--fresh" in sys.argv[1:]
    started = time.monotonic()
    engine, tm = build(fresh)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                            capture_output=True).stdout.strip()
    work = Path(tempfile.mkdtemp(prefix="tokenmeter-real-engine-"))
    log = open(work / "engine.log", "w")
    server = subprocess.Popen([str(engine), "--addr", "127.0.0.1:0", "--model", MODEL],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        addr = wait_for_address(server, work / "engine.log")
        print(f"==> {engine.name} on {addr} (commit {commit}, load {load()})")
        print((work / "engine.log").read_text().strip())
        light_load(tm, addr, work)
        input_lengths(tm, addr, work)
        rows = batches(tm, addr, work)
        overload(tm, addr, work, rows[-1][7])
        hangups(tm, addr, work)
        promtool(engine, tm, addr, work)
        vllm_client(addr)
    finally:
        stop(server, 10)
        log.close()
    print(f"\n==> {time.monotonic() - started:.0f} s in all; load {load()}; work in {work}")
    check.finish("all checks passed")


if __name__ == "__main__":
    main()
