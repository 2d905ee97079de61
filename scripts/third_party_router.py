#!/usr/bin/env python3
"""A real Rust router in front of two `tokenmeter serve` replicas: do our numbers add up?

The router is SGLang's model gateway, `smg` (Shepherd Model Gateway, formerly
`sglang-router`): a Rust binary shipped as a prebuilt wheel on PyPI, which routes plain
OpenAI-compatible HTTP workers and exposes Prometheus metrics of its own. scripts/tools.sh
installs the pinned version into a venv under ~/.cache (`install_router`; this script calls it,
and it returns at once when the router is there).

Starts two `tokenmeter serve --enable-per-request-metrics` replicas on loopback (port 0), the
router in front (`smg launch --policy round_robin`, 127.0.0.1, free ports), and checks:

1. **Counts add up.** `tokenmeter bench` through the router (N requests, no test request): the
   replicas' `tokenmeter_requests_total{outcome="success"}`, `tokenmeter_input_tokens_total`
   and `tokenmeter_output_tokens_total`, summed over both, equal the bench's successes,
   `total_input_tokens` and `total_output_tokens` exactly; both replicas got requests, and
   the router's `smg_worker_requests_total{worker=...}` equals each replica's count.
2. **Client − server TTFT includes the router's hop and stays small.** Every request carried
   the server's TTFT (the final chunk's `metrics` object); from the bench's trace, every
   request's client TTFT minus its server TTFT is positive; the bench's p50 is at most
   TTFT_P50_MS and its p95 at most TTFT_P95_MS (a debug build on a loaded machine); the same
   run sent straight to one replica has a smaller p50 (the router's hop is in the figure).
3. **Hang-ups through the router reach the replicas.** A bench run where some requests hang
   up after 3 tokens of a 200-token answer (`--cancel-fraction`): the replicas count exactly
   the bench's hang-ups `cancelled` and the rest `success` (a router that kept reading after
   the client left would turn them into successes), and the router answers them 499
   (`smg_http_responses_total{status_code="499"}`).
4. **The router's metrics beside ours**: its chat requests, per-worker requests, 499s and
   retries beside the replicas' counts (all equal; it must have retried nothing, or the
   replicas would count a request twice), and its mean request duration beside the bench's
   and the replicas' (printed only: for a stream, smg stops its clock when the answer starts,
   so its mean is near the bench's TTFT, not its E2E).
5. It prints the router's name and version (`smg --version`) first and last.

Usage:
    python3 scripts/third_party_router.py [path/to/tokenmeter]
(default: target/debug/tokenmeter, or $CARGO_TARGET_DIR/debug/tokenmeter). Exit 0 when every
check holds. Every wait is bounded; everything runs on 127.0.0.1.
"""

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

from serve_child import Checks, binary, free_port, scrape, serving, stop, total

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "sim-llama-3-8b"
N = 60
HANGUPS_N = 20
TTFT_P50_MS = 10.0
TTFT_P95_MS = 25.0
SHAPE = ["--rate", "40", "--input-tokens", "16", "--output-tokens", "8"]
OUTCOMES = ("success", "cancelled", "error", "degraded")


def install_router():
    """The `smg` binary that scripts/tools.sh installs (the one place tools are installed)."""
    script = 'source scripts/tools.sh && install_router >&2 && echo "$TOKENMETER_ROUTER_VENV"'
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                          timeout=600)
    if done.returncode != 0:
        sys.exit("could not install the router: see `install_router` in scripts/tools.sh")
    return os.path.join(done.stdout.strip(), "bin", "smg")


@contextlib.contextmanager
def router(smg, workers, log_path):
    """`smg launch` on 127.0.0.1 in front of `workers`; yields (its address, its metrics')."""
    for _ in range(3):  # a free port may be taken between free_port() and the router's bind
        port, metrics_port = free_port(), free_port()
        with open(log_path, "w") as log:
            child = subprocess.Popen(
                [smg, "launch", "--host", "127.0.0.1", "--port", str(port),
                 "--worker-urls", *[f"http://{w}" for w in workers], "--policy", "round_robin",
                 "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port),
                 "--log-level", "warn", "--shutdown-grace-period-secs", "1"],
                stdout=log, stderr=subprocess.STDOUT)
        try:
            addr, metrics = f"127.0.0.1:{port}", f"127.0.0.1:{metrics_port}"
            if wait_ready(child, metrics, len(workers)):
                yield addr, metrics
                return
        finally:
            stop(child, 10)
    sys.exit(f"the router did not start in 3 tries:\n{open(log_path).read()[-3000:]}")


def wait_ready(child, metrics, workers):
    """True once the router counts `workers` workers in its pool (within 60 s)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if child.poll() is not None:
            return False
        try:
            if total(scrape(metrics), "smg_worker_pool_size") == workers:
                return True
        except OSError:
            pass  # not listening yet
        time.sleep(0.1)  # polling a program that is starting, bounded by the deadline
    sys.exit(f"the router did not list {workers} workers within 60 s")


def counts(replica):
    """Requests by outcome and tokens on one replica's /metrics."""
    text = scrape(replica)
    out = {o: total(text, "tokenmeter_requests_total", role="server", outcome=o) for o in OUTCOMES}
    out["input"] = total(text, "tokenmeter_input_tokens_total", role="server")
    out["output"] = total(text, "tokenmeter_output_tokens_total", role="server")
    out["flying"] = (total(text, "tokenmeter_requests_running", role="server")
                     + total(text, "tokenmeter_requests_waiting", role="server"))
    return out


def ended(c):
    """Requests ended, whatever their outcome, in `counts`' dict `c`."""
    return sum(c[o] for o in OUTCOMES)


def settled(replicas, before, sent):
    """Each replica's counts minus `before`, once `sent` requests have ended over them (20 s)."""
    deadline = time.monotonic() + 20
    while True:
        now = [counts(r) for r in replicas]
        delta = [{k: a[k] - b[k] for k in a} for a, b in zip(now, before)]
        if sum(map(ended, delta)) == sent and all(c["flying"] == 0 for c in now):
            return now, delta
        if time.monotonic() > deadline:
            return now, delta  # the checks below say what is missing
        time.sleep(0.05)  # polling, bounded by the deadline


def bench(url, work, name, extra):
    """`tokenmeter bench` against `url`; its --json report and its trace (one dict a request)."""
    report, trace = os.path.join(work, f"{name}.json"), os.path.join(work, f"{name}.jsonl")
    command = [binary(), "bench", "--url", f"http://{url}", "--model", MODEL, "--no-progress",
               "--no-preflight", "--json", report, "--trace", trace, *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.exit(f"`{' '.join(command)}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    with open(trace) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    with open(report) as f:
        return json.load(f), lines


def router_view(metrics):
    text = scrape(metrics)
    return {
        "chat": total(text, "smg_http_requests_total", method="POST", path="/v1/chat/completions"),
        "499": total(text, "smg_http_responses_total", status_code="499"),
        "retries": total(text, "smg_worker_retries_total"),
        "text": text,
    }


def worker_requests(text, replica):
    return total(text, "smg_worker_requests_total", worker=f"http://{replica}")


def means(addr, name, **labels):
    """(sum, count) of histogram `name` on `addr`'s /metrics."""
    text = scrape(addr)
    return total(text, name + "_sum", **labels), total(text, name + "_count", **labels)


def durations(before, after):
    """Δsum/Δcount in ms, or None."""
    count = after[1] - before[1]
    return (after[0] - before[0]) / count * 1e3 if count else None


def counts_add_up(check, replicas, metrics, work):
    before = [counts(r) for r in replicas]
    router_duration = "smg_router_request_duration_seconds"
    server_duration = "gen_ai_server_request_duration_seconds"
    router_before = means(metrics["router_metrics"], router_duration)
    server_before = [means(r, server_duration) for r in replicas]
    report, trace = bench(metrics["router"], work, "through", ["-n", str(N), *SHAPE])
    s = report["summary"]
    _, delta = settled(replicas, before, N)
    server = [means(r, server_duration) for r in replicas]
    server_ms = durations(tuple(map(sum, zip(*server_before))), tuple(map(sum, zip(*server))))
    router_ms = durations(router_before, means(metrics["router_metrics"], router_duration))
    print(f"     request duration means: the bench's E2E {s['e2e']['mean'] * 1e3:.3f} ms · the "
          f"replicas' {server_ms:.3f} ms · the router's {router_duration} {router_ms:.3f} ms "
          f"(the bench's TTFT {s['ttft']['mean'] * 1e3:.3f} ms: for a stream the router stops "
          "its clock when the answer starts, not when it ends)")
    check(s["outcomes"]["success"] == N, f"the bench: {N} successes ({s['outcomes']})")
    check(sum(d["success"] for d in delta) == N,
          f"requests_total{{outcome=success}} over both replicas = {N} "
          f"({' + '.join(str(int(d['success'])) for d in delta)})")
    check(sum(d["input"] for d in delta) == s["total_input_tokens"],
          f"input_tokens_total over both replicas = the bench's {s['total_input_tokens']}")
    check(sum(d["output"] for d in delta) == s["total_output_tokens"],
          f"output_tokens_total over both replicas = the bench's {s['total_output_tokens']}")
    check(all(d["success"] > 0 for d in delta), "both replicas got requests")
    text = scrape(metrics["router_metrics"])
    for replica, d, b in zip(replicas, delta, before):
        theirs = worker_requests(text, replica)
        ours = ended(d) + ended(b)
        check(theirs == ours, f"the router's smg_worker_requests_total for {replica}: {int(theirs)}"
              f" = the replica's requests_total {int(ours)}")
    return report, trace


def ttft_gap(check, report, trace, replicas, work):
    direct, _ = bench(replicas[0], work, "direct", ["-n", str(N), *SHAPE])
    gap = report["summary"].get("client_minus_server_ttft_per_request")
    check(gap is not None and gap["count"] == N,
          f"every request carried the server's TTFT ({gap['count'] if gap else 0}/{N}; "
          "serve --enable-per-request-metrics sends it)")
    if gap is None:
        return
    gaps = [t["first_token_ns"] - t["send_ns"] - t["server_ttft_ns"]
            for t in trace if t.get("server_ttft_ns") is not None and t.get("first_token_ns")]
    check(len(gaps) == N and min(gaps) > 0,
          f"client − server TTFT > 0 for every request (min {min(gaps, default=0) / 1e6:.3f} ms)")
    p50, p95 = gap["p50"] * 1e3, gap["p95"] * 1e3
    check(p50 <= TTFT_P50_MS and p95 <= TTFT_P95_MS,
          f"client − server TTFT through the router: p50 {p50:.3f} ms ≤ {TTFT_P50_MS}, "
          f"p95 {p95:.3f} ms ≤ {TTFT_P95_MS} (max {gap['max'] * 1e3:.3f} ms)")
    d = direct["summary"].get("client_minus_server_ttft_per_request") or {"p50": 0, "p95": 0}
    check(d["p50"] * 1e3 < p50,
          f"straight to one replica it is smaller: p50 {d['p50'] * 1e3:.3f} ms, "
          f"p95 {d['p95'] * 1e3:.3f} ms (the router's hop: +{p50 - d['p50'] * 1e3:.3f} ms at p50)")


def hangups(check, replicas, metrics, work):
    before = [counts(r) for r in replicas]
    router_before = router_view(metrics["router_metrics"])
    report, _ = bench(metrics["router"], work, "hangups", [
        "-n", str(HANGUPS_N), "--rate", "40", "--input-tokens", "16", "--output-tokens", "200",
        "--cancel-fraction", "0.5", "--cancel-after", "3tok"])
    outcomes = report["summary"]["outcomes"]
    hung_up = outcomes["cancelled"]
    check(0 < hung_up < HANGUPS_N and outcomes["success"] == HANGUPS_N - hung_up,
          f"the bench: {hung_up} hung up after 3 tokens, {outcomes['success']} read to the end")
    _, delta = settled(replicas, before, HANGUPS_N)
    cancelled = sum(d["cancelled"] for d in delta)
    check(cancelled == hung_up,
          f"the replicas count {int(cancelled)} cancelled = the bench's {hung_up} hang-ups"
          + ("" if cancelled == hung_up else
             f" (success {int(sum(d['success'] for d in delta))}: the router kept reading after"
             " the client left)"))
    check(sum(d["success"] for d in delta) == HANGUPS_N - hung_up,
          f"and {HANGUPS_N - hung_up} success")
    after = router_view(metrics["router_metrics"])
    closed = after["499"] - router_before["499"]
    check(closed == hung_up,
          f"the router answered {int(closed)} of them 499 (client closed request)")


def side_by_side(check, replicas, metrics):
    """The router's figures beside ours (the direct run of 2. reached the first replica alone)."""
    view = router_view(metrics["router_metrics"])
    ours = [counts(r) for r in replicas]
    routed = sum(map(ended, ours)) - N
    print("     the router's metrics beside the replicas' (the direct run left out):")
    print(f"       smg_http_requests_total{{POST /v1/chat/completions}} {int(view['chat'])}"
          f" · replicas' requests_total {int(routed)}")
    for i, (replica, c) in enumerate(zip(replicas, ours)):
        direct = N if i == 0 else 0
        theirs = worker_requests(view["text"], replica)
        mine = ended(c) - direct
        check(theirs == mine, f"  smg_worker_requests_total{{worker=http://{replica}}} "
              f"{int(theirs)} · that replica: success {int(c['success']) - direct}, "
              f"cancelled {int(c['cancelled'])}")
    print(f"       smg_http_responses_total{{status_code=499}} {int(view['499'])}"
          f" · replicas' cancelled {int(sum(c['cancelled'] for c in ours))}")
    check(view["retries"] == 0,
          f"the router retried nothing (smg_worker_retries_total {int(view['retries'])})")
    check(view["chat"] == routed, "the router's chat requests = the replicas' requests_total")


def main():
    started = time.monotonic()
    smg = install_router()
    version = subprocess.run([smg, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    print(f"==> router: {version} (SGLang's model gateway, from PyPI) at {smg}")
    check = Checks()
    replica_args = ["--enable-per-request-metrics"]
    with tempfile.TemporaryDirectory() as work, \
            serving(replica_args) as a, serving(replica_args) as b, \
            router(smg, [a, b], os.path.join(work, "router.log")) as (addr, router_metrics):
        replicas = [a, b]
        metrics = {"router": addr, "router_metrics": router_metrics}
        print(f"     replicas {a} and {b}; the router on {addr}, its metrics on {router_metrics}")
        report, trace = counts_add_up(check, replicas, metrics, work)
        ttft_gap(check, report, trace, replicas, work)
        hangups(check, replicas, metrics, work)
        side_by_side(check, replicas, metrics)
    check.finish(f"every check holds through {version} ({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
