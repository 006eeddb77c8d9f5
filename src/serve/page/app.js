// The reasonix browser page: login, the conversation list, and one conversation driven by
// the server's event stream (the same events as `--output-format stream-json`). Plain DOM,
// no framework, no inline script (the CSP forbids it). Every user-visible string comes from
// the server's message catalog through t(id, args) (see MESSAGES below).
"use strict";

// The page's strings, id → text, in the server's language: the message catalog in src/i18n
// (`page.rs` names the ids), fetched from /api/messages before anything is drawn.
let MESSAGES = {};

async function loadMessages() {
  try {
    const catalog = await api("GET", "/api/messages");
    MESSAGES = catalog.messages || {};
    document.documentElement.lang = catalog.lang || "en";
  } catch (_) { MESSAGES = {}; }
}

function t(id, args) {
  let text = MESSAGES[id] !== undefined ? MESSAGES[id] : id;
  for (const [key, value] of Object.entries(args || {})) text = text.split("{" + key + "}").join(String(value));
  return text;
}

const $ = (id) => document.getElementById(id);

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "text") node.textContent = value;
    else if (key === "html") node.innerHTML = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children || []) if (child) node.append(child);
  return node;
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  let data = null;
  try { data = await response.json(); } catch (_) { data = null; }
  if (!response.ok) {
    const error = new Error((data && data.error) || response.status + "");
    error.status = response.status;
    throw error;
  }
  return data;
}

// ---- Markdown: escape first, then a small safe subset (fences, inline code, bold, italics,
// headings, lists). No raw HTML from the model ever reaches the page.
function escapeHtml(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function inline(text) {
  return text
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>");
}

function markdown(source) {
  const out = [];
  const parts = escapeHtml(source).split(/^```.*$/m);
  parts.forEach((part, i) => {
    if (i % 2 === 1) {
      out.push("<pre><code>" + part.replace(/^\n/, "") + "</code></pre>");
      return;
    }
    let list = null;
    for (const line of part.split("\n")) {
      const item = line.match(/^\s*(?:[-*]|\d+\.)\s+(.*)$/);
      if (item) {
        if (!list) { list = []; }
        list.push("<li>" + inline(item[1]) + "</li>");
        continue;
      }
      if (list) { out.push("<ul>" + list.join("") + "</ul>"); list = null; }
      const heading = line.match(/^(#{1,4})\s+(.*)$/);
      if (heading) out.push("<h" + (heading[1].length + 2) + ">" + inline(heading[2]) + "</h" + (heading[1].length + 2) + ">");
      else if (line.trim()) out.push("<p>" + inline(line) + "</p>");
    }
    if (list) out.push("<ul>" + list.join("") + "</ul>");
  });
  return out.join("");
}

// ---- Diffs of file edits as the server computed them (`serve/edits.rs`): the file before and
// after, in hunks with context and line numbers.
function renderDiff(diff) {
  const node = el("div", { class: "diff", "data-path": diff.path || "" });
  const signs = { keep: " ", del: "-", add: "+" };
  const lines = diff.lines || [];
  for (const line of lines) {
    if (line.kind === "hunk") node.append(el("span", { class: "hunk", text: line.text }));
    else node.append(el("span", { class: line.kind }, [el("span", { class: "ln", text: String(line.line) }), document.createTextNode(signs[line.kind] + " " + line.text)]));
  }
  if (!lines.length) node.append(el("span", { class: "hunk", text: t("diff.none") }));
  if (diff.omitted) node.append(el("span", { class: "hunk", text: t("diff.more", { lines: diff.omitted }) }));
  return node;
}

// A stored conversation has no snapshots of its files: its edits show the text each call
// asked to replace and put in place, from the call's arguments.
function diffLines(oldText, newText) {
  // A file's final newline is not a line of its own.
  oldText = (oldText || "").replace(/\n$/, "");
  newText = (newText || "").replace(/\n$/, "");
  const node = el("div", { class: "diff" });
  for (const line of (oldText || "").split("\n")) if (oldText) node.append(el("span", { class: "del", text: "- " + line }));
  for (const line of (newText || "").split("\n")) if (newText) node.append(el("span", { class: "add", text: "+ " + line }));
  return node;
}

function requestedChange(name, input) {
  if (!input || typeof input !== "object") return null;
  if (name === "write_file") return diffLines("", input.content || "");
  if (name === "edit_file") return diffLines(input.old_string || "", input.new_string || "");
  if (name === "multi_edit" && Array.isArray(input.edits)) {
    const box = el("div");
    for (const edit of input.edits) box.append(diffLines(edit.old_string || "", edit.new_string || ""));
    return box;
  }
  return null;
}

// ---- State of the open conversation.
const state = { session: null, title: "", model: "", workspace: "", source: null, assistant: null, reasoning: null, tools: {}, running: false, presets: [] };

function transcript() { return $("transcript"); }

function scrollDown() {
  const box = transcript();
  box.scrollTop = box.scrollHeight;
}

function add(node) {
  // The empty state goes with the first thing the conversation shows.
  for (const empty of transcript().querySelectorAll(".empty")) empty.remove();
  transcript().append(node);
  scrollDown();
  return node;
}

function notice(text) { add(el("p", { class: "notice", role: "status", text })); }

function setRunning(running) {
  state.running = running;
  $("interrupt").disabled = !running;
  // A composition is chosen before the first prompt; a turn locks it.
  if (running) $("composition").disabled = true;
}

// ---- The pickers above the composer: the composition (before the first prompt) and the
// model (from the next turn on).
function fillModels(models, current) {
  const select = $("model");
  const names = (models || []).slice();
  if (current && !names.includes(current)) names.unshift(current);
  select.replaceChildren(...names.map((name) => el("option", { value: name, text: name })));
  if (current) select.value = current;
}

async function loadModels(current) {
  try {
    const listed = await api("GET", "/api/models");
    fillModels(listed.models, current || listed.current);
  } catch (_) { /* the picker stays as it was */ }
}

function fillCompositions(binding) {
  const select = $("composition");
  const ids = state.presets.map((p) => p.id);
  const options = state.presets.map((p) => el("option", { value: p.id, text: p.name ? p.name + " (" + p.id + ")" : p.id }));
  if (binding && !ids.includes(binding.id)) options.unshift(el("option", { value: binding.id, text: binding.id }));
  select.replaceChildren(...options);
  if (binding) {
    select.value = binding.id;
    select.disabled = !!binding.locked;
    select.title = binding.locked ? t("composition.locked", { name: binding.id }) : "";
  }
}

async function loadCompositions(binding) {
  try { state.presets = (await api("GET", "/api/agent-presets")).presets || []; } catch (_) { state.presets = []; }
  fillCompositions(binding);
}

async function switchModel() {
  if (!state.session) return;
  try { await api("POST", "/api/sessions/" + state.session + "/model", { model: $("model").value }); } catch (error) { notice(t("error.request", { error: error.message })); }
}

async function bindComposition() {
  if (!state.session) return;
  try {
    const bound = await api("POST", "/api/sessions/" + state.session + "/agent-composition", { id: $("composition").value });
    await openSession(bound.session);
    notice(t("composition.bound", { id: bound.agentComposition.id }));
  } catch (error) {
    notice(t("error.request", { error: error.message }));
  }
}

// The answer of a command typed in the composer (`/help`, `/mcp`…): what was typed, then the
// server's text as it is.
function commandOutput(event) {
  endBlocks();
  add(el("div", { class: "command", "data-command": event.command }, [
    el("div", { class: "msg user", text: event.typed || "/" + event.command }),
    el("pre", { text: event.text || "" }),
  ]));
}

function formatStatus(status) {
  if (!status) return "";
  const parts = [];
  const tokens = (status.prompt_tokens || 0) + (status.completion_tokens || 0);
  parts.push(t("status.tokens", { tokens }));
  if (status.cache_hit !== null && status.cache_hit !== undefined) parts.push(t("status.cache", { ratio: Math.round(status.cache_hit * 100) + "%" }));
  if (status.context_tokens) parts.push(t("status.context", { tokens: status.context_tokens }));
  if (status.cost_usd) parts.push(t("status.cost", { cost: status.cost_usd.toFixed(4) }));
  return parts.join(" · ");
}

function assistantBlock() {
  if (!state.assistant) {
    const node = add(el("div", { class: "msg assistant" }));
    state.assistant = { node, text: "" };
  }
  return state.assistant;
}

function appendText(text) {
  const block = assistantBlock();
  block.text += text;
  block.node.innerHTML = markdown(block.text);
  scrollDown();
}

function appendReasoning(text) {
  if (!state.reasoning) {
    const body = el("div", { class: "reasoning" });
    const node = add(el("details", { class: "msg" }, [el("summary", { text: "…" }), body]));
    state.reasoning = { node, body, text: "" };
  }
  state.reasoning.text += text;
  state.reasoning.body.textContent = state.reasoning.text;
}

function endBlocks() { state.assistant = null; state.reasoning = null; }

function toolCard(id, name, input, change) {
  endBlocks();
  const summary = typeof input === "object" && input !== null ? (input.path || input.command || input.pattern || "") : String(input || "");
  const output = el("pre", { class: "output", "data-state": "running", text: t("tool.running") });
  const card = add(el("div", { class: "card tool", "data-tool": name }, [
    el("h3", {}, [el("code", { text: name }), document.createTextNode(" " + summary)]),
    change,
    output,
  ]));
  state.tools[id] = { card, output, change, approval: null, done: false };
}

// The tool card an approval is about: the latest one of that tool still without a result
// or an approval of its own (the gate asks before the call runs, one call at a time).
function toolAwaiting(name) {
  const tools = Object.values(state.tools).filter((tool) => !tool.done && !tool.approval && tool.card.dataset.tool === name);
  return tools.length ? tools[tools.length - 1] : null;
}

function toolStatus(tool, waiting) {
  tool.output.dataset.state = waiting ? "waiting" : "running";
  tool.output.textContent = waiting ? t("tool.waiting") : t("tool.running");
}

function toolResult(event) {
  const tool = state.tools[event.id];
  if (!tool) return;
  tool.done = true;
  // The result takes the approval's place: its diff and buttons go, so the change shows once.
  if (tool.approval) {
    answeredCard(tool.approval);
    tool.approval.replaceChildren();
    tool.approval.hidden = true;
  }
  tool.output.dataset.state = "done";
  // What the call did to its file, read around it by the server.
  if (event.diff) {
    const diff = renderDiff(event.diff);
    if (tool.change) tool.change.hidden = false;
    if (tool.change) tool.change.replaceWith(diff); else tool.card.insertBefore(diff, tool.output);
    tool.change = diff;
  }
  tool.output.textContent = event.content || "";
  if (event.is_error) tool.card.classList.add("error");
}

function actions(buttons) {
  return el("div", { class: "actions" }, buttons);
}

function answeredCard(card) {
  for (const button of card.querySelectorAll("button, textarea, input")) button.disabled = true;
  card.dataset.answered = "true";
  // Answered: the call runs now (or is refused, which its result says).
  const tool = Object.values(state.tools).find((tool) => tool.approval === card);
  if (tool && !tool.done) toolStatus(tool, false);
}

async function answer(path, body, card) {
  try {
    await api("POST", "/api/sessions/" + state.session + path, body);
    answeredCard(card);
  } catch (error) {
    notice(t("error.request", { error: error.message }));
  }
}

function approvalCard(event) {
  endBlocks();
  const card = el("div", { class: "card approval", "data-id": String(event.id), role: "group" });
  const send = (choice) => answer("/approvals/" + event.id, { answer: choice }, card);
  const once = el("button", { class: "primary", type: "button", "data-answer": "once", text: t("approval.once") + " (y)", onclick: () => send("once") });
  card.append(
    el("h3", { text: t("approval.title", { tool: event.tool }) + (event.subject ? " " + event.subject : "") }),
    event.diff ? renderDiff(event.diff) : el("pre", { text: JSON.stringify(event.args, null, 2) }),
    actions([
      once,
      event.session_scope ? el("button", { type: "button", "data-answer": "session", text: t("approval.session") + " (s)", onclick: () => send("session") }) : null,
      event.always_scope ? el("button", { type: "button", "data-answer": "always", text: t("approval.always") + " (a)", onclick: () => send("always") }) : null,
      el("button", { type: "button", "data-answer": "deny", text: t("approval.deny") + " (n)", onclick: () => send("deny") }),
    ]),
  );
  card.addEventListener("keydown", (e) => {
    const keys = { y: "once", s: "session", a: "always", n: "deny" };
    if (keys[e.key] && !card.dataset.answered) { e.preventDefault(); send(keys[e.key]); }
  });
  // In the card of the call it is about, in place of the call's requested change, and the
  // card says it waits; a call the page has no card for gets it at the end.
  const tool = toolAwaiting(event.tool);
  if (tool) {
    tool.approval = card;
    if (tool.change && event.diff) tool.change.hidden = true;
    tool.card.insertBefore(card, tool.output);
    toolStatus(tool, true);
    scrollDown();
  } else add(card);
  once.focus();
}

function askCard(event) {
  endBlocks();
  const card = el("div", { class: "card ask", "data-id": String(event.id) });
  const buttons = (event.options || []).map((option, i) =>
    el("button", { type: "button", text: (i + 1) + ". " + option, onclick: () => answer("/asks/" + event.id, { option: i }, card) }));
  const free = event.allow_free_text ? el("input", { type: "text", "aria-label": t("ask.answer") }) : null;
  if (free) free.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); answer("/asks/" + event.id, { text: free.value }, card); } });
  card.append(
    el("h3", { text: t("ask.title") }),
    el("div", { html: markdown(event.question || "") }),
    actions(buttons),
    free,
    actions([
      free ? el("button", { class: "primary", type: "button", text: t("ask.answer"), onclick: () => answer("/asks/" + event.id, { text: free.value }, card) }) : null,
      el("button", { type: "button", text: t("ask.dismiss"), onclick: () => answer("/asks/" + event.id, {}, card) }),
    ]),
  );
  add(card);
  (buttons[0] || free || card).focus();
}

function planCard(event) {
  endBlocks();
  const card = el("div", { class: "card plan", "data-id": String(event.id) });
  const feedback = el("textarea", { rows: "2", placeholder: t("plan.feedback"), "aria-label": t("plan.feedback") });
  const decide = (decision) => answer("/plans/" + event.id, { decision, feedback: feedback.value }, card);
  const approve = el("button", { class: "primary", type: "button", text: t("plan.approve"), onclick: () => decide("approve") });
  card.append(
    el("h3", { text: t("plan.title") }),
    el("div", { html: markdown(event.plan || "") }),
    actions([
      approve,
      el("button", { type: "button", text: t("plan.approve_edits"), onclick: () => decide("approve_accept_edits") }),
    ]),
    feedback,
    actions([el("button", { type: "button", text: t("plan.keep"), onclick: () => decide("keep_planning") })]),
  );
  add(card);
  approve.focus();
}

function handle(event) {
  switch (event.type) {
    case "turn_start":
      // The first prompt titles the conversation, here and in the list.
      if (!state.title) { showTitle(event.text); refreshSessions(); }
      endBlocks();
      add(el("div", { class: "msg user", text: event.text }));
      setRunning(true);
      break;
    case "text": appendText(event.text); break;
    case "reasoning": appendReasoning(event.text); break;
    case "tool_use": toolCard(event.id, event.name, event.input, null); break;
    case "tool_result": toolResult(event); break;
    case "approval": approvalCard(event); break;
    case "ask_request": askCard(event); break;
    case "plan_review": planCard(event); break;
    case "answered": {
      const card = transcript().querySelector('[data-id="' + event.id + '"]');
      if (card) answeredCard(card);
      break;
    }
    case "notice": notice(event.message); break;
    case "turn_end":
      endBlocks();
      setRunning(false);
      $("status").textContent = formatStatus(event.status);
      if (event.outcome === "interrupted") notice(t("turn.interrupted"));
      if (event.outcome === "error") notice(t("turn.error", { error: event.error || "" }));
      for (const card of transcript().querySelectorAll(".card[data-id]:not([data-answered])")) answeredCard(card);
      break;
    case "posture":
      $("posture").value = event.posture;
      notice(t("mode.changed", { posture: t("mode." + event.posture) }));
      break;
    case "plan_mode":
      $("planning").checked = event.planning;
      notice(event.planning ? t("mode.plan_on") : t("mode.plan_off"));
      break;
    case "model":
      if (![...$("model").options].some((o) => o.value === event.model)) $("model").append(el("option", { value: event.model, text: event.model }));
      $("model").value = event.model;
      state.model = event.model;
      for (const shown of transcript().querySelectorAll(".empty .model")) shown.textContent = event.model;
      notice(t("model.changed", { model: event.model }));
      break;
    case "command": commandOutput(event); break;
    case "title": showTitle(event.title); refreshSessions(); break;
    case "session_replaced":
      // `/new`, `/clear`, or a composition chosen: the page follows to the new conversation.
      if (event.session && event.session !== state.session) {
        api("GET", "/api/sessions/" + event.session).then(openSession).catch(() => refreshSessions());
      }
      break;
    case "shutdown": notice(t("server.shutdown")); setRunning(false); break;
    default: break;
  }
}

function renderHistory(messages) {
  for (const message of messages || []) {
    if (message.role === "user") add(el("div", { class: "msg user", text: message.content }));
    else if (message.role === "assistant") {
      if (message.content) { appendText(message.content); endBlocks(); }
      for (const call of message.tool_calls || []) {
        let input = call.function && call.function.arguments;
        try { input = JSON.parse(input); } catch (_) { /* shown as text */ }
        const name = call.function && call.function.name;
        toolCard(call.id, name, input, requestedChange(name, input));
      }
    } else if (message.role === "tool") toolResult({ id: message.tool_call_id, content: message.content });
  }
}

async function openSession(described) {
  // Opened already (a command's answer and its `session_replaced` event both lead here).
  if (state.session === described.id && state.source && state.source.readyState !== EventSource.CLOSED) return;
  if (state.source) state.source.close();
  state.session = described.id;
  state.tools = {};
  endBlocks();
  transcript().replaceChildren();
  state.title = "";
  showTitle(described.title);
  state.model = described.model || "";
  state.workspace = described.workspace || "";
  $("status").textContent = formatStatus(described.status);
  renderHistory(described.history);
  if (!transcript().children.length) emptyState();
  if (described.posture) $("posture").value = described.posture;
  $("planning").checked = !!described.planning;
  fillModels([...$("model").options].map((o) => o.value), described.model);
  fillCompositions(described.agentComposition);
  setRunning(described.running);
  // A conversation whose binding cannot run here is history only: no agent, no stream, and
  // the composer says why instead of taking a prompt.
  const readOnly = !!described.read_only;
  $("read-only").hidden = !readOnly;
  $("read-only").textContent = readOnly ? t("readonly.notice", { reason: described.read_only_reason || "" }) : "";
  for (const id of ["prompt", "send", "composition", "model", "posture", "planning"]) $(id).disabled = readOnly;
  $("sidebar").classList.remove("open");
  if (readOnly) { state.source = null; refreshSessions(); return; }
  $("composition").disabled = !!(described.agentComposition && described.agentComposition.locked);
  state.source = new EventSource("/api/sessions/" + described.id + "/events");
  state.source.onmessage = (message) => {
    try { handle(JSON.parse(message.data)); } catch (error) { notice(String(error)); }
  };
  // A lost connection reconnects by itself; a refused one (a 503 at the server's stream cap,
  // a 401 once the login expired) closes the source for good, so say so.
  const source = state.source;
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED && state.source === source) notice(t("stream.refused"));
  };
  $("sidebar").classList.remove("open");
  $("prompt").focus();
  refreshSessions();
}

// ---- The title: the first prompt, cut to a line by the server, until it is renamed.
function showTitle(title) {
  state.title = (title || "").trim();
  const shown = state.title.length > 80 ? state.title.slice(0, 79) + "…" : state.title;
  $("session-title").textContent = shown || t("sessions.untitled");
  $("session-title").title = state.title ? state.title + " — " + t("title.hint") : t("title.hint");
}

function renameTitle() {
  if (!state.session || $("title-edit")) return;
  const span = $("session-title");
  const input = el("input", { id: "title-edit", type: "text", maxlength: "200", value: state.title, "aria-label": t("title.rename") });
  let finished = false;
  const finish = async (save) => {
    if (finished) return;
    finished = true;
    input.replaceWith(span);
    if (!save) return;
    try { showTitle((await api("POST", "/api/sessions/" + state.session + "/title", { title: input.value })).title); } catch (error) { notice(t("error.request", { error: error.message })); }
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); finish(true); }
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); finish(false); }
  });
  input.addEventListener("blur", () => finish(true));
  span.replaceWith(input);
  input.focus();
  input.select();
}

// ---- The empty state of a new conversation: where it works, on what model, and three
// prompts to start from (a click puts one in the composer).
function emptyState() {
  const examples = [t("empty.example1"), t("empty.example2"), t("empty.example3")].map((text) =>
    el("button", { type: "button", class: "example", text, onclick: () => { $("prompt").value = text; $("prompt").focus(); } }));
  transcript().append(el("div", { class: "empty" }, [
    el("h2", { text: t("empty.heading") }),
    el("dl", {}, [
      el("dt", { text: t("empty.workspace") }), el("dd", {}, [el("code", { class: "workspace", text: state.workspace })]),
      el("dt", { text: t("empty.model") }), el("dd", {}, [el("code", { class: "model", text: state.model })]),
    ]),
    el("div", { class: "examples" }, examples),
  ]));
}

async function refreshSessions() {
  let listed;
  try { listed = await api("GET", "/api/sessions"); } catch (_) { return; }
  const live = listed.live.map((s) => s.id);
  const item = (id, label, onclick) => el("li", {}, [el("button", { type: "button", text: label, title: id, "aria-current": String(id === state.session), onclick })]);
  $("live-list").replaceChildren(...listed.live.map((s) =>
    item(s.id, s.title || t("sessions.untitled"), async () => openSession(await api("GET", "/api/sessions/" + s.id)))));
  $("stored-list").replaceChildren(...listed.stored.filter((s) => !live.includes(s.id)).map((s) =>
    item(s.id, (s.preview || t("sessions.untitled")) + " · " + s.started, async () => {
      try { openSession(await api("POST", "/api/sessions", { resume: s.id })); } catch (error) { notice(t("error.request", { error: error.message })); }
    })));
}

async function newSession() {
  try { openSession(await api("POST", "/api/sessions", {})); } catch (error) { notice(t("error.request", { error: error.message })); }
}

async function send() {
  const prompt = $("prompt");
  const text = prompt.value;
  if (!text.trim() || !state.session) return;
  if (/^\/clear(\s|$)/.test(text.trim()) && !window.confirm(t("command.clear_confirm"))) return;
  try {
    // Slash commands and @-mentions are interpreted by the server, as in the chat.
    const answer = await api("POST", "/api/sessions/" + state.session + "/messages", { text });
    prompt.value = "";
    if (answer && answer.session && answer.session.id !== state.session) {
      await openSession(answer.session);
      notice(t("session.replaced", { id: answer.session.id }));
    }
  } catch (error) {
    notice(t("error.request", { error: error.message }));
  }
}

async function interrupt() {
  if (!state.session) return;
  try { await api("POST", "/api/sessions/" + state.session + "/interrupt", {}); } catch (error) { notice(t("error.request", { error: error.message })); }
}

function labelPage(mode) {
  $("secret-label").textContent = mode !== "password" ? t("login.token") : t("login.password");
  $("login-button").textContent = t("login.submit");
  $("new-session").textContent = t("sessions.new");
  $("live-title").textContent = t("sessions.live");
  $("stored-title").textContent = t("sessions.stored");
  $("prompt").placeholder = t("composer.placeholder");
  $("prompt").setAttribute("aria-label", t("composer.placeholder"));
  $("send").textContent = t("composer.send");
  $("interrupt").textContent = t("composer.interrupt") + " (Esc)";
  $("posture-label").textContent = t("mode.posture") + " ";
  for (const option of $("posture").options) option.textContent = t("mode." + option.value);
  $("planning-label").textContent = t("mode.planning");
  $("model-label").textContent = t("model.label") + " ";
  $("composition-label").textContent = t("composition.label") + " ";
  $("rename").textContent = "✎";
  $("rename").title = t("title.rename");
  $("rename").setAttribute("aria-label", t("title.rename"));
}

async function showApp() {
  $("login").hidden = true;
  $("app").hidden = false;
  await Promise.all([loadModels(), loadCompositions()]);
  await refreshSessions();
  const live = (await api("GET", "/api/sessions")).live;
  if (live.length) openSession(await api("GET", "/api/sessions/" + live[0].id));
  else newSession();
}

async function start() {
  await loadMessages();
  const auth = await api("GET", "/api/auth");
  labelPage(auth.mode);
  $("login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const secret = $("secret").value;
    const body = auth.mode !== "password" ? { token: secret } : { password: secret };
    try {
      await api("POST", "/api/login", body);
      $("login-error").textContent = "";
      showApp();
    } catch (error) {
      $("login-error").textContent = error.status === 429 ? t("login.limited") : t("login.wrong");
    }
  });
  $("new-session").addEventListener("click", newSession);
  $("session-title").addEventListener("dblclick", renameTitle);
  $("rename").addEventListener("click", renameTitle);
  $("composer").addEventListener("submit", (e) => { e.preventDefault(); send(); });
  $("interrupt").addEventListener("click", interrupt);
  const setMode = async (body) => {
    if (!state.session) return;
    try { await api("POST", "/api/sessions/" + state.session + "/mode", body); } catch (error) { notice(t("error.request", { error: error.message })); }
  };
  $("posture").addEventListener("change", () => setMode({ posture: $("posture").value }));
  $("planning").addEventListener("change", () => setMode({ planning: $("planning").checked }));
  $("model").addEventListener("change", switchModel);
  $("composition").addEventListener("change", bindComposition);
  $("toggle-sidebar").addEventListener("click", () => $("sidebar").classList.toggle("open"));
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && state.running) { e.preventDefault(); interrupt(); }
  });
  if (auth.authenticated) showApp();
  else $("login").hidden = false;
}

start();
