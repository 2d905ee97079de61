# Everything the test and fuzz scripts need from outside the workspace, installed in this one
# place when missing. Sourced by scripts/test.sh and scripts/fuzz.sh; not run on its own.
#
#   install_test_tools   Debian's prometheus (promtool and the server) and chromium (the HTML
#                        report's screenshot test); cargo-nextest, cargo-deny, cargo-hack;
#                        curl and the openai Python SDK (third-party clients); llama.cpp's server
#                        (llama-cpp-python, a third-party server) in a venv under ~/.cache;
#                        python3-venv (the release checks' throwaway venvs: maturin, the wheel);
#                        the router in front of two `serve` replicas (install_router)
#   install_router       SGLang's model gateway `smg` (a Rust router, a prebuilt PyPI wheel),
#                        pinned, in a venv under ~/.cache: scripts/third_party_router.py
#   install_fuzz_tools   a C++ compiler (libFuzzer is C++) and cargo-fuzz
#   install_aiperf       AIPerf (NVIDIA's benchmark client), pinned, in a venv under ~/.cache:
#                        scripts/ceiling.py
#   check_toolchain MODE the compiler against `rust-version` in Cargo.toml (see below)

# Installs the Debian packages given when any is missing (needs root and the network).
apt_install() {
  [ $# -gt 0 ] || return 0
  echo "==> installing $* (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# cargo_tool BINARY CRATE: `cargo install --locked CRATE` unless BINARY is on the PATH.
cargo_tool() {
  command -v "$1" >/dev/null 2>&1 || cargo install --locked "$2"
}

install_test_tools() {
  local need_apt=()
  command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
  apt_install "${need_apt[@]}"
  cargo_tool cargo-nextest cargo-nextest
  cargo_tool cargo-deny cargo-deny
  cargo_tool cargo-hack cargo-hack
  # The official OpenAI Python SDK, for the third-party client check (scripts/third_party_hangups.py).
  command -v curl >/dev/null 2>&1 || apt_install curl
  python3 -c 'import openai' >/dev/null 2>&1 || python3 -m pip install --quiet --disable-pip-version-check openai
  # aiohttp, the HTTP client of vLLM's benchmark request functions (scripts/vllm_client_gaps.py).
  python3 -c 'import aiohttp' >/dev/null 2>&1 || python3 -m pip install --quiet --disable-pip-version-check aiohttp
  # xDS's OrcaLoadReport message and protobuf's JSON parser (scripts/orca_xds_json.py); the
  # package's gRPC stubs are not used, so grpcio is not installed.
  python3 -c 'import google.protobuf' >/dev/null 2>&1 || python3 -m pip install --quiet --disable-pip-version-check protobuf
  python3 -c 'import xds.data.orca.v3.orca_load_report_pb2' >/dev/null 2>&1 || python3 -m pip install --quiet --disable-pip-version-check --no-deps xds-protos
  # `python3 -m venv` (the release checks install maturin and the built wheel into throwaway
  # virtual environments): Debian's python3 has venv without ensurepip until python3-venv.
  python3 -c 'import ensurepip' >/dev/null 2>&1 || apt_install python3-venv
  install_router
}

# The router of scripts/third_party_router.py: SGLang's model gateway (`smg`, written in Rust,
# shipped as a prebuilt wheel), this version only: its flags and metric names are what the
# script reads. About 10 s on a fresh machine (a 37 MB wheel and four small dependencies).
TOKENMETER_ROUTER_VENV="${TOKENMETER_ROUTER_VENV:-$HOME/.cache/tokenmeter-router/venv}"
TOKENMETER_ROUTER_PIN="smg==1.13.0"

install_router() {
  local venv="$TOKENMETER_ROUTER_VENV"
  [ "$("$venv/bin/smg" --version 2>/dev/null)" = "smg ${TOKENMETER_ROUTER_PIN#*==}" ] && return 0
  echo "==> installing $TOKENMETER_ROUTER_PIN (SGLang's model gateway, a Rust router) into $venv"
  mkdir -p "$(dirname "$venv")"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$TOKENMETER_ROUTER_PIN"
}

# The venv of scripts/third_party_server.py (run on its own, not by scripts/test.sh: a fresh
# machine would spend 15 to 30 minutes compiling llama.cpp): llama-cpp-python's server and gguf,
# to write the tiny model.
TOKENMETER_THIRD_PARTY_VENV="${TOKENMETER_THIRD_PARTY_VENV:-$HOME/.cache/tokenmeter-third-party/venv}"

install_llama_cpp_server() {
  local venv="$TOKENMETER_THIRD_PARTY_VENV"
  "$venv/bin/python" -c 'import llama_cpp.server, gguf, numpy' >/dev/null 2>&1 && return 0
  echo "==> installing llama-cpp-python[server] and gguf into $venv (compiles llama.cpp: 15-30 min, once)"
  mkdir -p "$(dirname "$venv")"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    'llama-cpp-python[server]' gguf numpy
}

# AIPerf, one of the clients of scripts/ceiling.py (run on its own, not by scripts/test.sh),
# this version only: the flags and export files the script reads are its. It took 2 min 41 s on
# the development machine and fills 1.2 GB (its dependencies include transformers, pandas,
# numpy and pyzmq).
TOKENMETER_AIPERF_VENV="${TOKENMETER_AIPERF_VENV:-$HOME/.cache/tokenmeter-aiperf/venv}"
TOKENMETER_AIPERF_PIN="aiperf==0.13.0"

install_aiperf() {
  local venv="$TOKENMETER_AIPERF_VENV"
  "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("aiperf") == "'"${TOKENMETER_AIPERF_PIN#*==}"'"' >/dev/null 2>&1 && return 0
  echo "==> installing $TOKENMETER_AIPERF_PIN into $venv"
  mkdir -p "$(dirname "$venv")"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$TOKENMETER_AIPERF_PIN"
}

install_fuzz_tools() {
  if ! command -v c++ >/dev/null 2>&1 && ! command -v clang++ >/dev/null 2>&1; then
    apt_install g++
  fi
  cargo_tool cargo-fuzz cargo-fuzz
}

# `rust-version` in Cargo.toml states the toolchain the full test command runs on, nothing
# older. MODE full: when `rustc` is another minor version, install that toolchain with rustup
# and use it for the rest of the run (or fail saying how to fix it). MODE quick: warn only.
check_toolchain() {
  local want have
  want=$(sed -n 's/^rust-version = "\([0-9.]*\)"$/\1/p' Cargo.toml)
  have=$(rustc --version | awk '{print $2}')
  if [ -z "$want" ]; then
    echo "error: no rust-version = \"X.Y\" line in Cargo.toml's [workspace.package]" >&2
    return 1
  fi
  if [ "${have%.*}" = "$want" ]; then
    echo "==> rustc $have: the rust-version of Cargo.toml ($want)"
    return 0
  fi
  if [ "$1" = quick ]; then
    echo "warning: rustc $have is not Cargo.toml's rust-version $want, which is what the full run checks" >&2
    return 0
  fi
  if ! command -v rustup >/dev/null 2>&1; then
    echo "error: rustc $have is not Cargo.toml's rust-version $want, and there is no rustup to" \
      "install $want: install Rust $want, or change rust-version after this suite passes on $have" >&2
    return 1
  fi
  echo "==> rustc $have is not Cargo.toml's rust-version $want: installing and using Rust $want"
  rustup toolchain install "$want" --profile minimal --component clippy,rustfmt
  export RUSTUP_TOOLCHAIN="$want"
  have=$(rustc --version | awk '{print $2}')
  if [ "${have%.*}" != "$want" ]; then
    echo "error: rustup's Rust $want reports rustc $have" >&2
    return 1
  fi
  echo "==> rustc $have: the rust-version of Cargo.toml ($want)"
}
