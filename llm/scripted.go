package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
)

// Scripted replays a Script. It is safe for concurrent use.
//
// On each call it takes the first step, in file order, that is not yet
// consumed and whose Match holds for the call: the caller's node
// (WithNode), the last human message, the number of human messages, whether
// the last message is a tool result, the tools offered. A step is consumed
// by the call it answers unless it has Repeat, so steps with the same
// matcher answer successive calls in order. A call no step matches fails
// with a *NoMatchError (errors.Is ErrNoScriptMatch) naming the node and the
// message.
//
// The reply's thinking goes to the streaming reasoning func word by word
// (ChunkWords), then its text to the streaming func in its chunks, each
// piece after DelayMS, as langchaingo's OpenAI client delivers a
// reasoning model's stream; tool calls come
// back in the response (never streamed). An Error reply fails the call
// with an *Error of its kind after streaming any text. With no delays the
// model sets no timers and does no I/O, so it suits benchmarks.
type Scripted struct {
	steps []scriptStep

	mu    sync.Mutex
	used  []bool
	calls []ScriptCall
}

var (
	_ llms.Model          = (*Scripted)(nil)
	_ llms.ReasoningModel = (*Scripted)(nil)
)

// ScriptCall records one call the scripted model answered (or failed).
type ScriptCall struct {
	Node      string // from WithNode
	Turn      int    // human messages in the conversation
	LastHuman string // the last human message
	Step      string // the step's label, "" when none matched
	// System is the call's system prompt, for a test to assert what the
	// model was told.
	System string
}

// NoMatchError is returned for a call that no remaining step matches.
type NoMatchError struct {
	Node      string
	Turn      int
	LastHuman string
}

// Error names the node, turn and message that nothing matched.
func (e *NoMatchError) Error() string {
	node := e.Node
	if node == "" {
		node = "(none)"
	}
	return fmt.Sprintf("llm scripted: no remaining step matches node %s, turn %d, last human message %q", node, e.Turn, e.LastHuman)
}

// Is makes errors.Is(err, ErrNoScriptMatch) true.
func (e *NoMatchError) Is(target error) bool { return target == ErrNoScriptMatch }

// scriptStep is a Step prepared for replay.
type scriptStep struct {
	Step
	label     string
	contains  string // lower case
	system    string // lower case
	text      string
	chunks    []string
	thinking  []string // the reply's thinking in its streamed pieces
	delay     time.Duration
	toolCalls []llms.ToolCall // IDs may be empty: filled per call
}

// NewScripted returns a model replaying s. s must come from ParseScript or
// LoadScript (or be valid by their rules).
func NewScripted(s *Script) *Scripted {
	m := &Scripted{used: make([]bool, len(s.Steps))}
	for i, st := range s.Steps {
		ps := scriptStep{
			Step:     st,
			label:    st.label(i),
			contains: strings.ToLower(st.Match.Contains),
			system:   strings.ToLower(st.Match.System),
			delay:    time.Duration(st.Reply.DelayMS) * time.Millisecond,
		}
		r := st.Reply
		switch {
		case len(r.JSON) > 0:
			var b bytes.Buffer
			if json.Compact(&b, r.JSON) == nil {
				ps.text = b.String()
			} else {
				ps.text = string(r.JSON)
			}
			ps.chunks = []string{ps.text}
		case len(r.Chunks) > 0:
			ps.text = strings.Join(r.Chunks, "")
			ps.chunks = slices.Clone(r.Chunks)
		case r.Text != "":
			ps.text = r.Text
			ps.chunks = chunkWords(r.Text, max(r.ChunkWords, 1))
		}
		if r.Thinking != "" {
			ps.thinking = chunkWords(r.Thinking, max(r.ChunkWords, 1))
		}
		for _, tc := range r.ToolCalls {
			args := "{}"
			if len(tc.Args) > 0 {
				var b bytes.Buffer
				if json.Compact(&b, tc.Args) == nil {
					args = b.String()
				}
			}
			ps.toolCalls = append(ps.toolCalls, llms.ToolCall{
				ID: tc.ID, Type: "function",
				FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: args},
			})
		}
		m.steps = append(m.steps, ps)
	}
	return m
}

// chunkWords splits text after every n-th space-separated word.
func chunkWords(text string, n int) []string {
	words := strings.SplitAfter(text, " ")
	if n <= 1 {
		return words
	}
	var out []string
	for i := 0; i < len(words); i += n {
		out = append(out, strings.Join(words[i:min(i+n, len(words))], ""))
	}
	return out
}

// Call generates from a single human prompt.
func (m *Scripted) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// SupportsReasoning is true: script steps may carry thinking.
func (m *Scripted) SupportsReasoning() bool { return true }

// Calls returns every call answered so far, in order.
func (m *Scripted) Calls() []ScriptCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// Unconsumed returns the labels of the steps without Repeat that no call
// has used yet; a test that ends with some left over did not run the
// conversation it scripted.
func (m *Scripted) Unconsumed() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for i, st := range m.steps {
		if !st.Repeat && !m.used[i] {
			out = append(out, st.label)
		}
	}
	return out
}

// systemText is the text of the call's first system message; a single
// text part, the usual case, is returned without a copy.
func systemText(msgs []llms.MessageContent) string {
	for _, m := range msgs {
		if m.Role != llms.ChatMessageTypeSystem {
			continue
		}
		if len(m.Parts) == 1 {
			if t, ok := m.Parts[0].(llms.TextContent); ok {
				return t.Text
			}
		}
		return partsText(m.Parts)
	}
	return ""
}

// GenerateContent answers with the first matching step; see Scripted.
func (m *Scripted) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	q, _ := lastHuman(msgs)
	turn := 0
	for _, msg := range msgs {
		if msg.Role == llms.ChatMessageTypeHuman {
			turn++
		}
	}
	lastIsTool := len(msgs) > 0 && msgs[len(msgs)-1].Role == llms.ChatMessageTypeTool
	node := NodeFrom(ctx)
	lowerQ := strings.ToLower(q)
	system := systemText(msgs)
	lowerSys := strings.ToLower(system)

	m.mu.Lock()
	idx := -1
	for i := range m.steps {
		st := &m.steps[i]
		if m.used[i] && !st.Repeat {
			continue
		}
		if st.matches(node, lowerQ, lowerSys, turn, lastIsTool, &o) {
			idx = i
			break
		}
	}
	rec := ScriptCall{Node: node, Turn: turn, LastHuman: q, System: system}
	if idx >= 0 {
		rec.Step = m.steps[idx].label
		m.used[idx] = true
	}
	callNo := len(m.calls) + 1
	m.calls = append(m.calls, rec)
	m.mu.Unlock()

	if idx < 0 {
		return nil, &NoMatchError{Node: node, Turn: turn, LastHuman: q}
	}
	st := &m.steps[idx]
	return st.play(ctx, &o, msgs, callNo)
}

func (st *scriptStep) matches(node, lowerQ, lowerSys string, turn int, lastIsTool bool, o *llms.CallOptions) bool {
	mt := st.Match
	switch {
	case mt.Node != "" && mt.Node != node:
		return false
	case st.contains != "" && !strings.Contains(lowerQ, st.contains):
		return false
	case st.system != "" && !strings.Contains(lowerSys, st.system):
		return false
	case mt.Turn != 0 && mt.Turn != turn:
		return false
	case mt.ToolResult != nil && *mt.ToolResult != lastIsTool:
		return false
	case mt.Tool != "" && !hasTool(o.Tools, mt.Tool) && !slices.ContainsFunc(o.Functions, func(f llms.FunctionDefinition) bool { return f.Name == mt.Tool }):
		return false
	}
	return true
}

// play streams and returns the step's reply.
func (st *scriptStep) play(ctx context.Context, o *llms.CallOptions, msgs []llms.MessageContent, callNo int) (*llms.ContentResponse, error) {
	r := &st.Reply
	streamed := false
	if o.StreamingReasoningFunc != nil && len(st.thinking) > 0 {
		if err := streamThinking(ctx, o, st.thinking, st.delay, "llm scripted"); err != nil {
			return nil, err
		}
		streamed = true
	}
	if o.StreamingFunc != nil || o.StreamingReasoningFunc != nil {
		for _, c := range st.chunks {
			if err := sleep(ctx, st.delay); err != nil {
				return nil, err
			}
			streamed = true
			if o.StreamingFunc != nil {
				if err := o.StreamingFunc(ctx, []byte(c)); err != nil {
					return nil, fmt.Errorf("llm scripted: streaming func: %w", err)
				}
			}
			if o.StreamingReasoningFunc != nil {
				if err := o.StreamingReasoningFunc(ctx, nil, []byte(c)); err != nil {
					return nil, fmt.Errorf("llm scripted: streaming reasoning func: %w", err)
				}
			}
		}
	}
	if !streamed {
		if err := sleep(ctx, st.delay); err != nil {
			return nil, err
		}
	}
	if e := r.Error; e != nil {
		kind, _ := ParseKind(e.Kind)
		msg := e.Message
		if msg == "" {
			msg = "scripted " + e.Kind + " error"
		}
		return nil, &Error{Kind: kind, Provider: "scripted", RetryAfter: time.Duration(e.RetryAfterMS) * time.Millisecond, Err: errors.New(msg)}
	}
	var calls []llms.ToolCall
	if len(st.toolCalls) > 0 {
		calls = make([]llms.ToolCall, len(st.toolCalls))
		for i, tc := range st.toolCalls {
			if tc.ID == "" {
				tc.ID = fmt.Sprintf("call_%d_%d", callNo, i+1)
			}
			fc := *tc.FunctionCall
			tc.FunctionCall = &fc
			calls[i] = tc
		}
	}
	usage, estimated := events.Usage{}, r.Usage == nil
	if r.Usage != nil {
		usage = withTotal(*r.Usage)
	} else {
		usage = estimateUsage(msgs, calls, st.text, r.Thinking)
	}
	return buildResponse(st.text, r.Thinking, calls, usage, estimated), nil
}

// sleep waits d unless ctx ends first; d == 0 returns at once with no timer.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("llm scripted: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}
