#!/bin/sh
# Builds build/{{name_snake}}.wasm from tool.js with componentize-js 0.23.0 (from npm, into
# node_modules/ on the first build). `sluice build` runs this (tool.toml's [build] command).
set -eu
cd "$(dirname "$0")"

need() {
  command -v "$1" >/dev/null 2>&1 && return
  echo "build.sh: $1 is not on PATH; $2" >&2
  exit 127
}

bin=node_modules/.bin/componentize-js
if [ ! -x "$bin" ]; then
  need npm "install Node.js 20 or later (https://nodejs.org), which comes with npm"
  echo "build.sh: npm install (componentize-js 0.23.0, the first build only)" >&2
  npm install --no-audit --no-fund
fi
need node "install Node.js 20 or later (https://nodejs.org)"
mkdir -p build
# --disable http fetch-event: the tool sends no HTTP requests.
"$bin" --wit wit --world-name {{name}} --disable http fetch-event -o build/{{name_snake}}.wasm tool.js
