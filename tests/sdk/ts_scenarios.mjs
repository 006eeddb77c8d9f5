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
const { query } = await import(pathToFileURL(sdkEntry).href);
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

const SCENARIOS = { query_basic: queryBasic, can_use_tool_deny: canUseToolDeny };

const name = process.argv[2];
await SCENARIOS[name]();
console.log(`ok ${name}`);
