#!/bin/sh
# The client under test for the official MCP conformance scenarios
# (@modelcontextprotocol/conformance, `conformance client --command "sh mcp_client.sh"`):
# it is started with the scenario's server URL as its last argument and the scenario's name
# in $MCP_CONFORMANCE_SCENARIO. It points a throw-away reasonix home at that server, logs in
# for auth scenarios (a $BROWSER that follows the redirects plays the user), lists the
# server, and calls the tools each scenario expects, as a user would: when a call says the
# server wants a (wider) login, it logs in again and repeats the call. See
# run_mcp_conformance.sh.
#
# Every step runs (the suite checks the traffic of all of them), and the script exits 1 when
# any failed (a login, the listing, a call), so a failure is never reported as a pass; when
# $REASONIX_CONFORMANCE_EXITS names a file, the exit code is appended to it for the runner.
set -u
url=$(eval echo "\${$#}")
reasonix=${REASONIX:-reasonix}
scenario=${MCP_CONFORMANCE_SCENARIO:-}
home=$(mktemp -d)
trap 'status=$?
rm -rf "$home"
[ -n "${REASONIX_CONFORMANCE_EXITS:-}" ] && echo "$status" >>"$REASONIX_CONFORMANCE_EXITS"
exit $status' EXIT
mkdir -p "$home/.reasonix"
# The config, from the scenario's $MCP_CONFORMANCE_CONTEXT (a pre-registered client, a
# private key for private_key_jwt, an enterprise IdP's ID token for cross-app access). The
# CIMD URL is the one the suite's authorization server expects; reasonix uses it only where
# the server advertises client_id_metadata_document_supported.
MCP_URL="$url" HOME_DIR="$home" node -e '
const fs = require("fs");
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const scenario = process.env.MCP_CONFORMANCE_SCENARIO || "";
const home = process.env.HOME_DIR;
const q = (s) => JSON.stringify(String(s));
let text = `[[plugins]]\nname = "conf"\ntype = "http"\nurl = ${q(process.env.MCP_URL)}\n`;
if (scenario.startsWith("elicitation-")) text += `elicitation = "accept_defaults"\n`;
text += `[plugins.oauth]\nclient_metadata_url = "https://conformance-test.local/client-metadata.json"\n`;
if (context.client_id) text += `client_id = ${q(context.client_id)}\n`;
if (context.client_secret) text += `client_secret = ${q(context.client_secret)}\n`;
if (context.private_key_pem) {
  fs.writeFileSync(`${home}/client-key.pem`, context.private_key_pem, { mode: 0o600 });
  text += `private_key = ${q(home + "/client-key.pem")}\n`;
  if (context.signing_algorithm) text += `signing_algorithm = ${q(context.signing_algorithm)}\n`;
}
if (scenario.startsWith("auth/client-credentials-")) text += `grant = "client_credentials"\n`;
if (context.idp_id_token) {
  text += `grant = "jwt_bearer"\nid_token = ${q(context.idp_id_token)}\n`;
  text += `idp_token_endpoint = ${q(context.idp_token_endpoint)}\n`;
  if (context.idp_client_id) text += `idp_client_id = ${q(context.idp_client_id)}\n`;
}
fs.writeFileSync(`${home}/.reasonix/config.toml`, text);
' || exit 1
cat > "$home/browser" <<'B'
#!/bin/sh
curl -s -L -o /dev/null "$1"
B
chmod +x "$home/browser"
export HOME="$home" REASONIX_HOME="$home/.reasonix" BROWSER="$home/browser"
failed=0
step() {
    "$@" || { echo "mcp_client.sh: failed (exit $?): $*" >&2; failed=1; }
}
browser=false
case "$scenario" in
auth/client-credentials-*|auth/cross-app-*) ;;
auth/*) browser=true; step "$reasonix" mcp login conf ;;
esac
step "$reasonix" mcp list
# Calls one tool; where the server asks for a (wider) login, logs in and calls again, twice
# at most.
call() {
    tries=0
    while :; do
        "$reasonix" mcp call conf "$@" 2>"$home/err" && return 0
        cat "$home/err" >&2
        $browser && [ $tries -lt 2 ] && grep -q 'reasonix mcp login' "$home/err" || return 1
        tries=$((tries + 1))
        "$reasonix" mcp login conf || return 1
    done
}
# `mcp list` shows counts, not names: the tools each scenario offers.
case "$scenario" in
tools_call) step call add_numbers '{"a":5,"b":3}' ;;
elicitation-*) step call test_client_elicitation_defaults '{}' ;;
sse-retry) step call test_reconnection '{}' ;;
auth/*) step call test-tool '{}' ;;
esac
exit $failed
