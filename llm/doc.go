// Package llm owns everything Trellis knows about language models: the model
// registry and its aliases, provider construction through langchaingo,
// token-usage accounting, the one error classification and resilience policy
// (used around every model call and by the tool provider), and two models
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
// # Fallbacks
//
// A model may name fallbacks ([ModelConfig.Fallbacks]); [Registry.Model]
// then hands out the model with them, each a whole resilient model of its
// own. A call that fails because the provider is unavailable,
// rate-limited or timed out — as [KindOf] classifies it, after the
// model's own retries or at once when its breaker is open — is made on
// the next fallback, and the context's [FallbackListener] hears it
// (nodes turn that into the run's model.fallback event). A call whose
// streamed output already reached the caller never falls back: nothing
// is said twice. [NewRegistry] refuses unknown fallbacks and cycles.
//
// # Usage
//
// [UsageFrom] reads the token usage of any provider's response into one
// [events.Usage]; [events.Usage.Add] sums them over a run.
//
// # Resilience
//
// This package holds the one classification of remote errors and the one
// resilience policy, for model calls and tool sources (package operators)
// alike. [KindOf] sorts any error into a [Kind] (transient, rate-limited,
// permanent, cancelled); sources mark their errors with [Transient],
// [Permanent], [RateLimited] and [NotSent] (a failure that never reached
// the remote side, see [SafeToRetry]). A [Guard] runs calls to one
// dependency under retry (backoff with jitter, or the error's Retry-After),
// a circuit breaker, an optional bulkhead, a timeout per attempt and one for
// the whole call, which [PauseTimeout] stops while a person is asked;
// [Guard.DoAtMostOnce] retries only failures that never reached the
// dependency. One [ResilienceConfig] configures it; each caller has its
// defaults ([ModelDefaults]; operators.RemoteToolDefaults). Work that no
// caller waits on and that must succeed in the end (reconnecting an MCP
// server, taking a database session again) retries under a [Backoff]
// instead: every error, with the same jittered doubling, until its
// context ends.
//
// [WithResilience] (or [NewResilience] shared by the models a breaker
// covers; the registry keeps one per model of a provider endpoint) wraps a
// model in a Guard: retry (transient errors, 429 with Retry-After), a
// circuit breaker and a timeout per attempt, never retrying a stream that
// has reached the caller. Its errors come back as [*Error] with a [Kind];
// callers branch with errors.Is / errors.As, never on strings.
//
// # Streaming
//
// Streaming is langchaingo's: pass llms.WithStreamingFunc. OpenAI-compatible
// providers also send tool-call JSON deltas and empty chunks to that func;
// wrap a user-facing func in [TextStream] to forward only text. A model's
// reasoning streams through llms.WithStreamingReasoningFunc when the call
// asks for thinking ([ThinkingOptions]) and the pinned langchaingo
// delivers it; the offline and scripted models deliver theirs through it
// as langchaingo's OpenAI client does a reasoning model's. The wire tests
// replay each provider's documented streams and error bodies
// (testdata/wire) through the real clients.
//
// # Offline and scripted models
//
// [NewOffline] answers arithmetic, time and "what can you do" questions by
// calling tools, and otherwise says honestly that it is offline.
// [NewScripted] replays a script file (see SCRIPT.md) matched on the calling
// node ([WithNode]) and the conversation.
package llm
