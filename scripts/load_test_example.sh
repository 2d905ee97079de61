#!/usr/bin/env bash
# The load test as code (crates/tokenmeter-bench/examples/load_test.rs) as a server team runs
# it: once against the simulated server it starts in-process, and once against a server named
# by TOKENMETER_URL (here a `tokenmeter serve` process on a free loopback port).
set -euo pipefail
cd "$(dirname "$0")/.."
# The workspace's binaries and examples with all its features, as the test command's run of the
# tests built them: nothing is compiled again there.
cargo build -q --workspace --all-features --bins --examples
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
"$target_dir/debug/examples/load_test"
log="$(mktemp)"
"$target_dir/debug/tokenmeter" serve --listen 127.0.0.1:0 >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 100); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -1 || true)"
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "tokenmeter serve did not say its address within 10 s" >&2; exit 1; }
TOKENMETER_URL="$url/v1" "$target_dir/debug/examples/load_test"
