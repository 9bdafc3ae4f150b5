package api

import (
	"encoding/json"
	"time"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// envelope returns the event's data line without seq, which the store
// adds: {"run_id","conversation_id","ts", then the agent's fields}.
func (rn *run) envelope(p nodes.Payload) ([]byte, error) {
	body, err := json.Marshal(nodes.Event{Type: p.EventType(), Data: p})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(rn.prefix)+len(body)+32)
	b = append(b, rn.prefix...)
	b = time.Now().UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `",`...)
	return append(b, body[1:]...), nil
}

// runStarted is run.started, the first event of every run.
type runStarted struct {
	RequestID string `json:"request_id"`
}

func (*runStarted) EventType() string { return "run.started" }

// sanitize keeps internal failures' details in the log: the client reads
// the code and a message that names the run.
func sanitize(f *nodes.RunFailed, runID string) *nodes.RunFailed {
	if f.Error.Code != nodes.CodeInternal {
		return f
	}
	return &nodes.RunFailed{Error: nodes.ErrorInfo{Code: nodes.CodeInternal, Message: "internal error; the server logged it under run " + runID}}
}

func add(a, b llm.TokenUsage) llm.TokenUsage {
	return llm.TokenUsage{
		InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens,
		ThinkingTokens: a.ThinkingTokens + b.ThinkingTokens, CacheReadTokens: a.CacheReadTokens + b.CacheReadTokens,
		CacheWriteTokens: a.CacheWriteTokens + b.CacheWriteTokens, TotalTokens: a.TotalTokens + b.TotalTokens,
	}
}

// title is a new conversation's title: the first line of its first
// message, at most 80 characters.
func title(msg string) string {
	line := msg
	for i, c := range msg {
		if c == '\n' {
			line = msg[:i]
			break
		}
	}
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}
