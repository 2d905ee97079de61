#!/usr/bin/env python3
"""`tokenmeter serve --orca-format json`'s load reports, read by xDS's own `OrcaLoadReport`.

Envoy reads a `JSON ` report by loading the JSON into the protobuf message
`xds.data.orca.v3.OrcaLoadReport`. This check does the same with the message PyPI's
`xds-protos` package generates from that proto, and protobuf's JSON parser (strict: an unknown
field or a value of the wrong type is an error). Over a few streams and whole answers it checks
that every report parses, that its named metrics are serve's three (`kv_cache_usage_perc` from 0
to 1, `num_requests_waiting`, `num_requests_running` whole numbers, a stream's own request
running), and that a request asking for `TEXT` gets the text form instead.

Needs `pip install protobuf` and `pip install --no-deps xds-protos` (its gRPC stubs, and so
grpcio, are not used). Usage:
    scripts/orca_xds_json.py [path/to/tokenmeter]
Exit 0 when every check holds. Everything runs on 127.0.0.1; every wait is bounded.
"""

import json
import sys
import urllib.request

from serve_child import Checks, serving


def report_type():
    try:
        from google.protobuf import json_format
        from xds.data.orca.v3 import orca_load_report_pb2
    except ImportError:
        sys.exit("needs protobuf and xds-protos: pip install protobuf; pip install --no-deps xds-protos")
    return json_format, orca_load_report_pb2.OrcaLoadReport


def post(addr, body, headers):
    request = urllib.request.Request(
        f"http://{addr}/v1/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        header = response.headers.get("endpoint-load-metrics")
        response.read()
        return header


def main():
    json_format, OrcaLoadReport = report_type()
    checks = Checks()
    with serving(["--orca-format", "json", "--max-batch", "4"]) as addr:
        for at, stream in enumerate([False, True, False, True, True]):
            body = {"prompt": "Once upon a time", "max_tokens": 3 + at, "stream": stream}
            header = post(addr, body, {})
            ok = header is not None and header.startswith("JSON ")
            named = {}
            if ok:
                try:
                    report = json_format.Parse(header[len("JSON "):], OrcaLoadReport())
                    named = dict(report.named_metrics)
                except json_format.ParseError as e:
                    ok = False
                    named = {"error": str(e)}
            ok = ok and set(named) == {
                "kv_cache_usage_perc",
                "num_requests_waiting",
                "num_requests_running",
            }
            ok = ok and 0.0 <= named["kv_cache_usage_perc"] <= 1.0
            ok = ok and all(named[k] == int(named[k]) >= 0 for k in named if k.startswith("num_"))
            # A stream's head is written at its first token (its request runs); a whole
            # answer's after its last (the engine has let it go).
            ok = ok and named["num_requests_running"] >= (1 if stream else 0)
            kind = "stream" if stream else "whole answer"
            checks(ok, f"{kind} {at}: xds OrcaLoadReport reads {named}")
        text = post(addr, {"prompt": "hi", "max_tokens": 2}, {"endpoint-load-metrics-format": "TEXT"})
        checks(
            text is not None and text.startswith("TEXT named_metrics.kv_cache_usage_perc="),
            f"a request asking for TEXT gets {text!r}",
        )
    checks.finish("xDS's OrcaLoadReport reads every JSON load report serve writes")


if __name__ == "__main__":
    main()
