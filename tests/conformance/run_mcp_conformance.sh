#!/bin/sh
# Runs every client scenario of the official MCP conformance suite against reasonix.
# Usage: tests/conformance/run_mcp_conformance.sh [path/to/reasonix]
# Needs node and npm; the suite (and `glob`) are installed into a temporary directory, never
# into the repository. The suite imports fs.globSync (Node 22); on Node 20 a loader hook
# gives it one built on the `glob` package.
# Prints one line per scenario with the suite's verdict and the exit code(s) of the client
# (tests/conformance/mcp_client.sh). Exits 3 when npm could not install the suite, and 2 when
# a scenario did not pass or the client's exit was not the expected one, so CI fails on a
# regression: the client must succeed, except in the scenarios of $refusals, whose server
# misbehaves on purpose and where a client that succeeded would have accepted what it must
# refuse.
set -u
reasonix=$(realpath "${1:-target/debug/reasonix}")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
npm install --silent @modelcontextprotocol/conformance@0.1.16 glob >/dev/null || exit 3
# auth/scope-retry-limit: the server never grants the scope it asks for, so the client
# gives up after its retries; auth/resource-mismatch: the protected resource names another
# server, so the client refuses to log in there.
refusals="auth/scope-retry-limit auth/resource-mismatch"
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
if [ -z "$scenarios" ]; then
    echo "conformance: the suite lists no client scenarios" >&2
    exit 1
fi
failed=0
for scenario in $scenarios; do
    exits="$work/exits"
    : >"$exits"
    result=$(REASONIX="$reasonix" REASONIX_CONFORMANCE_EXITS="$exits" \
        $suite client --command "sh $here/mcp_client.sh" \
        --scenario "$scenario" 2>&1 | grep -E '^Passed:|OVERALL')
    codes=$(tr '\n' ' ' <"$exits" | sed 's/ $//')
    echo "$scenario: $(echo "$result" | tr '\n' ' ')client exit ${codes:-none}"
    case "$result" in
    *"OVERALL: PASSED"*) ;;
    *) failed=1 ;;
    esac
    # The client ran, and every run of it succeeded (or, where it must refuse, failed).
    case " $refusals " in
    *" $scenario "*) [ -n "$codes" ] && ! echo " $codes " | grep -q ' 0 ' || failed=1 ;;
    *) [ -n "$codes" ] && [ -z "$(echo "$codes" | tr -d '0 ')" ] || failed=1 ;;
    esac
done
[ $failed -eq 0 ] || exit 2
