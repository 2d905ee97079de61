#!/usr/bin/env bash
# Memory of a long `tokenmeter bench` run: the bench's max RSS against the tokens it streamed.
#
# Starts the built-in simulator (`tokenmeter serve`) as its own process, with fast decode
# steps so that a few million tokens stream in about a minute, and runs the release
# `tokenmeter bench` against it at two sizes (with --json and --trace, as a soak would). The
# bench's max RSS comes from `/usr/bin/time -v`; the slope between the two sizes,
# (RSS2 − RSS1) / (tokens2 − tokens1), is what the bench keeps per streamed token (the goal is
# at most 8 bytes). The simulator runs in its own process, so its memory is not counted.
#
#   bash scripts/memory_bench.sh [BINARY]     # default: target/release/tokenmeter (built)
#
# SIZES (requests at each size, default "1000 2000"), OUTPUT (tokens per request, default
# 1000), CONCURRENCY (default 64) and RUNS (runs per size, default 1) can be set in the
# environment.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-target/release/tokenmeter}
if [[ $# -eq 0 ]]; then
    cargo build --release -p tokenmeter-cli --quiet
fi
read -r -a sizes <<<"${SIZES:-1000 2000}"
output=${OUTPUT:-1000}
concurrency=${CONCURRENCY:-64}
runs=${RUNS:-1}
[[ -x /usr/bin/time ]] || { echo "memory_bench: /usr/bin/time is needed (GNU time)" >&2; exit 2; }
command -v jq >/dev/null || { echo "memory_bench: jq is needed" >&2; exit 2; }

work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
"$bin" serve --listen "127.0.0.1:$port" --model tokenmeter-sim --max-batch "$concurrency" \
    --decode-table "1=100us,$concurrency=200us" --prefill-base 100us --prefill-per-token 1us \
    --default-max-tokens "$output" >"$work/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.1
done

# One run of `requests` requests: prints "tokens max_rss_kib".
one() {
    local requests=$1
    /usr/bin/time -v -o "$work/time" "$bin" bench --url "http://127.0.0.1:$port" \
        --model tokenmeter-sim --no-preflight --no-progress --no-server-metrics \
        --concurrency "$concurrency" -n "$requests" \
        --input-tokens 16 --output-tokens "$output" --ignore-eos \
        --json "$work/summary.json" --trace "$work/trace.jsonl" >/dev/null
    local tokens rss
    tokens=$(jq '.summary.total_output_tokens' "$work/summary.json")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time")
    rm -f "$work/trace.jsonl"
    echo "$tokens $rss"
}

printf '%-10s %12s %14s\n' requests tokens "max RSS (KiB)"
declare -a tok rss
for run in $(seq "$runs"); do
    for k in "${!sizes[@]}"; do
        read -r t r < <(one "${sizes[$k]}")
        tok[$k]=$t
        rss[$k]=$r
        printf '%-10s %12s %14s\n' "${sizes[$k]}" "$t" "$r"
    done
    last=$((${#sizes[@]} - 1))
    awk -v t1="${tok[0]}" -v t2="${tok[$last]}" -v r1="${rss[0]}" -v r2="${rss[$last]}" -v run="$run" \
        'BEGIN { printf "run %d: %.2f bytes per token ((%d - %d) KiB over %d - %d tokens)\n", run, (r2 - r1) * 1024 / (t2 - t1), r2, r1, t2, t1 }'
done
