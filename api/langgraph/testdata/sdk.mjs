// Drives a Trellis server through the real LangGraph SDK, one scenario
// per run: node sdk.mjs <scenario>, with LANGGRAPH_URL (the SDK's apiUrl),
// KEY_ALICE and KEY_BOB in the environment. A failed assertion exits 1
// with its message; the Go test (sdk_test.go) runs each scenario.
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";
import { StreamOrchestrator } from "@langchain/langgraph-sdk/ui";

const apiUrl = process.env.LANGGRAPH_URL;
const alice = new Client({ apiUrl, apiKey: process.env.KEY_ALICE });
const bob = new Client({ apiUrl, apiKey: process.env.KEY_BOB });
const allModes = ["values", "updates", "messages-tuple", "messages", "events", "custom"];

// collect runs a stream to its end and returns its parts and the run id
// onRunCreated reported (from Content-Location).
async function collect(threadId, payload) {
  let created;
  const parts = [];
  for await (const part of alice.runs.stream(threadId, "agent", {
    ...payload,
    onRunCreated: (meta) => { created = meta; },
  })) {
    parts.push(part);
  }
  return { parts, created };
}

const lastValues = (parts) => parts.filter((p) => p.event === "values").at(-1)?.data;
// texts joins the answer's chunks of the messages-tuple mode.
const texts = (parts) => parts.filter((p) => p.event === "messages" && p.data[0].type !== "tool" && !p.data[0].tool_calls?.length)
  .map((p) => p.data[0].content).join("");

async function expectStatus(promise, status) {
  try {
    await promise;
  } catch (err) {
    assert.equal(err.status, status, `want HTTP ${status}, got ${err.status}: ${err.message}`);
    return err;
  }
  assert.fail(`want HTTP ${status}, the call succeeded`);
}

const scenarios = {
  // The connection probe, the assistant, and a greeting streamed in
  // every mode.
  async chat() {
    const info = await fetch(`${apiUrl}/info`, { headers: { "x-api-key": process.env.KEY_ALICE } });
    assert.equal(info.status, 200);
    const assistants = await alice.assistants.search({ graphId: "agent" });
    assert.deepEqual(assistants.map((a) => a.graph_id), ["agent"]);
    assert.equal((await alice.assistants.get("agent")).assistant_id, "agent");

    const thread = await alice.threads.create({ metadata: { app: "interop" } });
    assert.equal(thread.status, "idle");
    const { parts, created } = await collect(thread.thread_id, {
      input: { messages: [{ type: "human", content: "hello" }] },
      streamMode: allModes,
    });
    assert.equal(parts[0].event, "metadata");
    assert.equal(created.run_id, parts[0].data.run_id, "Content-Location names the run");
    assert.equal(created.thread_id, thread.thread_id);
    assert.equal(texts(parts), "Hello there!", "messages-tuple carries the answer token by token");
    const chunkIds = new Set(parts.filter((p) => p.event === "messages" && p.data[1].langgraph_node === "write").map((p) => p.data[0].id));
    assert.equal(chunkIds.size, 1, "every chunk of one message has one id");
    const values = lastValues(parts);
    assert.deepEqual(values.messages.map((m) => [m.type, m.content]), [["human", "hello"], ["ai", "Hello there!"]]);
    assert.equal(values.messages[1].id, [...chunkIds][0], "the streamed message and the state's have one id");
    assert.ok(parts.some((p) => p.event === "updates" && p.data.stream), "updates names the node");
    assert.ok(parts.some((p) => p.event === "messages/partial"), "legacy messages mode");
    assert.ok(parts.some((p) => p.event === "events" && p.data.event === "on_chat_model_stream"), "events mode");
    assert.ok(parts.some((p) => p.event === "events" && p.data.event === "on_chain_start"), "events mode: nodes");

    const got = await alice.threads.get(thread.thread_id);
    assert.equal(got.status, "idle");
    assert.equal(got.metadata.graph_id, "agent");
    assert.equal(got.metadata.app, "interop");
    assert.equal(got.values.messages[0].content, "hello");
    const found = await alice.threads.search({ metadata: { graph_id: "agent" }, limit: 100 });
    assert.ok(found.some((t) => t.thread_id === thread.thread_id), "threads/search by graph_id finds the thread");
    const none = await alice.threads.search({ metadata: { graph_id: "other" }, limit: 100 });
    assert.equal(none.length, 0);

    const state = await alice.threads.getState(thread.thread_id);
    assert.equal(state.values.messages.length, 2);
    assert.deepEqual(state.next, []);
    const history = await alice.threads.getHistory(thread.thread_id, { limit: 4 });
    assert.equal(history.length, 4);
    assert.equal(new Set(history.map((h) => h.checkpoint.checkpoint_id)).size, 4, "distinct checkpoints");
    assert.equal(history[0].checkpoint.checkpoint_id, state.checkpoint.checkpoint_id, "newest first");

    const runs = await alice.runs.list(thread.thread_id);
    assert.equal(runs.length, 1);
    assert.equal(runs[0].status, "success");
    assert.equal((await alice.runs.get(thread.thread_id, created.run_id)).run_id, created.run_id);
    const final = await alice.runs.join(thread.thread_id, created.run_id);
    assert.equal(final.messages.at(-1).content, "Hello there!");

    const waited = await alice.runs.wait(thread.thread_id, "agent", { input: { messages: [{ role: "user", content: "hello again" }] } });
    assert.equal(waited.messages.at(-1).content, "Hello there!");
    assert.equal(waited.messages.length, 4);
    const [newest] = await alice.runs.list(thread.thread_id, { limit: 1 });
    assert.notEqual(newest.run_id, created.run_id, "runs are listed newest first");
    const [older] = await alice.runs.list(thread.thread_id, { limit: 1, offset: 1 });
    assert.equal(older.run_id, created.run_id);
    return { messages: values.messages.length, history: history.length };
  },

  // A tool call that needs no approval, shown as it happens.
  async tool() {
    const thread = await alice.threads.create();
    const { parts } = await collect(thread.thread_id, {
      input: { messages: [{ type: "human", content: "look up trellis" }] },
      streamMode: ["values", "messages-tuple", "events"],
    });
    const values = lastValues(parts);
    const ai = values.messages.find((m) => m.type === "ai" && m.tool_calls?.length);
    assert.equal(ai.tool_calls[0].name, "lookup");
    assert.deepEqual(ai.tool_calls[0].args, { topic: "trellis" });
    const tool = values.messages.find((m) => m.type === "tool");
    assert.equal(tool.tool_call_id, ai.tool_calls[0].id);
    assert.match(tool.content, /trellis is a typed state graph/);
    assert.equal(values.messages.at(-1).content, "Trellis is a graph engine.");
    assert.ok(parts.some((p) => p.event === "events" && p.data.event === "on_tool_start" && p.data.name === "lookup"));
    assert.ok(parts.some((p) => p.event === "events" && p.data.event === "on_tool_end" && p.data.name === "lookup"));
    assert.ok(parts.some((p) => p.event === "messages" && p.data[0].type === "tool"), "the tool message goes out in messages-tuple");
    return { messages: values.messages.map((m) => m.type) };
  },

  // An approval in HumanInTheLoopMiddleware's shape, approved with
  // command.resume.decisions; the stream ends at the interrupt at once.
  async approve() {
    const thread = await alice.threads.create();
    const started = Date.now();
    const first = await collect(thread.thread_id, { input: { messages: [{ type: "human", content: "what is 6*7?" }] }, streamMode: ["values", "updates"] });
    assert.ok(Date.now() - started < 10000, "the stream ends at the interrupt");
    const interrupts = lastValues(first.parts).__interrupt__;
    assert.equal(interrupts.length, 1);
    const req = interrupts[0].value;
    assert.deepEqual(req.action_requests.map((a) => [a.name, a.args]), [["calculator", { expression: "6*7" }]]);
    assert.deepEqual(req.review_configs[0].allowed_decisions, ["approve", "edit", "reject"]);
    assert.ok(first.parts.some((p) => p.event === "updates" && p.data.__interrupt__));

    const t = await alice.threads.get(thread.thread_id);
    assert.equal(t.status, "interrupted");
    const state = await alice.threads.getState(thread.thread_id);
    assert.ok(state.next.length > 0);
    assert.deepEqual(state.tasks[0].interrupts[0].value.action_requests[0].name, "calculator");
    // Busy: new input while the approval waits is refused.
    await expectStatus(alice.runs.create(thread.thread_id, "agent", { input: { messages: [{ type: "human", content: "hello" }] } }), 409);

    const second = await collect(thread.thread_id, { command: { resume: { decisions: [{ type: "approve" }] } }, streamMode: ["values", "messages-tuple"] });
    const values = lastValues(second.parts);
    assert.equal(values.__interrupt__, undefined);
    const tool = values.messages.find((m) => m.type === "tool");
    assert.equal(tool.content, "42");
    assert.equal(values.messages.at(-1).content, "6 × 7 = 42.");
    assert.equal(texts(second.parts), "6 × 7 = 42.");
    assert.equal((await alice.threads.get(thread.thread_id)).status, "idle");
    return { messages: values.messages.map((m) => m.type) };
  },

  // An approval answered with edited arguments: the tool runs with them.
  async edit() {
    const thread = await alice.threads.create();
    await collect(thread.thread_id, { input: { messages: [{ type: "human", content: "what is 6*7?" }] } });
    const second = await collect(thread.thread_id, {
      command: { resume: { decisions: [{ type: "edit", edited_action: { name: "calculator", args: { expression: "6*8" } } }] } },
    });
    const values = lastValues(second.parts);
    assert.match(values.messages.find((m) => m.type === "tool").content, /ran with {"expression":"6\*8"}.*\n48$/s);
    return {};
  },

  // An approval rejected with a message: the tool does not run.
  async reject() {
    const thread = await alice.threads.create();
    const first = await collect(thread.thread_id, { input: { messages: [{ type: "human", content: "please clean up" }] } });
    const req = lastValues(first.parts).__interrupt__[0].value;
    assert.equal(req.action_requests[0].name, "delete_file");
    // A decision count that does not match is the client's mistake.
    await expectStatus(collect(thread.thread_id, { command: { resume: { decisions: [{ type: "approve" }, { type: "approve" }] } } }), 400);
    const second = await collect(thread.thread_id, { command: { resume: { decisions: [{ type: "reject", message: "not that directory" }] } } });
    const values = lastValues(second.parts);
    const tool = values.messages.find((m) => m.type === "tool");
    assert.match(tool.content, /not that directory/);
    assert.equal(values.messages.at(-1).content, "I left /srv/data alone.");
    return { tool: tool.content };
  },

  // A cancel mid-stream ends the run as interrupted; the next message on
  // the thread is accepted at once.
  async cancel() {
    const thread = await alice.threads.create();
    let runId;
    let chunks = 0;
    const parts = [];
    for await (const part of alice.runs.stream(thread.thread_id, "agent", {
      input: { messages: [{ type: "human", content: "say something slow" }] },
      streamMode: ["messages-tuple"],
      onRunCreated: (m) => { runId = m.run_id; },
    })) {
      parts.push(part);
      if (part.event === "messages" && ++chunks === 2) {
        await alice.runs.cancel(thread.thread_id, runId, true);
      }
    }
    assert.ok(texts(parts).split(" ").length < 12, "the stream ended before the answer did");
    assert.equal((await alice.runs.get(thread.thread_id, runId)).status, "interrupted");
    assert.equal((await alice.threads.get(thread.thread_id)).status, "idle");
    await expectStatus(alice.runs.cancel(thread.thread_id, runId), 409);
    const next = await collect(thread.thread_id, { input: { messages: [{ type: "human", content: "hello" }] }, streamMode: "messages-tuple" });
    assert.equal(texts(next.parts), "Hello there!");

    // multitask_strategy interrupt cancels the run going, then starts.
    const bg = await alice.runs.create(thread.thread_id, "agent", { input: { messages: [{ type: "human", content: "say something slow" }] } });
    const over = await collect(thread.thread_id, {
      input: { messages: [{ type: "human", content: "hello" }] }, streamMode: "messages-tuple", multitaskStrategy: "interrupt",
    });
    assert.equal(texts(over.parts), "Hello there!");
    assert.equal((await alice.runs.get(thread.thread_id, bg.run_id)).status, "interrupted");
    return { chunks };
  },

  // multitask_strategy enqueue: the message waits as a pending run and
  // runs once the run going has ended, in order; a pending run can be
  // cancelled; a streamed one streams once it starts. rollback takes the
  // interrupted turn out of the thread's messages.
  async multitask() {
    const thread = await alice.threads.create();
    const slow = { input: { messages: [{ type: "human", content: "say something slow" }] } };
    const first = await alice.runs.create(thread.thread_id, "agent", slow);
    const queued = await alice.runs.create(thread.thread_id, "agent", {
      input: { messages: [{ type: "human", content: "hello" }] }, multitaskStrategy: "enqueue",
    });
    assert.equal(queued.status, "pending");
    assert.equal((await alice.runs.get(thread.thread_id, queued.run_id)).status, "pending");
    const dropped = await alice.runs.create(thread.thread_id, "agent", {
      input: { messages: [{ type: "human", content: "never mind" }] }, multitaskStrategy: "enqueue",
    });
    await alice.runs.cancel(thread.thread_id, dropped.run_id);
    await alice.runs.join(thread.thread_id, queued.run_id);
    assert.equal((await alice.runs.get(thread.thread_id, first.run_id)).status, "success");
    assert.equal((await alice.runs.get(thread.thread_id, queued.run_id)).status, "success");
    await expectStatus(alice.runs.get(thread.thread_id, dropped.run_id), 404);

    await alice.runs.create(thread.thread_id, "agent", slow);
    const streamed = await collect(thread.thread_id, {
      input: { messages: [{ type: "human", content: "hello" }] }, streamMode: "messages-tuple", multitaskStrategy: "enqueue",
    });
    assert.equal(texts(streamed.parts), "Hello there!");

    const rolled = await alice.runs.create(thread.thread_id, "agent", slow);
    const over = await collect(thread.thread_id, {
      input: { messages: [{ type: "human", content: "hello again" }] }, streamMode: "messages-tuple", multitaskStrategy: "rollback",
    });
    assert.equal(texts(over.parts), "Hello there!");
    assert.equal((await alice.runs.get(thread.thread_id, rolled.run_id)).status, "interrupted");
    const state = await alice.threads.getState(thread.thread_id);
    const humans = state.values.messages.filter((m) => m.type === "human").map((m) => m.content);
    assert.deepEqual(humans, ["say something slow", "hello", "say something slow", "hello", "hello again"]);
    return { humans: humans.length };
  },

  // A background run, joined, left, and rejoined with Last-Event-ID:
  // nothing is lost and nothing comes twice.
  async rejoin() {
    const thread = await alice.threads.create();
    const run = await alice.runs.create(thread.thread_id, "agent", { input: { messages: [{ type: "human", content: "say something slow" }] } });
    assert.ok(["pending", "running"].includes(run.status));
    await expectStatus(alice.runs.stream(thread.thread_id, "agent", { input: { messages: [{ type: "human", content: "hello" }] } }).next(), 409);
    const ctl = new AbortController();
    const seen = [];
    let lastId;
    try {
      for await (const part of alice.runs.joinStream(thread.thread_id, run.run_id, { signal: ctl.signal, streamMode: ["messages-tuple"] })) {
        if (part.event === "messages") {
          seen.push(part.data[0].content);
          lastId = part.id;
          if (seen.length === 3) ctl.abort();
        }
      }
    } catch (err) {
      assert.equal(err.name, "AbortError");
    }
    assert.ok(lastId, "events carry ids");
    const rest = [];
    for await (const part of alice.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: lastId, streamMode: ["messages-tuple"] })) {
      if (part.event === "messages") rest.push(part.data[0].content);
    }
    assert.equal(seen.concat(rest).join(""), "one two three four five six seven eight nine ten eleven twelve.");

    // The stream's Location, where the SDK reconnects by itself when the
    // connection drops, rejoins in the same modes.
    const res = await fetch(`${apiUrl}/threads/${thread.thread_id}/runs/stream`, {
      method: "POST", headers: { "content-type": "application/json", "x-api-key": process.env.KEY_ALICE },
      body: JSON.stringify({ assistant_id: "agent", input: { messages: [{ type: "human", content: "hello" }] }, stream_mode: ["messages-tuple", "updates"] }),
    });
    const location = res.headers.get("location");
    assert.match(location, /^\/threads\/[^/]+\/runs\/[^/]+\/stream\?stream_mode=messages-tuple&stream_mode=updates$/);
    await res.text();
    const again = await (await fetch(`${apiUrl}${location}`, { headers: { "x-api-key": process.env.KEY_ALICE } })).text();
    assert.match(again, /event: messages\n/);
    assert.match(again, /event: updates\n/);
    return { before: seen.length, after: rest.length };
  },

  // A client that goes away cancels its run only with on_disconnect:
  // cancel; otherwise the run goes on to its end.
  async disconnect() {
    const leave = async (threadId, payload) => {
      const ctl = new AbortController();
      let runId;
      try {
        for await (const part of alice.runs.stream(threadId, "agent", {
          ...payload, signal: ctl.signal, streamMode: ["messages-tuple"], onRunCreated: (m) => { runId = m.run_id; },
          input: { messages: [{ type: "human", content: "say something slow" }] },
        })) {
          if (part.event === "messages") ctl.abort();
        }
      } catch (err) {
        assert.equal(err.name, "AbortError");
      }
      return runId;
    };
    const a = await alice.threads.create();
    const cancelled = await leave(a.thread_id, { onDisconnect: "cancel" });
    let status;
    for (let i = 0; i < 100; i++) {
      status = (await alice.runs.get(a.thread_id, cancelled)).status;
      if (status !== "running") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(status, "interrupted", "on_disconnect cancel cancels the run");
    const next = await collect(a.thread_id, { input: { messages: [{ type: "human", content: "hello" }] }, streamMode: "messages-tuple" });
    assert.equal(texts(next.parts), "Hello there!", "the next message is accepted at once");

    const b = await alice.threads.create();
    const kept = await leave(b.thread_id, {});
    const final = await alice.runs.join(b.thread_id, kept);
    assert.equal(final.messages.at(-1).content, "one two three four five six seven eight nine ten eleven twelve.");
    assert.equal((await alice.runs.get(b.thread_id, kept)).status, "success");
    return {};
  },

  // useStream's framework-free core, as agent-chat-ui drives it: a new
  // thread, a message, an approval shown from the interrupt and answered
  // with submit({}, {command: {resume: {decisions}}}), history fetched.
  async usestream() {
    let threadId;
    const orch = new StreamOrchestrator(
      { assistantId: "agent", fetchStateHistory: true, onThreadId: (id) => { threadId = id; } },
      { getClient: () => alice, getAssistantId: () => "agent", getMessagesKey: () => "messages" },
    );
    orch.initThreadId(undefined);
    const settle = async () => {
      for (let i = 0; i < 200 && orch.isLoading; i++) await new Promise((r) => setTimeout(r, 25));
      assert.equal(orch.isLoading, false);
      if (orch.error) throw orch.error;
    };
    await orch.submit({ messages: [{ type: "human", content: "hello" }] });
    await settle();
    assert.ok(threadId, "the core created a thread");
    assert.deepEqual(orch.messages.map((m) => [m.type, m.content]), [["human", "hello"], ["ai", "Hello there!"]]);

    await orch.submit({ messages: [{ type: "human", content: "what is 6*7?" }] });
    await settle();
    const hitl = orch.interrupt?.value;
    assert.ok(hitl, "the interrupt is shown");
    assert.equal((hitl.action_requests ?? hitl.actionRequests)[0].name, "calculator");

    await orch.submit({}, { command: { resume: { decisions: [{ type: "approve" }] } } });
    await settle();
    assert.equal(orch.interrupt, undefined);
    assert.equal(orch.messages.at(-1).content, "6 × 7 = 42.");
    assert.ok(orch.messages.some((m) => m.type === "tool" && m.content === "42"));
    orch.dispose();
    return { thread: threadId, messages: orch.messages.length };
  },

  // A thinking model: its reasoning streams in messages-tuple as
  // reasoning content blocks of each node's model call, apart from the
  // answer; useStream's core shows the answer and keeps only it.
  async reasoning() {
    const thread = await alice.threads.create();
    const { parts } = await collect(thread.thread_id, {
      input: { messages: [{ type: "human", content: "please think it over" }] },
      streamMode: ["values", "messages-tuple", "events"],
    });
    const blocks = (p) => Array.isArray(p.data[0]?.content) ? p.data[0].content : [];
    const thought = {};
    for (const p of parts.filter((p) => p.event === "messages")) {
      for (const b of blocks(p)) {
        assert.equal(b.type, "reasoning");
        const node = p.data[1].langgraph_node;
        thought[node] = (thought[node] ?? "") + b.reasoning;
      }
    }
    assert.deepEqual(thought, { supervisor: "The user asks me to think; an answer will do.", write: "Keep it short." });
    const answer = parts.filter((p) => p.event === "messages" && typeof p.data[0].content === "string" && p.data[0].type !== "human")
      .map((p) => p.data[0].content).join("");
    assert.equal(answer, "Thought it over.");
    assert.ok(parts.some((p) => p.event === "events" && p.data.event === "on_chat_model_stream" &&
      Array.isArray(p.data.data.chunk.content) && p.data.data.chunk.content[0].type === "reasoning"), "events carries the reasoning");
    assert.deepEqual(lastValues(parts).messages.map((m) => [m.type, m.content]), [["human", "please think it over"], ["ai", "Thought it over."]]);

    const orch = new StreamOrchestrator(
      { assistantId: "agent" },
      { getClient: () => alice, getAssistantId: () => "agent", getMessagesKey: () => "messages" },
    );
    orch.initThreadId(undefined);
    await orch.submit({ messages: [{ type: "human", content: "please think it over" }] });
    for (let i = 0; i < 200 && orch.isLoading; i++) await new Promise((r) => setTimeout(r, 25));
    if (orch.error) throw orch.error;
    assert.deepEqual(orch.messages.map((m) => [m.type, m.content]), [["human", "please think it over"], ["ai", "Thought it over."]]);
    orch.dispose();
    return { reasoning: Object.keys(thought) };
  },

  // Another user's thread is not found; client mistakes are 4xx.
  async mistakes() {
    const thread = await alice.threads.create();
    await expectStatus(bob.threads.get(thread.thread_id), 404);
    await expectStatus(bob.threads.getState(thread.thread_id), 404);
    await expectStatus(collectAs(bob, thread.thread_id, { input: { messages: [{ type: "human", content: "hello" }] } }), 404);
    const found = await bob.threads.search({ limit: 100 });
    assert.ok(!found.some((t) => t.thread_id === thread.thread_id));
    await expectStatus(alice.threads.get("no-such-thread"), 404);
    await expectStatus(alice.assistants.get("no-such-assistant"), 404);
    await expectStatus(collect(thread.thread_id, { input: { messages: [{ type: "human", content: "hello" }] }, streamMode: "no-such-mode" }), 400);
    await expectStatus(collect(thread.thread_id, { input: {} }), 400);
    await expectStatus(collect(thread.thread_id, { input: { messages: [{ type: "human", content: "x".repeat(40000) }] } }), 400);
    await expectStatus(collect(thread.thread_id, { command: { resume: { decisions: [{ type: "approve" }] } } }), 409);
    const raw = await fetch(`${apiUrl}/threads/${thread.thread_id}/runs/stream`, {
      method: "POST", headers: { "content-type": "application/json", "x-api-key": process.env.KEY_ALICE },
      body: JSON.stringify({ assistant_id: "agent", input: { messages: [{ type: "human", content: "hi" }] }, stream_mode: 7 }),
    });
    assert.equal(raw.status, 400);
    const unauthenticated = await fetch(`${apiUrl}/threads/${thread.thread_id}`);
    assert.equal(unauthenticated.status, 401);
    return {};
  },
};

async function collectAs(client, threadId, payload) {
  for await (const _ of client.runs.stream(threadId, "agent", payload)) { /* drain */ }
}

const name = process.argv[2];
const scenario = scenarios[name];
if (!scenario) {
  console.error(`unknown scenario ${name}; known: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
try {
  const out = await scenario();
  console.log(JSON.stringify(out));
} catch (err) {
  console.error(err.stack ?? String(err));
  process.exit(1);
}
