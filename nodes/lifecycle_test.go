package nodes_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

func TestSecondTurnResetsTurnFields(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "turn": 1}, "reply": {"tool_calls": [{"id": "s1", "name": "search", "args": {"q": "go"}}]}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write", "turn": 1}, "reply": {"text": "Go is new [1]."}},
		{"match": {"node": "supervisor", "turn": 2, "tool_result": false}, "reply": {"json": {"action": "ANSWER"}}},
		{"match": {"node": "write", "turn": 2, "tool_result": false}, "reply": {"text": "You're welcome."}}
	]}`, nodes.Options{})
	if r := h.run(t, "c1", "what is new?"); r.err != nil {
		t.Fatal(r.err)
	}
	r := h.run(t, "c1", "thanks")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if d := last[*events.ResponseDone](r); len(d.Citations) != 0 {
		t.Errorf("second turn cites %+v", d.Citations)
	}
	s := h.state(t, "c1")
	if s.Turn != 2 || s.Iteration != 1 || len(s.ToolResults) != 0 || len(s.DataChunks) != 0 || s.SourceCounter != 0 ||
		s.Input.Message != "thanks" || s.Input.RequestID != "req-thanks" || len(s.Actions) != 1 {
		t.Errorf("turn fields not reset: %+v", s)
	}
	if roles(s.Messages) != "user,assistant,tool,assistant,user,assistant" {
		t.Errorf("messages = %s", roles(s.Messages))
	}
	// The turn's usage is its own; the conversation's sums both.
	if s.Usage.TotalTokens <= s.TurnUsage.TotalTokens || s.TurnUsage.TotalTokens == 0 {
		t.Errorf("usage %+v, turn usage %+v", s.Usage, s.TurnUsage)
	}
	h.allConsumed(t)
}

func TestEditForksBeforeTheTurn(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}, "repeat": true},
		{"match": {"node": "write", "contains": "first"}, "reply": {"text": "one"}},
		{"match": {"node": "write", "contains": "second"}, "reply": {"text": "two"}},
		{"match": {"node": "write", "contains": "edited second"}, "reply": {"text": "two, edited"}},
		{"match": {"node": "write", "contains": "edited first"}, "reply": {"text": "uno"}}
	]}`, nodes.Options{})
	for _, m := range []string{"first", "second"} {
		if r := h.run(t, "c1", m); r.err != nil {
			t.Fatal(r.err)
		}
	}
	r := collect(h.agent.Edit(t.Context(), "c1", nodes.Turn{RequestID: "req-second"}, nodes.Input{Message: "edited second", RequestID: "req-edit"}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	s := h.state(t, "c1")
	var texts []string
	for _, m := range s.Messages {
		texts = append(texts, m.Content)
	}
	if !slices.Equal(texts, []string{"first", "one", "edited second", "two, edited"}) || s.Turn != 2 {
		t.Errorf("after edit: turn %d, messages %q", s.Turn, texts)
	}
	// Editing the first turn forks from the empty conversation. A run
	// hint that stored no input (as a retried turn's run) still finds it.
	if r := collect(h.agent.Edit(t.Context(), "c1", nodes.Turn{RequestID: "req-first", RunID: "run-that-stored-nothing"}, nodes.Input{Message: "edited first"})); r.err != nil {
		t.Fatal(r.err)
	}
	s = h.state(t, "c1")
	if len(s.Messages) != 2 || s.Messages[0].Content != "edited first" || s.Messages[1].Content != "uno" || s.Turn != 1 {
		t.Errorf("after editing the first turn: turn %d, %+v", s.Turn, s.Messages)
	}
	if r := collect(h.agent.Edit(t.Context(), "c1", nodes.Turn{RequestID: "nope"}, nodes.Input{Message: "x"})); !errors.Is(r.err, nodes.ErrUnknownTurn) {
		t.Errorf("unknown turn: %v", r.err)
	}
	hist, err := h.agent.History(t.Context(), "c1", 0, "")
	if err != nil || len(hist) < 10 {
		t.Errorf("history: %d snapshots, %v", len(hist), err)
	}
}

func TestInvalidInputAndUnknownModel(t *testing.T) {
	h := newHarness(t, `{"steps": [{"reply": {"text": "unused"}, "repeat": true}]}`, nodes.Options{})
	if r := h.run(t, "c1", "   "); !errors.Is(r.err, nodes.ErrInvalidInput) || r.trace() != "run.failed" {
		t.Errorf("empty message: %s %v", r.trace(), r.err)
	}
	r := collect(h.agent.Run(t.Context(), "c1", nodes.Input{Message: "hi", Model: "gpt-9"}))
	if !errors.Is(r.err, llm.ErrUnknownModel) {
		t.Fatalf("unknown model: %v", r.err)
	}
	if f := last[*events.RunFailed](r); f.Error.Code != events.CodeModelUnknown {
		t.Errorf("run.failed = %+v", f)
	}
	if _, err := h.agent.State(t.Context(), "nobody"); !errors.Is(err, nodes.ErrNoConversation) {
		t.Errorf("unknown conversation: %v", err)
	}
}

func TestCancelThenContinue(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}},
		{"name": "slow", "match": {"node": "write"}, "reply": {"text": "slow answer", "delay_ms": 2000}},
		{"name": "fast", "match": {"node": "write"}, "reply": {"text": "fast answer"}}
	]}`, nodes.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var r run
	for ev, err := range h.agent.Run(ctx, "c1", nodes.Input{Message: "hi"}) {
		r.events = append(r.events, ev)
		if err != nil {
			r.err = err
		}
		if s, ok := ev.Data.(*events.NodeStart); ok && s.Node == nodes.NodeWrite {
			cancel()
		}
	}
	if !errors.Is(r.err, context.Canceled) || !strings.HasSuffix(r.trace(), "+write run.cancelled") {
		t.Fatalf("cancelled run: %s, %v", r.trace(), r.err)
	}
	snap, err := h.agent.State(t.Context(), "c1")
	if err != nil || !slices.Equal(snap.Next, []string{nodes.NodeWrite}) {
		t.Fatalf("after cancel: next %v, %v", snap.Next, err)
	}
	r = collect(h.agent.Continue(t.Context(), "c1"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+write response.chunk* -write +stream response.done -stream run.completed`)
	if s := h.state(t, "c1"); s.FinalResponse != "fast answer" {
		t.Errorf("final = %q", s.FinalResponse)
	}
}

func TestBreakingOutStopsTheRun(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}},
		{"match": {"node": "write"}, "reply": {"text": "a b c d e f g h", "delay_ms": 5}}
	]}`, nodes.Options{})
	n := 0
	for ev := range h.agent.Run(t.Context(), "c1", nodes.Input{Message: "hi"}) {
		if ev.Type == events.TypeResponseChunk {
			n++
			break
		}
	}
	if n != 1 {
		t.Fatalf("saw %d chunks", n)
	}
	// goleak (TestMain) checks that nothing kept running.
}

func TestParallelCallsEachNeedApproval(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"tool_calls": [
			{"id": "a", "name": "delete_file", "args": {"path": "/a"}},
			{"id": "s", "name": "search", "args": {"q": "x"}},
			{"id": "b", "name": "delete_file", "args": {"path": "/b"}}]}},
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"json": {"action": "ANSWER", "reasoning": "/a stays"}}},
		{"match": {"node": "write"}, "reply": {"text": "Deleted /b and kept /a."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "delete both")
	if req := last[*events.ApprovalRequired](r); req.ToolCallID != "a" {
		t.Fatalf("first approval: %+v", req)
	}
	r = h.resume(t, "c1", nodes.ApprovalDecision{Decision: events.DecisionReject, Reason: "keep /a"})
	wantTrace(t, r, `approval.resolved:reject +execute_tool approval.required run.interrupted:approval`)
	if req := last[*events.ApprovalRequired](r); req.ToolCallID != "b" || req.Revision != 1 {
		t.Fatalf("second approval: %+v", req)
	}
	if len(*h.deleted) != 0 {
		t.Fatal("ran before every approval was in")
	}
	r = h.resume(t, "c1", nodes.ApprovalDecision{Decision: events.DecisionApprove})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !slices.Equal(*h.deleted, []string{"/b"}) {
		t.Errorf("deleted = %v", *h.deleted)
	}
	s := h.state(t, "c1")
	if got := strings.Join(toolNames(s.ToolResults), " "); got != "delete_file=rejected search=success delete_file=success" {
		t.Errorf("results = %s", got)
	}
	// A rejection in the batch sends the supervisor back to revise, without
	// asking the model to reflect; here it answers instead.
	if s.Reflection.Assessment != nodes.AssessNeedMore || s.FinalResponse != "Deleted /b and kept /a." || s.Rejections != 1 {
		t.Errorf("reflection %+v, final %q, rejections %d", s.Reflection, s.FinalResponse, s.Rejections)
	}
	h.allConsumed(t)
}

type askIn struct {
	Topic string `json:"topic"`
}

type elicitor struct{ answer operators.ElicitResponse }

func (e elicitor) Elicit(ctx context.Context, conv string, req operators.ElicitRequest) (operators.ElicitResponse, error) {
	return e.answer, nil
}

func TestElicitation(t *testing.T) {
	script := `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "q", "name": "ask", "args": {"topic": "colour"}}]}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write"}, "reply": {"text": "ok"}}
	]}`
	for _, tc := range []struct {
		name     string
		elicitor nodes.Elicitor
		want     string
		trace    string
	}{
		{"answered", elicitor{operators.ElicitResponse{Action: events.ElicitAccept, Content: []byte(`{"confirm": true}`)}}, "confirmed",
			"tool.start:ask elicitation.request elicitation.response tool.complete:ask"},
		{"no elicitor", nil, "no way to ask the user", "tool.start:ask tool.error:ask"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local := operators.NewRegistry()
			local.MustAdd(operators.NewTool("ask", "Asks the user.", func(ctx context.Context, c operators.Call, in askIn) (operators.Result, error) {
				ok, err := c.Confirm(ctx, "Use "+in.Topic+"?")
				if err != nil {
					return operators.Result{}, err
				}
				if ok {
					return operators.TextResult("confirmed"), nil
				}
				return operators.TextResult("declined"), nil
			}))
			prov := operators.NewProvider(operators.ProviderConfig{Local: local})
			sc, _ := llm.ParseScript([]byte(script))
			m := llm.NewScripted(sc)
			models, _ := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{{ID: "s", Provider: llm.ProviderScripted, Instance: m}}, Resilience: llm.ResilienceConfig{Disabled: true}})
			a, err := nodes.New(models, prov, nil, nodes.Options{Elicitor: tc.elicitor})
			if err != nil {
				t.Fatal(err)
			}
			r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "pick a colour"}))
			if r.err != nil {
				t.Fatal(r.err)
			}
			if !strings.Contains(r.trace(), tc.trace) {
				t.Errorf("events: %s", r.trace())
			}
			snap, _ := a.State(t.Context(), "c1")
			if res := snap.State.ToolResults[0]; !strings.Contains(res.Content, tc.want) {
				t.Errorf("result = %+v", res)
			}
			if req := last[*events.ElicitationRequest](r); tc.elicitor != nil && (req.Source != "ask" || req.ElicitationID == "" || !strings.Contains(string(req.Schema), "confirm")) {
				t.Errorf("elicitation.request = %+v", req)
			}
		})
	}
}

func TestContextLoaders(t *testing.T) {
	var seen string
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}},
		{"match": {"node": "write"}, "reply": {"text": "ok"}}
	]}`, nodes.Options{
		Cognition: func(ctx context.Context, userID, query string) (string, error) {
			seen = userID + ":" + query
			return "prefers short answers", nil
		},
		Documents: nodes.DocumentSourceFunc(func(ctx context.Context, user, conv string, ids []string) ([]nodes.DataSummary, error) {
			<-ctx.Done() // too slow: the turn goes on without it
			return nil, ctx.Err()
		}),
		ContextTimeout: 20 * time.Millisecond,
	})
	r := collect(h.agent.Run(t.Context(), "c1", nodes.Input{Message: "hi", UserID: "u7"}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	s := h.state(t, "c1")
	if seen != "u7:hi" || s.Cognitive != "prefers short answers" || s.DataSummaries != nil {
		t.Errorf("seen %q, cognitive %q, docs %+v", seen, s.Cognitive, s.DataSummaries)
	}
}

// Old turns leave the models' window for the rolling summary; the state
// keeps every message.
func TestRollingSummary(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"text": "noted"}, "repeat": true}
	]}`, nodes.Options{Window: nodes.Window{Messages: 2}})
	for _, m := range []string{"my name is Ada", "I like tea", "what do I like?"} {
		if r := h.run(t, "c1", m); r.err != nil {
			t.Fatal(r.err)
		}
	}
	s := h.state(t, "c1")
	if len(s.Messages) != 6 || !strings.Contains(s.Summary, "- User: my name is Ada") || strings.Contains(s.Summary, "tea") || s.SummaryUpTo != 2 {
		t.Errorf("messages %d, summary %q up to %d", len(s.Messages), s.Summary, s.SummaryUpTo)
	}
	// The third turn's calls saw two user messages, not three.
	calls := h.model.Calls()
	if c := calls[len(calls)-1]; c.Turn != 2 || c.LastHuman != "what do I like?" {
		t.Errorf("last call = %+v", c)
	}
}

// TestCancelWhileAToolRunsKeepsNoResult cancels a run while its tool
// waits: the cut call's "context canceled" must not become the tool's
// result, so continuing the run calls the tool again.
func TestCancelWhileAToolRunsKeepsNoResult(t *testing.T) {
	reg, _ := scriptedModels(t, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "w1", "name": "wait", "args": {"q": "x"}}]}, "repeat": true},
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"json": {"action": "ANSWER"}}},
		{"match": {"node": "write"}, "reply": {"text": "done"}}
	]}`)
	local := operators.NewRegistry()
	calls := 0
	local.MustAdd(operators.NewTool("wait", "Waits.", func(ctx context.Context, c operators.Call, in struct {
		Q string `json:"q"`
	}) (operators.Result, error) {
		calls++
		if calls == 1 {
			<-ctx.Done()
			return operators.Result{}, ctx.Err()
		}
		return operators.TextResult("waited"), nil
	}, operators.ReadOnly()))
	agent, err := nodes.New(reg, operators.NewProvider(operators.ProviderConfig{Local: local}), memory.New(), nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var r run
	for ev, err := range agent.Run(ctx, "c1", nodes.Input{Message: "wait"}) {
		r.events = append(r.events, ev)
		if err != nil {
			r.err = err
		}
		if s, ok := ev.Data.(*events.ToolStart); ok && s.Tool == "wait" {
			cancel()
		}
	}
	if !errors.Is(r.err, context.Canceled) || !strings.HasSuffix(r.trace(), "run.cancelled") {
		t.Fatalf("cancelled run: %s, %v", r.trace(), r.err)
	}
	snap, err := agent.State(t.Context(), "c1")
	if err != nil || !slices.Equal(snap.Next, []string{nodes.NodeExecuteTool}) || len(snap.State.ToolResults) != 0 {
		t.Fatalf("after cancel: next %v, results %+v, %v", snap.Next, snap.State.ToolResults, err)
	}
	r = collect(agent.Continue(t.Context(), "c1"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	s, err := agent.State(t.Context(), "c1")
	if err != nil || calls != 2 || len(s.State.ToolResults) != 1 || s.State.ToolResults[0].Content != "waited" || s.State.FinalResponse != "done" {
		t.Errorf("continued: %d calls, results %+v, final %q, %v", calls, s.State.ToolResults, s.State.FinalResponse, err)
	}
}

// A run continued once its turn had ended (its process died, or lost its
// database, before the run's end was stored) says the answer again, as
// stream said it, and writes nothing: the run service stores the answer
// and its response.done together, so both may be missing.
func TestContinueAfterTheTurnEnded(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}},
		{"match": {"node": "write"}, "reply": {"text": "the answer"}}
	]}`, nodes.Options{})
	first := h.run(t, "c1", "hi")
	if first.err != nil {
		t.Fatal(first.err)
	}
	before, err := h.saver.List(t.Context(), graph.ListOptions{ThreadID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	again := collect(h.agent.Continue(t.Context(), "c1"))
	if again.err != nil {
		t.Fatal(again.err)
	}
	wantTrace(t, again, `response.done run.completed`)
	if got, want := last[*events.ResponseDone](again), last[*events.ResponseDone](first); !reflect.DeepEqual(got, want) {
		t.Errorf("said again %+v, first %+v", got, want)
	}
	if got, want := last[*events.RunCompleted](again).Usage, last[*events.RunCompleted](first).Usage; got != want {
		t.Errorf("usage again %+v, first %+v", got, want)
	}
	if len(h.answers) != 2 || !reflect.DeepEqual(h.answers[1], h.answers[0]) || h.answers[0].Message.Content != "the answer" {
		t.Errorf("the hook heard %+v", h.answers)
	}
	after, err := h.saver.List(t.Context(), graph.ListOptions{ThreadID: "c1"})
	if err != nil || len(after) != len(before) {
		t.Errorf("checkpoints %d after, %d before (%v)", len(after), len(before), err)
	}
}
