#!/usr/bin/env python3
"""The release binary: the README's main job, and the server's view on loopback.

Builds `target/release/tokenmeter` (unless a binary is given), then checks:

0. **The wheel** (when this script built the binary): maturin, installed from PyPI into a
   throwaway virtual environment, builds the Python wheel of `pyproject.toml` (`bindings =
   "bin"`) with the same target directory and profile, so it compiles nothing again; the wheel
   is installed (`--no-index`: that file, nothing from a registry) into a fresh virtual
   environment, and the main job below runs with the `tokenmeter` it put on that environment's
   PATH, as a pip user runs it.
1. **The main job**, exactly the README's first command (`tokenmeter bench`, the built-in
   simulated server, 200 requests at 10 req/s): it exits 0 within 60 s and prints its table
   (TTFT, TPOT, ITL and E2E rows, 200 successes), and its `--json` says the same.
2. **Client − server TTFT on loopback is between 0 and 2 ms**, against `tokenmeter serve
   --profile vllm --enable-per-request-metrics`: per request (the server's own TTFT from each
   final usage chunk, the mean of the differences), over the whole run and per 1-second slice
   (differences of exact means, Δ`_sum`/Δ`_count` of the scraped histograms, in every slice
   whose window holds the same requests on both sides). The debug end-to-end test
   (tests/bench_slices.rs) checks that these figures are exact; this one checks their size,
   which only an optimised build on an idle machine shows (debug code is 3-7 times slower on
   both sides of the difference).

Usage:
    python3 scripts/release_checks.py [path/to/tokenmeter]

Exit 0 when every check holds. Every wait is bounded; everything runs on 127.0.0.1.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib

from serve_child import Checks, serving

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOUND_MS = 2.0


def release_binary():
    """The binary to check, and whether this script built it (then the wheel is checked too)."""
    if len(sys.argv) > 1:
        return sys.argv[1], False
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "tokenmeter-cli"], cwd=ROOT,
                   check=True, timeout=1800)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "release", "tokenmeter"), True


def venv(path):
    """A fresh virtual environment at `path`; its bin folder."""
    done = subprocess.run([sys.executable, "-m", "venv", path], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"`{sys.executable} -m venv` failed{failure(done)}: on Debian, install python3-venv "
                 "(scripts/tools.sh does when it is missing)")
    return os.path.join(path, "bin")


def installed_wheel(tmp, check):
    """Builds the wheel and installs it into a fresh venv: the `tokenmeter` it installed, or None."""
    start = time.monotonic()
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as file:
        maturin = next(r for r in tomllib.load(file)["build-system"]["requires"] if r.startswith("maturin"))
    tools = venv(os.path.join(tmp, "maturin"))
    done = subprocess.run([os.path.join(tools, "pip"), "install", "--quiet", "--disable-pip-version-check",
                           maturin], capture_output=True, text=True, timeout=600)
    check(done.returncode == 0, f"{maturin} installs into a throwaway venv" + failure(done))
    if done.returncode != 0:
        return None
    installed = time.monotonic()
    wheels = os.path.join(tmp, "wheels")
    done = subprocess.run([os.path.join(tools, "maturin"), "build", "--release", "--out", wheels],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)
    built = time.monotonic()
    check(done.returncode == 0, "maturin builds the wheel" + failure(done))
    if done.returncode != 0:
        return None
    check("Compiling" not in done.stderr,
          f"the wheel reuses the release build, compiling nothing ({built - installed:.1f} s)"
          + ("" if "Compiling" not in done.stderr else f": {done.stderr[-600:]}"))
    found = glob.glob(os.path.join(wheels, "tokenmeter-*.whl"))
    check(len(found) == 1, f"one wheel, named tokenmeter-<version>-…: {[os.path.basename(w) for w in found]}")
    if len(found) != 1:
        return None
    env = venv(os.path.join(tmp, "venv"))
    done = subprocess.run([os.path.join(env, "pip"), "install", "--quiet", "--disable-pip-version-check",
                           "--no-index", found[0]], capture_output=True, text=True, timeout=300)
    check(done.returncode == 0, f"pip installs {os.path.basename(found[0])} into a fresh venv" + failure(done))
    binary = os.path.join(env, "tokenmeter")
    if done.returncode != 0 or not os.path.isfile(binary):
        check(False, f"the wheel puts tokenmeter on the venv's PATH ({binary})")
        return None
    version = os.path.basename(found[0]).split("-")[1]
    done, _ = run([binary, "--version"], 30)
    check(done.stdout.split() == ["tokenmeter", version],
          f"the installed tokenmeter is the wheel's version {version} ({done.stdout.strip()!r})")
    print(f"     wheel step: {time.monotonic() - start:.1f} s (maturin from PyPI {installed - start:.1f} s, "
          f"wheel {built - installed:.1f} s, venv and install {time.monotonic() - built:.1f} s)")
    return binary


def failure(done):
    """What a failed command said (its exit code and the end of its stderr), or nothing."""
    return "" if done.returncode == 0 else f" (exit {done.returncode}: {done.stderr[-400:]})"


def run(command, limit):
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=limit)
    return done, time.monotonic() - start


def main_job(binary, tmp, check):
    out = os.path.join(tmp, "main.json")
    print(f"     the main job: {binary} bench")
    done, took = run([binary, "bench", "--no-progress", "--json", out], 120)
    check(done.returncode == 0, "the main job exits 0" + failure(done))
    check(took < 60, f"the main job finishes within 60 s (took {took:.1f} s)")
    table = done.stdout
    for row in ("TTFT (ms)", "TPOT (ms)", "ITL (ms)", "E2E (ms)", "success 200"):
        check(row in table, f"the table shows {row!r}")
    if done.returncode == 0:
        summary = json.load(open(out))["summary"]
        check(summary["ttft"]["count"] == 200, f"--json: 200 TTFT samples ({summary['ttft']['count']})")


def server_view(binary, tmp, check):
    out = os.path.join(tmp, "view.json")
    with serving(["--profile", "vllm", "--enable-per-request-metrics"]) as addr:
        done, _ = run([
            binary, "bench", "--url", f"http://{addr}", "--model", "sim-llama-3-8b",
            "--no-progress", "-n", "150", "--warmup", "5", "--rate", "20", "--concurrency", "1",
            "--input-tokens", "8", "--output-tokens", "4", "--slice", "1s",
            "--server-metrics", "auto", "--json", out,
        ], 120)
    check(done.returncode == 0, "the bench against serve exits 0" + failure(done))
    if done.returncode != 0:
        return
    report = json.load(open(out))
    per_request = report["summary"]["client_minus_server_ttft_per_request"]
    mean_ms = per_request["mean"] * 1e3
    check(per_request["count"] == 150, f"every request carried the server's TTFT ({per_request['count']}/150)")
    check(0 <= mean_ms <= BOUND_MS, f"per request: mean client − server TTFT {mean_ms:.3f} ms in [0, {BOUND_MS}]")
    whole = report["slices"]["server_run"]["client_minus_server_ttft_mean"] * 1e3
    check(0 <= whole <= BOUND_MS, f"whole run: difference of exact means {whole:.3f} ms in [0, {BOUND_MS}]")
    compared = 0
    for piece in report["slices"]["slices"]:
        view = piece["server"]
        gap = view.get("client_minus_server_ttft_mean")
        means = view.get("ttft_mean") or {}
        if gap is None or means["client"]["count"] != means["server"]["count"]:
            continue  # no request, or a window's edge cut one between the two sides
        compared += 1
        check(0 <= gap * 1e3 <= BOUND_MS,
              f"slice {piece['index']}: {gap * 1e3:.3f} ms over {int(means['client']['count'])} requests")
    check(compared >= 4, f"at least 4 slices compared ({compared})")


def main():
    binary, built = release_binary()
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        from_wheel = installed_wheel(tmp, check) if built else None
        main_job(from_wheel or binary, tmp, check)
        sys.argv[1:] = [binary]  # serve_child runs the same binary
        server_view(binary, tmp, check)
    check.finish("every release check holds")


if __name__ == "__main__":
    main()
