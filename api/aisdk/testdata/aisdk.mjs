// Drives trellis serve's AI SDK endpoints with the real ai package's
// AbstractChat and DefaultChatTransport (ai 7, or ai 5 through the npm
// alias ai5) through one scenario, and prints what the chat saw as one
// JSON line for the Go test to check.
// Usage: node aisdk.mjs <7|5> <base url> <scenario> [scenario args].
import { randomUUID } from "node:crypto";

const [version, base, scenario, ...args] = process.argv.slice(2);
const ai = await import(version === "5" ? "ai5" : "ai");
const api = base + "/api/ai-sdk/chat";
const warnings = [];
console.warn = (...a) => warnings.push(a.map(String).join(" "));

class MemoryState {
  constructor(messages = []) {
    this.messages = messages;
    this.status = "ready";
    this.error = undefined;
  }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(x) { return structuredClone(x); }
}

class Chat extends ai.AbstractChat {
  constructor({ messages, body, fetch, ...rest }) {
    const finishes = [];
    super({
      ...rest,
      state: new MemoryState(messages),
      transport: new ai.DefaultChatTransport({ api, body, fetch }),
      onFinish: (e) => finishes.push({ isAbort: !!e.isAbort, isError: !!e.isError }),
    });
    this.finishes = finishes;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(what, cond, ms = 20000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await sleep(20);
  }
}

const text = (m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
const tools = (m) => m.parts.filter((p) => p.type === "dynamic-tool" || p.type.startsWith("tool-"));
const lastAssistant = (c) => [...c.messages].reverse().find((m) => m.role === "assistant");

function report(c, extra = {}) {
  return {
    chat: c.id,
    status: c.status,
    error: c.error ? String(c.error.message) : null,
    messages: c.messages.map((m) => ({
      id: m.id, role: m.role, text: text(m), parts: m.parts.map((p) => p.type),
      reasoning: m.parts.filter((p) => p.type === "reasoning").map((p) => p.text),
      tools: tools(m).map((p) => ({ toolName: p.toolName, toolCallId: p.toolCallId, state: p.state, input: p.input, output: p.output, errorText: p.errorText })),
    })),
    finishes: c.finishes,
    warnings,
    ...extra,
  };
}

const chatID = () => "chat-" + randomUUID();

const scenarios = {
  // A tool call that needs no approval, answered.
  async tool() {
    const c = new Chat({ id: chatID() });
    await c.sendMessage({ text: "what time is it?" });
    return report(c);
  },
  // A model that thinks: its reasoning parts.
  async think() {
    const c = new Chat({ id: chatID() });
    await c.sendMessage({ text: "please think it over" });
    return report(c);
  },
  // ai 7: an approval approved, then one rejected, each continuing the
  // same assistant message after addToolApprovalResponse.
  async approvals() {
    const c = new Chat({ id: chatID(), sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses });
    const rounds = [];
    for (const [question, approved] of [["what is 2+2?", true], ["and 3+3?", false]]) {
      await c.sendMessage({ text: question });
      const asked = lastAssistant(c);
      const part = tools(asked).find((p) => p.state === "approval-requested");
      if (!part) return report(c, { rounds, failed: "no approval-requested part after " + question });
      await c.addToolApprovalResponse({ id: part.approval.id, approved, reason: approved ? undefined : "not now" });
      await waitFor("the answer", () => c.status === "ready" && text(lastAssistant(c)) !== "");
      rounds.push({ askedID: asked.id, answeredID: lastAssistant(c).id, approvalID: part.approval.id });
    }
    return report(c, { rounds });
  },
  // ai 5 with "approvals": false: a gated call ends the turn with a text.
  async approvalText() {
    const c = new Chat({ id: chatID(), body: { approvals: false } });
    await c.sendMessage({ text: "what is 2+2?" });
    return report(c);
  },
  // stop() mid-stream; the next message is accepted at once.
  async cancel() {
    const c = new Chat({ id: chatID() });
    const sent = c.sendMessage({ text: "tell me slowly" });
    await waitFor("two words", () => lastAssistant(c) && text(lastAssistant(c)).split(" ").length >= 3);
    await c.stop();
    await sent;
    const stopped = text(lastAssistant(c));
    const started = Date.now();
    await c.sendMessage({ text: "hello again" });
    return report(c, { stopped, ms: Date.now() - started });
  },
  // A page reload mid-stream: the request dies, a new chat with the
  // stored messages resumes the stream and gets the whole answer; an
  // idle chat's stream answers 204.
  async resume() {
    const id = chatID();
    const reload = new AbortController();
    const first = new Chat({ id, fetch: (url, init) => fetch(url, { ...init, signal: reload.signal }) });
    const sent = first.sendMessage({ text: "tell me slowly" }).catch(() => {});
    await waitFor("some words", () => lastAssistant(first) && text(lastAssistant(first)).split(" ").length >= 3);
    const before = text(lastAssistant(first));
    reload.abort();
    await sent;
    const stored = first.messages.filter((m) => m.role === "user");
    const second = new Chat({ id, messages: structuredClone(stored) });
    await second.resumeStream();
    await waitFor("the resumed answer", () => second.status === "ready");
    const idle = await fetch(api + "/" + id + "/stream");
    const unknown = await fetch(api + "/" + chatID() + "/stream");
    return report(second, { before, idle: idle.status, unknown: unknown.status });
  },
  // ai 7: the page of a chat whose run was cut by a crash inside a call
  // that may have run (args: the chat's id, its message, and "approve"
  // or "deny") loads with the stored user message and resumes the
  // stream: the call comes as an approval request, answered as asked.
  async uncertain() {
    const [id, message, answer] = args;
    const c = new Chat({ id, messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: message }] }],
      sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses });
    await c.resumeStream();
    await waitFor("the resumed message", () => c.status === "ready" || c.status === "error");
    const asked = lastAssistant(c);
    const part = asked && tools(asked).find((p) => p.state === "approval-requested");
    if (!part) return report(c, { failed: "no approval-requested part" });
    const shown = report(c);
    await c.addToolApprovalResponse({ id: part.approval.id, approved: answer === "approve" });
    await waitFor("the answer", () => c.status === "ready" && text(lastAssistant(c)) !== "");
    return report(c, { rounds: [{ askedID: asked.id, answeredID: lastAssistant(c).id, approvalID: part.approval.id }], shown: shown.messages });
  },
  // Client mistakes are 4xx with a JSON error the chat shows.
  async bad() {
    const post = async (body) => {
      const r = await fetch(api, { method: "POST", headers: { "content-type": "application/json" }, body });
      return { status: r.status, body: await r.text() };
    };
    const raw = {
      notJSON: await post("{"),
      noID: await post(JSON.stringify({ messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "hi" }] }] })),
      noMessages: await post(JSON.stringify({ id: "c", messages: [], trigger: "submit-message" })),
      badTrigger: await post(JSON.stringify({ id: "c", messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "hi" }] }], trigger: "nope" })),
    };
    const c = new Chat({ id: chatID(), body: { approvals: "yes" } });
    await c.sendMessage({ text: "hi" });
    return report(c, { raw });
  },
};

const out = await scenarios[scenario]();
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
