#!/usr/bin/env python3
"""The official `openai` Python SDK against `tokenmeter serve`: does it answer as vLLM does?

Starts a `tokenmeter serve --served-model-name sim-8b sim` on loopback (port 0), then with the
SDK:

1. `models.list()` lists both names; `models.retrieve("sim")` is the model object; retrieving
   an unknown id raises `openai.NotFoundError`;
2. a chat completion naming an unknown model raises `openai.NotFoundError` whose message is
   vLLM's "The model `gpt-4o` does not exist.";
3. `temperature="hot"` (sent with `extra_body`, as the SDK's types would refuse it) and
   `top_p=1.5` raise `openai.BadRequestError` naming the field;
4. `stop`: the text ends before the stop sequence, `finish_reason == "stop"`, streaming and
   not, chat and completions;
5. `n=3`: three choices with index 0..2, `usage.completion_tokens` the sum; streamed, every
   index finishes;
6. `logprobs=True, top_logprobs=2` (chat) and `logprobs=2` (completions) come back parsed by
   the SDK's types, one entry per token;
7. an unknown path is a 404 (`openai.NotFoundError`) with OpenAI's error body;
8. the Responses API: `client.responses.create(stream=True)` yields the text deltas (their
   text is the answer) and a final `response.completed` whose `usage` matches the chat
   endpoint's for the same prompt; `client.responses.create()` returns the response object
   with its `output_text` and the same usage; an answer cut at `max_output_tokens` ends with
   `response.completed` whose `status` is `incomplete` (as vLLM's); a bad `max_output_tokens`,
   or one past the limits, raises `openai.BadRequestError` naming `max_output_tokens`.

Needs `pip install openai`. Usage:
    scripts/openai_sdk_compat.py [path/to/tokenmeter]
(default: target/debug/tokenmeter, or $CARGO_TARGET_DIR/debug/tokenmeter). Exit 0 when every
check holds. Every wait is bounded; everything runs on 127.0.0.1.
"""

from serve_child import Checks, openai_sdk, serving

MODEL = "sim-8b"


def main():
    openai = openai_sdk()
    check = Checks()

    def raises(kind, call):
        try:
            call()
        except kind as e:
            return e
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            return f"{type(e).__name__}: {e}"
        return None

    messages = [{"role": "user", "content": "Say something about the simulator."}]
    with serving(["--decode-table", "1=1ms", "--served-model-name", MODEL, "sim"]) as addr:
        client = openai.OpenAI(base_url=f"http://{addr}/v1", api_key="sk-unused",
                               max_retries=0, timeout=30)
        print(f"openai {openai.__version__} against tokenmeter serve on {addr}")

        # 1. models
        ids = [m.id for m in client.models.list().data]
        check(ids == [MODEL, "sim"], f"models.list() lists the served names ({ids})")
        model = client.models.retrieve("sim")
        check(model.id == "sim" and model.object == "model",
              f"models.retrieve('sim') is the model object ({model.id}, {model.object})")
        e = raises(openai.NotFoundError, lambda: client.models.retrieve("gpt-4o"))
        check(isinstance(e, openai.NotFoundError),
              f"models.retrieve('gpt-4o') raises NotFoundError ({e!r})")

        # 2. unknown model
        e = raises(openai.NotFoundError, lambda: client.chat.completions.create(
            model="gpt-4o", messages=messages, max_tokens=2))
        check(isinstance(e, openai.NotFoundError)
              and "The model `gpt-4o` does not exist." in str(e),
              f"an unknown model raises NotFoundError with vLLM's message ({e})")

        # 3. bad sampling values
        e = raises(openai.BadRequestError, lambda: client.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=2, extra_body={"temperature": "hot"}))
        check(isinstance(e, openai.BadRequestError) and "temperature" in str(e)
              and e.body.get("param") == "temperature",
              f"temperature='hot' raises BadRequestError naming it ({e})")
        e = raises(openai.BadRequestError, lambda: client.completions.create(
            model=MODEL, prompt="x", max_tokens=2, top_p=1.5))
        check(isinstance(e, openai.BadRequestError) and "top_p" in str(e),
              f"top_p=1.5 raises BadRequestError naming it ({e})")

        # 4. stop: most of the simulator's words hold an "e"
        r = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=60,
                                           stop=["e", "zzz"])
        text = r.choices[0].message.content
        check(r.choices[0].finish_reason == "stop" and "e" not in text
              and r.usage.completion_tokens < 60,
              f"chat stop: {text!r}, {r.choices[0].finish_reason}, "
              f"{r.usage.completion_tokens} tokens")
        stream = client.completions.create(model=MODEL, prompt="Once", max_tokens=60,
                                           stop="e", stream=True,
                                           stream_options={"include_usage": True})
        parts, finish, usage = [], None, None
        for chunk in stream:
            for choice in chunk.choices:
                parts.append(choice.text)
                finish = choice.finish_reason or finish
            usage = chunk.usage or usage
        text = "".join(parts)
        check(finish == "stop" and "e" not in text and usage.completion_tokens < 60,
              f"streamed completions stop: {text!r}, {finish}, {usage.completion_tokens} tokens")

        # 5. n
        r = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=4, n=3)
        check([c.index for c in r.choices] == [0, 1, 2] and r.usage.completion_tokens == 12,
              f"n=3: indexes {[c.index for c in r.choices]}, "
              f"{r.usage.completion_tokens} completion tokens")
        stream = client.chat.completions.create(model=MODEL, messages=messages,
                                                max_tokens=3, n=2, stream=True)
        finished = {}
        for chunk in stream:
            for choice in chunk.choices:
                if choice.finish_reason:
                    finished[choice.index] = choice.finish_reason
        check(finished == {0: "length", 1: "length"}, f"streamed n=2 finishes {finished}")

        # 6. logprobs
        r = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=3,
                                           logprobs=True, top_logprobs=2)
        content = r.choices[0].logprobs.content
        check(len(content) == 3 and all(len(t.top_logprobs) == 2 and t.logprob <= 0
                                        for t in content)
              and "".join(t.token for t in content) == r.choices[0].message.content,
              f"chat logprobs: {[(t.token, t.logprob) for t in content]}")
        r = client.completions.create(model=MODEL, prompt="x", max_tokens=3, logprobs=2)
        lp = r.choices[0].logprobs
        check(len(lp.tokens) == 3 and len(lp.token_logprobs) == 3
              and len(lp.top_logprobs) == 3 and lp.text_offset[0] == 0,
              f"completions logprobs: {lp.tokens} {lp.token_logprobs}")

        # 7. unknown path
        e = raises(openai.NotFoundError, lambda: client.get("/nope", cast_to=object))
        check(isinstance(e, openai.NotFoundError) and isinstance(e.body, dict),
              f"an unknown path raises NotFoundError with an error body ({e})")

        # 8. the Responses API
        chat = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=5)
        events = list(client.responses.create(model=MODEL, input=messages[0]["content"],
                                              max_output_tokens=5, stream=True))
        kinds = [e.type for e in events]
        deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
        final = events[-1]
        check(kinds[:2] == ["response.created", "response.in_progress"]
              and kinds[-1] == "response.completed"
              and [e.sequence_number for e in events] == list(range(len(events))),
              f"responses stream: {len(events)} events in order, ending {kinds[-1]}")
        usage = final.response.usage
        cut = final.response
        check(cut.status == "incomplete" and cut.incomplete_details is not None
              and cut.incomplete_details.reason == "max_output_tokens",
              f"responses stream cut at max_output_tokens: response.completed with status "
              f"{cut.status!r}, incomplete_details.reason "
              f"{cut.incomplete_details and cut.incomplete_details.reason!r} (as vLLM)")
        check(len(deltas) == 5 and "".join(deltas) == final.response.output_text,
              f"responses stream: {len(deltas)} text deltas, joined = output_text")
        check(usage.input_tokens == chat.usage.prompt_tokens
              and usage.output_tokens == chat.usage.completion_tokens == 5
              and usage.total_tokens == chat.usage.total_tokens,
              f"responses usage {usage.input_tokens}+{usage.output_tokens} = chat's "
              f"{chat.usage.prompt_tokens}+{chat.usage.completion_tokens}")
        r = client.responses.create(model=MODEL, input=messages, max_output_tokens=4)
        check(r.object == "response" and len(r.output_text.split()) == 4
              and r.usage.output_tokens == 4
              and r.usage.input_tokens == chat.usage.prompt_tokens,
              f"responses.create(): {r.output_text!r}, usage {r.usage.input_tokens}"
              f"+{r.usage.output_tokens}")
        e = raises(openai.BadRequestError,
                   lambda: client.responses.create(model=MODEL, input="x", max_output_tokens=0))
        check(isinstance(e, openai.BadRequestError) and "max_output_tokens" in str(e),
              f"max_output_tokens=0 raises BadRequestError naming it ({e})")
        e = raises(openai.BadRequestError,
                   lambda: client.responses.create(model=MODEL, input="x",
                                                   max_output_tokens=10**9, stream=True))
        check(isinstance(e, openai.BadRequestError) and "`max_output_tokens`" in str(e)
              and "max_tokens" not in str(e) and "messages" not in str(e),
              f"a Responses request past the limits names max_output_tokens, not max_tokens ({e})")
    check.finish("every check holds")


if __name__ == "__main__":
    main()
