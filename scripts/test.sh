#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine: installs what the tests need when it is
# missing (Debian's prometheus for promtool and the server, chromium for the HTML report's
# screenshot test), then the CI gates: fmt, clippy, docs, all tests and doc tests.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "==> installing ${need_apt[*]} (Debian packages the tests use)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
command -v cargo-nextest >/dev/null 2>&1 || cargo install --locked cargo-nextest

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

echo "==> cargo fmt --check"
cargo fmt --all -- --check

echo "==> cargo clippy (all targets, all features, warnings are errors)"
cargo clippy --workspace --all-targets --all-features -- -D warnings

echo "==> cargo deny check licenses bans (deny.toml; needs no network)"
command -v cargo-deny >/dev/null 2>&1 || cargo install --locked cargo-deny
cargo deny check --hide-inclusion-graph licenses bans

echo "==> cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features

echo "==> doc tests"
cargo test --workspace --all-features --doc

echo "==> the quick-start example runs"
cargo run -q -p tokenmeter-examples --example quickstart >/dev/null
echo "==> the axum example meters one request it sends itself"
cargo run -q -p tokenmeter-axum --example axum_sse -- --once >/dev/null

echo "==> fuzzing, briefly (20 s per target; scripts/fuzz.sh, cargo fuzz on stable Rust)"
bash scripts/fuzz.sh 20
echo "==> the fuzz crate (outside the workspace): fmt and clippy"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings

echo "==> tests (unit, integration, end-to-end; benchmarks once in test mode)"
cargo nextest run --workspace --all-features --all-targets --no-fail-fast
