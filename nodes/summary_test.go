package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// promptRecorder keeps the system prompt of the latest write call.
type promptRecorder struct {
	mu     sync.Mutex
	system string
}

func (*promptRecorder) Name() string { return "recorder" }

func (p *promptRecorder) BeforeModel(_ context.Context, c *nodes.ModelCall) error {
	if c.Node == nodes.NodeWrite {
		p.mu.Lock()
		p.system = c.System
		p.mu.Unlock()
	}
	return nil
}

func (p *promptRecorder) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.system
}

// summaryAgent is an agent on the offline model whose asks for summaries
// are kept for the test to work, as the service's job would.
type summaryAgent struct {
	agent *nodes.Agent
	rec   *promptRecorder
	mu    sync.Mutex
	asks  []nodes.SummaryAsk
}

func newSummaryAgent(t *testing.T, reg *llm.Registry, w nodes.Window, ask bool) *summaryAgent {
	t.Helper()
	sa := &summaryAgent{rec: &promptRecorder{}}
	if ask {
		w.AskSummary = func(_ context.Context, _ string, a nodes.SummaryAsk) error {
			sa.mu.Lock()
			sa.asks = append(sa.asks, a)
			sa.mu.Unlock()
			return nil
		}
	}
	a, err := nodes.New(reg, nil, memory.New(), nodes.Options{Window: w, Middleware: []nodes.Middleware{sa.rec}})
	if err != nil {
		t.Fatal(err)
	}
	sa.agent = a
	return sa
}

// taken returns the asks made since the last call.
func (sa *summaryAgent) taken() []nodes.SummaryAsk {
	sa.mu.Lock()
	defer sa.mu.Unlock()
	out := sa.asks
	sa.asks = nil
	return out
}

func (sa *summaryAgent) turn(t *testing.T, conv, msg string) {
	t.Helper()
	if r := collect(sa.agent.Run(t.Context(), conv, nodes.Input{Message: msg})); r.err != nil {
		t.Fatal(r.err)
	}
}

// turnMessage is turn n's user message: the facts at turn 1, a decision
// every 50 turns, chatter otherwise.
func turnMessage(n int) string {
	switch {
	case n == 1:
		return "My name is Priya Raman. Our project is called Bluefin and its budget is 42,000 euros."
	case n%50 == 0:
		return fmt.Sprintf("We decided to meet in Lisbon after checkpoint %d.", n)
	}
	return "tell me something nice about the weather, please, and keep it short"
}

// TestModelSummariesKeepTurnOneFactsAtTurn200 drives 200 turns through
// the agent on the offline model, working each ask for a summary between
// turns as the service's job does: the write node's prompt at turn 200
// still holds the facts of turn 1, which the extractive summary alone
// has long let go.
func TestModelSummariesKeepTurnOneFactsAtTurn200(t *testing.T) {
	reg, err := llm.NewRegistry(llm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	facts := []string{"Priya Raman", "Bluefin", "42,000 euros", "checkpoint 150"}
	run := func(ask bool) (string, int) {
		sa := newSummaryAgent(t, reg, nodes.Window{}, ask)
		asks := 0
		for n := 1; n <= 200; n++ {
			sa.turn(t, "c", turnMessage(n))
			for _, a := range sa.taken() {
				asks++
				if err := sa.agent.Summarize(t.Context(), "c", a, false); err != nil {
					t.Fatal(err)
				}
			}
		}
		return sa.rec.last(), asks
	}
	prompt, asks := run(true)
	if asks < 2 {
		t.Errorf("%d asks for a summary in 200 turns", asks)
	}
	for _, f := range facts {
		if !strings.Contains(prompt, f) {
			t.Errorf("turn 200's prompt lacks %q:\n%s", f, prompt)
		}
	}
	if strings.Contains(prompt, "tell me something nice") && strings.Count(prompt, "tell me something nice") > 25 {
		t.Errorf("the summaries keep the chatter:\n%s", prompt)
	}
	// Without model summaries, the extractive one has lost turn 1.
	if prompt, _ := run(false); strings.Contains(prompt, "Bluefin") {
		t.Errorf("the extractive summary kept turn 1 for 200 turns; the test proves nothing:\n%s", prompt)
	}
}

// TestLongTurnsAskSeldom: when the newest half window alone is about
// SummarizeAt, as with long messages, a summary is not asked for at
// every turn: each ask folds in at least SummarizeAt tokens that no
// summary or ask covers, so a conversation asks once per that many
// tokens however long its messages.
func TestLongTurnsAskSeldom(t *testing.T) {
	reg, err := llm.NewRegistry(llm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sa := newSummaryAgent(t, reg, nodes.Window{Tokens: 2000, SummarizeAt: 1000}, true)
	// A turn is a question of ~260 tokens and the offline model's
	// answer, under 100: an ask covers three turns at least.
	long := strings.Repeat("a long question about the weather ", 30)
	var asks []nodes.SummaryAsk
	const turns = 40
	for range turns {
		sa.turn(t, "c", long)
		asks = append(asks, sa.taken()...)
	}
	if len(asks) < 3 || len(asks) > turns/3 {
		t.Fatalf("%d asks in %d turns, want 3 to %d: %+v", len(asks), turns, turns/3, asks)
	}
	for i := 1; i < len(asks); i++ {
		if d := asks[i].Turn - asks[i-1].Turn; d < 3 {
			t.Errorf("ask %d covers %d turns, under SummarizeAt: %+v", i, d, asks)
		}
	}
}

// TestSummaryModelFailureFallsBack: while the summary model fails, the
// extractive summary bounds the window; an attempt that is not the last
// reports the failure (for the job to retry), and the last stores the
// extractive summary, which the next turn adopts.
func TestSummaryModelFailureFallsBack(t *testing.T) {
	broken, err := llm.ParseScript([]byte(`{"steps": [{"match": {"node": "no such node"}, "reply": {"text": "never"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{llm.OfflineConfig(),
		{ID: "broken", Provider: llm.ProviderScripted, Instance: llm.NewScripted(broken)}},
		Resilience: llm.ResilienceConfig{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	sa := newSummaryAgent(t, reg, nodes.Window{SummaryModel: "broken", SummarizeAt: 300, Messages: 6}, true)
	var asks []nodes.SummaryAsk
	for n := 1; len(asks) == 0 && n <= 60; n++ {
		sa.turn(t, "c", turnMessage(n))
		asks = sa.taken()
	}
	if len(asks) != 1 {
		t.Fatalf("asks = %v", asks)
	}
	if err := sa.agent.Summarize(t.Context(), "c", asks[0], false); !errors.Is(err, nodes.ErrSummaryModel) {
		t.Fatalf("Summarize with a failing model = %v, want ErrSummaryModel", err)
	}
	for range 3 {
		sa.turn(t, "c", "and now?")
	}
	st, err := sa.agent.State(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.State.ModelSummary != "" || st.State.Summary == "" {
		t.Fatalf("before the fallback: model summary %q, extractive %q", st.State.ModelSummary, st.State.Summary)
	}
	ask := asks[0]
	if more := sa.taken(); len(more) > 0 { // the window grew on: the latest ask is the one waited for
		ask = more[len(more)-1]
	}
	if err := sa.agent.Summarize(t.Context(), "c", ask, true); err != nil {
		t.Fatal(err)
	}
	sa.turn(t, "c", "one more")
	st, err = sa.agent.State(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(st.State.ModelSummary, "- User: My name is Priya Raman.") || st.State.ModelSummaryTurn != ask.Turn {
		t.Errorf("after the fallback: model summary (to turn %d) %q", st.State.ModelSummaryTurn, st.State.ModelSummary)
	}
	if p := sa.rec.last(); !strings.Contains(p, "- User: My name is Priya Raman.") {
		t.Errorf("the prompt lacks the fallback summary:\n%s", p)
	}
}

// TestSummaryAskedBeforeItIsStored: the job for an ask can start
// before the turn that asked stores the step naming it (the ask is made
// inside the stream node). Summarize then says the ask is unseen, for
// the job to try again, rather than take it for one that was replaced
// and drop it; once the turn is stored, the same ask is summarised.
func TestSummaryAskedBeforeItIsStored(t *testing.T) {
	reg, err := llm.NewRegistry(llm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		agent *nodes.Agent
		asks  []nodes.SummaryAsk
		early []error // Summarize inside the ask, then as a last try
	)
	w := nodes.Window{SummarizeAt: 300, Messages: 6, AskSummary: func(ctx context.Context, conv string, a nodes.SummaryAsk) error {
		asks = append(asks, a)
		early = append(early, agent.Summarize(ctx, conv, a, false), agent.Summarize(ctx, conv, a, true))
		return nil
	}}
	if agent, err = nodes.New(reg, nil, memory.New(), nodes.Options{Window: w}); err != nil {
		t.Fatal(err)
	}
	turn := func(msg string) {
		t.Helper()
		if r := collect(agent.Run(t.Context(), "c", nodes.Input{Message: msg})); r.err != nil {
			t.Fatal(r.err)
		}
	}
	for n := 1; len(asks) == 0; n++ {
		if n > 60 {
			t.Fatal("no ask in 60 turns")
		}
		turn(turnMessage(n))
	}
	if len(early) != 2 || !errors.Is(early[0], nodes.ErrSummaryAskUnseen) || early[1] != nil {
		t.Fatalf("Summarize before the ask is stored = %v, want ErrSummaryAskUnseen, and nil on a last try", early)
	}
	if err := agent.Summarize(t.Context(), "c", asks[0], false); err != nil {
		t.Fatal(err)
	}
	turn("and now?")
	st, err := agent.State(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.State.ModelSummary, "Priya Raman") {
		t.Errorf("the summary of the ask seen late was not adopted: %q", st.State.ModelSummary)
	}
}

// TestLargeToolResultSummarised: a result over Window.ToolResultTokens
// reaches the models as a summary of its facts (the offline model's),
// or as a bounded extract when the summary model fails or panics
// (on a goroutine of its own), while the state
// keeps it whole.
func TestLargeToolResultSummarised(t *testing.T) {
	big := strings.Repeat("filler line without anything to keep\n", 2000) + "Invoice 7731 of ACME Corp is due on 2026-03-14.\n"
	for _, tc := range []struct {
		name, model string
		want        string
	}{
		{"summary", "", "- Invoice 7731 of ACME Corp is due on 2026-03-14."},
		{"extract", "broken", "bytes left out"},
		{"panic", "panics", "bytes left out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken, err := llm.ParseScript([]byte(`{"steps": [{"match": {"node": "no such node"}, "reply": {"text": "never"}}]}`))
			if err != nil {
				t.Fatal(err)
			}
			reg, err := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{llm.OfflineConfig(),
				{ID: "broken", Provider: llm.ProviderScripted, Instance: llm.NewScripted(broken)},
				{ID: "panics", Provider: llm.ProviderScripted, Instance: &panickingModel{}}},
				Resilience: llm.ResilienceConfig{Disabled: true}})
			if err != nil {
				t.Fatal(err)
			}
			local := operators.NewRegistry()
			local.MustAdd(operators.NewTool("list_tools", "Lists everything.", func(context.Context, operators.Call, struct{}) (operators.Result, error) {
				return operators.TextResult(big), nil
			}, operators.ReadOnly()))
			a, err := nodes.New(reg, operators.NewProvider(operators.ProviderConfig{Local: local}), memory.New(),
				nodes.Options{Window: nodes.Window{SummaryModel: tc.model, ToolResultTokens: 1000}})
			if err != nil {
				t.Fatal(err)
			}
			if r := collect(a.Run(t.Context(), "c", nodes.Input{Message: "what tools do you have?"})); r.err != nil {
				t.Fatal(r.err)
			}
			st, err := a.State(t.Context(), "c")
			if err != nil {
				t.Fatal(err)
			}
			var shown string
			for _, m := range st.State.Messages {
				if m.Role == nodes.RoleTool {
					shown = m.Content
				}
			}
			if !strings.Contains(shown, tc.want) || len(shown) > 5000 {
				t.Errorf("the models read (%d bytes):\n%.600s", len(shown), shown)
			}
			if trs := st.State.ToolResults; len(trs) != 1 || trs[0].Content != big {
				t.Errorf("the state's tool result is not whole")
			}
		})
	}
}

// panickingModel panics on every call.
type panickingModel struct{ llm.Offline }

func (*panickingModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	panic("the model broke")
}

// deletingModel deletes the conversation while it writes the summary, as
// a user's delete (or erasure) may.
type deletingModel struct {
	llm.Offline
	del func()
}

func (m *deletingModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	m.del()
	return m.Offline.GenerateContent(ctx, msgs, opts...)
}

// TestSummaryOfADeletedConversationIsNotKept: a conversation deleted
// while its summary is written keeps nothing of it: its thread, the
// summary's namespace included, is empty afterwards.
func TestSummaryOfADeletedConversationIsNotKept(t *testing.T) {
	saver := memory.New()
	var agent *nodes.Agent
	dm := &deletingModel{}
	dm.del = func() {
		if err := agent.Delete(context.Background(), "c"); err != nil {
			t.Error(err)
		}
	}
	reg, err := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{llm.OfflineConfig(),
		{ID: "deleting", Provider: llm.ProviderScripted, Instance: dm}}, Resilience: llm.ResilienceConfig{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	var asks []nodes.SummaryAsk
	w := nodes.Window{SummaryModel: "deleting", SummarizeAt: 300, Messages: 6,
		AskSummary: func(_ context.Context, _ string, a nodes.SummaryAsk) error { asks = append(asks, a); return nil }}
	if agent, err = nodes.New(reg, nil, saver, nodes.Options{Window: w}); err != nil {
		t.Fatal(err)
	}
	for n := 1; len(asks) == 0; n++ {
		if n > 30 {
			t.Fatal("no ask in 30 turns")
		}
		if r := collect(agent.Run(t.Context(), "c", nodes.Input{Message: turnMessage(n)})); r.err != nil {
			t.Fatal(r.err)
		}
	}
	if err := agent.Summarize(t.Context(), "c", asks[len(asks)-1], false); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "summary"} {
		cps, err := saver.List(t.Context(), graph.ListOptions{ThreadID: "c", Namespace: ns})
		if err != nil || len(cps) != 0 {
			t.Errorf("namespace %q keeps %d checkpoints (%v)", ns, len(cps), err)
		}
	}
}
