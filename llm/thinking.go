package llm

import "github.com/tmc/langchaingo/llms"

// minThinkingOutput is the room left for the answer above the thinking
// budget: Anthropic requires max_tokens > budget_tokens.
const minThinkingOutput = 4096

// ThinkingOptions returns the call options that turn on extended thinking
// for cfg's model with the given budget in tokens (0 = the model's default,
// DefaultThinkingBudget when unset). It returns nil for models without
// thinking support, so callers may always append its result.
//
// Per provider:
//   - Anthropic: a thinking budget (langchaingo clamps it to 1024…128000),
//     temperature 1 (the API rejects any other with thinking on) and
//     max_tokens raised above the budget.
//   - OpenAI: a thinking mode derived from the budget (≤ 4096 low,
//     ≤ 16384 medium, else high), which langchaingo v0.1.14 does not send
//     (its reasoning_effort code is commented out): reasoning models think
//     at their default effort.
//   - Ollama: think mode on.
//
// The thinking text comes back in the response (see ThinkingFrom) and, when
// streaming, through llms.WithStreamingReasoningFunc — where the provider
// sends it and langchaingo v0.1.14 reads it: Anthropic's thinking_delta
// events (the signature_delta is dropped), and "reasoning_content" deltas
// of OpenAI-compatible servers (DeepSeek, vLLM). OpenAI's own chat
// completions send no reasoning text, only reasoning_tokens in the usage;
// Ollama's /v1 sends it as "reasoning", which langchaingo does not read.
// On Anthropic a call continuing a tool loop goes without thinking (see
// NewProvider).
func ThinkingOptions(cfg ModelConfig, budget int) []llms.CallOption {
	if !cfg.Thinking {
		return nil
	}
	if budget <= 0 {
		budget = cfg.thinkingBudget()
	}
	mode := llms.ThinkingModeHigh
	switch {
	case budget <= 4096:
		mode = llms.ThinkingModeLow
	case budget <= 16384:
		mode = llms.ThinkingModeMedium
	}
	opts := []llms.CallOption{llms.WithThinking(&llms.ThinkingConfig{
		Mode:           mode,
		BudgetTokens:   budget,
		ReturnThinking: true,
	})}
	if cfg.Provider == ProviderAnthropic {
		opts = append(opts, llms.WithTemperature(1), llms.WithMaxTokens(max(cfg.MaxTokens, budget+minThinkingOutput)))
	}
	return opts
}
