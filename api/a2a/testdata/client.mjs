// client.mjs drives Trellis' A2A server with the real @a2a-js/sdk
// client and prints one JSON report of what it saw, for package a2a's
// tests (and cmd/trellis', through trellis serve).
//
//   node client.mjs <server URL> <API key, or ""> [tool prompt] [approval prompt]
//
// The tool prompt makes the agent call a tool that needs no approval,
// the approval prompt one that does, as the server's script says.
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { ListTasksRequest, Role, taskStateToJSON } from "@a2a-js/sdk";

const [url, key, toolPrompt = "What is 2+2?", askPrompt = "please delete /tmp/a.txt"] = process.argv.slice(2);

// authFetch sends the API key with every JSON-RPC call; the agent card
// is public and fetched without it.
const authFetch = (input, init = {}) => {
  const headers = new Headers(init.headers);
  if (key) headers.set("Authorization", `Bearer ${key}`);
  return fetch(input, { ...init, headers });
};

let n = 0;
const message = (text, extra = {}) => ({
  messageId: `m-${process.pid}-${++n}`,
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: text } }],
  ...extra,
});

const textOf = (parts = []) => parts.filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("");
const summary = (task) => ({
  id: task.id,
  contextId: task.contextId,
  state: taskStateToJSON(task.status?.state),
  statusText: textOf(task.status?.message?.parts),
  statusData: (task.status?.message?.parts ?? []).filter((p) => p.content?.$case === "data").map((p) => p.content.value),
  answer: (task.artifacts ?? []).map((a) => textOf(a.parts)).join(""),
  history: (task.history ?? []).map((m) => textOf(m.parts)),
});
const failure = (err) => ({ name: err?.constructor?.name, code: err?.envelopeCode, message: String(err?.message ?? err) });

// stream collects a stream's events: their kinds, the states its
// status updates carry, the answer its artifact updates build.
async function stream(events) {
  const out = { kinds: [], states: [], answer: "", first: null, taskId: "", error: null };
  try {
    for await (const ev of events) {
      const { $case, value } = ev.payload;
      out.kinds.push($case);
      if ($case === "task") {
        out.first = summary(value);
        out.taskId = value.id;
      } else if ($case === "statusUpdate") {
        out.states.push(taskStateToJSON(value.status.state));
      } else if ($case === "artifactUpdate") {
        const t = textOf(value.artifact.parts);
        out.answer = value.append ? out.answer + t : t;
      }
    }
  } catch (err) {
    out.error = failure(err);
  }
  return out;
}

async function attempt(f) {
  try {
    return { result: await f() };
  } catch (err) {
    return { error: failure(err) };
  }
}

const report = {};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
  }),
);
const client = await factory.createFromUrl(url);
const card = await client.getAgentCard();
report.card = {
  name: card.name,
  interfaces: card.supportedInterfaces.map((i) => ({ url: i.url, binding: i.protocolBinding, version: i.protocolVersion })),
  streaming: card.capabilities?.streaming ?? false,
  skills: card.skills.map((s) => s.id),
  schemes: Object.keys(card.securitySchemes ?? {}).sort(),
};

// sendMessage: a new task in a new context, waited for.
const sent = await client.sendMessage({ message: message("Hello") });
report.send = summary(sent);
const contextId = sent.contextId;

// sendMessageStream: the next task of the same context, with a tool.
report.stream = await stream(client.sendMessageStream({ message: message(toolPrompt, { contextId }) }));

// getTask: the first task again.
report.get = summary(await client.getTask({ id: sent.id }));

// An approval: the task needs input; the next message in it approves.
const asked = await client.sendMessage({ message: message(askPrompt, { contextId }) });
report.asked = summary(asked);
report.approved = summary(await client.sendMessage({ message: message("approve", { contextId, taskId: asked.id }) }));

// The same, streamed, and rejected with a reason.
const streamedAsk = await stream(client.sendMessageStream({ message: message(`${askPrompt}, again`, { contextId }) }));
report.streamedAsk = streamedAsk;
report.rejected = await stream(
  client.sendMessageStream({ message: message("reject not that file", { contextId, taskId: streamedAsk.taskId }) }),
);

// cancelTask: a task waiting for an approval is cancelled.
const waiting = await client.sendMessage({ message: message(`${askPrompt}, once more`, { contextId }) });
report.cancelled = summary(await client.cancelTask({ id: waiting.id }));
report.cancelAgain = await attempt(() => client.cancelTask({ id: waiting.id }));

// listTasks: the context's tasks, newest first. The request is made
// whole by fromJSON: the SDK writes a status left out as UNRECOGNIZED.
const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId, pageSize: 3 }));
report.list = { states: listed.tasks.map((t) => taskStateToJSON(t.status.state)), next: listed.nextPageToken, total: listed.totalSize };

// Mistakes: an unknown task, a message to a finished task, an answer
// that answers nothing.
report.unknown = await attempt(() => client.getTask({ id: "no-such-task" }));
report.finished = await attempt(() => client.sendMessage({ message: message("more", { contextId, taskId: sent.id }) }));
const pending = await client.sendMessage({ message: message(askPrompt) });
report.unclear = await attempt(() => client.sendMessage({ message: message("maybe", { taskId: pending.id }) }));
await client.cancelTask({ id: pending.id });

console.log(JSON.stringify(report));
