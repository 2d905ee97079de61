#!/usr/bin/env python3
"""`tokenmeter bench` against a real third-party OpenAI-compatible server: the llama.cpp server
of the `llama-cpp-python` package, with a tiny model this script generates.

    python3 scripts/third_party_server.py

What it does:
  1. Installs `llama-cpp-python[server]` and `gguf` into a venv under ~/.cache (or
     $TOKENMETER_THIRD_PARTY_VENV) when they are missing, through scripts/tools.sh.
     llama-cpp-python compiles llama.cpp from source: about 15 to 30 minutes on two cores,
     once. Nothing else is downloaded.
  2. Generates a tiny llama-architecture GGUF model in code (random weights, 2 layers, 64-wide,
     a 326-token SentencePiece vocabulary with byte fallback), so every text tokenizes.
  3. Starts `python -m llama_cpp.server` on a free loopback port and runs the release
     `tokenmeter bench` against it twice, over ten fixed prompts at temperature 0 (greedy, so a
     prompt always gets the same answer):
       - streaming: llama-cpp-python ignores `stream_options.include_usage`, so its stream has
         no `usage`: the bench must count every output from chunks, say so, and warn that the
         counts are estimates;
       - `--no-stream`: the JSON answer has `usage`: every count must come from it.
  4. Asks the server for the same ten completions directly (non-streaming) and checks that the
     `--no-stream` run's per-request output tokens equal the server's `usage.completion_tokens`,
     that every request succeeded, that the finish reasons add up, and that a `length` finish
     means `max_tokens` tokens. The streaming chunk counts must equal the same `usage` (the
     server sends a byte token of an incomplete UTF-8 character as an empty `content` without a
     role, a token as vLLM 0.33 counts it).
  5. Runs 20 requests 4 at a time, streaming: a stream the server ends with a role frame and
     `[DONE]` and no token must be an `empty_response` error, never a success.
Exits non-zero on any mismatch. Builds the release binary first (`cargo build --release`).
Once installed and built it takes about 20 s; the install makes it too slow for the test command
on a fresh machine (scripts/test.sh does not run it): run it on its own.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from serve_child import free_port, stop

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("TOKENMETER_THIRD_PARTY_VENV",
                           Path.home() / ".cache" / "tokenmeter-third-party" / "venv"))
PY = VENV / "bin" / "python"
MODEL_NAME = "tokenmeter-tiny"
MAX_TOKENS = 24
PROMPTS = [
    "hello world", "the token meter is fast", "a slow token", "tokens and meters",
    "is the world fast", "hello meter", "a token of the world", "fast and slow",
    "the meter of a token", "world hello token",
]

failures = []


def check(ok, what):
    print(("  ok    " if ok else "  FAIL  ") + what)
    if not ok:
        failures.append(what)


def install():
    """scripts/tools.sh installs it when missing (the one place tools are installed)."""
    if PY.exists() and subprocess.run(
            [str(PY), "-c", "import llama_cpp.server, gguf, numpy"],
            capture_output=True).returncode == 0:
        return
    subprocess.run(["bash", "-c", "source scripts/tools.sh && install_llama_cpp_server"],
                   cwd=ROOT, check=True, env=dict(os.environ, TOKENMETER_THIRD_PARTY_VENV=str(VENV)))


MAKE_MODEL = r'''
import sys, numpy as np, gguf
rng = np.random.default_rng(7)
# Vocabulary: the specials, the 256 byte tokens (byte fallback: any text tokenizes), some pieces.
words = ["▁", "▁the", "▁a", "▁token", "▁meter", "▁hello", "▁world", "▁is", "▁fast", "▁slow",
         "▁and", "▁of"] + ["▁" + c for c in "bcdefghijklmnopqrstuvwxyz"]
words += list("abcdefghijklmnopqrstuvwxyz.,!?")
assert len(set(words)) == len(words)
tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + words
types = ([gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
         + [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL] * len(words))
scores = [0.0] * 259 + [-float(i) for i in range(len(words))]
n_vocab, n_embd, n_head, n_layer, n_ff = len(tokens), 64, 4, 2, 128
w = gguf.GGUFWriter(sys.argv[1], "llama")
w.add_name("tokenmeter-tiny-random")
w.add_context_length(512); w.add_embedding_length(n_embd); w.add_block_count(n_layer)
w.add_feed_forward_length(n_ff); w.add_head_count(n_head); w.add_head_count_kv(n_head)
w.add_rope_dimension_count(n_embd // n_head); w.add_layer_norm_rms_eps(1e-5)
w.add_vocab_size(n_vocab); w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_tokenizer_model("llama"); w.add_token_list(tokens); w.add_token_scores(scores)
w.add_token_types(types); w.add_bos_token_id(1); w.add_eos_token_id(2); w.add_unk_token_id(0)
w.add_add_bos_token(True); w.add_add_eos_token(False)
w.add_chat_template(
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:")
def t(*shape, scale=0.02):
    return (rng.standard_normal(shape) * scale).astype(np.float32)
ones = lambda: np.ones(n_embd, np.float32)
w.add_tensor("token_embd.weight", t(n_vocab, n_embd, scale=1.0))
w.add_tensor("output_norm.weight", ones())
w.add_tensor("output.weight", t(n_vocab, n_embd, scale=1.0))
for i in range(n_layer):
    p = f"blk.{i}."
    w.add_tensor(p + "attn_norm.weight", ones())
    for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
        w.add_tensor(p + name + ".weight", t(n_embd, n_embd))
    w.add_tensor(p + "ffn_norm.weight", ones())
    w.add_tensor(p + "ffn_gate.weight", t(n_ff, n_embd))
    w.add_tensor(p + "ffn_up.weight", t(n_ff, n_embd))
    w.add_tensor(p + "ffn_down.weight", t(n_embd, n_ff))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
'''


def post(base, body):
    req = urllib.request.Request(base + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def wait_ready(base, server, deadline):
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"the llama.cpp server exited with {server.returncode} before it was ready")
        try:
            with urllib.request.urlopen(base + "/models", timeout=2) as r:
                return json.load(r)
        except OSError:
            time.sleep(0.2)  # polling a server that is starting, bounded by the deadline
    sys.exit("the llama.cpp server was not ready within 120 s")


def bench(binary, base, work, name, extra, concurrency=1, n=len(PROMPTS), codes=(0,)):
    json_path, trace_path = work / f"{name}.json", work / f"{name}.trace.jsonl"
    cmd = [str(binary), "bench", "--url", base, "--model", MODEL_NAME, "-n", str(n),
           "--concurrency", str(concurrency), "--dataset", str(work / "prompts.jsonl"),
           "--extra-body", '{"temperature": 0}', "--no-progress",
           "--json", str(json_path), "--trace", str(trace_path)] + extra
    print("==> " + " ".join(cmd))
    started = time.monotonic()
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(run.stdout.rstrip())
    print(run.stderr.rstrip())
    print(f"    ({time.monotonic() - started:.1f} s, exit code {run.returncode})")
    check(run.returncode in codes, f"{name}: the bench exits with {codes}")
    result = json.loads(json_path.read_text())
    traces = [json.loads(line) for line in trace_path.read_text().splitlines() if line.strip()]
    traces.sort(key=lambda t: t["id"])
    return result, traces, run.stderr


def main():
    started = time.monotonic()
    install()
    versions = subprocess.run(
        [str(PY), "-c", "import importlib.metadata as m; print('llama-cpp-python', "
         "m.version('llama-cpp-python'), '· gguf', m.version('gguf'))"],
        capture_output=True, text=True, check=True).stdout.strip()
    print(f"==> {versions}")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "tokenmeter-cli"], cwd=ROOT,
                   check=True)
    binary = ROOT / "target" / "release" / "tokenmeter"
    work = Path(tempfile.mkdtemp(prefix="tokenmeter-third-party-"))
    model = work / "tiny.gguf"
    subprocess.run([str(PY), "-c", MAKE_MODEL, str(model)], check=True)
    print(f"==> generated {model} ({model.stat().st_size} bytes)")
    (work / "prompts.jsonl").write_text("".join(
        json.dumps({"prompt": p, "output_tokens": MAX_TOKENS}) + "\n" for p in PROMPTS))
    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    log = open(work / "server.log", "w")
    server = subprocess.Popen(
        [str(PY), "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_NAME,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "512", "--seed", "7"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(base, server, time.monotonic() + 120)
        # The server's own answers, asked directly: the usage the bench must agree with.
        usage = []
        for prompt in PROMPTS:
            answer = post(base, {"model": MODEL_NAME, "max_tokens": MAX_TOKENS, "temperature": 0,
                                 "messages": [{"role": "user", "content": prompt}]})
            usage.append((answer["usage"]["completion_tokens"],
                          answer["choices"][0]["finish_reason"]))
        print(f"==> the server's usage.completion_tokens, asked directly: {[u for u, _ in usage]}")

        result, traces, _ = bench(binary, base, work, "no-stream", ["--no-stream"])
        n = len(PROMPTS)
        summary, counts = result["summary"], result["counts"]
        check(summary["successful"] == n and len(traces) == n,
              f"no-stream: {summary['successful']} of {n} requests succeeded")
        check(counts["output_from_usage"] == n,
              f"no-stream: output counts from usage: {counts['output_from_usage']} of {n}")
        got = [t["output_tokens"] for t in traces]
        check(got == [u for u, _ in usage],
              f"no-stream: output tokens {got} equal the server's usage")
        check(summary["total_output_tokens"] == sum(u for u, _ in usage),
              f"no-stream: total output tokens {summary['total_output_tokens']}")
        reasons = counts["finish_reasons"]
        check(sum(reasons.values()) == n, f"no-stream: finish reasons {reasons} count every request")
        check([t["finish_reason"] for t in traces] == [r for _, r in usage],
              "no-stream: each request's finish reason is the server's")
        check(all(t["output_tokens"] == MAX_TOKENS for t in traces
                  if t["finish_reason"] == "length"),
              "no-stream: a `length` finish means max_tokens tokens")

        result, traces, stderr = bench(binary, base, work, "stream", [])
        summary, counts = result["summary"], result["counts"]
        check(summary["successful"] == n, f"stream: {summary['successful']} of {n} succeeded")
        check(counts["output_from_chunks"] == n,
              f"stream: no usage in the stream, so all {n} counts come from chunks")
        check("estimate" in stderr and "usage" in stderr,
              "stream: the bench warns that its counts are estimates")
        reasons = counts["finish_reasons"]
        check(sum(reasons.values()) == n, f"stream: finish reasons {reasons} count every request")
        check([t["finish_reason"] for t in traces] == [r for _, r in usage],
              "stream: each request's finish reason is the server's")
        estimated = [t["output_tokens"] for t in traces]
        off = [e - u for e, (u, _) in zip(estimated, usage)]
        print(f"==> stream: chunk-count estimates {estimated}; minus usage {off} "
              f"(total {sum(estimated)} vs {sum(u for u, _ in usage)})")
        # The server sends a byte token of an incomplete UTF-8 character as an empty `content`
        # without a role: a token-bearing chunk, as vLLM 0.33 counts it.
        check(estimated == [u for u, _ in usage],
              "stream: the chunk counts equal the server's usage (empty contents count)")

        # Several at once: the server may end a stream with a role frame and [DONE] and no
        # token. That is not a success (vLLM's client fails it too): an empty_response error.
        result, traces, _ = bench(binary, base, work, "concurrent", [], concurrency=4, n=20,
                                  codes=(0, 3))
        summary = result["summary"]
        empty = [t for t in traces if not t["chunks"]]
        check(all(t["outcome"] == "error" and t["error_class"] == "empty_response"
                  for t in empty),
              f"concurrent: the {len(empty)} streams without a token are empty_response errors")
        check(all(t["chunks"] for t in traces if t["outcome"] == "success"),
              "concurrent: every success carried a token")
        successes = sum(1 for t in traces if t["outcome"] == "success")
        check(summary["successful"] == successes and summary["good_requests"] <= successes,
              f"concurrent: outcomes {summary['outcomes']}, good {summary['good_requests']}")
        print(f"==> concurrent: {len(empty)} of {len(traces)} streams carried no token; "
              f"outcomes {summary['outcomes']}")
    finally:
        stop(server, 20)
        log.close()
    print(f"==> {versions}; {time.monotonic() - started:.0f} s in all")
    if failures:
        print(f"FAILED: {len(failures)} check(s): " + "; ".join(failures), file=sys.stderr)
        print(f"(server log: {work / 'server.log'})", file=sys.stderr)
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
