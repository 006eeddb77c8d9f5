#!/bin/sh
# The client under test for the official MCP conformance scenarios
# (@modelcontextprotocol/conformance, `conformance client --command "sh mcp_client.sh"`):
# it is started with the scenario's server URL as its last argument and the scenario's name
# in $MCP_CONFORMANCE_SCENARIO. It points a throw-away reasonix home at that server, logs in
# for auth scenarios (a $BROWSER that follows the redirects plays the user), lists the
# server, and calls the tools each scenario expects. See run_mcp_conformance.sh.
set -u
url=$(eval echo "\${$#}")
reasonix=${REASONIX:-reasonix}
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
mkdir -p "$home/.reasonix"
printf '[[plugins]]\nname = "conf"\ntype = "http"\nurl = "%s"\n' "$url" > "$home/.reasonix/config.toml"
# A scenario with a pre-registered client passes it in $MCP_CONFORMANCE_CONTEXT.
context=${MCP_CONFORMANCE_CONTEXT:-"{}"}
field() { printf '%s' "$context" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
client_id=$(field client_id)
client_secret=$(field client_secret)
if [ -n "$client_id" ]; then
    printf '[plugins.oauth]\nclient_id = "%s"\n' "$client_id" >> "$home/.reasonix/config.toml"
    [ -n "$client_secret" ] &&
        printf 'client_secret = "%s"\n' "$client_secret" >> "$home/.reasonix/config.toml"
    case "${MCP_CONFORMANCE_SCENARIO:-}" in
    auth/client-credentials-*|auth/cross-app-*)
        printf 'grant = "client_credentials"\n' >> "$home/.reasonix/config.toml" ;;
    esac
fi
cat > "$home/browser" <<'B'
#!/bin/sh
curl -s -L -o /dev/null "$1"
B
chmod +x "$home/browser"
export HOME="$home" REASONIX_HOME="$home/.reasonix" BROWSER="$home/browser"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
auth/client-credentials-*|auth/cross-app-*) ;;
auth/*) "$reasonix" mcp login conf ;;
esac
"$reasonix" mcp list
# `mcp list` shows counts, not names: the tools each scenario offers.
case "${MCP_CONFORMANCE_SCENARIO:-}" in
tools_call) "$reasonix" mcp call conf add_numbers '{"a":5,"b":3}' ;;
elicitation-*) "$reasonix" mcp call conf test_client_elicitation_defaults '{}' ;;
sse-retry) "$reasonix" mcp call conf test_reconnection '{}' ;;
esac
exit 0
