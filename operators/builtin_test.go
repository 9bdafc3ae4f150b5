package operators_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

func builtinProvider(t *testing.T, model llms.Model, sources ...operators.Source) *operators.Provider {
	t.Helper()
	local := operators.NewRegistry()
	ops := operators.NewOperatorRegistry(model)
	if err := operators.RegisterBuiltinOperators(ops); err != nil {
		t.Fatal(err)
	}
	ops.MustRegister("retriever", operators.MCPOperator(operators.MCPOperatorConfig{
		Description: "Finds passages in the docs.", Tool: "docs.search"}))
	p := newTestProvider(t, operators.ProviderConfig{Local: local, Operators: ops}, sources...)
	local.MustAdd(operators.Builtins(operators.BuiltinConfig{
		Info:      operators.SelfInfo{Name: "Trellis", Version: "1.2.3", Build: "abc", Model: "sonnet", Capabilities: []string{"math"}, Limitations: []string{"no web"}},
		Tools:     p,
		Operators: ops,
		Now:       func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) },
	})...)
	return p
}

func TestBuiltinTools(t *testing.T) {
	p := builtinProvider(t, nil, &fakeSource{name: "docs", specs: []operators.Spec{querySpec("search")}})
	tests := []struct{ tool, args, want string }{
		{"calculator", `{"expression":"2^10 + 1"}`, "1025"},
		{"calculator", `{"expression":"1/0"}`, `error: calculator: "1/0": at position 2: division by zero`},
		{"current_time", `{}`, "2026-03-01T12:00:00Z (Sunday, UTC)"},
		{"current_time", `{"timezone":"Asia/Tokyo"}`, "2026-03-01T21:00:00+09:00 (Sunday, Asia/Tokyo)"},
		{"current_time", `{"timezone":"Mars/Olympus"}`, `error: current_time: unknown time zone "Mars/Olympus"; use an IANA name such as Europe/Paris`},
		{"list_capabilities", `{}`, "What I can do:\n- math\nWhat I cannot do:\n- no web"},
		{"list_operators", `{}`, "- coder [llm]: Writes, explains or fixes code for a programming task; answers in markdown with code blocks.\n" +
			"- query_rewriter [llm]: Rewrites a vague or context-dependent query into a precise, self-contained query for search or retrieval.\n" +
			"- retriever [mcp]: Finds passages in the docs."},
	}
	for _, tc := range tests {
		if got := p.Execute(t.Context(), tc.tool, json.RawMessage(tc.args), operators.Call{}).Text(); got != tc.want {
			t.Errorf("%s %s\n got %q\nwant %q", tc.tool, tc.args, got, tc.want)
		}
	}
	info := p.Execute(t.Context(), "self_info", nil, operators.Call{})
	if !strings.HasPrefix(info.Contents[0].Text, "Trellis 1.2.3 (build abc), model sonnet") || info.Contents[1].Type != operators.OutputJSON {
		t.Errorf("self_info = %+v", info)
	}
	list := p.Execute(t.Context(), "list_tools", nil, operators.Call{}).Text()
	for _, want := range []string{"- calculator [local]", "- coder [operator]", "- search [mcp docs]"} {
		if !strings.Contains(list, want) {
			t.Errorf("list_tools lacks %q:\n%s", want, list)
		}
	}
}

func TestQueryRewriterUsesTheModel(t *testing.T) {
	m := &fakeModel{reply: "  golang generics tutorial  "}
	p := builtinProvider(t, m)
	res := p.Execute(t.Context(), "query_rewriter", json.RawMessage(`{"query":"how do those work","context":"we talked about Go generics"}`), operators.Call{})
	if res.Text() != "golang generics tutorial" {
		t.Fatalf("result = %+v", res)
	}
	user := m.lastMsgs[1].Parts[0].(llms.TextContent).Text
	if !strings.Contains(user, "we talked about Go generics") || !strings.Contains(user, "how do those work") {
		t.Errorf("prompt lacks the query or context: %q", user)
	}
	if res := builtinProvider(t, nil).Execute(t.Context(), "query_rewriter", json.RawMessage(`{"query":"x"}`), operators.Call{}); !strings.Contains(res.Error, "no model configured") {
		t.Errorf("no model → %q", res.Error)
	}
}

func TestCoderThinksOnlyWhenComplexAndSupported(t *testing.T) {
	tests := []struct {
		name      string
		reasoning bool
		task      string
		think     bool
	}{
		{"simple task", true, "print hello world", false},
		{"complex keyword", true, "optimize this sorting algorithm", true},
		{"long task", true, strings.Repeat("a ", 200), true},
		{"model cannot think", false, "debug this race", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeModel{reply: "```go\n```", reasoning: tc.reasoning}
			rec := &operators.Recorder{}
			res := builtinProvider(t, nil).Execute(t.Context(), "coder", mustJSON(t, map[string]string{"query": tc.task}),
				operators.Call{Model: m, Messenger: rec, ToolCallID: "c1"})
			if res.IsError() || res.Contents[0].Type != operators.OutputMarkdown {
				t.Fatalf("result = %+v", res)
			}
			cfg := llms.GetThinkingConfig(&m.lastOpts)
			if got := cfg != nil && cfg.Mode == llms.ThinkingModeHigh && cfg.BudgetTokens == 15000; got != tc.think {
				t.Errorf("thinking = %+v, want %v", cfg, tc.think)
			}
			if got := rec.Types(); len(got) != 2 || got[0] != events.TypeToolProgress {
				t.Errorf("events = %v, want two progress events", got)
			}
		})
	}
}

func TestMCPOperatorCallsTheNamedToolAndCites(t *testing.T) {
	var gotArgs string
	docs := &fakeSource{name: "docs", specs: []operators.Spec{querySpec("search")},
		call: func(_ context.Context, _ int, _ string, a json.RawMessage) (operators.Result, error) {
			gotArgs = string(a)
			return operators.TextResult("Goroutines are cheap."), nil
		}}
	p := builtinProvider(t, nil, docs)
	res := p.Execute(t.Context(), "retriever", json.RawMessage(`{"query":"goroutines"}`), operators.Call{})
	if res.IsError() || gotArgs != `{"query":"goroutines"}` {
		t.Fatalf("result = %+v, args %s", res, gotArgs)
	}
	if len(res.Chunks) != 1 || res.Chunks[0] != (operators.DataChunk{Source: "docs.search", Text: "Goroutines are cheap."}) {
		t.Errorf("chunks = %+v", res.Chunks)
	}
}

// fakeModel answers from a script; reasoning says whether it thinks.
type fakeModel struct {
	mu        sync.Mutex
	calls     int
	reasoning bool
	fail      int // fail this many calls first, transiently
	lastOpts  llms.CallOptions
	lastMsgs  []llms.MessageContent
	reply     string
}

func (m *fakeModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.calls <= m.fail {
		return nil, llm.Transient(errors.New("502 bad gateway"))
	}
	m.lastOpts = llms.CallOptions{}
	for _, o := range opts {
		o(&m.lastOpts)
	}
	m.lastMsgs = msgs
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: m.reply}}}, nil
}

func (m *fakeModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

func (m *fakeModel) SupportsReasoning() bool { return m.reasoning }
