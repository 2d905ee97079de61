#!/usr/bin/env bash
# Runs the tests of the workspace.
#
#   bash scripts/test.sh          every test, on a fresh machine: installs what the tests need
#                                 when it is missing (scripts/tools.sh: Debian's prometheus for
#                                 promtool and the server, chromium for the HTML report's
#                                 screenshot test, cargo-nextest, cargo-deny, cargo-hack,
#                                 cargo-fuzz, curl and the openai Python SDK, and the Rust
#                                 toolchain that Cargo.toml's rust-version names, python3-venv,
#                                 SGLang's router `smg` in a venv under ~/.cache),
#                                 then the quick tier, then everything else (with
#                                 scripts/package_check.py: every publishable crate's metadata,
#                                 and all of them built once from their unpacked .crate files in
#                                 one temporary workspace; needs the crates.io index), and
#                                 last the release binary's checks (scripts/release_checks.py:
#                                 the wheel, the README's main job run from it, and the server's
#                                 view). `.ci/run` calls exactly this.
#                                 The check against llama.cpp's server runs on its own
#                                 (`python3 scripts/third_party_server.py`: a fresh machine
#                                 compiles llama.cpp for 15-30 min first; see the README).
#   bash scripts/test.sh --quick  the quick tier alone, for day-to-day work: needs no root and no
#                                 network (cargo-nextest must be installed): fmt, clippy, docs,
#                                 doc tests and unit tests (those that need no outside program).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says when it started, in seconds from the start of the run.
step() { echo "==> [${SECONDS}s] $*"; }
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

mode="${1:-full}"
case "$mode" in
  --quick) mode=quick ;;
  full) ;;
  *) echo "usage: bash scripts/test.sh [--quick]" >&2; exit 2 ;;
esac

# shellcheck source=scripts/tools.sh
source scripts/tools.sh

# `cargo doc` of the workspace, failing on any warning. RUSTDOCFLAGS makes rustdoc's warnings
# errors, but cargo's own (two targets writing the same target/doc/<name>/, a manifest
# warning) only print and exit 0, so its stderr is read.
docs_without_warnings() {
  local log status=0
  log=$(mktemp)
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features 2>"$log" || status=$?
  cat "$log" >&2
  if [ "$status" -eq 0 ] && grep -q '^warning' "$log"; then
    echo "error: cargo doc warned (above): fix it (an output filename collision: \`doc = false\`" \
      "on the [[bin]] named like a library)" >&2
    status=1
  fi
  rm -f "$log"
  return "$status"
}

quick_tier() {
  step "[quick] cargo fmt --check"
  cargo fmt --all -- --check

  step "[quick] cargo clippy (all targets, all features, warnings are errors)"
  cargo clippy --workspace --all-targets --all-features -- -D warnings

  step "[quick] cargo doc (warnings are errors, cargo's own too: an output filename collision)"
  docs_without_warnings

  step "[quick] doc tests"
  cargo test --workspace --all-features --doc

  step "[quick] unit tests (no outside program: promtool's are in the full run)"
  cargo nextest run --workspace --all-features --lib --bins --no-fail-fast -E 'not test(/promtool/)'
}

if [ "$mode" = quick ]; then
  check_toolchain quick
  quick_tier
  exit 0
fi

check_toolchain full
# A full run builds each target once: incremental-compilation state would only take disk (GBs).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
install_test_tools
install_fuzz_tools
quick_tier

step "every feature alone, and every crate's tests with its default features, build (cargo hack)"
# Each package with its default features, with none, and with each feature alone; all targets,
# so `cargo test -p <crate>` compiles with default features for every crate.
cargo hack check --workspace --each-feature --exclude-all-features --all-targets

step "cargo deny check licenses bans (deny.toml; needs no network)"
cargo deny check --hide-inclusion-graph licenses bans

step "every publishable crate: crates.io metadata, license files, and a build from its unpacked .crate (scripts/package_check.py)"
python3 scripts/package_check.py

step "fuzzing, briefly (10 s per target; scripts/fuzz.sh, cargo fuzz on stable Rust)"
bash scripts/fuzz.sh 10
step "the fuzz crate (outside the workspace): fmt and clippy"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings

step "the rest of the tests (integration, end-to-end, promtool's unit tests; benchmarks once in test mode)"
cargo nextest run --workspace --all-features --all-targets --no-fail-fast \
  -E 'not (kind(lib) | kind(bin)) | test(/promtool/)'

# After the run above, which built every binary and example with the workspace's features.
step "the load test as code: in-process, and against TOKENMETER_URL (a tokenmeter serve process)"
bash scripts/load_test_example.sh

# Built by the run above with the workspace's features (and again, as a no-op, by the load
# test's script): run from the target directory, nothing is compiled for them.
examples="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug/examples"
step "the quick-start example runs"
"$examples/quickstart" >/dev/null
step "the axum example meters one request it sends itself"
"$examples/axum_sse" --once >/dev/null

step "third-party clients hang up on serve (the openai Python SDK, curl): /metrics counts what they got"
python3 scripts/third_party_hangups.py

step "the openai Python SDK against serve: models, unknown model (404), bad values (400), stop, n, logprobs"
python3 scripts/openai_sdk_compat.py

step "a real Rust router (SGLang's smg, from PyPI) in front of two serve replicas: counts, client − server TTFT, hang-ups"
python3 scripts/third_party_router.py

step "vLLM 0.33's own benchmark client (from its PyPI wheel) against serve: n tokens are n − 1 gaps"
python3 scripts/vllm_client_gaps.py

step "serve's JSON load reports read by xDS's own OrcaLoadReport (PyPI's xds-protos and protobuf)"
python3 scripts/orca_xds_json.py

step "the release binary: the README's main job (within 60 s) and client − server TTFT on loopback within 0-2 ms"
python3 scripts/release_checks.py
