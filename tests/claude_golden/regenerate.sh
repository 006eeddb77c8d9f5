#!/bin/sh
# Regenerates the goldens of this directory: what the real Claude Code CLI prints with
# `-p --output-format stream-json --verbose` for four scripts played by fake_anthropic.py
# (a text answer, a Read tool round, an invalid key, an overloaded model with a fallback).
# See README.md.
#
# Usage: CLAUDE=/path/to/claude tests/claude_golden/regenerate.sh [NAME...]
#   NAME     only these goldens (text, tool, error, fallback); default: all
#   CLAUDE   the pinned CLI, installed outside the repository:
#              mkdir -p /work/tmpw/claude-code && cd /work/tmpw/claude-code &&
#              npm install @anthropic-ai/claude-code@2.1.332
#            (default: /work/tmpw/claude-code/node_modules/.bin/claude)
#   SCRATCH  where the homes, workspaces and request logs go (default: a new mktemp -d);
#            nothing is written under the real HOME.
# Any failure (the CLI missing, the fake not starting, the CLI exiting unexpectedly) stops
# the script with a non-zero status; nothing is half-written into the repository.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
claude=${CLAUDE:-/work/tmpw/claude-code/node_modules/.bin/claude}
scratch=${SCRATCH:-$(mktemp -d)}
[ -x "$claude" ] || { echo "regenerate: no Claude Code CLI at $claude (set CLAUDE)" >&2; exit 1; }
version=$("$claude" --version | cut -d' ' -f1)
echo "regenerate: Claude Code $version, scratch $scratch" >&2

# capture NAME SCRIPT EXPECTED_STATUS PROMPT [RETRIES [FLAG...]]
capture() {
    name=$1 script=$2 expected=$3 prompt=$4 retries=${5:-1}
    shift 4
    [ $# -gt 0 ] && shift
    if [ -n "$only" ]; then
        case " $only " in *" $name "*) ;; *) return 0 ;; esac
    fi
    dir="$scratch/$name"
    rm -rf "$dir"
    mkdir -p "$dir/home" "$dir/workspace"
    printf 'golden hello\n' > "$dir/workspace/hello.txt"
    python3 "$here/fake_anthropic.py" --script "$script" --port-file "$dir/port" \
        --log "$dir/requests.jsonl" --read "$dir/workspace/hello.txt" &
    fake=$!
    tries=0
    until [ -s "$dir/port" ]; do
        tries=$((tries + 1))
        if [ "$tries" -gt 100 ] || ! kill -0 "$fake" 2>/dev/null; then
            echo "regenerate: the fake did not start" >&2
            kill "$fake" 2>/dev/null || true
            exit 1
        fi
        sleep 0.1
    done
    status=0
    (cd "$dir/workspace" && env -i PATH="$PATH" HOME="$dir/home" \
        ANTHROPIC_BASE_URL="http://127.0.0.1:$(cat "$dir/port")" ANTHROPIC_API_KEY=sk-golden-fake \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_MAX_RETRIES="$retries" \
        "$claude" -p "$prompt" --output-format stream-json --verbose \
        --model claude-fake-model --allowedTools Read "$@" \
        > "$dir/out.jsonl" 2> "$dir/stderr.txt") || status=$?
    kill "$fake" 2>/dev/null || true
    wait "$fake" 2>/dev/null || true
    if [ "$status" != "$expected" ]; then
        echo "regenerate: $name: claude exited $status, expected $expected; stderr:" >&2
        cat "$dir/stderr.txt" >&2
        exit 1
    fi
    # The scratch paths become fixed placeholders so a regeneration diffs only where the
    # CLI's output changed.
    sed -e "s#$dir/workspace#/workspace#g" -e "s#$dir/home#/home/golden#g" \
        "$dir/out.jsonl" > "$here/$name.jsonl"
    echo "regenerate: $name.jsonl: $(wc -l < "$here/$name.jsonl") lines" >&2
}

only="$*"
capture text text 0 "Say hello"
capture tool tool 0 "Read hello.txt and tell me what it says"
capture error error 1 "Say hello"
# Claude Code switches after the third 529 in a row, within four retries.
capture fallback fallback 0 "Say hello" 4 --fallback-model claude-fake-fallback
printf '%s\n' "$version" > "$here/VERSION"
