#!/bin/sh
# Builds build/{{name_snake}}.wasm from app.py with componentize-py 0.25.1. `sluice build` runs
# this (tool.toml's [build] command).
set -eu
cd "$(dirname "$0")"

need() {
  command -v "$1" >/dev/null 2>&1 && return
  echo "build.sh: $1 is not on PATH; $2" >&2
  exit 127
}

need componentize-py "install it: pip install componentize-py==0.25.1"
mkdir -p build
componentize-py -d wit -w {{name}} componentize app -o build/{{name_snake}}.wasm
