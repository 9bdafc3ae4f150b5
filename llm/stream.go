package llm

import (
	"bytes"
	"context"
	"encoding/json"
)

// StreamFunc is langchaingo's streaming callback (llms.WithStreamingFunc).
type StreamFunc = func(ctx context.Context, chunk []byte) error

// TextStream wraps a user-facing streaming func so that it receives only
// text. langchaingo's OpenAI client (and so every OpenAI-compatible server)
// also passes the JSON encoding of each tool-call delta, e.g.
// `[{"id":"call_1","type":"function","function":{"name":"calculator","arguments":""}}]`,
// and an empty final chunk to the streaming func; TextStream drops both.
// Other providers stream text only, so wrapping them costs one check per
// chunk. A nil fn gives nil.
func TextStream(fn StreamFunc) StreamFunc {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, chunk []byte) error {
		if len(chunk) == 0 || isToolCallDelta(chunk) {
			return nil
		}
		return fn(ctx, chunk)
	}
}

// toolDelta is the shape langchaingo marshals for a streamed tool-call delta
// (openaiclient.ToolCall) or a legacy function-call delta.
type toolDelta struct {
	ID       *string          `json:"id"`
	Type     *string          `json:"type"`
	Function *json.RawMessage `json:"function"`
	Name     *string          `json:"name"`
	Args     *string          `json:"arguments"`
}

func isToolCallDelta(chunk []byte) bool {
	c := bytes.TrimSpace(chunk)
	if len(c) < 2 {
		return false
	}
	switch {
	case c[0] == '[' && c[len(c)-1] == ']':
		var deltas []toolDelta
		if json.Unmarshal(c, &deltas) != nil || len(deltas) == 0 {
			return false
		}
		for _, d := range deltas {
			if d.Function == nil || d.Type == nil {
				return false
			}
		}
		return true
	case c[0] == '{' && c[len(c)-1] == '}':
		// Legacy function_call delta: {"name":"…","arguments":"…"}.
		var d toolDelta
		if json.Unmarshal(c, &d) != nil {
			return false
		}
		return d.Name != nil && d.Args != nil && d.Function == nil && d.ID == nil
	}
	return false
}
