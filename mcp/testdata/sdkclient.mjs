// A client built on the official TypeScript SDK (@modelcontextprotocol/sdk),
// used by Trellis' tests to check that Trellis' MCP server works with it.
//
//   node sdkclient.mjs '<json>'
//
// where <json> is {"transport": "stdio", "command": "...", "args": [...],
// "env": {...}} or {"transport": "http", "url": "..."}, plus "calls": a list
// of {"name": tool, "arguments": {...}} to call with progress. It lists the
// tools, makes the calls, answers elicitations (true for booleans, the
// first option of enums, "sdk" for strings), and prints one JSON object:
// {"protocolVersion", "tools": [{name, readOnlyHint, destructiveHint,
// inputSchema}], "results": [{"name", "isError", "text", "progress":
// [{progress, total, message}]}], "elicitations": [message, ...]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const cfg = JSON.parse(process.argv[2]);
const client = new Client({ name: "sdk-test-client", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const elicitations = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicitations.push(request.params.message);
  const content = {};
  for (const [name, prop] of Object.entries(request.params.requestedSchema?.properties ?? {})) {
    if (prop.type === "boolean") content[name] = true;
    else if (Array.isArray(prop.enum)) content[name] = prop.enum[0];
    else if (prop.type === "string") content[name] = "sdk";
  }
  return { action: "accept", content };
});

const transport =
  cfg.transport === "stdio"
    ? new StdioClientTransport({ command: cfg.command, args: cfg.args ?? [], env: { ...getDefaultEnvironment(), ...(cfg.env ?? {}) }, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(cfg.url));

const timer = setTimeout(() => {
  console.error("sdkclient: timed out");
  process.exit(2);
}, 60_000);

try {
  await client.connect(transport);
  const out = { protocolVersion: transport.protocolVersion ?? null, tools: [], results: [], elicitations };
  const { tools } = await client.listTools();
  for (const t of tools) {
    out.tools.push({
      name: t.name,
      readOnlyHint: t.annotations?.readOnlyHint ?? null,
      destructiveHint: t.annotations?.destructiveHint ?? null,
      inputSchema: t.inputSchema,
    });
  }
  for (const call of cfg.calls ?? []) {
    const progress = [];
    const res = await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined, {
      onprogress: (p) => progress.push({ progress: p.progress, total: p.total ?? null, message: p.message ?? null }),
    });
    const text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
    out.results.push({ name: call.name, isError: res.isError ?? false, text, progress });
  }
  console.log(JSON.stringify(out));
  await client.close();
  clearTimeout(timer);
} catch (err) {
  console.error("sdkclient:", err?.stack ?? err);
  process.exit(1);
}
