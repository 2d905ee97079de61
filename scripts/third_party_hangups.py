#!/usr/bin/env python3
"""Third-party clients that hang up against `tokenmeter serve`: does /metrics count what they got?

Starts a `tokenmeter serve` on loopback (port 0), then:

1. the official `openai` Python SDK streams a chat completion of 2,000 tokens, reads K chunks
   that carry content and closes the stream (the SDK closes its HTTP response);
2. `curl --max-time` streams the same and is cut by its own timer;
3. the SDK streams a short completion to its end.

After each, it waits (polling /metrics with a deadline, no fixed sleep) until nothing is in
flight and checks: the request is counted once, `cancelled` for the hang-ups and `success` for
the whole stream; the server's output tokens for a hang-up are at least what the client read
and at most that plus a bound for frames in flight (hyper's buffers and both socket buffers,
as in tests/serve_hangups.rs); requests ended = requests sent; every histogram's `_count`
equals its `+Inf` bucket.

Needs `pip install openai` and `curl`. Usage:
    scripts/third_party_hangups.py [path/to/tokenmeter]
(default: target/debug/tokenmeter, or $CARGO_TARGET_DIR/debug/tokenmeter). Exit 0 when every
check holds. Every wait is bounded; everything runs on 127.0.0.1.
"""

import re
import subprocess
import sys
import time

from serve_child import Checks, openai_sdk, scrape, serving, total

K = 25
# Frames the server may count past what a client read before it sees the hang-up: hyper's 16
# buffered frames plus the socket buffers (--send-buffer 4096 here, and the client's receive
# buffer, which we do not control from the SDK: Linux lets it grow to a few MiB, about 150
# bytes a frame).
IN_FLIGHT = 16 + (2 * 4096 + 6 * 1024 * 1024) // 150


def histograms_consistent(text):
    counts, infs = {}, {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, _, number = line.rpartition(" ")
        if "_count" in series:
            counts[series.replace("_count", "", 1)] = float(number)
        elif "_bucket" in series and 'le="+Inf"' in series:
            key = re.sub(r',?le="\+Inf"', "", series.replace("_bucket", "", 1)).replace("{}", "")
            infs[key] = float(number)
    bad = [k for k, v in counts.items() if k in infs and infs[k] != v]
    return not bad, bad


def settle(addr, sent):
    deadline = time.monotonic() + 20
    while True:
        text = scrape(addr)
        flying = (total(text, "tokenmeter_requests_running", role="server")
                  + total(text, "tokenmeter_requests_waiting", role="server"))
        ended = total(text, "tokenmeter_requests_total", role="server")
        if flying == 0 and ended == sent:
            return text
        if time.monotonic() > deadline:
            sys.exit(f"after 20 s: {flying} in flight, {ended} ended of {sent} sent")
        time.sleep(0.02)


def main():
    openai = openai_sdk()
    check = Checks()

    with serving(["--send-buffer", "4096", "--decode-table", "1=5ms",
                  "--max-batch", "64", "--served-model-name", "m"]) as addr:
        client = openai.OpenAI(base_url=f"http://{addr}/v1", api_key="sk-unused",
                               timeout=30, max_retries=0)
        messages = [{"role": "user", "content": "hello"}]

        # 1. The SDK reads K content chunks and closes the stream.
        before = total(scrape(addr), "tokenmeter_output_tokens_total", role="server")
        stream = client.chat.completions.create(model="m", messages=messages,
                                                max_tokens=2000, stream=True)
        read = 0
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                read += 1
                if read == K:
                    break
        stream.close()
        text = settle(addr, 1)
        counted = total(text, "tokenmeter_output_tokens_total", role="server") - before
        cancelled = total(text, "tokenmeter_requests_total", role="server", outcome="cancelled")
        print(f"openai SDK {openai.__version__}: read {read} tokens and closed; "
              f"server counted {counted:.0f} tokens, cancelled {cancelled:.0f}")
        check(cancelled == 1, "the SDK hang-up is one cancelled request")
        check(read <= counted <= read + IN_FLIGHT,
              f"its tokens: {read} <= {counted:.0f} <= {read} + {IN_FLIGHT}")

        # 2. curl cut by --max-time 0.5 s on a 2,000-token stream at 5 ms a token.
        before = total(text, "tokenmeter_output_tokens_total", role="server")
        body = '{"model":"m","messages":[{"role":"user","content":"hi"}],' \
               '"max_tokens":2000,"stream":true}'
        run = subprocess.run(["curl", "-sN", "--max-time", "0.5", "-H",
                              "Content-Type: application/json", "-d", body,
                              f"http://{addr}/v1/chat/completions"],
                             capture_output=True, timeout=30)
        got = run.stdout.decode(errors="replace").count('"content":"') - 0
        text = settle(addr, 2)
        counted = total(text, "tokenmeter_output_tokens_total", role="server") - before
        cancelled = total(text, "tokenmeter_requests_total", role="server", outcome="cancelled")
        print(f"curl --max-time 0.5: exit {run.returncode}, read {got} content frames; "
              f"server counted {counted:.0f} tokens, cancelled {cancelled:.0f} in all")
        check(run.returncode == 28, "curl ended by its own timer (exit 28)")
        check(cancelled == 2, "the curl hang-up is one more cancelled request")
        check(got - 1 <= counted <= got + IN_FLIGHT,
              f"its tokens: {got} (role frame included) ~ {counted:.0f}")

        # 3. The SDK reads a whole stream.
        stream = client.chat.completions.create(model="m", messages=messages,
                                                max_tokens=20, stream=True,
                                                stream_options={"include_usage": True})
        usage = None
        for chunk in stream:
            if chunk.usage:
                usage = chunk.usage.completion_tokens
        text = settle(addr, 3)
        success = total(text, "tokenmeter_requests_total", role="server", outcome="success")
        print(f"openai SDK whole stream: usage {usage}, server successes {success:.0f}")
        check(usage == 20 and success == 1, "a whole stream is one success of 20 tokens")
        ok, bad = histograms_consistent(text)
        check(ok, f"every histogram _count equals its +Inf bucket {bad}")
    check.finish("all checks hold")


if __name__ == "__main__":
    main()
