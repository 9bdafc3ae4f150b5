// Package openai serves OpenAI's protocols over the run service: Chat
// Completions, for OpenAI-compatible chat UIs and agent frameworks (the
// official openai client's chat.completions.create, .stream and
// .runTools), and the Responses API (responses.create, .stream,
// .retrieve and .cancel). Package api mounts it at /v1, behind its
// authentication (the client's "Authorization: Bearer <key>") and
// limits.
//
// # Endpoints
//
//   - GET /v1/models and GET /v1/models/{id}: the model registry, each id
//     and each alias one model entry.
//   - POST /v1/chat/completions: a run of the agent, answered as one
//     chat.completion, or streamed as chat.completion.chunk frames ending
//     with "data: [DONE]" (usage in a last chunk with
//     stream_options.include_usage).
//   - POST /v1/responses: a run of the agent, answered as one response
//     object, or streamed as the Responses API's semantic events
//     (response.created … response.completed).
//   - GET /v1/responses/{id} and POST /v1/responses/{id}/cancel: a
//     response rebuilt from its run's events; its run cancelled.
//
// # Conversations
//
// Chat completions is stateless: every request carries the whole
// conversation. Each request is a run in a fresh Trellis conversation
// (titled after the last user message; the response's
// X-Trellis-Conversation-Id header names it), replaying the request's
// messages: the last user message is the turn's message, what came
// before it the conversation so far (runs.Input.History), what came
// after it the assistant's calls of client tools and their results
// (runs.Input.Continued). System and developer messages are given to
// the agent as the request's context ({"instructions": [...]}); Trellis
// keeps its own system prompt.
//
// # Responses
//
// A response is a run, its id resp_<run id>. Without
// previous_response_id it starts a new conversation, an input list
// replayed as chat completions' messages are; with it, the next turn of
// the conversation whose latest response it names (the user's own: any
// other id is 404). function_call_output items go on with the turn that
// called the functions: the turn is run again from its start (an edit)
// with what it did so far and the outputs. store: false keeps the turn
// out of memory and deletes the conversation once the response is
// answered. A call of a declared function is a function_call item; a
// Trellis tool that needs approval an mcp_approval_request item (the id
// the approval's), answered through the native API; reasoning a
// reasoning item of reasoning_text.
//
// # Tools
//
// Trellis' own tools run inside the run and never appear as tool_calls.
// Tools the request declares are offered to the model beside them; a
// call of one ends the run unrun and comes back as tool_calls with
// finish_reason "tool_calls", for the client to run and answer with a
// tool message in its next request. A Trellis tool that needs approval
// ends the response at once without running: the answer is an assistant
// message saying which tool waits and the approval's id, to be answered
// through the native API (POST /api/v1/approvals/{approval_id}), with
// finish_reason "stop".
//
// # Reasoning
//
// A thinking model's reasoning goes out as reasoning_content, where
// DeepSeek's API and vLLM put it (the OpenAI API itself returns none, and
// the openai client's types do not name it): streamed, each piece in a
// delta of its own; whole, on the message, the nodes' reasoning joined
// by blank lines. The openai client's .stream() helper keeps only the
// last piece in its final message (it joins only the fields it knows):
// read the deltas.
//
// # Errors and cancel
//
// A client mistake is a 4xx in OpenAI's shape, {"error": {"message",
// "type", "param", "code"}}: the client retries 5xx, 408, 409 and 429. A
// client that goes away cancels its run.
//
// The package is a translator: it drives runs only through runs and
// imports neither package api, another adapter, store nor nodes.
package openai
