// Package nodes is Trellis' chat agent: ChatState and its reducers, the
// agent's nodes and routes, its prompts, the compiled agent graph, and the
// run lifecycle (start, resume after approval or clarification, continue
// after a crash, fork for edit-and-rerun). It builds on graph (the
// engine), llm (models) and operators (tools), and knows nothing of HTTP.
//
// # The graph
//
// Agent.Mermaid draws it, from the compiled graph; docs/architecture.md
// shows that drawing, and a test keeps the two equal. A turn goes
// initialize → supervisor, which answers (→ write → stream), calls tools
// (call_tool, create_workflow → execute_tool → reflect, which routes to
// synthesize → write, back to supervisor, to handle_blocked → write, or
// straight to stream), or asks the user (clarify → stream, waiting as an
// interrupt).
//
// The nodes:
//
//   - initialize resets the per-turn fields, appends the user's message,
//     and lets the middleware prepare the turn (the window adopts a model
//     summary stored for its ask and folds old turns into the extractive
//     summary; documents and cognition load their context, bounded by
//     Options.ContextTimeout).
//   - supervisor makes one decision — ANSWER, CALL_TOOL, CREATE_WORKFLOW or
//     CLARIFY — through a `decide` tool, a direct call of real tools
//     (CALL_TOOL), a JSON object, or plain text (ANSWER), with one repair
//     call when the reply does not parse. At Options.MaxIterations it stops.
//   - execute_tool asks for approvals first (each an interrupt), then runs
//     the calls: one, several concurrently, or a workflow of dependent steps
//     in concurrent waves. Tool errors are results the model reads. A
//     result over Window.ToolResultTokens reaches the models as a summary
//     by Window.SummaryModel (a bounded extract when it fails).
//   - reflect judges the latest results: satisfied, need_more, blocked, or
//     direct_response when an operator answered the user itself.
//   - synthesize numbers the data chunks tools returned as sources and
//     briefs write to cite them as [n]; write makes the one model call that
//     produces the answer, with the user's model, streaming its tokens.
//   - handle_blocked briefs write on an honest account of what failed.
//   - stream emits response.done, keeps the assistant's message and calls
//     Hooks.OnAnswer and Hooks.Learn.
//
// # The prompts
//
// Every model call's system prompt opens with Options.SystemPrompt (the
// operator's; DefaultSystemPrompt when none), then the middleware's
// sections, then the request's context object (Input.Context) when it
// has one: fenced between <client_context> tags, escaped so nothing in
// it closes the fence, and said to be the client's data, not
// instructions. Tool calls get the same object as operators.Call.Context,
// and sub-agents inherit it with the request's other scopes.
//
// # Runs and events
//
// Agent.Run takes a conversation id and the user's message and returns an
// iterator of events.Event (package events holds the vocabulary): API.md's
// event objects without the envelope the service adds (seq, run_id,
// conversation_id, ts). Every run ends with one
// terminal event — run.completed, run.interrupted, run.cancelled or
// run.failed; Run documents the contract. Agent.Resume answers an
// approval, Agent.AnswerElicitation answers a tool's question a run
// parked on, Agent.Run answers a clarifying question, Agent.Continue picks
// up a run whose process died (a parked one stays parked, running nothing
// again), and Agent.Edit reruns a turn from the state before it. WithRun
// names the caller's run on every checkpoint, Agent.Began says whether
// the newest state is a run's (whether it got as far as storing one),
// and Agent.Branch makes the state a run left the newest again, so the
// next turn continues that run's branch (Agent.RunAfter does both, on one
// read of the newest checkpoint).
//
// A model configured to think (llm.ModelConfig.Thinking) is asked to in
// the supervisor, reflect and write (llm.ThinkingOptions), with a
// streaming reasoning func: its reasoning comes out as reasoning.chunk
// events of the node as it arrives, and the whole of it on the node's
// node.end. A model that does not think gets neither, and a run keeps no
// reasoning state until a first chunk arrives.
//
// # Approval
//
// Whether a call needs approval is decided once, as the supervisor
// proposes it, and kept with the call (ToolCall.Gate): a run resumed or
// recovered later never decides again. A gated call raises an interrupt
// before it runs; the run ends with approval.required and run.interrupted
// (reason approval). Resume with an ApprovalDecision: approve, edit (new args) or
// reject (a reason). A rejection goes back to the supervisor with the
// reason, and it may propose a revised call; after Options.MaxRevisions
// rejections in a turn the agent stops proposing and says so. Every
// decision is kept in ChatState.Approvals.
//
// # Questions
//
// A tool that asks the user (operators.Messenger.Elicit) waits for the
// Elicitor's answer inside execute_tool while the run can wait. When the
// Elicitor says it cannot (operators.ErrAskLater), the call ends and the
// run parks with run.interrupted (reason elicitation), the calls finished
// so far kept in the interrupt. AnswerElicitation resumes it: those calls
// are not run again, and the asking call runs again with its answer given
// at once, or, when its question could not take a late answer, is
// reported to the model as expired.
//
// # At most once
//
// With Options.Calls, a call of a tool that is neither read-only nor
// idempotent is recorded before it starts and when it ends. execute_tool
// run again for the same calls (a crash, a question) takes an ended
// call's recorded outcome instead of running it, and parks on a call that
// started and never ended, as on a question: tool.uncertain and
// run.interrupted (reason uncertain_call). AnswerUncertainCall resumes
// it: retry runs it again, skip and fail tell the model so. Every call
// carries an idempotency key on its context (operators.IdempotencyKey),
// derived as elicitation ids are, the same each time the call is issued.
//
// # Middleware, sub-agents and budgets
//
// A chain of Middleware shapes what models see and may call: it adds to
// system prompts, contributes tools, and hooks before and after each model
// call, as a sandwich (before first to last, after last to first). The
// context window, documents, cognition and sub-agents are built-in
// middleware. SubAgents define agents the supervisor delegates to with
// the task tool; each runs as a named subgraph of execute_tool
// (graph.Child), its events on the parent's stream (Event.Namespace), its
// approvals and questions pausing the whole run. A Budget limits a run's
// tokens, tool calls and working time across its sub-agents and its
// pauses (the use is checkpointed in ChatState.BudgetSpent); a run that
// reaches one ends through handle_blocked.
//
// # State
//
// ChatState is plain data that every checkpointer stores and returns
// equal; runtime dependencies are the Agent's. Models see a Window of the
// conversation; the state keeps the newest messages, and moves the
// oldest, once the summaries cover them, into pages of history in the
// conversation's thread (namespace "history", see history.go), so a
// cold turn decodes what the turn needs however long the conversation;
// Agent.State and Agent.History put them back. Older turns are summarised
// twice over: extractively as they leave the window, and, when
// Window.AskSummary is set, by a model off the answer path (the stream
// node asks once those older than the newest half window pass
// Window.SummarizeAt; the service runs Agent.Summarize as a job; the
// summary is kept in the conversation's thread, namespace "summary", and
// the next turn adopts it).
package nodes
