#!/bin/sh
# Builds build/{{name_snake}}.wasm: cargo for wasm32-wasip2 (wit-bindgen 0.63 makes the
# component). `sluice build` runs this (tool.toml's [build] command).
set -eu
cd "$(dirname "$0")"

need() {
  command -v "$1" >/dev/null 2>&1 && return
  echo "build.sh: $1 is not on PATH; $2" >&2
  exit 127
}

need cargo "install Rust from https://rustup.rs, then: rustup target add wasm32-wasip2"
if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx wasm32-wasip2; then
  echo "build.sh: the wasm32-wasip2 target is not installed; run: rustup target add wasm32-wasip2" >&2
  exit 127
fi
cargo build --release --target wasm32-wasip2
mkdir -p build
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{name_snake}}.wasm" build/{{name_snake}}.wasm
