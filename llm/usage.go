package llm

import (
	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
)

// withTotal fills TotalTokens from the other fields.
func withTotal(u events.Usage) events.Usage {
	u.TotalTokens = u.InputTokens + u.OutputTokens + u.ThinkingTokens
	return u
}

// UsageKey is the GenerationInfo key under which this package's own models
// (offline, scripted) store their events.Usage. UsageFrom reads it first.
const UsageKey = "TrellisUsage"

// EstimatedKey is set to true in GenerationInfo when the usage is an estimate
// (the offline and scripted models count words, not tokens).
const EstimatedKey = "TrellisUsageEstimated"

// UsageFrom reads the token usage out of any provider's response.
//
// Providers repeat the response's usage on every choice (Anthropic makes one
// choice per content block), so the first choice carrying usage is read and
// the others are not added. Keys differ per provider — OpenAI and Ollama
// (PromptTokens, CompletionTokens, ReasoningTokens, PromptCachedTokens),
// Anthropic (InputTokens, OutputTokens, CacheReadInputTokens,
// CacheCreationInputTokens), Google and Bedrock (input_tokens,
// output_tokens) — and so do their types (int, int32, int64, float64); all are
// handled. A nil response gives zero usage.
func UsageFrom(resp *llms.ContentResponse) events.Usage {
	if resp == nil {
		return events.Usage{}
	}
	for _, c := range resp.Choices {
		if c == nil || len(c.GenerationInfo) == 0 {
			continue
		}
		if u, ok := usageFromInfo(c.GenerationInfo); ok {
			return u
		}
	}
	return events.Usage{}
}

func usageFromInfo(info map[string]any) (events.Usage, bool) {
	if u, ok := info[UsageKey].(events.Usage); ok {
		return withTotal(u), true
	}
	var u events.Usage
	found := false
	get := func(keys ...string) int {
		for _, k := range keys {
			if n, ok := asInt(info[k]); ok {
				found = true
				return n
			}
		}
		return 0
	}
	if _, anthropic := info["InputTokens"]; anthropic {
		// Anthropic's input_tokens exclude the cached prefix; add it back so
		// InputTokens means the same for every provider.
		u.CacheReadTokens = get("CacheReadInputTokens")
		u.CacheWriteTokens = get("CacheCreationInputTokens")
		u.InputTokens = get("InputTokens") + u.CacheReadTokens + u.CacheWriteTokens
		u.OutputTokens = get("OutputTokens")
		return withTotal(u), found
	}
	u.InputTokens = get("PromptTokens", "input_tokens", "prompt_tokens")
	u.OutputTokens = get("CompletionTokens", "output_tokens", "completion_tokens")
	u.ThinkingTokens = get("ReasoningTokens", "ThinkingTokens", "CompletionReasoningTokens")
	u.CacheReadTokens = get("PromptCachedTokens", "CacheReadInputTokens", "CachedTokens")
	u.CacheWriteTokens = get("CacheCreationInputTokens")
	// OpenAI's completion tokens include the reasoning tokens.
	if u.ThinkingTokens > 0 && u.OutputTokens >= u.ThinkingTokens {
		u.OutputTokens -= u.ThinkingTokens
	}
	return withTotal(u), found
}

func asInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int32:
		return int(n), true
	case int64:
		return int(n), true
	case uint32:
		return int(n), true
	case uint64:
		return int(n), true
	case float64:
		return int(n), true
	case float32:
		return int(n), true
	}
	return 0, false
}
