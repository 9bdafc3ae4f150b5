// Drives trellis serve's POST /ag-ui with the real @ag-ui/client HttpAgent
// (its event verifier and schema check run on every run) through one
// scenario, and prints what the client saw as one JSON line for the Go
// test to check. Usage: node agui.mjs <base url> <scenario> [scenario args].
import { HttpAgent } from "@ag-ui/client";
import { AgentCapabilitiesSchema } from "@ag-ui/core/schemas";
import { randomUUID } from "node:crypto";

const [base, scenario, ...args] = process.argv.slice(2);
const url = base + "/ag-ui";
const warnings = [];
console.warn = (...a) => warnings.push(a.map(String).join(" "));
console.error = (...a) => warnings.push(a.map(String).join(" "));

// TrellisAgent is HttpAgent with the capabilities Trellis serves beside
// its endpoint (HttpAgent leaves getCapabilities to subclasses).
class TrellisAgent extends HttpAgent {
  async getCapabilities() {
    const r = await fetch(this.url + "/capabilities");
    if (!r.ok) throw new Error(`capabilities: ${r.status}`);
    return AgentCapabilitiesSchema.parse(await r.json());
  }
}

// detailed are the event types whose names and owners a report keeps.
const detailed = new Set(["STEP_STARTED", "STEP_FINISHED", "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR",
  "ACTIVITY_SNAPSHOT", "TOOL_CALL_START", "TOOL_CALL_RESULT"]);

function agent(threadId = randomUUID()) {
  const a = new TrellisAgent({ url, threadId });
  a.seen = [];
  a.details = [];
  a.outcomes = [];
  a.subscribe({
    onEvent: ({ event }) => {
      a.seen.push(event.type);
      if (detailed.has(event.type)) {
        const { type, stepName, subagentRunId, name, description, parentToolCallId, parentSubagentRunId, toolCallName, activityType, content, result, outcome } = event;
        a.details.push({ type, stepName, subagentRunId, name, description, parentToolCallId, parentSubagentRunId, toolCallName, activityType, content, result, outcome });
      }
    },
    onRunFinishedEvent: (p) => { a.outcomes.push({ outcome: p.outcome, interrupts: p.interrupts ?? [] }); },
  });
  return a;
}

function say(a, text) {
  a.addMessage({ id: randomUUID(), role: "user", content: text });
}

async function run(a, params) {
  try {
    await a.runAgent(params);
    return null;
  } catch (e) {
    return String(e && e.message || e);
  }
}

function report(a, extra = {}) {
  return { events: a.seen, details: a.details, outcomes: a.outcomes, messages: a.messages, state: a.state, warnings, ...extra };
}

const scenarios = {
  // A tool call that needs no approval, answered.
  async tool() {
    const a = agent();
    say(a, "what time is it?");
    const error = await run(a);
    return report(a, { error });
  },
  // The agent plans on its board and delegates to a sub-agent that calls
  // a tool: the steps, the board as an activity, the sub-agent's frame
  // and its call, attributed to it.
  async delegate() {
    const a = agent();
    say(a, "delegate the sums");
    const error = await run(a);
    return report(a, { error });
  },
  // A sub-agent's call that needs approval: the run stops with the
  // sub-agent suspended, and the approval resumes it in the next run.
  async delegateApproval() {
    const a = agent();
    say(a, "delegate 2+2");
    const errors = [await run(a)];
    const first = a.pendingInterrupts.map((i) => ({ ...i }));
    errors.push(await run(a, { resume: first.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } })) }));
    return report(a, { errors, first });
  },
  // What the agent declares, through getCapabilities, parsed by AG-UI's
  // own schema.
  async capabilities() {
    const a = agent();
    let capabilities = null, error = null;
    try {
      capabilities = await a.getCapabilities();
    } catch (e) {
      error = String(e && e.message || e);
    }
    return { capabilities, error, warnings };
  },
  // A model that thinks: its reasoning, as the client keeps it.
  async think() {
    const a = agent();
    say(a, "please think it over");
    const error = await run(a);
    return report(a, { error });
  },
  // An approval approved, and one rejected, on one thread.
  async approvals() {
    const a = agent();
    say(a, "what is 2+2?");
    const errors = [await run(a)];
    const first = a.pendingInterrupts.map((i) => ({ ...i }));
    errors.push(await run(a, { resume: first.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } })) }));
    say(a, "and 3+3?");
    errors.push(await run(a));
    const second = a.pendingInterrupts.map((i) => ({ ...i }));
    errors.push(await run(a, { resume: second.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: false } })) }));
    return report(a, { errors, first, second });
  },
  // A message (args: the thread's id and the message) whose run ends
  // waiting: the interrupts the client holds after it.
  async interrupted() {
    const [threadId, message] = args;
    const a = agent(threadId);
    say(a, message);
    const error = await run(a);
    return report(a, { error, first: a.pendingInterrupts.map((i) => ({ ...i })) });
  },
  // A run aborted mid-stream; the next message is accepted at once.
  async cancel() {
    const a = agent();
    say(a, "tell me slowly");
    let chunks = 0;
    const sub = a.subscribe({ onTextMessageContentEvent: () => { if (++chunks === 2) a.abortRun(); } });
    const aborted = await run(a);
    sub.unsubscribe();
    a.abortController = new AbortController();
    say(a, "hello again");
    const started = Date.now();
    const error = await run(a);
    return report(a, { aborted, chunks, error, ms: Date.now() - started });
  },
  // Client mistakes: a body without runId (raw fetch), a last message
  // that is not the user's, new input on a thread waiting for an
  // interrupt, and a resume naming no interrupt of the thread.
  async bad() {
    const raw = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ threadId: "t", messages: [] }) });
    const rawBody = await raw.text();
    const a = agent();
    a.addMessage({ id: randomUUID(), role: "assistant", content: "hi" });
    const notUser = await run(a);
    const b = agent();
    say(b, "what is 2+2?");
    await run(b);
    const waiting = b.pendingInterrupts.length;
    const c = agent(b.threadId);
    say(c, "something else");
    const busy = await run(c);
    const unknown = await run(c, { resume: [{ interruptId: "no-such-interrupt", status: "resolved", payload: { approved: true } }] });
    return { raw: { status: raw.status, body: rawBody }, notUser, waiting, busy, unknown, warnings };
  },
};

const out = await scenarios[scenario]();
process.stdout.write(JSON.stringify(out) + "\n");
