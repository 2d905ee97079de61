#!/usr/bin/env bash
# Memory of a long `tokenmeter bench` run: the bench's max RSS against the tokens it streamed,
# for short, medium and long answers.
#
# Starts the built-in simulator (`tokenmeter serve`) as its own process, with fast decode
# steps so that a few million tokens stream in about a minute, and runs the release
# `tokenmeter bench` against it (with --json and --trace, as a soak would) at each answer
# length, at two sizes: enough requests for TOKENS' first and second count of streamed tokens.
# The bench's max RSS comes from `/usr/bin/time -v`; the slope between the two sizes,
# (RSS2 − RSS1) / (tokens2 − tokens1), is what the bench keeps per streamed token, whatever it
# keeps per request included (a 32-token answer pays its request's share over 32 tokens). Both
# sizes stream more than 2,000,000 gaps by default: a shorter run also holds its gaps' copy for
# the ITL's confidence interval at the end (8 bytes a gap, at most 16 MB, freed before the
# outputs), a constant that would otherwise show in the slope. The simulator runs in its own
# process, so its memory is not counted. The script fails (exit 1) when a slope is above GOAL
# bytes per token.
#
#   bash scripts/memory_bench.sh [BINARY]     # default: target/release/tokenmeter (built)
#
# LENGTHS (tokens per answer, default "32 100 1000"), TOKENS (streamed tokens at the two sizes,
# default "2500000 5000000"), CONCURRENCY (default 64), RUNS (runs per length, default 1) and
# GOAL (bytes per token, default 8) can be set in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-target/release/tokenmeter}
if [[ $# -eq 0 ]]; then
    cargo build --release -p tokenmeter-cli --quiet
fi
read -r -a lengths <<<"${LENGTHS:-32 100 1000}"
read -r -a totals <<<"${TOKENS:-2500000 5000000}"
concurrency=${CONCURRENCY:-64}
runs=${RUNS:-1}
goal=${GOAL:-8}
[[ ${#totals[@]} -eq 2 ]] || { echo "memory_bench: TOKENS takes two counts, e.g. \"1000000 2000000\"" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "memory_bench: /usr/bin/time is needed (GNU time)" >&2; exit 2; }
command -v jq >/dev/null || { echo "memory_bench: jq is needed" >&2; exit 2; }

longest=0
for length in "${lengths[@]}"; do
    [[ $length =~ ^[1-9][0-9]*$ ]] || { echo "memory_bench: LENGTHS holds \"$length\", not a count of tokens" >&2; exit 2; }
    ((length > longest)) && longest=$length
done

work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
"$bin" serve --listen "127.0.0.1:$port" --model tokenmeter-sim --max-batch "$concurrency" \
    --decode-table "1=100us,$concurrency=200us" --prefill-base 100us --prefill-per-token 1us \
    --default-max-tokens "$longest" >"$work/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.1
done

# One run of `requests` answers of `output` tokens: prints "tokens max_rss_kib".
one() {
    local requests=$1 output=$2
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

printf '%-8s %-10s %12s %14s\n' length requests tokens "max RSS (KiB)"
over=0
declare -a results
for length in "${lengths[@]}"; do
    for run in $(seq "$runs"); do
        declare -a tok=() rss=()
        for k in 0 1; do
            requests=$(((totals[k] + length - 1) / length))
            read -r t r < <(one "$requests" "$length")
            tok[$k]=$t
            rss[$k]=$r
            printf '%-8s %-10s %12s %14s\n' "$length" "$requests" "$t" "$r"
        done
        line=$(awk -v t1="${tok[0]}" -v t2="${tok[1]}" -v r1="${rss[0]}" -v r2="${rss[1]}" \
            -v len="$length" -v run="$run" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" \
            'BEGIN { printf "%d-token answers, run %d: %.2f bytes per token ((%d - %d) KiB over %d - %d tokens; load %s)", len, run, (r2 - r1) * 1024 / (t2 - t1), r2, r1, t2, t1, load }')
        echo "$line"
        results+=("$line")
        if awk -v t1="${tok[0]}" -v t2="${tok[1]}" -v r1="${rss[0]}" -v r2="${rss[1]}" -v goal="$goal" \
            'BEGIN { exit !((r2 - r1) * 1024 / (t2 - t1) > goal) }'; then
            over=1
        fi
    done
done
echo
printf '%s\n' "${results[@]}"
if ((over)); then
    echo "memory_bench: over the goal of $goal bytes per streamed token" >&2
    exit 1
fi
echo "memory_bench: every length within $goal bytes per streamed token"
