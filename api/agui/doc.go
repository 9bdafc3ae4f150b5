// Package agui serves Trellis' agent over AG-UI 1.0 (the protocol of
// CopilotKit and the @ag-ui/client HttpAgent): one POST of a
// RunAgentInput is one run, answered with the run's events as AG-UI
// events over SSE. It is a translator over the run service (package
// runs) and holds no run logic of its own: it reads the record and the
// agent's state only through runs' verbs, and imports neither store nor
// nodes.
//
// # Mapping
//
// An AG-UI thread is a Trellis conversation: threadId is the
// conversation's id, made on first use (another user's id is 404).
// Trellis keeps the history, so of the messages the client sends only
// the last user message is read: it is the run's message. The run's
// events become AG-UI's:
//
//   - tool.start (or approval.required, which comes first for a gated
//     tool) → TOOL_CALL_START, TOOL_CALL_ARGS (the arguments' JSON, in
//     one delta), TOOL_CALL_END; tool.complete and tool.error →
//     TOOL_CALL_RESULT;
//   - reasoning.chunk → REASONING_START, REASONING_MESSAGE_START (role
//     reasoning), REASONING_MESSAGE_CONTENT…, then REASONING_MESSAGE_END
//     and REASONING_END at the node's node.end (or before other output):
//     one reasoning message per node that thought, kept in
//     MESSAGES_SNAPSHOT;
//   - response.chunk → TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT…,
//     TEXT_MESSAGE_END at response.done; direct.response, and a
//     clarifying question, as a whole text message;
//   - node.start and node.end → STEP_STARTED and STEP_FINISHED, named by
//     the node;
//   - a sub-agent's events (those with a namespace): subagent.start →
//     SUBAGENT_STARTED (subagentRunId the namespace), its nodes' steps
//     and its tool calls with its subagentRunId, subagent.end →
//     SUBAGENT_FINISHED or SUBAGENT_ERROR; its reasoning and text are
//     not sent (its answer is the task call's result);
//   - tool.progress, tasks.updated and file.changed → ACTIVITY_SNAPSHOT
//     (activity types tool_progress, tasks and file: one activity per
//     file, its content the file.changed payload of its latest change);
//   - whatever is open when the run's stream ends (steps, sub-agents:
//     suspended for a person, an error otherwise) is ended first;
//   - run.completed → MESSAGES_SNAPSHOT (what the client sent and what
//     the run added), STATE_SNAPSHOT (Trellis' ids for the run and its
//     usage), RUN_FINISHED {outcome: success};
//   - run.interrupted for approvals → RUN_FINISHED {outcome: interrupt}
//     with one interrupt per approval (reason tool_call, the approval's
//     id, its tool call and the responseSchema {approved, editedArgs});
//     for a tool's question (an elicitation) one interrupt of reason
//     input_required whose responseSchema is the question's; for a call
//     that may have run one of reason uncertain_call. A run waiting on
//     several kinds at once gets an interrupt for each;
//   - run.cancelled → RUN_FINISHED {outcome: cancelled}; run.failed and
//     a server shutting down → RUN_ERROR.
//
// The stream ends at the terminal event: a run stopped for an approval
// is parked at once, not held open. The client resumes with a new POST
// on the thread carrying resume: [{interruptId, status, payload}]: an
// approval's payload is {approved, editedArgs?}, a question's is its
// content; status cancelled cancels the run. The resumed run's events
// follow on the same stream shape, with TOOL_CALL_RESULT for the call
// announced before the interrupt (no second TOOL_CALL_START).
//
// GET /ag-ui/capabilities declares what the agent supports
// (Handler.Capabilities), for a client's getCapabilities.
//
// A client that aborts its request cancels the run
// (runs.DisconnectCancel); its next message is accepted at once, once
// the aborted run has ended (runs.StartRequest.WaitIdle).
package agui
