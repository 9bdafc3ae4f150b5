// Package operators owns everything the agent acts through: the tool contract
// ([Spec], [Result], [Tool]), the local tool [Registry], the [OperatorRegistry],
// the [Messenger] contract that lets a tool talk to the user while it runs, the
// built-in tools and operators, per-source resilience (an llm.Guard per
// source: the one resilience policy, which package llm owns), argument validation against JSON Schema, the [ApprovalPolicy] (which tools need a human's yes, and an approval's deadline: [Expiry]), the deadline of tools' questions ([Provider.ElicitationExpiry]),
// and the [Provider] that merges every tool source behind one Execute.
//
// It imports nothing from nodes, api, mcp or graph; from llm it takes the
// one classification of remote errors (llm.KindOf, llm.Transient, …) and
// the one resilience policy (llm.Guard). Model access is langchaingo's
// llms.Model; remote tool sources (MCP servers) plug in through
// the small [Source] interface, which package mcp implements.
//
// # Adding a tool
//
// A typed Go function plus an input struct becomes a tool; the input schema is
// generated from the struct with github.com/google/jsonschema-go, and the
// arguments are validated against it before the function runs:
//
//	type greetIn struct {
//		Name string `json:"name" jsonschema:"who to greet"`
//	}
//	greet := operators.NewTool("greet", "Greets someone by name.",
//		func(ctx context.Context, call operators.Call, in greetIn) (operators.Result, error) {
//			return operators.TextResult("Hello, " + in.Name + "!"), nil
//		}, operators.ReadOnly())
//	reg := operators.NewRegistry()
//	reg.MustAdd(greet)
//
// # Failures are results
//
// [Provider.Execute] never returns a Go error and never panics: an unknown
// tool, invalid arguments, a tool error, a panic, a timeout or an open circuit
// breaker all come back as a [Result] with [StatusError] and a message the
// model can read; [Result.Err] keeps the Go error for callers that branch on
// it with errors.Is ([ErrUnknownTool], [ErrInvalidArguments], [llm.ErrUnavailable]).
//
// # Resilience
//
// Every remote [Source] gets its own [llm.Guard]: Retry(CircuitBreaker(
// Bulkhead(call))), all within one timeout that bounds the whole call —
// attempts and the waits between them — and stops while the tool waits for
// the user ([llm.PauseTimeout]). Errors are classified with [llm.KindOf]:
// transient and rate-limited errors are retried with exponential backoff
// and jitter (honouring Retry-After), permanent ones are not. A retry must
// never repeat a side effect: a failure that may have reached the source
// (a timeout, a connection lost mid-call, a 5xx) is retried only for tools
// annotated read-only or idempotent; one that certainly did not
// ([llm.NotSent], [llm.SafeToRetry]) is retried for any tool. Breaker changes
// reach the [llm.BreakerListener] in [ProviderConfig] and show as
// available=false in [Provider.Tools].
//
// # Messaging
//
// A tool reaches the user through its [Call]: Progress, SendText, SendWidget,
// Stream, Confirm, Choose and Elicit. Each becomes an event named as in
// API.md (tool.progress, direct.response, response.chunk,
// elicitation.request). The service implements [Messenger]; [NopMessenger]
// serves runs with no user attached and [Recorder] serves tests.
//
// # Idempotency keys
//
// The agent gives every call an idempotency key, on its context
// ([IdempotencyKey]): the same call issued again — after a question, a
// crash, a person's "run it again" — has the same key. A tool whose
// [Annotations] say neither ReadOnly nor Idempotent is recorded before it
// starts and is never started again on its own after a crash; the others
// are, with the same key.
package operators
