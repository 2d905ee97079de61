"""`tokenmeter serve` as a child process on loopback, for the scripts that check it with
third-party clients (third_party_hangups.py, openai_sdk_compat.py, third_party_router.py);
`stop` ends any child process (also third_party_server.py's llama.cpp server and
third_party_router.py's router); `free_port` finds a port for programs that cannot listen on
port 0 and say which port they got; `scrape` and `total` read a Prometheus text exposition;
`Checks` prints and counts their checks.

    with serving(["--served-model-name", "m"]) as addr:   # "127.0.0.1:PORT"
        ...

The binary is the script's first argument, else target/debug/tokenmeter (or
$CARGO_TARGET_DIR/debug/tokenmeter). The server listens on port 0; its address is read from
what it prints, within 30 s. On leaving the block the server is asked to stop (SIGTERM) and
killed if it has not stopped within 10 s. Every wait is bounded.
"""

import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def binary():
    """The tokenmeter binary to run."""
    if len(sys.argv) > 1:
        return sys.argv[1]
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    return os.path.join(target, "debug", "tokenmeter")


@contextlib.contextmanager
def serving(args):
    """Runs `tokenmeter serve --listen 127.0.0.1:0 ARGS...`; yields its address."""
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        command = [binary(), "serve", "--listen", "127.0.0.1:0", *args]
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
        try:
            yield wait_for_address(child, log.name)
        finally:
            stop(child, 10)


def stop(child, grace):
    """Asks `child` to stop (SIGTERM); kills it if it has not within `grace` seconds."""
    child.terminate()
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait(timeout=grace)


def wait_for_address(child, log_path):
    """The address the server prints, within 30 s; exits the script if it does not come."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        m = re.search(r"on http://(127\.0\.0\.1:\d+)", text)
        if m:
            return m.group(1)
        if child.poll() is not None:
            sys.exit(f"tokenmeter serve exited ({child.returncode}):\n{text}")
        time.sleep(0.05)
    child.kill()
    sys.exit("tokenmeter serve printed no address within 30 s")


def free_port():
    """A port on 127.0.0.1 that was free a moment ago (for programs that cannot take port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(addr, path="/metrics"):
    """The text of `http://ADDR/metrics` (a Prometheus exposition), within 10 s."""
    with urllib.request.urlopen(f"http://{addr}{path}", timeout=10) as r:
        return r.read().decode()


def total(text, name, **labels):
    """The sum of every sample of metric `name` in `text` whose labels include `labels`."""
    value = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        series, _, number = line.rpartition(" ")
        if all(f'{k}="{v}"' in series for k, v in labels.items()):
            value += float(number)
    return value


def openai_sdk():
    """The official OpenAI Python SDK, or exit naming how to install it."""
    try:
        import openai
    except ImportError:
        sys.exit("needs the openai SDK: pip install openai")
    return openai


class Checks:
    """Checks that print `ok` or `FAIL` as they go; `finish` exits non-zero if one failed."""

    def __init__(self):
        self.failures = []

    def __call__(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)

    def finish(self, success):
        if self.failures:
            sys.exit(f"{len(self.failures)} check(s) failed")
        print(success)
