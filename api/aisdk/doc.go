// Package aisdk serves Trellis' agent as a Vercel AI SDK UI message
// stream (the protocol of useChat with DefaultChatTransport): POST
// /api/ai-sdk/chat runs a chat's message and streams the run as UI
// message chunks; GET /api/ai-sdk/chat/{id}/stream resumes a chat's
// live stream. It is a translator over the run service (package runs)
// and holds no run logic of its own: it reads the record only through
// runs' verbs, and imports neither store nor nodes.
//
// # Mapping
//
// A chat is a Trellis conversation: the chat's id is the conversation's
// id, made on first use (another user's id is 404). Trellis keeps the
// history, so of the messages the client sends only the last is read:
// a user message is the run's message; an assistant message whose tool
// parts hold approval answers (state approval-responded) answers them.
// A run is one assistant message, whose id is the run's; its events
// become chunks:
//
//   - start {messageId}; start-step / finish-step around each group of
//     tool calls and each text;
//   - tool.start (or approval.required, which comes first for a gated
//     tool) → tool-input-available (a dynamic tool: the client declares
//     none); tool.complete → tool-output-available; tool.error →
//     tool-output-error, or tool-output-denied for a rejected call;
//   - approval.required → tool-approval-request {approvalId}, and the
//     stream ends: finish {finishReason: tool-calls}. The client's
//     addToolApprovalResponse sends the answer, and the run goes on in
//     the same assistant message;
//   - tool.uncertain (a call that may have run) → the same approval
//     request, approvalId the uncertain call's: approved runs the call
//     again, denied skips it (uncertain_call.resolved skip →
//     tool-output-denied);
//   - reasoning.chunk → reasoning-start, reasoning-delta…,
//     reasoning-end at the node's node.end (or its text): a reasoning
//     part in the step of the node's model call, before its text;
//   - response.chunk → text-start, text-delta…, text-end at
//     response.done; direct.response and a clarifying question as a
//     whole text;
//   - run.completed → finish {finishReason: stop}; run.failed → error;
//     run.cancelled → abort. Every stream ends with [DONE].
//
// ai 5 clients know no approval chunks: a request whose body says
// "approvals": false gets, for a gated tool, a text naming the approval
// (answer it in Trellis' page or API), and the stream finishes.
//
// # Disconnect and resume
//
// stop() aborts the request. A client that goes away and does not come
// back within ResumeGrace has its run cancelled; one that reloads and
// resumes (GET …/{id}/stream, 204 when nothing streams) within it finds
// the run going on and replayed from its start. A run parked on a call
// that may have run is replayed too, to its approval request: the
// stream that would have shown it broke with the process that ran the
// call. A new message on the
// chat cancels a run whose client went away at once, and one waiting
// for an approval the user chose not to answer. Package runs decides all
// of it (runs.DisconnectAwaitResume, runs.StartRequest.WaitIdle and
// DropWaiting); the adapter only says which.
package aisdk
