// Package a2a serves Trellis' agent to other agents over A2A v1.0
// (agent-to-agent): the agent card at GET /.well-known/agent-card.json
// and the JSON-RPC binding at POST /a2a — SendMessage,
// SendStreamingMessage (SSE), GetTask, ListTasks, CancelTask and
// SubscribeToTask. It is a translator over the run service (package
// runs) and holds no run logic of its own: it reads the record only
// through runs' verbs, and imports neither store nor nodes.
//
// # Mapping
//
// A context is a Trellis conversation and a task is one of its runs:
// contextId is the conversation's id, taskId the run's. A message with
// no contextId starts a new conversation; one with a contextId the user
// has not used makes that conversation (another user's is
// TaskNotFoundError, as for any id that is not the user's). The task's
// answer is its one artifact, "answer", streamed as artifact updates
// that append; a tool call is a working status update whose message has
// a data part {toolCallId, tool, args}. A run that ends is completed,
// failed (the error as the status message) or canceled.
//
// A run parked for a person is input-required, its status message
// saying what is asked (text) with Trellis' pending list (a data part
// {"pending": [...]}, the native API's shape). The next message in that
// task (its taskId) answers it:
//
//   - an approval, or a call that may have run: text whose first word is
//     approve, approved, yes, y or ok approves (runs the uncertain call
//     again); reject, rejected, deny, denied, no or n rejects (skips the
//     uncertain call), the rest of the text the reason; or a data part
//     {"decision": "approve"|"reject", "reason"}. One message answers
//     every approval the run waits for; anything else is
//     InvalidParamsError and answers nothing;
//   - a tool's question (elicitation): one data part accepts with it as
//     the content; the text "decline" or "cancel" declines or cancels;
//   - a clarifying question: the message is the conversation's next
//     run, which is a new task of the same context; the asking task has
//     then completed, its question kept as its status message.
//
// SendMessage waits for the task to end or need input and answers the
// task (returnImmediately answers it submitted at once); a client that
// goes away leaves the task going, as A2A's polling expects. A stream
// ends where the task ends or needs input. GetTask of a working task
// answers its status only: its answer comes with its end, or from
// SubscribeToTask, which replays a working task from its start.
// CancelTask cancels the run as the user's cancel does and answers the
// task once it has ended.
//
// # Errors
//
// Client mistakes are JSON-RPC errors with A2A's codes and a 4xx status
// (A2A's HTTP mapping): -32700 and -32600 for a body that is not one
// JSON-RPC request, -32601 for an unknown method (404), -32602 for bad
// params, -32001 for a task or context that is not the user's (404),
// -32002 for a task that cannot be cancelled, -32003 for push
// notifications (not served), -32004 for a message to a task that is
// not waiting for one, -32005 for a file part, and -32009 for an A2A
// version other than 1.x: v0.3 peers (message/send and the like) are
// not served. Trellis' own refusals keep their status (429 with
// Retry-After, 503) as -32603, with the Trellis error code as a
// google.rpc.ErrorInfo detail.
package a2a
