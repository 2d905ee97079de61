#!/usr/bin/env python3
"""vLLM 0.33's own benchmark client against `tokenmeter serve`: n tokens are n - 1 gaps.

vLLM's `vllm bench serve` times every streamed chunk that has `choices`: the first is the TTFT,
each later one adds an inter-token gap (`RequestFuncOutput.itl`). A server that sends the
finish reason in a chunk of its own (`"text": ""`) makes it record n gaps for an n-token
answer, one of them the time between the last token and that chunk. vLLM sends the finish
reason on the last token's chunk; so must `serve`.

The client is vLLM's real code: `vllm/benchmarks/lib/endpoint_request_func.py` taken out of the
vllm 0.33.0 wheel on PyPI without downloading the wheel (336 MB): HTTP range requests read the
zip's directory, the file and the wheel's RECORD (about 1.3 MB in all, once; cached under
~/.cache/tokenmeter-vllm), and the file is checked against the sha256 the RECORD lists. Its
imports that the request functions do not use are stubbed when missing (`regex`, `tqdm`: the
progress bar and a pattern module of other functions); `aiohttp`, which they use, is needed
(`pip install aiohttp`).

Checks, for completions (`async_request_openai_completions`) and chat
(`async_request_openai_chat_completions`), for n in 1, 2, 5, 16 tokens: success, `itl` has
n - 1 gaps, `output_tokens` is n, and the server's `metrics` object (serve runs with
`--enable-per-request-metrics`) is read by vLLM's client.

Usage:
    scripts/vllm_client_gaps.py [path/to/tokenmeter]
(default: target/debug/tokenmeter, or $CARGO_TARGET_DIR/debug/tokenmeter). Exit 0 when every
check holds. Everything runs on 127.0.0.1; every wait is bounded.
"""

import asyncio
import base64
import hashlib
import importlib.util
import io
import os
import sys
import time
import types
import urllib.request
import zipfile

from serve_child import Checks, serving

VERSION = "0.33.0"
# The wheel's address on PyPI's file host (immutable: a file's path is its hash).
WHEEL = (
    "https://files.pythonhosted.org/packages/8b/a8/"
    "92e278093df40fde4c4bfd6572704bb8f398d6a2280d8c82cb5efaf12047/"
    f"vllm-{VERSION}-cp38-abi3-manylinux_2_28_x86_64.whl"
)
MEMBER = "vllm/benchmarks/lib/endpoint_request_func.py"
RECORD = f"vllm-{VERSION}.dist-info/RECORD"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "tokenmeter-vllm", VERSION)


class RangeFile(io.RawIOBase):
    """A remote file read with HTTP range requests, in blocks, for `zipfile`."""

    BLOCK = 256 * 1024

    def __init__(self, url):
        super().__init__()
        self.url, self.pos, self.blocks, self.fetched = url, 0, {}, 0
        head = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(head, timeout=30) as r:
            self.size = int(r.headers["Content-Length"])

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=0):
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def block(self, index):
        if index not in self.blocks:
            start = index * self.BLOCK
            end = min(self.size, start + self.BLOCK) - 1
            request = urllib.request.Request(self.url, headers={"Range": f"bytes={start}-{end}"})
            with urllib.request.urlopen(request, timeout=60) as r:
                if r.status != 206:
                    sys.exit(f"the file host ignored a range request ({r.status})")
                self.blocks[index] = r.read()
            self.fetched += len(self.blocks[index])
        return self.blocks[index]

    def read(self, n=-1):
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        out = bytearray()
        while self.pos < end:
            data = self.block(self.pos // self.BLOCK)
            start = self.pos % self.BLOCK
            piece = data[start : start + (end - self.pos)]
            out += piece
            self.pos += len(piece)
        return bytes(out)

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def vllm_source():
    """The path of vLLM's request functions, fetched once and checked against the RECORD."""
    path = os.path.join(CACHE, "endpoint_request_func.py")
    if os.path.exists(path):
        return path
    started = time.monotonic()
    try:
        remote = RangeFile(WHEEL)
        with zipfile.ZipFile(remote) as wheel:
            source = wheel.read(MEMBER)
            record = wheel.read(RECORD).decode()
    except (OSError, zipfile.BadZipFile, KeyError) as e:
        sys.exit(
            f"cannot read {MEMBER} out of the vllm {VERSION} wheel on PyPI ({e}): the check "
            f"needs files.pythonhosted.org once, then reads its copy under {CACHE}"
        )
    listed = next(line for line in record.splitlines() if line.startswith(MEMBER + ","))
    algorithm, _, digest = listed.split(",")[1].partition("=")
    actual = base64.urlsafe_b64encode(hashlib.new(algorithm, source).digest()).rstrip(b"=")
    if actual.decode() != digest:
        sys.exit(f"{MEMBER}: its {algorithm} is not the one the wheel's RECORD lists")
    os.makedirs(CACHE, exist_ok=True)
    with open(path, "wb") as f:
        f.write(source)
    print(
        f"fetched {MEMBER} from the vllm {VERSION} wheel ({remote.size} bytes): "
        f"{remote.fetched} bytes read in {time.monotonic() - started:.1f} s"
    )
    return path


def load_vllm_client():
    """vLLM's module, with the imports its request functions do not use stubbed if missing."""
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        sys.exit("needs aiohttp: pip install aiohttp")
    try:
        import regex  # noqa: F401
    except ImportError:
        import re

        sys.modules["regex"] = re
    try:
        import tqdm.asyncio  # noqa: F401
    except ImportError:
        stub = types.ModuleType("tqdm.asyncio")
        stub.tqdm = object
        sys.modules["tqdm"] = types.ModuleType("tqdm")
        sys.modules["tqdm.asyncio"] = stub
    spec = importlib.util.spec_from_file_location("vllm_endpoint_request_func", vllm_source())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def run(vllm, addr, checks, model="sim-llama-3-8b"):
    """Each route at each n through vLLM's request functions against the server at `addr`."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for route, function in [
            ("completions", vllm.async_request_openai_completions),
            ("chat/completions", vllm.async_request_openai_chat_completions),
        ]:
            for n in [1, 2, 5, 16]:
                request = vllm.RequestFuncInput(
                    prompt="Once upon a time",
                    api_url=f"http://{addr}/v1/{route}",
                    prompt_len=4,
                    output_len=n,
                    model=model,
                )
                out = await function(request, session)
                checks(
                    out.success
                    and len(out.itl) == n - 1
                    and out.output_tokens == n
                    and out.server_ttft is not None,
                    f"{route}, {n} tokens: vLLM's client records {len(out.itl)} gaps "
                    f"(n - 1 = {n - 1}), {out.output_tokens} output tokens, server TTFT "
                    f"{out.server_ttft}{' ' + out.error[-300:] if out.error else ''}",
                )


def main():
    vllm = load_vllm_client()
    checks = Checks()
    started = time.monotonic()
    with serving(["--enable-per-request-metrics"]) as addr:
        asyncio.run(asyncio.wait_for(run(vllm, addr, checks), 120))
    print(f"vLLM {VERSION}'s client against serve: {time.monotonic() - started:.1f} s")
    checks.finish("vLLM's client counts n - 1 gaps for n tokens, in completions and chat")


if __name__ == "__main__":
    main()
