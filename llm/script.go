package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/trellis-ai/trellis/events"
)

// Script is a parsed script file for the scripted model. The format is
// documented in SCRIPT.md; field comments here are a summary.
type Script struct {
	// Steps are tried in order; see Scripted for how one is chosen.
	Steps []Step `json:"steps"`
}

// Step is one scripted reply and the calls it answers.
type Step struct {
	// Name labels the step in errors and Unconsumed; "" means "step <i>".
	Name string `json:"name,omitempty"`
	// Match selects the calls this step answers; empty matches any call.
	Match Match `json:"match"`
	// Reply is what the model returns.
	Reply Reply `json:"reply"`
	// Repeat keeps the step after use, so it answers every matching call.
	Repeat bool `json:"repeat,omitempty"`
}

// Match selects calls. Every set field must hold.
type Match struct {
	// Node must equal the caller's node (WithNode); "" matches any.
	Node string `json:"node,omitempty"`
	// Contains must occur in the last human message, ignoring case.
	Contains string `json:"contains,omitempty"`
	// Turn must equal the number of human messages in the conversation
	// (1 for the first user message); 0 matches any.
	Turn int `json:"turn,omitempty"`
	// ToolResult, when set, requires (true) or forbids (false) that the
	// conversation's last message is a tool result.
	ToolResult *bool `json:"tool_result,omitempty"`
	// Tool requires that a tool of this name is offered with the call.
	Tool string `json:"tool,omitempty"`
	// System must occur in the call's system prompt, ignoring case:
	// what the caller put in the prompt (a user's profile, the task
	// board).
	System string `json:"system,omitempty"`
}

// Reply is a scripted model reply.
type Reply struct {
	// Text is the reply text. With no Chunks it is streamed in chunks of
	// ChunkWords words.
	Text string `json:"text,omitempty"`
	// Chunks streams the text in exactly these pieces; the text is their
	// concatenation (Text, if also set, must equal it).
	Chunks []string `json:"chunks,omitempty"`
	// ChunkWords is the number of words per automatic chunk; 0 means 1.
	ChunkWords int `json:"chunk_words,omitempty"`
	// JSON is a structured decision returned as the text content (compact
	// JSON). Exclusive with Text and Chunks.
	JSON json.RawMessage `json:"json,omitempty"`
	// Thinking is reasoning text, streamed to the reasoning func before the
	// text and returned as ReasoningContent.
	Thinking string `json:"thinking,omitempty"`
	// ToolCalls are returned with the text, in order.
	ToolCalls []ScriptToolCall `json:"tool_calls,omitempty"`
	// DelayMS is slept before each streamed chunk (once before the reply when
	// nothing is streamed). 0 means no delay and no timer at all.
	DelayMS int `json:"delay_ms,omitempty"`
	// Error makes the call fail, after streaming Text/Chunks if any.
	Error *ScriptError `json:"error,omitempty"`
	// Usage is reported for the call; nil means an estimate counting words.
	Usage *events.Usage `json:"usage,omitempty"`
}

// ScriptToolCall is one scripted tool call.
type ScriptToolCall struct {
	// ID is the call id; "" means "call_<step>_<n>".
	ID string `json:"id,omitempty"`
	// Name is the tool's name. Required.
	Name string `json:"name"`
	// Args is the JSON object of arguments; absent means {}.
	Args json.RawMessage `json:"args,omitempty"`
}

// ScriptError is an injected failure.
type ScriptError struct {
	// Kind is "transient", "rate_limited" or "permanent".
	Kind string `json:"kind"`
	// Message is the error text; "" means "scripted <kind> error".
	Message string `json:"message,omitempty"`
	// RetryAfterMS is the Retry-After of a rate_limited error.
	RetryAfterMS int `json:"retry_after_ms,omitempty"`
}

// LoadScript reads and parses a script file.
func LoadScript(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("llm: load script: %w", err)
	}
	s, err := ParseScript(b)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return s, nil
}

// ParseScript parses and validates a script. Unknown fields are errors, so
// a typo does not silently change what a test checks. Errors match
// ErrInvalidScript.
func ParseScript(data []byte) (*Script, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScript, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the script object", ErrInvalidScript)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScript, err)
	}
	return &s, nil
}

func (s *Script) validate() error {
	if len(s.Steps) == 0 {
		return errors.New("no steps")
	}
	var errs []error
	for i := range s.Steps {
		if err := s.Steps[i].validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Steps[i].label(i), err))
		}
	}
	return errors.Join(errs...)
}

func (st *Step) label(i int) string {
	if st.Name != "" {
		return fmt.Sprintf("step %d (%s)", i, st.Name)
	}
	return fmt.Sprintf("step %d", i)
}

func (st *Step) validate() error {
	m, r := st.Match, st.Reply
	switch {
	case m.Turn < 0:
		return errors.New("match.turn is negative")
	case r.DelayMS < 0:
		return errors.New("reply.delay_ms is negative")
	case r.ChunkWords < 0:
		return errors.New("reply.chunk_words is negative")
	case len(r.JSON) > 0 && (r.Text != "" || len(r.Chunks) > 0):
		return errors.New("reply.json excludes reply.text and reply.chunks")
	case len(r.Chunks) > 0 && r.Text != "" && r.Text != strings.Join(r.Chunks, ""):
		return errors.New("reply.text differs from the concatenation of reply.chunks")
	case r.Text == "" && len(r.Chunks) == 0 && len(r.JSON) == 0 && len(r.ToolCalls) == 0 && r.Error == nil && r.Thinking == "":
		return errors.New("empty reply: give text, chunks, json, tool_calls, thinking or error")
	}
	if len(r.JSON) > 0 && !json.Valid(r.JSON) {
		return errors.New("reply.json is not valid JSON")
	}
	if r.Usage != nil {
		u := *r.Usage
		if u.InputTokens < 0 || u.OutputTokens < 0 || u.ThinkingTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 || u.TotalTokens < 0 {
			return errors.New("reply.usage has a negative count")
		}
	}
	for j, tc := range r.ToolCalls {
		if strings.TrimSpace(tc.Name) == "" {
			return fmt.Errorf("reply.tool_calls[%d]: empty name", j)
		}
		if len(tc.Args) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(tc.Args, &obj); err != nil || obj == nil {
				return fmt.Errorf("reply.tool_calls[%d] (%s): args must be a JSON object", j, tc.Name)
			}
		}
	}
	if e := r.Error; e != nil {
		if _, err := ParseKind(e.Kind); err != nil {
			return fmt.Errorf("reply.error: %w", err)
		}
		if e.RetryAfterMS < 0 {
			return errors.New("reply.error.retry_after_ms is negative")
		}
	}
	return nil
}
