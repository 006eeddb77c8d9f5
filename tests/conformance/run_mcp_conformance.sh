#!/bin/sh
# Runs every client scenario of the official MCP conformance suite against reasonix.
# Usage: tests/conformance/run_mcp_conformance.sh [path/to/reasonix]
# Needs node and npm; the suite (and `glob`) are installed into a temporary directory, never
# into the repository. The suite imports fs.globSync (Node 22); on Node 20 a loader hook
# gives it one built on the `glob` package.
set -u
reasonix=$(realpath "${1:-target/debug/reasonix}")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
npm install --silent @modelcontextprotocol/conformance@0.1.16 glob >/dev/null || exit 1
cat > fs-shim.mjs <<'J'
export * from 'node:fs';
import fs from 'node:fs';
import { globSync as viaGlob } from 'glob';
export const globSync = fs.globSync ?? ((pattern, options) => viaGlob(pattern, options));
export default fs;
J
cat > hooks.mjs <<'J'
export async function resolve(specifier, context, next) {
  if (specifier === 'fs') {
    return { url: new URL('./fs-shim.mjs', import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
J
cat > register.mjs <<'J'
import { register } from 'node:module';
register('./hooks.mjs', import.meta.url);
J
suite="node --import ./register.mjs node_modules/@modelcontextprotocol/conformance/dist/index.js"
scenarios=$($suite list --client | sed -n 's/^  - \([^ ]*\).*/\1/p')
for scenario in $scenarios; do
    result=$(REASONIX="$reasonix" $suite client --command "sh $here/mcp_client.sh" \
        --scenario "$scenario" 2>&1 | grep -E '^Passed:|OVERALL')
    echo "$scenario: $(echo "$result" | tr '\n' ' ')"
done
