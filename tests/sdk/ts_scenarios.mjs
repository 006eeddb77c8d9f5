// Scenarios of the real TypeScript `@anthropic-ai/claude-agent-sdk` against reasonix
// (tests/claude_ts_sdk.rs).
//
// Run as `node ts_scenarios.mjs SCENARIO` with REASONIX_TS_SDK_DIR naming the folder the SDK was
// installed into (`npm install --prefix DIR`), REASONIX_BIN the binary and SDK_WORKSPACE the
// working directory; the Rust test has started the loopback fake model with the replies each
// scenario expects. A scenario prints `ok SCENARIO` and exits 0, or throws (exit 1) with what
// differed. Nothing here skips: the Rust side decides whether the SDK is present.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const sdkEntry = join(
  process.env.REASONIX_TS_SDK_DIR,
  "node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs",
);
const { createSdkMcpServer, query, tool } = await import(pathToFileURL(sdkEntry).href);
// The SDK's own zod (a dependency of it), for an in-process tool's input schema.
const { z } = await import(
  pathToFileURL(join(process.env.REASONIX_TS_SDK_DIR, "node_modules/zod/index.js")).href
);
const WORKSPACE = process.env.SDK_WORKSPACE;

function options(extra = {}) {
  return {
    pathToClaudeCodeExecutable: process.env.REASONIX_BIN,
    cwd: WORKSPACE,
    ...extra,
  };
}

function expect(condition, what, seen) {
  if (!condition) {
    throw new Error(`${what}; messages: ${JSON.stringify(seen)}`);
  }
}

async function collect(prompt, opts) {
  const seen = [];
  for await (const message of query({ prompt, options: opts })) {
    seen.push(message);
  }
  return seen;
}

function blocks(seen, type, blockType) {
  return seen
    .filter((m) => m.type === type)
    .flatMap((m) => m.message.content)
    .filter((b) => typeof b === "object" && b.type === blockType);
}

async function queryBasic() {
  const seen = await collect("What does a.txt say?", options());
  expect(seen[0].type === "system" && seen[0].subtype === "init", "first is system/init", seen);
  const uses = blocks(seen, "assistant", "tool_use");
  expect(uses.length === 1 && uses[0].name === "Read", "one Read tool_use", seen);
  expect(uses[0].input.file_path === "a.txt", "Claude's input keys", seen);
  const results = blocks(seen, "user", "tool_result");
  expect(results.length === 1 && results[0].tool_use_id === uses[0].id, "the result answers the use", seen);
  expect(JSON.stringify(results[0].content).includes("hello from a"), "the file's text in the result", seen);
  const texts = blocks(seen, "assistant", "text").map((b) => b.text);
  expect(texts.includes("It says hello."), "the answer arrives", seen);
  const result = seen[seen.length - 1];
  expect(result.type === "result" && result.subtype === "success" && !result.is_error, "a success result last", seen);
  expect(result.usage.output_tokens > 0 && "input_tokens" in result.usage, "usage in Claude's keys", seen);
}

async function canUseToolDeny() {
  const asked = [];
  const canUseTool = async (name, input) => {
    asked.push([name, input]);
    return { behavior: "deny", message: "writes are not allowed in this test" };
  };
  const seen = await collect("Write out.txt", options({ canUseTool }));
  const [[name, input] = []] = asked;
  expect(
    asked.length === 1 && name === "Write" && input.file_path === "out.txt" && input.content === "x",
    `asked once about the write in Claude's names and keys, got ${JSON.stringify(asked)}`,
    seen,
  );
  expect(!existsSync(join(WORKSPACE, "out.txt")), "out.txt untouched", seen);
  const results = blocks(seen, "user", "tool_result");
  expect(
    results.some((r) => JSON.stringify(r.content).includes("writes are not allowed in this test")),
    "the deny message is the tool result",
    seen,
  );
  const result = seen[seen.length - 1];
  expect(result.type === "result", "a result last", seen);
  expect(
    result.permission_denials.some((d) => d.tool_name === "Write"),
    "the denial is listed",
    seen,
  );
}

/// A prompt stream of the given messages, kept open until `done` resolves: the SDK talks to
/// the CLI over stdin for as long as the stream lasts.
async function* prompts(texts, done = Promise.resolve()) {
  for (const text of texts) {
    yield { type: "user", message: { role: "user", content: text }, parent_tool_use_id: null };
  }
  await done;
}

async function hookBlocksBash() {
  const calls = [];
  const noBash = async (input) => {
    calls.push(input);
    return {
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "bash is off today",
      },
    };
  };
  const opts = options({
    hooks: { PreToolUse: [{ matcher: "Bash", hooks: [noBash] }] },
    permissionMode: "bypassPermissions",
    allowDangerouslySkipPermissions: true,
  });
  const seen = await collect("Run the script", opts);
  expect(calls.length === 1 && calls[0].tool_name === "Bash", `the hook saw one Bash call, got ${JSON.stringify(calls)}`, seen);
  expect(calls[0].tool_input.command === "touch ran.txt", "the hook saw the command", seen);
  expect(!existsSync(join(WORKSPACE, "ran.txt")), "the command did not run", seen);
  const results = blocks(seen, "user", "tool_result");
  expect(results.some((r) => JSON.stringify(r.content).includes("bash is off today")), "the reason is the tool result", seen);
}

async function sdkMcpTool() {
  const added = [];
  const add = tool("add", "Add two numbers", { a: z.number(), b: z.number() }, async (args) => {
    added.push([args.a, args.b]);
    return { content: [{ type: "text", text: `sum is ${args.a + args.b}` }] };
  });
  const calc = createSdkMcpServer({ name: "calc", version: "1.0.0", tools: [add] });
  const opts = options({ mcpServers: { calc }, allowedTools: ["mcp__calc__add"] });
  const seen = await collect("Add 2 and 3", opts);
  expect(JSON.stringify(added) === "[[2,3]]", `the in-process tool ran once, got ${JSON.stringify(added)}`, seen);
  const uses = blocks(seen, "assistant", "tool_use");
  expect(uses.length === 1 && uses[0].name === "mcp__calc__add", "the model called the SDK tool", seen);
  const results = blocks(seen, "user", "tool_result");
  expect(results.some((r) => JSON.stringify(r.content).includes("sum is 5")), "its result came back", seen);
}

async function twoTurnsAndInterrupt() {
  let finish;
  const done = new Promise((resolve) => (finish = resolve));
  const q = query({
    prompt: prompts(["first question", "second question", "now talk for a long time"], done),
    options: options({ includePartialMessages: true }),
  });
  const seen = [];
  const results = [];
  let interruptedAt;
  for await (const message of q) {
    seen.push(message);
    if (message.type === "result") {
      results.push(message);
      if (results.length === 3) break;
    }
    // The third answer streams and never ends on its own: stop it.
    if (results.length === 2 && interruptedAt === undefined && message.type === "stream_event") {
      interruptedAt = Date.now();
      await q.interrupt();
    }
  }
  const took = Date.now() - interruptedAt;
  finish();
  const texts = blocks(seen, "assistant", "text").map((b) => b.text);
  expect(texts.includes("first answer") && texts.includes("second answer"), "two turns answered", seen);
  expect(new Set(results.map((r) => r.session_id)).size === 1, "one session for every turn", seen);
  expect(interruptedAt !== undefined && took < 1000, `the interrupted turn ended within 1 s (took ${took} ms)`, seen);
}

async function systemPromptAndStructuredOutput() {
  const schema = {
    type: "object",
    properties: { answer: { type: "string" } },
    required: ["answer"],
  };
  const opts = options({
    systemPrompt: "You are the TypeScript test agent.",
    outputFormat: { type: "json_schema", schema },
  });
  const seen = await collect("Answer in JSON", opts);
  const result = seen[seen.length - 1];
  expect(result.type === "result" && !result.is_error, "a success result", seen);
  expect(
    JSON.stringify(result.structured_output) === JSON.stringify({ answer: "yes" }),
    "the answer as structured_output",
    seen,
  );
}

const SCENARIOS = {
  system_prompt_and_structured_output: systemPromptAndStructuredOutput,
  query_basic: queryBasic,
  can_use_tool_deny: canUseToolDeny,
  hook_blocks_bash: hookBlocksBash,
  sdk_mcp_tool: sdkMcpTool,
  client_two_turns_and_interrupt: twoTurnsAndInterrupt,
};

const name = process.argv[2];
await SCENARIOS[name]();
console.log(`ok ${name}`);
// The SDK's child and its stdin may still be open; the scenario is over.
process.exit(0);
