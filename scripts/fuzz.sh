#!/usr/bin/env bash
# Fuzzes tokenmeter with cargo fuzz (libFuzzer) for a bounded time per target, on stable Rust.
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 20; the targets default to all of them: sse_chunks (the bench
# client's SSE/JSON chunk parsing), slo_spec (the SLO spec parser) and metered_script (the
# metered stream under item/error/pending/panic/drop scripts). Installs cargo-fuzz and a C++
# compiler (for libFuzzer) when missing (scripts/tools.sh). Seeds are read from
# fuzz/corpus/<target> (committed), tokens of the input grammar from fuzz/dict/<target>.dict;
# what libFuzzer adds goes to fuzz/generated/<target> (git-ignored), crashes to
# fuzz/artifacts/<target>. Prints the executions per target and in total, and exits non-zero
# if any target crashed (the log shows the input and how to reproduce it).
#
# Environment:
#   FUZZ_TARGET_DIR  where cargo fuzz builds (default fuzz/target)
#   FUZZ_LOG_DIR     where each target's libFuzzer log goes (default $FUZZ_TARGET_DIR/logs)
#   FUZZ_SANITIZER   none (default: stable Rust, no nightly flag) or address (sets
#                    RUSTC_BOOTSTRAP=1 for -Zsanitizer; the crates forbid unsafe code)
#   FUZZ_ARGS        more libFuzzer flags, e.g. "-max_len=8192"
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(sse_chunks slo_spec metered_script)
case "$seconds" in
  '' | *[!0-9]*) echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number of seconds, got '$seconds'" >&2; exit 2 ;;
esac

target_dir="${FUZZ_TARGET_DIR:-$PWD/fuzz/target}"
log_dir="${FUZZ_LOG_DIR:-$target_dir/logs}"
sanitizer="${FUZZ_SANITIZER:-none}"
mkdir -p "$log_dir"

# The C++ compiler and cargo-fuzz, from the one place that installs tools.
# shellcheck source=scripts/tools.sh
source scripts/tools.sh
install_fuzz_tools

# -a: debug assertions and overflow checks on, in an optimised build.
build_flags=(--sanitizer "$sanitizer" --debug-assertions --target-dir "$target_dir")
if [ "$sanitizer" != none ]; then
  export RUSTC_BOOTSTRAP=1 # sanitizers are a nightly flag; this lets the stable compiler take it
fi
# CI's CARGO_TARGET_DIR or a developer's must not redirect the fuzz build.
unset CARGO_TARGET_DIR

echo "==> the fuzz crate's own tests: its model against hand-computed records, every seed replayed"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo test -q --manifest-path fuzz/Cargo.toml --target-dir "$target_dir"

echo "==> cargo fuzz build (${targets[*]}; sanitizer $sanitizer)"
for target in "${targets[@]}"; do
  cargo fuzz build "${build_flags[@]}" "$target"
done

total=0
crashed=()
printf '%-16s %14s %8s %10s %8s  %s\n' target executions seconds exec/s corpus result
for target in "${targets[@]}"; do
  seeds="fuzz/corpus/$target"
  grown="fuzz/generated/$target"
  mkdir -p "$seeds" "$grown" "fuzz/artifacts/$target"
  log="$log_dir/$target.log"
  dict=()
  [ -f "fuzz/dict/$target.dict" ] && dict=(-dict="fuzz/dict/$target.dict")
  start=$(date +%s)
  status=0
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
  cargo fuzz run "${build_flags[@]}" "$target" "$grown" "$seeds" -- \
    -max_total_time="$seconds" -timeout=10 -print_final_stats=1 "${dict[@]}" ${FUZZ_ARGS:-} \
    >"$log" 2>&1 || status=$?
  elapsed=$(($(date +%s) - start))
  runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  corpus=$(find "$grown" "$seeds" -type f | wc -l)
  result=ok
  if [ "$status" -ne 0 ] || [ -z "$runs" ] || [ "$runs" -eq 0 ]; then
    result="FAILED (exit $status; log $log)"
    crashed+=("$target")
  fi
  total=$((total + ${runs:-0}))
  printf '%-16s %14s %8s %10s %8s  %s\n' "$target" "${runs:-0}" "$elapsed" "${rate:-0}" "$corpus" "$result"
done
echo "total executions: $total"

if [ ${#crashed[@]} -gt 0 ]; then
  for target in "${crashed[@]}"; do
    echo "==> $target: the end of $log_dir/$target.log" >&2
    tail -n 40 "$log_dir/$target.log" >&2
  done
  echo "fuzz.sh: ${crashed[*]} failed; crash inputs are under fuzz/artifacts/<target>/" >&2
  exit 1
fi
