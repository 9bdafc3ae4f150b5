// Package llm owns everything Trellis knows about language models: the model
// registry and its aliases, provider construction through langchaingo,
// token-usage accounting, resilience around every model call, and two models
// that need no network at all — the offline model (the embedded default) and
// the scripted model (deterministic replays for tests and benchmarks).
//
// Every model this package hands out implements langchaingo's [llms.Model]
// (GenerateContent and Call), so callers depend on that interface only.
// Models that can think also implement [llms.ReasoningModel].
//
// # Registry
//
// A [Registry] is built from a [Config] (a list of [ModelConfig]) with
// [NewRegistry], or from the environment with [ConfigFromEnv]. It resolves a
// model id or alias ("sonnet", "fast", "thinking", …) with [Registry.Resolve]
// and builds providers lazily with [Registry.Model]. With no provider
// configured, the default is the offline model, so `trellis serve` is useful
// with no key. There is no package-level registry: construct one and pass it.
//
// # Usage
//
// [UsageFrom] reads the token usage of any provider's response into one
// [TokenUsage]; [TokenUsage.Add] sums them over a run.
//
// # Resilience
//
// [WithResilience] (or [NewResilience] shared per provider) wraps a model with
// retry (transient errors, 429 with Retry-After), a circuit breaker and a
// timeout. Errors come back as [*Error] with a [Kind]; callers branch with
// errors.Is / errors.As, never on strings.
//
// # Streaming
//
// Streaming is langchaingo's: pass llms.WithStreamingFunc. OpenAI-compatible
// providers also send tool-call JSON deltas and empty chunks to that func;
// wrap a user-facing func in [TextStream] to forward only text.
//
// # Offline and scripted models
//
// [NewOffline] answers arithmetic, time and "what can you do" questions by
// calling tools, and otherwise says honestly that it is offline.
// [NewScripted] replays a script file (see SCRIPT.md) matched on the calling
// node ([WithNode]) and the conversation.
package llm
