// Package mcp connects Trellis to the Model Context Protocol, both ways:
// external MCP servers become a tool source of the operators.Provider, and
// Trellis' own tools are served to MCP clients. It imports operators, never
// nodes or api: the servers' questions go to the call's Messenger, which
// the run service (package runs) answers.
//
// # Configuration
//
// [LoadConfig] reads a JSON file in the mcpServers format Claude Desktop,
// Cursor and Claude Code use, so existing files work as they are:
//
//	{"mcpServers": {
//	  "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
//	  "search": {"url": "https://search.example/mcp", "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"},
//	             "callTimeout": "90s", "requireApproval": ["purge"], "allowedTools": ["query", "purge"],
//	             "idempotentTools": ["query"], "required": true}
//	}}
//
// A server runs as a child process (stdio: command, args, env, cwd) or is
// reached over streamable HTTP (url, headers) or the older HTTP+SSE
// transport (type "sse", or a url ending in /sse). Trellis' own keys are
// listed at [ParseConfig]; ${VAR} references are expanded from the
// environment.
//
// # Connections
//
// A [Manager] adds each server to the provider as a source named after it
// and connects in the background: start-up never waits for a server. A
// server that fails to start, stops answering or exits is marked
// unavailable (its tools are listed unavailable, calls fail fast), logged
// with the reason (exit status, stderr, output that is not JSON-RPC), and
// reconnected with exponential backoff. [Manager.Status] shows each
// server's state, [Manager.Ready] whether the required ones are up, and
// [Manager.Close] kills every child process (which also dies with the
// service on Linux).
//
// Tools are listed page by page and listed again on
// notifications/tools/list_changed. Their names are made safe for models
// ('.' and '/' become '_'), their schemas and annotations kept (MCP's
// defaults apply: an unannotated tool counts as destructive, which an
// approval policy with Destructive set acts on), and [ServerConfig]'s
// allow-list, approval list (with its deadline, approvalTimeout and
// approvalExpiry, as [operators.ExpirySource]), its questions' deadline
// (elicitationTimeout and elicitationExpiry, as
// [operators.ElicitationExpirySource]) and idempotent list applied. Each call's
// _meta carries its idempotency key ([MetaIdempotencyKey]). Calls go through
// the provider's retry, circuit breaker and bulkhead for the server, and
// its timeout, which [Config.SourceResilience] sets to the server's call
// timeout: it bounds the whole call, attempts included, not counting time
// spent waiting for the user. Failures are classified for the provider: a
// request that never left (not connected, connection refused) is
// transient and not sent, so it is retried for any tool; a lost
// connection or a timeout is transient but may have reached the server,
// so it is retried only for tools marked read-only or idempotent (by the
// server, or by idempotentTools); a JSON-RPC error or a malformed answer
// is permanent. Every content type of a result is mapped (see
// [OutputAudio], [ErrToolFailed], [ErrOutputSchema]). No answer is held
// whole above [ManagerConfig.MaxMessageBytes] (16 MiB): a larger one is
// discarded while it is read — over stdio and HTTP alike — and its call
// fails saying so, the connection staying up; the provider cuts the
// results under it to its own cap.
//
// # Protocol eras
//
// mcp-go v1.2.1 speaks the stateless 2026-07-28 revision and the session
// revisions (2025-11-25, 2025-06-18, …) that most servers still speak.
// With no pinned version, a connection probes with server/discover and
// falls back to initialize; a server that chokes on the probe (exits, or
// closes the connection) is retried pinned to 2025-11-25, and what worked
// is remembered. A session server over streamable HTTP is reopened with its
// standalone stream so that it can announce tool changes; SSE servers are
// pinned to 2025-11-25 from the start.
//
// # Progress, elicitation and cancellation
//
// Each call carries a progress token; the server's progress notifications
// reach the call's operators.Messenger (tool.progress events), in order,
// before the result; one that a newer update overtook on the way is
// dropped, so progress never goes back. A server's request for user input — an input request
// in 2026-07-28, elicitation/create in the session revisions — is put to
// the call's Messenger (the run service waits for the user) and the
// answer goes back to the server: accept with content, decline, or cancel
// (also on timeout). When the run parks on the question instead, a
// 2026-07-28 call is abandoned, to be issued again with the answer; a
// session revision's server gets a cancel. A URL-mode elicitation is
// declined. When a run is
// cancelled, its calls return at once and the server is sent
// notifications/cancelled on every transport (mcp-go does it over stdio;
// this package over HTTP and SSE).
//
// # Serving Trellis' tools
//
// [NewServer] exposes a provider's local tools and operators (and the
// tools of servers marked export) to MCP clients, over stdio with
// [ServeStdio] (the trellis mcp command) or streamable HTTP with
// [HTTPHandler] (the service's /mcp). An operator's progress becomes
// progress notifications; its Confirm and Choose become elicitations to
// clients that support them.
package mcp
