package llm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
)

func scripted(t *testing.T, script string) *llm.Scripted {
	t.Helper()
	s, err := llm.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return llm.NewScripted(s)
}

func TestScriptedReplaysAnAgentConversation(t *testing.T) {
	s, err := llm.LoadScript("testdata/calculator.json")
	if err != nil {
		t.Fatal(err)
	}
	m := llm.NewScripted(s)
	msgs := []llms.MessageContent{human("what is 2+2?")}

	// supervisor, first call: a tool call.
	resp, err := m.GenerateContent(llm.WithNode(t.Context(), "supervisor"), msgs, llms.WithTools(allTools))
	if err != nil {
		t.Fatal(err)
	}
	calls := llm.ToolCallsFrom(resp)
	if len(calls) != 1 || calls[0].FunctionCall.Name != "calculator" || calls[0].FunctionCall.Arguments != `{"expression":"2+2"}` || calls[0].ID == "" {
		t.Fatalf("tool calls = %+v", calls)
	}
	msgs = append(msgs,
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{calls[0]}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: calls[0].ID, Name: "calculator", Content: "4"}}})

	// supervisor after the tool result: a structured decision, with thinking.
	var reasoning strings.Builder
	resp, err = m.GenerateContent(llm.WithNode(t.Context(), "supervisor"), msgs,
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, _ []byte) error { reasoning.Write(r); return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if got := llm.TextFrom(resp); got != `{"action":"ANSWER","reasoning":"the calculator answered"}` {
		t.Errorf("decision = %s", got)
	}
	if llm.ThinkingFrom(resp) != "4 is right" || reasoning.String() != "4 is right" {
		t.Errorf("thinking = %q, streamed %q", llm.ThinkingFrom(resp), reasoning.String())
	}

	// write: streamed in word chunks, with scripted usage.
	var chunks []string
	resp, err = m.GenerateContent(llm.WithNode(t.Context(), "write"), msgs,
		llms.WithStreamingFunc(func(_ context.Context, c []byte) error { chunks = append(chunks, string(c)); return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(chunks, "|") != "2+2 |is |4." || llm.TextFrom(resp) != "2+2 is 4." {
		t.Errorf("chunks = %q, text %q", chunks, llm.TextFrom(resp))
	}
	if u := llm.UsageFrom(resp); u != (events.Usage{InputTokens: 30, OutputTokens: 4, TotalTokens: 34}) {
		t.Errorf("usage = %+v", u)
	}
	if left := m.Unconsumed(); len(left) != 0 {
		t.Errorf("unconsumed steps: %v", left)
	}

	// Anything else hits the repeating fallback.
	for range 2 {
		if got, err := m.Call(t.Context(), "bye"); err != nil || got != "scripted fallback" {
			t.Errorf("fallback = %q, %v", got, err)
		}
	}
	if n := len(m.Calls()); n != 5 || m.Calls()[0].Node != "supervisor" || m.Calls()[0].Step != "step 0 (supervisor asks for the calculator)" {
		t.Errorf("calls = %+v", m.Calls())
	}
}

func TestScriptedConsumesSameMatcherStepsInOrder(t *testing.T) {
	m := scripted(t, `{"steps":[
		{"match":{"node":"reflect"},"reply":{"json":{"verdict":"need_more"}}},
		{"match":{"node":"reflect"},"reply":{"json":{"verdict":"satisfied"}}}]}`)
	ctx := llm.WithNode(t.Context(), "reflect")
	for _, want := range []string{`{"verdict":"need_more"}`, `{"verdict":"satisfied"}`} {
		got, err := m.Call(ctx, "x")
		if err != nil || got != want {
			t.Fatalf("got %q, %v; want %s", got, err, want)
		}
	}
	_, err := m.Call(ctx, "one more")
	var nm *llm.NoMatchError
	if !errors.Is(err, llm.ErrNoScriptMatch) || !errors.As(err, &nm) || nm.Node != "reflect" || nm.LastHuman != "one more" {
		t.Fatalf("err = %v, want a NoMatchError naming node reflect and the message", err)
	}
	if !strings.Contains(err.Error(), `"one more"`) || !strings.Contains(err.Error(), "reflect") {
		t.Errorf("error text %q should name the node and the message", err)
	}
}

func TestScriptedMatchers(t *testing.T) {
	m := scripted(t, `{"steps":[
		{"match":{"turn":2},"reply":{"text":"second turn"},"repeat":true},
		{"match":{"contains":"WEATHER"},"reply":{"text":"weather"},"repeat":true},
		{"match":{"tool":"search"},"reply":{"text":"search offered"},"repeat":true},
		{"match":{"tool_result":true},"reply":{"text":"after tool"},"repeat":true},
		{"match":{"system":"PREFERS SHORT"},"reply":{"text":"system says short"},"repeat":true},
		{"match":{"node":"write"},"reply":{"text":"write node"},"repeat":true},
		{"reply":{"text":"default"},"repeat":true}]}`)
	toolMsg := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "1", Content: "r"}}}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		msgs []llms.MessageContent
		opts []llms.CallOption
		want string
	}{
		{"turn", t.Context(), []llms.MessageContent{human("a"), llms.TextParts(llms.ChatMessageTypeAI, "b"), human("c")}, nil, "second turn"},
		{"contains ignores case", t.Context(), []llms.MessageContent{human("the Weather today")}, nil, "weather"},
		{"tool offered", t.Context(), []llms.MessageContent{human("x")}, []llms.CallOption{llms.WithTools([]llms.Tool{tool("search", nil)})}, "search offered"},
		{"tool result", t.Context(), []llms.MessageContent{human("x"), toolMsg}, nil, "after tool"},
		{"system", t.Context(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "The user prefers short answers."), human("x")}, nil, "system says short"},
		{"system elsewhere is not system", t.Context(), []llms.MessageContent{human("the user prefers short answers")}, nil, "default"},
		{"node", llm.WithNode(t.Context(), "write"), []llms.MessageContent{human("x")}, nil, "write node"},
		{"fallback", llm.WithNode(t.Context(), "supervisor"), []llms.MessageContent{human("x")}, nil, "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := m.GenerateContent(tc.ctx, tc.msgs, tc.opts...)
			if err != nil || llm.TextFrom(resp) != tc.want {
				t.Fatalf("got %q, %v; want %q", llm.TextFrom(resp), err, tc.want)
			}
		})
	}
}

func TestScriptedInjectedErrorsAreClassified(t *testing.T) {
	m := scripted(t, `{"steps":[
		{"reply":{"error":{"kind":"rate_limited","message":"slow down","retry_after_ms":1500}}},
		{"reply":{"error":{"kind":"permanent"}}}]}`)
	_, err := m.Call(t.Context(), "x")
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindRateLimited || e.RetryAfter != 1500*time.Millisecond || !strings.Contains(err.Error(), "slow down") {
		t.Fatalf("err = %v", err)
	}
	_, err = m.Call(t.Context(), "x")
	if llm.KindOf(err) != llm.KindPermanent || !strings.Contains(err.Error(), "scripted permanent error") {
		t.Fatalf("err = %v", err)
	}
}

func TestScriptedErrorAfterChunksIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := scripted(t, `{"steps":[
			{"reply":{"chunks":["partial "],"error":{"kind":"transient","message":"stream cut"}}},
			{"reply":{"text":"never shown"}}]}`)
		var got strings.Builder
		_, err := llm.WithResilience(m, llm.ResilienceConfig{}, "scripted").GenerateContent(t.Context(),
			[]llms.MessageContent{human("x")}, llms.WithStreamingFunc(func(_ context.Context, c []byte) error { got.Write(c); return nil }))
		if err == nil || got.String() != "partial " || len(m.Calls()) != 1 {
			t.Fatalf("err %v, streamed %q, calls %d; want the mid-stream error, no retry", err, got.String(), len(m.Calls()))
		}
	})
}

func TestScriptedTransientErrorThenSuccessThroughResilience(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := scripted(t, `{"steps":[
			{"reply":{"error":{"kind":"rate_limited","retry_after_ms":250}}},
			{"reply":{"text":"ok now"}}]}`)
		start := time.Now()
		got, err := llm.WithResilience(m, llm.ResilienceConfig{}, "scripted").Call(t.Context(), "x")
		if err != nil || got != "ok now" {
			t.Fatalf("got %q, %v", got, err)
		}
		if d := time.Since(start); d != 250*time.Millisecond {
			t.Errorf("waited %s, want the scripted retry_after of 250ms", d)
		}
	})
}

func TestScriptedDelaysPerChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := scripted(t, `{"steps":[{"reply":{"chunks":["a","b","c"],"delay_ms":100}},{"reply":{"tool_calls":[{"name":"t"}],"delay_ms":40}}]}`)
		start := time.Now()
		var at []time.Duration
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("x")},
			llms.WithStreamingFunc(func(context.Context, []byte) error { at = append(at, time.Since(start)); return nil }))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(at) != "[100ms 200ms 300ms]" {
			t.Errorf("chunks at %v, want every 100ms", at)
		}
		start = time.Now()
		if _, err := m.Call(t.Context(), "x"); err != nil || time.Since(start) != 40*time.Millisecond {
			t.Errorf("tool-call reply after %s, %v; want one 40ms delay", time.Since(start), err)
		}
	})
}

func TestScriptedDelayStopsOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := scripted(t, `{"steps":[{"reply":{"text":"slow","delay_ms":60000}}]}`)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := m.GenerateContent(ctx, []llms.MessageContent{human("x")}, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the context's deadline", err)
		}
	})
}

func TestScriptedIsSafeForConcurrentUse(t *testing.T) {
	var steps []string
	for i := range 50 {
		steps = append(steps, fmt.Sprintf(`{"match":{"node":"n"},"reply":{"text":"r%d"}}`, i))
	}
	m := scripted(t, `{"steps":[`+strings.Join(steps, ",")+`]}`)
	ctx := llm.WithNode(t.Context(), "n")
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	for range 50 {
		wg.Go(func() {
			got, err := m.Call(ctx, "x")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[got] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != 50 || len(m.Unconsumed()) != 0 {
		t.Errorf("%d distinct replies, %d unconsumed; want each step used exactly once", len(seen), len(m.Unconsumed()))
	}
}

// BenchmarkScriptedInstant measures the scripted model with no delays, as
// the agent benchmarks use it.
func BenchmarkScriptedInstant(b *testing.B) {
	s, err := llm.ParseScript([]byte(`{"steps":[{"reply":{"text":"the quick brown fox jumps over the lazy dog"},"repeat":true}]}`))
	if err != nil {
		b.Fatal(err)
	}
	m := llm.NewScripted(s)
	msgs := []llms.MessageContent{human("hello")}
	stream := llms.WithStreamingFunc(func(context.Context, []byte) error { return nil })
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.GenerateContent(ctx, msgs, stream); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScriptedResilient is BenchmarkScriptedInstant behind the
// default resilience: what a model call pays for retry, breaker and timeout
// when nothing fails.
func BenchmarkScriptedResilient(b *testing.B) {
	s, err := llm.ParseScript([]byte(`{"steps":[{"reply":{"text":"the quick brown fox jumps over the lazy dog"},"repeat":true}]}`))
	if err != nil {
		b.Fatal(err)
	}
	m := llm.WithResilience(llm.NewScripted(s), llm.ResilienceConfig{}, "scripted")
	msgs := []llms.MessageContent{human("hello")}
	stream := llms.WithStreamingFunc(func(context.Context, []byte) error { return nil })
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.GenerateContent(ctx, msgs, stream); err != nil {
			b.Fatal(err)
		}
	}
}

// A reply's thinking reaches the callbacks as langchaingo's OpenAI client
// passes a reasoning model's deltas: word by word to the reasoning func,
// each with an empty text chunk, then the text; TextStream keeps only text.
func TestScriptedStreamsThinkingAsAProviderDoes(t *testing.T) {
	m := scripted(t, `{"steps": [{"reply": {"thinking": "Two and two make four.", "text": "It is 4."}}]}`)
	type cb struct{ reasoning, chunk string }
	var got []cb
	var text []string
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("2+2?")},
		llms.WithStreamingFunc(llm.TextStream(func(_ context.Context, c []byte) error { text = append(text, string(c)); return nil })),
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, c []byte) error {
			got = append(got, cb{string(r), string(c)})
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	want := []cb{{"Two ", ""}, {"and ", ""}, {"two ", ""}, {"make ", ""}, {"four.", ""}, {"", "It "}, {"", "is "}, {"", "4."}}
	if !slices.Equal(got, want) {
		t.Errorf("reasoning func got %q, want %q", got, want)
	}
	if strings.Join(text, "|") != "It |is |4." {
		t.Errorf("text chunks = %q", text)
	}
	if llm.ThinkingFrom(resp) != "Two and two make four." || llm.TextFrom(resp) != "It is 4." {
		t.Errorf("response thinking %q, text %q", llm.ThinkingFrom(resp), llm.TextFrom(resp))
	}
}
