package events

// Usage is the token count of one or more model calls, the same for
// every provider. Its JSON is API.md's "usage" object.
//
// InputTokens counts every prompt token the provider processed, cached or
// not; CacheReadTokens and CacheWriteTokens say how many of those were read
// from or written to the provider's prompt cache. OutputTokens excludes
// ThinkingTokens when the provider reports them separately (OpenAI reasoning
// tokens); Anthropic does not, so its thinking is counted in OutputTokens.
// TotalTokens = InputTokens + OutputTokens + ThinkingTokens.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	ThinkingTokens   int `json:"thinking_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the field-by-field sum of u and v. It is the reducer for a
// run's usage.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		ThinkingTokens:   u.ThinkingTokens + v.ThinkingTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
	}
}

// IsZero reports whether no tokens were counted.
func (u Usage) IsZero() bool { return u == Usage{} }
