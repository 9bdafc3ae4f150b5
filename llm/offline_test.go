package llm_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

func tool(name string, params map[string]any) llms.Tool {
	return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: name, Parameters: params}}
}

var allTools = []llms.Tool{
	tool("calculator", map[string]any{"type": "object", "properties": map[string]any{"expression": map[string]any{"type": "string"}}, "required": []any{"expression"}}),
	tool("current_time", map[string]any{"type": "object", "properties": map[string]any{"timezone": map[string]any{"type": "string"}}}),
	tool("list_tools", map[string]any{"type": "object"}),
	tool("self_info", map[string]any{"type": "object"}),
}

type wantCall struct {
	name string
	args map[string]string
}

func callsOf(t *testing.T, resp *llms.ContentResponse) []wantCall {
	t.Helper()
	var out []wantCall
	for _, c := range llm.ToolCallsFrom(resp) {
		var args map[string]string
		if err := json.Unmarshal([]byte(c.FunctionCall.Arguments), &args); err != nil {
			t.Fatalf("tool call %s args %q: %v", c.FunctionCall.Name, c.FunctionCall.Arguments, err)
		}
		if c.Type != "function" || c.ID == "" {
			t.Errorf("tool call %+v: want Type function and an ID", c)
		}
		out = append(out, wantCall{c.FunctionCall.Name, args})
	}
	return out
}

func TestOfflineCallsToolsForWhatItRecognises(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want []wantCall
	}{
		{"what is 2+2*3?", []wantCall{{"calculator", map[string]string{"expression": "2+2*3"}}}},
		{"calculate sqrt(16)", []wantCall{{"calculator", map[string]string{"expression": "sqrt(16)"}}}},
		{"What's (3 + 4) ^ 2", []wantCall{{"calculator", map[string]string{"expression": "(3 + 4) ^ 2"}}}},
		{"how much is 12 times 7?", []wantCall{{"calculator", map[string]string{"expression": "12 * 7"}}}},
		{"what is 15% of 80", []wantCall{{"calculator", map[string]string{"expression": "15/100*80"}}}},
		{"17 / 4", []wantCall{{"calculator", map[string]string{"expression": "17 / 4"}}}},
		{"what time is it?", []wantCall{{"current_time", map[string]string{}}}},
		{"What time is it in Tokyo?", []wantCall{{"current_time", map[string]string{"timezone": "Asia/Tokyo"}}}},
		{"what's the current time in new york", []wantCall{{"current_time", map[string]string{"timezone": "America/New_York"}}}},
		{"what is the date in Europe/Lisbon", []wantCall{{"current_time", map[string]string{"timezone": "Europe/Lisbon"}}}},
		{"What can you do?", []wantCall{{"list_tools", map[string]string{}}}},
		{"which tools do you have", []wantCall{{"list_tools", map[string]string{}}}},
		{"who are you?", []wantCall{{"self_info", map[string]string{}}}},
		{"what time is it in London, and what is 6*7?", []wantCall{
			{"calculator", map[string]string{"expression": "6*7"}},
			{"current_time", map[string]string{"timezone": "Europe/London"}},
		}},
	} {
		t.Run(tc.q, func(t *testing.T) {
			resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human(tc.q)}, llms.WithTools(allTools))
			if err != nil {
				t.Fatal(err)
			}
			got := callsOf(t, resp)
			if len(got) != len(tc.want) {
				t.Fatalf("calls = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].name != tc.want[i].name || !mapsEqual(got[i].args, tc.want[i].args) {
					t.Errorf("call %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if resp.Choices[0].Content != "" || resp.Choices[0].StopReason != "tool_calls" {
				t.Errorf("content %q stop %q; want no text with tool calls", resp.Choices[0].Content, resp.Choices[0].StopReason)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestOfflineDoesNotSeeArithmeticInProse(t *testing.T) {
	for _, q := range []string{
		"tell me about the 2024-05-01 release",
		"hello there",
		"I have 3 cats",
		"what is the meaning of life?",
	} {
		resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human(q)}, llms.WithTools(allTools))
		if err != nil {
			t.Fatal(err)
		}
		if calls := llm.ToolCallsFrom(resp); len(calls) != 0 {
			t.Errorf("%q: unexpected tool calls %+v", q, calls)
		}
		if got := llm.TextFrom(resp); got != llm.OfflineNotice {
			t.Errorf("%q: answer %q, want the offline notice", q, got)
		}
	}
}

func TestOfflineAnswersFromToolResults(t *testing.T) {
	conv := func(q, tool, args, result string) []llms.MessageContent {
		return []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, "You are Trellis."),
			human(q),
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function",
				FunctionCall: &llms.FunctionCall{Name: tool, Arguments: args}}}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: tool, Content: result}}},
		}
	}
	for _, tc := range []struct {
		name string
		msgs []llms.MessageContent
		want string
	}{
		{"calculator", conv("what is 2+2*3?", "calculator", `{"expression":"2+2*3"}`, "8"), "2+2*3 = 8"},
		{"calculator json", conv("what is 2+2*3?", "calculator", `{"expression":"2+2*3"}`, `{"result": 8}`), "2+2*3 = 8"},
		{"calculator error", conv("what is 1/0?", "calculator", `{"expression":"1/0"}`, `{"error":"division by zero"}`), "I couldn't calculate 1/0: division by zero"},
		{"time in zone", conv("time in Tokyo?", "current_time", `{"timezone":"Asia/Tokyo"}`, "2026-11-05T10:00:00+09:00"),
			"The current time in Asia/Tokyo is 2026-11-05T10:00:00+09:00."},
		{"time", conv("what time is it", "current_time", `{}`, "10:00"), "The current time is 10:00."},
		{"tools", conv("what can you do", "list_tools", `{}`, `[{"name":"calculator","description":"does math"},{"name":"current_time"}]`),
			"Here are the tools I can use:\n- calculator: does math\n- current_time"},
		{"other", conv("search cats", "web_search", `{"q":"cats"}`, "many cats"), "web_search returned: many cats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var streamed strings.Builder
			resp, err := llm.NewOffline().GenerateContent(t.Context(), tc.msgs,
				llms.WithStreamingFunc(func(_ context.Context, c []byte) error { streamed.Write(c); return nil }))
			if err != nil {
				t.Fatal(err)
			}
			if got := llm.TextFrom(resp); got != tc.want {
				t.Errorf("answer %q, want %q", got, tc.want)
			}
			if streamed.String() != tc.want {
				t.Errorf("streamed %q, want the whole answer", streamed.String())
			}
		})
	}
}

func TestOfflineWithoutToolsAnswersHonestly(t *testing.T) {
	resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human("what is 2+2?")})
	if err != nil {
		t.Fatal(err)
	}
	text := llm.TextFrom(resp)
	if len(llm.ToolCallsFrom(resp)) != 0 || !strings.Contains(text, "calculator tool") || !strings.Contains(text, "OPENAI_API_KEY") {
		t.Errorf("answer %q: want text naming the missing calculator tool and how to configure a model", text)
	}
}

func TestOfflineFollowsTheToolSchema(t *testing.T) {
	calc := tool("calculator", map[string]any{"type": "object",
		"properties": map[string]any{"expr": map[string]any{"type": "string"}}, "required": []any{"expr"}})
	resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human("what is 1+1")}, llms.WithTools([]llms.Tool{calc}))
	if err != nil {
		t.Fatal(err)
	}
	if got := callsOf(t, resp); len(got) != 1 || got[0].args["expr"] != "1+1" {
		t.Errorf("calls = %+v, want calculator {expr: 1+1}", got)
	}
}

func TestOfflineStreamsWordsAndEstimatesUsage(t *testing.T) {
	var chunks []string
	resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human("hello there")},
		llms.WithStreamingFunc(func(_ context.Context, c []byte) error { chunks = append(chunks, string(c)); return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 10 || strings.Join(chunks, "") != llm.OfflineNotice {
		t.Errorf("got %d chunks; want the notice in word-sized chunks", len(chunks))
	}
	u := llm.UsageFrom(resp)
	words := len(strings.Fields(llm.OfflineNotice))
	if u.InputTokens != 2 || u.OutputTokens != words || u.TotalTokens != 2+words {
		t.Errorf("usage = %+v, want 2 in, %d out", u, words)
	}
	if est, _ := resp.Choices[0].GenerationInfo[llm.EstimatedKey].(bool); !est {
		t.Error("offline usage must be labelled an estimate")
	}
}

func TestOfflineCall(t *testing.T) {
	got, err := llm.NewOffline().Call(t.Context(), "hi")
	if err != nil || got != llm.OfflineNotice {
		t.Errorf("Call = %q, %v", got, err)
	}
}

// TestOfflinePlansWithWriteTodos: a request for a plan, in the plain
// words a newcomer types, with write_todos offered, becomes one
// write_todos call with a task per step: the steps it lists, or numbered
// placeholders for its goal. Questions and statements about plans do not.
func TestOfflinePlansWithWriteTodos(t *testing.T) {
	tools := append([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "write_todos"}}}, allTools...)
	three := func(goal string) []string {
		return []string{"Step 1 of 3: " + goal, "Step 2 of 3: " + goal, "Step 3 of 3: " + goal}
	}
	for _, tc := range []struct {
		q    string
		want []string // nil: no write_todos call
	}{
		{"Make a plan for the shed: buy wood; build the frame, then paint it.", []string{"buy wood", "build the frame", "paint it"}},
		{"plan: pack, book flights and then fly", []string{"pack", "book flights", "fly"}},
		{"make a plan to buy wood, build the frame, then paint it", []string{"buy wood", "build the frame", "paint it"}},
		{"Write a to-do list for Saturday: laundry; groceries; call mum", []string{"laundry", "groceries", "call mum"}},
		{"plan a 3-step trip", three("trip")},
		{"Plan a 3-step trip to Lisbon.", three("trip to Lisbon")},
		{"plan a trip to Lisbon", three("trip to Lisbon")},
		{"help me plan a trip to Paris", three("trip to Paris")},
		{"Can you help me plan my move?", three("my move")},
		{"please make a plan to learn Go", three("learn Go")},
		{"make me a 4-step plan for the garden", []string{"Step 1 of 4: garden", "Step 2 of 4: garden", "Step 3 of 4: garden", "Step 4 of 4: garden"}},
		{"plan my week in five steps", []string{"Step 1 of 5: my week", "Step 2 of 5: my week", "Step 3 of 5: my week", "Step 4 of 5: my week", "Step 5 of 5: my week"}},
		{"I need a plan for the launch", three("launch")},
		{"could you create a checklist for moving house", three("moving house")},
		{"make a plan", []string{"Step 1 of 3", "Step 2 of 3", "Step 3 of 3"}},
		{"what is a plan?", nil},
		{"The plan is ready.", nil},
		{"plans are hard to keep", nil},
		{"what time is it in Tokyo?", nil},
		{"explain the planets", nil},
	} {
		resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human(tc.q)}, llms.WithTools(tools))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range llm.ToolCallsFrom(resp) {
			if c.FunctionCall.Name != "write_todos" {
				continue
			}
			var args struct{ Todos []struct{ Title string } }
			if err := json.Unmarshal([]byte(c.FunctionCall.Arguments), &args); err != nil {
				t.Fatalf("%q: write_todos args %s: %v", tc.q, c.FunctionCall.Arguments, err)
			}
			for _, td := range args.Todos {
				got = append(got, td.Title)
			}
			if got == nil {
				got = []string{}
			}
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || (got == nil) != (tc.want == nil) {
			t.Errorf("%q: write_todos titles %q, want %q", tc.q, got, tc.want)
		}
	}
}

// TestOfflineDescribesPlan: once write_todos has run, the answer says
// where the plan is, and for placeholders how to get real steps, not
// that the model can only do arithmetic.
func TestOfflineDescribesPlan(t *testing.T) {
	for _, tc := range []struct {
		args, want  string
		placeholder bool
	}{
		{`{"todos":[{"title":"buy wood"},{"title":"paint it"}]}`, "The plan is on the task board, 2 tasks", false},
		{`{"todos":[{"title":"Step 1 of 3: trip"},{"title":"Step 2 of 3: trip"},{"title":"Step 3 of 3: trip"}]}`, "The plan is on the task board, 3 tasks", true},
		{`{"todos":[{"title":"Step 1 of 2"},{"title":"Step 2 of 2"}]}`, "The plan is on the task board, 2 tasks", true},
		{`{"todos":[{"title":"pack"}]}`, "The plan is on the task board, 1 task:", false},
	} {
		msgs := []llms.MessageContent{
			human("plan a trip"),
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function",
				FunctionCall: &llms.FunctionCall{Name: "write_todos", Arguments: tc.args}}}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "write_todos",
				Content: "The task board now has 3 task(s): 3 pending, 0 in progress, 0 done."}}},
		}
		resp, err := llm.NewOffline().GenerateContent(t.Context(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		got := llm.TextFrom(resp)
		if !strings.Contains(got, tc.want) || strings.Contains(got, "arithmetic") || strings.Contains(got, "rename each step") != tc.placeholder {
			t.Errorf("after write_todos %s: %q", tc.args, got)
		}
	}
}

// The offline model thinks only when the call asks it to (a model
// configured with Thinking), streaming one sentence to the reasoning func
// before it answers.
func TestOfflineThinksWhenAsked(t *testing.T) {
	m := llm.NewOffline()
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "what is 2+2?")}
	var pieces []string
	reasoningFunc := llms.WithStreamingReasoningFunc(func(_ context.Context, r, _ []byte) error {
		if len(r) > 0 {
			pieces = append(pieces, string(r))
		}
		return nil
	})

	resp, err := m.GenerateContent(t.Context(), msgs, llms.WithTools(allTools), reasoningFunc)
	if err != nil {
		t.Fatal(err)
	}
	if len(pieces) != 0 || llm.ThinkingFrom(resp) != "" {
		t.Errorf("unasked, the offline model thought: streamed %q, returned %q", pieces, llm.ThinkingFrom(resp))
	}

	cfg := llm.OfflineConfig()
	cfg.Thinking = true
	opts := append(llm.ThinkingOptions(cfg, 0), llms.WithTools(allTools), reasoningFunc)
	if resp, err = m.GenerateContent(t.Context(), msgs, opts...); err != nil {
		t.Fatal(err)
	}
	want := `A rule of mine covers this message, so I call calculator {"expression":"2+2"}.`
	if strings.Join(pieces, "") != want || len(pieces) < 2 {
		t.Errorf("streamed %q, want %q word by word", pieces, want)
	}
	if llm.ThinkingFrom(resp) != want {
		t.Errorf("returned thinking %q", llm.ThinkingFrom(resp))
	}
	if calls := llm.ToolCallsFrom(resp); len(calls) != 1 {
		t.Errorf("thinking changed the reply: %+v", calls)
	}
}

// The offline model shows the request's context a prompt fences, so
// that its way to the model shows with no key.
func TestOfflineShowsTheClientContext(t *testing.T) {
	system := llms.TextParts(llms.ChatMessageTypeSystem, "You are Trellis.\n\n## Context\nData.\n"+llm.ClientContextOpen+"\n"+
		`{"page":"/checkout"}`+"\n"+llm.ClientContextClose+"\n\n## Your task")
	resp, err := llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{system, human("where am I?")})
	if err != nil {
		t.Fatal(err)
	}
	if text := llm.TextFrom(resp); !strings.HasPrefix(text, `Your client sent this context with your message: {"page":"/checkout"}`) ||
		!strings.Contains(text, llm.OfflineNotice) {
		t.Errorf("answer %q: want the context shown before the notice", text)
	}
	resp, err = llm.NewOffline().GenerateContent(t.Context(), []llms.MessageContent{human("where am I?")})
	if err != nil {
		t.Fatal(err)
	}
	if text := llm.TextFrom(resp); text != llm.OfflineNotice {
		t.Errorf("without a context: %q", text)
	}
}

// BenchmarkOfflineTurn measures the offline model's two calls of a sync
// chat turn, as trellis serve's agent makes them on the fourth turn of a
// load test's conversation (testdata/offline_turn.json: the supervisor's
// prompt with its 24 tools, and the write node's, streamed): the rules,
// the streaming word by word and the usage estimate.
func BenchmarkOfflineTurn(b *testing.B) {
	raw, err := os.ReadFile("testdata/offline_turn.json")
	if err != nil {
		b.Fatal(err)
	}
	var calls []struct {
		Node  string                `json:"node"`
		Msgs  []llms.MessageContent `json:"msgs"`
		Tools []llms.Tool           `json:"tools"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		b.Fatal(err)
	}
	m := llm.NewOffline()
	stream := llms.WithStreamingFunc(func(context.Context, []byte) error { return nil })
	for _, c := range calls {
		b.Run(c.Node, func(b *testing.B) {
			opts := []llms.CallOption{llms.WithTools(c.Tools)}
			if len(c.Tools) == 0 {
				opts = []llms.CallOption{stream} // the write node asks for text
			}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := m.GenerateContent(b.Context(), c.Msgs, opts...)
				if err != nil || llm.TextFrom(resp) != llm.OfflineNotice {
					b.Fatalf("reply %v, %v", resp, err)
				}
			}
		})
	}
}
