"""Scenarios of the real Python `claude-agent-sdk` against reasonix (tests/claude_sdk.rs).

Run as `python3 sdk_scenarios.py SCENARIO [ARG...]` with REASONIX_BIN naming the binary and
SDK_WORKSPACE the working directory; the Rust test has started the loopback fake model with
the replies each scenario expects and pointed reasonix's config at it. A scenario prints
`ok SCENARIO` and exits 0, or raises (exit 1) with what differed. Nothing here skips: the
Rust side decides whether the SDK is present.
"""

import json
import os
import sys
import time

import anyio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

WORKSPACE = os.environ["SDK_WORKSPACE"]


def options(**extra):
    return ClaudeAgentOptions(cli_path=os.environ["REASONIX_BIN"], cwd=WORKSPACE, **extra)


def blocks(messages, kind, block):
    return [b for m in messages if isinstance(m, kind) for b in m.content if isinstance(b, block)]


def expect(condition, what, seen):
    if not condition:
        raise AssertionError(f"{what}; messages: {seen!r}")


async def one_prompt(text):
    """A prompt stream of one message: the SDK keeps stdin open for its callbacks."""
    yield {"type": "user", "message": {"role": "user", "content": text}}


async def collect(prompt, opts):
    return [m async for m in query(prompt=prompt, options=opts)]


async def query_basic():
    seen = await collect("What does a.txt say?", options())
    expect(isinstance(seen[0], SystemMessage) and seen[0].subtype == "init", "first is system/init", seen)
    texts = [b.text for b in blocks(seen, AssistantMessage, TextBlock)]
    expect("Let me look." in texts and "It says hello." in texts, "both texts arrive", seen)
    uses = blocks(seen, AssistantMessage, ToolUseBlock)
    expect(len(uses) == 1 and uses[0].name == "Read", "one Read tool_use", seen)
    expect(uses[0].input.get("file_path") == "a.txt", "Claude's input keys", seen)
    results = blocks(seen, UserMessage, ToolResultBlock)
    expect(len(results) == 1 and results[0].tool_use_id == uses[0].id, "the result answers the use", seen)
    expect("hello from a" in json.dumps(results[0].content), "the file's text in the result", seen)
    result = seen[-1]
    expect(isinstance(result, ResultMessage) and result.subtype == "success" and not result.is_error, "a success result last", seen)
    expect(result.usage is not None and result.usage.get("output_tokens", 0) > 0, "usage with output tokens", seen)
    expect("input_tokens" in result.usage, "usage with input tokens", seen)


async def can_use_tool_deny():
    asked = []

    async def gate(name, tool_input, _context):
        asked.append((name, dict(tool_input)))
        return PermissionResultDeny(message="writes are not allowed in this test")

    seen = await collect(one_prompt("Write out.txt"), options(can_use_tool=gate))
    expect(asked == [("Write", {"file_path": "out.txt", "content": "x"})], f"asked once about the write, got {asked}", seen)
    expect(not os.path.exists(os.path.join(WORKSPACE, "out.txt")), "out.txt untouched", seen)
    results = blocks(seen, UserMessage, ToolResultBlock)
    expect(any("writes are not allowed in this test" in json.dumps(r.content) for r in results), "the deny message is the tool result", seen)
    expect(isinstance(seen[-1], ResultMessage), "a result last", seen)


async def can_use_tool_rewrite():
    """The callback allows the model's write of out.txt as a write of argv[2]; argv[3] says
    whether the rewritten call must be refused (`denied`) or run (`runs`). Writes under
    secret/ are denied by --disallowedTools."""
    target, outcome = sys.argv[2], sys.argv[3]
    asked = []

    async def gate(name, tool_input, _context):
        asked.append((name, dict(tool_input)))
        return PermissionResultAllow(updated_input={**tool_input, "file_path": target})

    opts = options(can_use_tool=gate, disallowed_tools=["Write(secret/**)"])
    seen = await collect(one_prompt("Write out.txt"), opts)
    expect(asked == [("Write", {"file_path": "out.txt", "content": "x"})], f"asked once about the model's write, got {asked}", seen)
    uses = blocks(seen, AssistantMessage, ToolUseBlock)
    expect([u.input for u in uses] == [{"file_path": "out.txt", "content": "x"}], "the tool_use block is the call the model made", seen)
    result = seen[-1]
    expect(isinstance(result, ResultMessage), "a result last", seen)
    denials = result.permission_denials or []
    results = blocks(seen, UserMessage, ToolResultBlock)
    if outcome == "denied":
        expect([d["tool_name"] for d in denials] == ["Write"], f"the rewritten write is a permission denial, got {denials}", seen)
        expect(len(results) == 1 and results[0].is_error, "the tool result is the refusal", seen)
    else:
        expect(denials == [], f"no permission denials, got {denials}", seen)
        expect(len(results) == 1 and not results[0].is_error, "the rewritten write succeeded", seen)


async def hook_blocks_bash():
    calls = []

    async def no_bash(hook_input, tool_use_id, _context):
        calls.append(hook_input)
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "bash is off today"}}

    opts = options(hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[no_bash])]},
                   permission_mode="bypassPermissions")
    seen = await collect(one_prompt("Run the script"), opts)
    expect(len(calls) == 1 and calls[0]["tool_name"] == "Bash", f"the hook saw one Bash call, got {calls}", seen)
    expect(calls[0]["tool_input"].get("command") == "touch ran.txt", "the hook saw the command", seen)
    expect(not os.path.exists(os.path.join(WORKSPACE, "ran.txt")), "the command did not run", seen)
    results = blocks(seen, UserMessage, ToolResultBlock)
    expect(any("bash is off today" in json.dumps(r.content) for r in results), "the reason is the tool result", seen)


async def sdk_mcp_tool():
    added = []

    @tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(args):
        added.append((args["a"], args["b"]))
        return {"content": [{"type": "text", "text": f"sum is {args['a'] + args['b']}"}]}

    server = create_sdk_mcp_server("calc", tools=[add])
    opts = options(mcp_servers={"calc": server}, allowed_tools=["mcp__calc__add"])
    seen = await collect(one_prompt("Add 2 and 3"), opts)
    expect(added == [(2, 3)], f"the in-process tool ran once, got {added}", seen)
    uses = blocks(seen, AssistantMessage, ToolUseBlock)
    expect([u.name for u in uses] == ["mcp__calc__add"], "the model called the SDK tool", seen)
    results = blocks(seen, UserMessage, ToolResultBlock)
    expect(any("sum is 5" in json.dumps(r.content) for r in results), "its result came back", seen)


async def client_two_turns_and_interrupt():
    # Partial messages show the endless third answer streaming before it is interrupted.
    async with ClaudeSDKClient(options=options(include_partial_messages=True)) as client:
        await client.query("first question")
        first = [m async for m in client.receive_response()]
        expect(any("first answer" == b.text for b in blocks(first, AssistantMessage, TextBlock)), "turn one answered", first)
        session = first[-1].session_id
        await client.query("second question")
        second = [m async for m in client.receive_response()]
        expect(any("second answer" == b.text for b in blocks(second, AssistantMessage, TextBlock)), "turn two answered", second)
        expect(second[-1].session_id == session, "one session for both turns", second)
        expect(second[-1].num_turns >= 1, "the second result counts its turns", second)

        await client.query("now talk for a long time")
        streamed = []
        interrupted_at = None
        async for message in client.receive_messages():
            streamed.append(message)
            if interrupted_at is None and isinstance(message, StreamEvent):
                # The model has begun its endless answer: stop it.
                interrupted_at = time.monotonic()
                await client.interrupt()
            if isinstance(message, ResultMessage):
                break
        took = time.monotonic() - interrupted_at
        expect(took < 1.0, f"the interrupted turn ended within 1 s (took {took:.2f} s)", streamed)
        expect(isinstance(streamed[-1], ResultMessage), "the interrupted turn has a result", streamed)

        await client.set_permission_mode("acceptEdits")
        await client.set_model(None)
        status = await client.get_mcp_status()
        expect(isinstance(status.get("mcpServers"), list), "mcp_status lists servers", status)
        usage = await client.get_context_usage()
        expect(usage.get("totalTokens", 0) > 0 and usage.get("maxTokens", 0) > 0, "context usage has totals", usage)


async def fallback_model():
    """The primary model is overloaded (the fake answers 529); the option's fallback answers."""
    seen = await collect("Hello", options(fallback_model="backup"))
    switched = [m for m in seen if isinstance(m, SystemMessage) and m.subtype == "model_fallback"]
    expect(len(switched) == 1, "one model_fallback message", seen)
    expect(switched[0].data.get("fallback_model") == "backup-model", "naming the fallback", seen)
    expect(switched[0].data.get("trigger") == "overloaded", "because the primary is overloaded", seen)
    answers = [m for m in seen if isinstance(m, AssistantMessage)]
    expect(answers and all(m.model == "backup-model" for m in answers), "the answer is the fallback's", seen)
    result = seen[-1]
    expect(isinstance(result, ResultMessage) and not result.is_error, "a success result last", seen)
    expect(result.result == "From the backup.", "with the fallback's answer", seen)


async def client_set_model():
    """`set_model` between turns: the next turn's request and messages are the new model's."""
    async with ClaudeSDKClient(options=options()) as client:
        await client.query("first question")
        first = [m async for m in client.receive_response()]
        models = [m.model for m in first if isinstance(m, AssistantMessage)]
        expect(models == ["fake-model"], "turn one is the configured model's", first)
        await client.set_model("backup")
        await client.query("second question")
        second = [m async for m in client.receive_response()]
        models = [m.model for m in second if isinstance(m, AssistantMessage)]
        expect(models == ["backup-model"], "turn two names the model set", second)
        expect(isinstance(second[-1], ResultMessage) and not second[-1].is_error, "a success result", second)
        usage = second[-1].model_usage or {}
        expect(sorted(usage) == ["backup-model", "fake-model"], "each model's usage is its own", second)
        expect(usage["fake-model"]["inputTokens"] == 100 and usage["backup-model"]["inputTokens"] == 100, "one turn each", second)


SCENARIOS = {
    "query_basic": query_basic,
    "can_use_tool_deny": can_use_tool_deny,
    "can_use_tool_rewrite": can_use_tool_rewrite,
    "hook_blocks_bash": hook_blocks_bash,
    "sdk_mcp_tool": sdk_mcp_tool,
    "client_two_turns_and_interrupt": client_two_turns_and_interrupt,
    "fallback_model": fallback_model,
    "client_set_model": client_set_model,
}

if __name__ == "__main__":
    name = sys.argv[1]
    anyio.run(SCENARIOS[name])
    print(f"ok {name}")
