#!/usr/bin/env python3
"""The accurate ceiling of one benchmark process: tokenmeter's, vLLM's client's and AIPerf's.

One server, cheaper than any client: `tokenmeter bench --self-check-serve` (its own process,
pinned to core 1): every answer 64 tokens, the first 20 ms after the request is read, then one
every 2 ms, each token's event serialized once and written alone; `GET /tokenmeter/truth`
answers the TTFT p50 (its first write − its read of the request) and the ITL p50 (the gaps
between its writes) of what it wrote since it was last asked. No shared clock is needed: every
client is judged by the same figures.

The same ramp for every client: 8 streams, then ×√2 a step up to 2,048; a step sends 4
requests per stream (512 at least) at a constant rate that keeps that many streams in flight
(streams / 0.146 s requests per second). The ramp stops at the first step where the client's
TTFT p50 or ITL p50 (per gap) is more than 1 ms off the server's, or its dispatch lag p99 (the
request sent − its due time) passes 1 ms where the client reports one, or a request fails, on
that step and on its second run (a moment's contention on a shared machine is not a client's
ceiling). The ceiling is the last step within the line: the tokens/s the client received
(over the step's wall time, ramp-up and tail included) and its streams.

- tokenmeter: `tokenmeter bench --self-check-ceiling --url ...` (the ramp is its own), on core 0
  (`taskset -c 0`: one runtime worker), then on cores 0 and 1 (two workers; the server shares
  core 1 with it: this machine has 2 cores).
- vLLM 0.33's client: `async_request_openai_chat_completions` out of the vllm 0.33.0 wheel
  (loaded as scripts/vllm_client_gaps.py does), driven from one asyncio loop at the step's
  arrival times, as `vllm bench serve` drives it, on core 0. Its dispatch lag: its function's
  `start_time` − the due time.
- AIPerf (PyPI, pinned; installed into a venv under ~/.cache by `install_aiperf` in
  scripts/tools.sh): `aiperf profile --request-rate R --arrival-pattern constant` on core 0,
  with a word-level tokenizer written here (its built-in one downloads its vocabulary); its
  TTFT p50 and its inter-chunk latency p50 (per gap); its dispatch lag: each record's
  `request_start_ns` − `credit_issued_ns` (the worker's send after its scheduler issued it).
  When it does not install or run, the table says so and the others go on.

Prints one table: client, cores, ceiling tokens/s, streams, what stopped it; `--json PATH`
also writes every step. About 2 minutes (1 min 35 s to 2 min 6 s in the runs benches/README.md
lists); not part of scripts/test.sh.

Usage:
    python3 scripts/ceiling.py [path/to/tokenmeter] [--json PATH]
(default: target/release/tokenmeter, or $CARGO_TARGET_DIR/release/tokenmeter: measure a
release build). Everything runs on 127.0.0.1; every wait is bounded.
"""

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

from serve_child import free_port, stop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STREAMS = [round(8 * 2 ** (step / 2)) for step in range(17)]
TOKENS = 64
PER_STREAM = 4
MIN_REQUESTS = 512
ANSWER_S = 0.020 + 0.002 * (TOKENS - 1)
LINE_S = 1e-3
CLIENT_CORE = "0"
SERVER_CORE = "1"


def tokenmeter():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    args = [a for a in args if a != json_path()]
    if args:
        return args[0]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "release", "tokenmeter")


def json_path():
    if "--json" in sys.argv:
        return sys.argv[sys.argv.index("--json") + 1]
    return None


def plan(streams):
    """A step's requests and their rate (requests per second)."""
    return max(streams * PER_STREAM, MIN_REQUESTS), streams / ANSWER_S


# Every client and the server run at a higher priority than the machine's other work where
# this script may raise it (as root): the same for all, so that a neighbour's build on a shared
# machine takes less of the ramp's timing.
NICE = ["nice", "-n", "-10"] if os.geteuid() == 0 else []


def pinned(cores, command):
    return [*NICE, "taskset", "-c", cores, *command]


@contextlib.contextmanager
def paced_server():
    """`tokenmeter bench --self-check-serve` on core 1; yields its origin."""
    port = free_port()
    command = pinned(SERVER_CORE, [tokenmeter(), "bench", "--self-check-serve", f"127.0.0.1:{port}"])
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        origin = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if child.poll() is not None:
                sys.exit(f"the self-check server ended: {child.stderr.read()}")
            try:
                truth(origin)
                break
            except OSError:
                time.sleep(0.05)
        else:
            sys.exit("the self-check server did not answer within 30 s")
        yield origin
    finally:
        stop(child, 10)


def truth(origin):
    """What the server wrote since it was last asked (and starts afresh)."""
    with urllib.request.urlopen(f"{origin}/tokenmeter/truth", timeout=10) as r:
        return json.load(r)


def breach(step):
    """Why a step is past the line, or None: the rule of tokenmeter's ramp."""
    if step.get("error"):
        return step["error"]
    if step["failed"]:
        return f"{step['failed']} of {step['requests']} requests failed"
    for name, key, signed in [("TTFT p50 error", "ttft_error_s", True),
                              ("ITL p50 error", "itl_error_s", True),
                              ("dispatch lag p99", "dispatch_lag_p99_s", False)]:
        value = step.get(key)
        if value is None:
            if key == "dispatch_lag_p99_s":
                continue
            return f"no {name} measured"
        if abs(value) > LINE_S:
            shown = f"{value * 1e3:+.3f}" if signed else f"{value * 1e3:.3f}"
            return f"{name} {shown} ms (line 1 ms)"
    return None


def ramp(name, origin, one_step):
    """Runs `one_step(streams)` up the ramp; a step past the line is run once more, and the
    ramp stops when that second run is past it too (tokenmeter's rule)."""
    steps = []
    for streams in STREAMS:
        for attempt in range(2):
            step = measured(name, origin, one_step, streams)
            steps.append(step)
            why = breach(step)
            if not why:
                break
        else:
            return steps, why
    return steps, None


def measured(name, origin, one_step, streams):
    """One step, with its errors against what the server wrote during it."""
    truth(origin)
    step = one_step(streams)
    written = truth(origin)
    step["streams"] = streams
    for key, truth_key in [("ttft", "ttft_p50_s"), ("itl", "itl_p50_s")]:
        client, true = step.get(f"{key}_p50_s"), written.get(truth_key)
        step[f"{key}_error_s"] = None if client is None or true is None else client - true
    why = breach(step)
    print(f"  {name:<22} {streams:>5} streams {step.get('tokens_per_s', 0):>9.0f} tok/s  "
          f"TTFT {ms(step.get('ttft_error_s'))}  ITL {ms(step.get('itl_error_s'))}  "
          f"lag p99 {ms(step.get('dispatch_lag_p99_s'))} ms{'  <- ' + why if why else ''}",
          flush=True)
    return step


def ms(value):
    return "-" if value is None else f"{value * 1e3:+.3f}"


def tokenmeter_ceiling(origin, cores):
    """tokenmeter's own ramp on `cores`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ceiling.json")
        command = pinned(cores, [tokenmeter(), "bench", "--self-check-ceiling", "--url", origin,
                                 "--json", out])
        # Its stderr repeats each step as it ends; its stdout has them all, and the ceiling.
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=600)
        print("\n".join("  " + line for line in done.stdout.splitlines()), flush=True)
        if done.returncode != 0:
            return {"error": f"exit {done.returncode}: {done.stderr.strip()[-300:]}"}
        with open(out) as f:
            ceiling = json.load(f)
    good = ceiling["steps"][ceiling["ceiling"]] if ceiling["ceiling"] is not None else None
    return {"workers": ceiling["workers"], "steps": ceiling["steps"], "ceiling": good,
            "stopped_by": ceiling["stopped_by"] or "nothing: every step within the line"}


# vLLM's client: one step in a child process pinned to one core.

def vllm_step(origin, streams):
    command = pinned(CLIENT_CORE, [sys.executable, os.path.abspath(__file__), "--vllm-step",
                                   origin, str(streams)])
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=120)
    if done.returncode != 0:
        return {"error": f"vLLM's client failed: {done.stderr.strip()[-300:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


async def vllm_run(origin, streams):
    import aiohttp
    from vllm_client_gaps import load_vllm_client

    vllm = load_vllm_client()
    requests, rate = plan(streams)
    # As `vllm bench serve` opens its session: no connection limit without --max-concurrency.
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=60)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        prompt = " ".join(f"w{i}" for i in range(64))
        start = time.perf_counter()
        tasks = []
        for i in range(requests):
            due = start + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            request = vllm.RequestFuncInput(prompt=prompt, api_url=f"{origin}/v1/chat/completions",
                                            prompt_len=64, output_len=TOKENS, model="paced")
            tasks.append((due, asyncio.create_task(
                vllm.async_request_openai_chat_completions(request, session))))
        outputs = [(due, await task) for due, task in tasks]
    ended = max(out.start_time + out.latency for _, out in outputs)
    ok = [out for _, out in outputs if out.success]
    return {
        "requests": requests,
        "failed": requests - len(ok),
        "tokens_per_s": sum(out.output_tokens or 0 for out in ok) / (ended - start),
        "ttft_p50_s": p(sorted(out.ttft for out in ok), 0.5),
        "itl_p50_s": p(sorted(gap for out in ok for gap in out.itl), 0.5),
        "dispatch_lag_p99_s": p(sorted(max(0.0, out.start_time - due) for due, out in outputs),
                                0.99),
    }


def p(values, q):
    """The q-quantile of sorted values (nearest rank), None when empty."""
    if not values:
        return None
    return values[min(len(values) - 1, max(0, int(q * len(values) + 0.999999) - 1))]


# AIPerf: one `aiperf profile` per step, pinned to one core.

def install_aiperf():
    script = 'source scripts/tools.sh && install_aiperf >&2 && echo "$TOKENMETER_AIPERF_VENV"'
    try:
        done = subprocess.run(["bash", "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    return os.path.join(done.stdout.strip(), "bin", "aiperf")


def word_tokenizer(directory):
    """A word-level tokenizer (w0 … w999) for AIPerf, in Hugging Face's format."""
    words = ["<unk>"] + [f"w{i}" for i in range(1000)]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "normalizer": None,
        "added_tokens": [{"id": 0, "content": "<unk>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(words)},
                  "unk_token": "<unk>"},
    }
    with open(os.path.join(directory, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f)
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>",
                   "model_max_length": 100000}, f)


def aiperf_step(aiperf, tokenizer, origin, streams):
    requests, rate = plan(streams)
    with tempfile.TemporaryDirectory() as out:
        command = pinned(CLIENT_CORE, [
            aiperf, "profile", "--model", "paced", "--tokenizer", tokenizer, "--url", origin,
            "--endpoint-type", "chat", "--streaming", "--isl", "64", "--osl", str(TOKENS),
            "--request-rate", f"{rate:.3f}", "--arrival-pattern", "constant",
            "--request-count", str(requests), "--ui", "none", "--no-server-metrics",
            "--no-gpu-telemetry", "--artifact-dir", out])
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return {"error": "aiperf did not end within 300 s"}
        summary_path = os.path.join(out, "profile_export_aiperf.json")
        if done.returncode != 0 or not os.path.exists(summary_path):
            return {"error": f"aiperf failed (exit {done.returncode}): {done.stdout[-300:]}"}
        with open(summary_path) as f:
            summary = json.load(f)
        lags = []
        with open(os.path.join(out, "profile_export.jsonl")) as f:
            for line in f:
                meta = json.loads(line).get("metadata", {})
                if "request_start_ns" in meta and "credit_issued_ns" in meta:
                    lags.append(max(0, meta["request_start_ns"] - meta["credit_issued_ns"]) / 1e9)
    counted = int(summary.get("request_count", {}).get("avg", 0))
    return {
        "requests": requests,
        "failed": requests - counted,
        "tokens_per_s": summary.get("output_token_throughput", {}).get("avg", 0.0),
        "ttft_p50_s": summary["time_to_first_token"]["p50"] / 1e3,
        "itl_p50_s": summary["inter_chunk_latency"]["p50"] / 1e3,
        "dispatch_lag_p99_s": p(sorted(lags), 0.99),
    }


def row(client, cores, result):
    good = result.get("ceiling")
    if result.get("error"):
        return (client, cores, "-", "-", result["error"])
    if good is None:
        first = result["steps"][0] if result.get("steps") else {}
        return (client, cores, f"< {first.get('tokens_per_s', 0):.0f}", f"< {STREAMS[0]}",
                result["stopped_by"])
    return (client, cores, f"{good['tokens_per_s']:.0f}", str(good["streams"]),
            result["stopped_by"])


def peer(name, origin, one_step):
    print(f"{name}:", flush=True)
    steps, why = ramp(name, origin, one_step)
    within = [step for step in steps if not breach(step)]
    return {"steps": steps, "ceiling": within[-1] if within else None,
            "stopped_by": why or "nothing: every step within the line"}


def main():
    if "--vllm-step" in sys.argv:
        at = sys.argv.index("--vllm-step")
        origin, streams = sys.argv[at + 1], int(sys.argv[at + 2])
        print(json.dumps(asyncio.run(asyncio.wait_for(vllm_run(origin, streams), 100))))
        return
    if not os.path.exists(tokenmeter()):
        sys.exit(f"{tokenmeter()}: no such binary (cargo build --release -p tokenmeter-cli)")
    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[:3]} on {os.cpu_count()} cores; "
              f"{'nice -10' if NICE else 'default priority'}", flush=True)
    aiperf = install_aiperf()
    results = []
    with paced_server() as origin, tempfile.TemporaryDirectory() as tokenizer:
        for cores, label in [(CLIENT_CORE, "1"), (f"{CLIENT_CORE},{SERVER_CORE}", "2")]:
            print(f"tokenmeter on {label} core(s):", flush=True)
            results.append(("tokenmeter", label, tokenmeter_ceiling(origin, cores)))
        results.append(("vLLM 0.33 client", "1", peer("vLLM 0.33 client", origin,
                                                      lambda s: vllm_step(origin, s))))
        if aiperf is None:
            results.append(("AIPerf", "1", {"error": "did not install (see install_aiperf in "
                                                     "scripts/tools.sh)"}))
        else:
            word_tokenizer(tokenizer)
            version = subprocess.run([aiperf, "--version"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, timeout=60)
            name = f"AIPerf {version.stdout.strip().split()[-1] if version.stdout else ''}"
            results.append((name, "1", peer(name, origin,
                                            lambda s: aiperf_step(aiperf, tokenizer, origin, s))))
    with open("/proc/loadavg") as f:
        print(f"load average after: {f.read().split()[:3]}")
    print(f"\n{'client':<22} {'cores':>5} {'ceiling tok/s':>14} {'streams':>8}  stopped by")
    for client, cores, tokens, streams, why in (row(*r) for r in results):
        print(f"{client:<22} {cores:>5} {tokens:>14} {streams:>8}  {why}")
    if json_path():
        with open(json_path(), "w") as f:
            json.dump([{"client": c, "cores": k, **r} for c, k, r in results], f, indent=1)


if __name__ == "__main__":
    main()
