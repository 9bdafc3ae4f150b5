package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// parkingElicitor answers nothing: every question parks the run, as when
// nobody watches it.
type parkingElicitor struct {
	mu    sync.Mutex
	asked []string // elicitation ids
}

func (e *parkingElicitor) Elicit(_ context.Context, _ string, r operators.ElicitRequest) (operators.ElicitResponse, error) {
	e.mu.Lock()
	e.asked = append(e.asked, r.ElicitationID)
	e.mu.Unlock()
	return operators.ElicitResponse{}, fmt.Errorf("test: %w", operators.ErrAskLater)
}

// questionTools are a lookup that finishes at once, an operator-style
// tool that asks before it acts (a replayable question), and a tool whose
// question cannot take a late answer (as an MCP server on a session
// revision).
type questionTools struct {
	lookups, deletes, legacy atomic.Int32
}

func (q *questionTools) provider(t *testing.T) *operators.Provider {
	t.Helper()
	local := operators.NewRegistry()
	local.MustAdd(
		operators.NewTool("lookup", "Looks up.", func(ctx context.Context, c operators.Call, in searchIn) (operators.Result, error) {
			q.lookups.Add(1)
			return operators.TextResult("found " + in.Q), nil
		}),
		operators.NewTool("careful_delete", "Deletes after asking.", func(ctx context.Context, c operators.Call, in pathIn) (operators.Result, error) {
			ok, err := c.Confirm(ctx, "Delete "+in.Path+"?")
			if err != nil {
				return operators.Result{}, err
			}
			if !ok {
				return operators.TextResult("kept " + in.Path), nil
			}
			q.deletes.Add(1)
			return operators.TextResult("deleted " + in.Path), nil
		}),
		operators.NewTool("legacy_ask", "Asks on a session revision.", func(ctx context.Context, c operators.Call, in searchIn) (operators.Result, error) {
			q.legacy.Add(1)
			resp, err := c.Messenger.Elicit(ctx, operators.ElicitRequest{Source: "legacy_ask", Message: "Which " + in.Q + "?"})
			if err != nil {
				return operators.Result{}, err
			}
			return operators.TextResult("picked " + string(resp.Content)), nil
		}),
	)
	return operators.NewProvider(operators.ProviderConfig{Local: local})
}

func questionAgent(t *testing.T, script string, tools *operators.Provider, el nodes.Elicitor) (*nodes.Agent, *llm.Scripted) {
	t.Helper()
	reg, model := scriptedModels(t, script)
	a, err := nodes.New(reg, tools, nil, nodes.Options{Elicitor: el,
		Hooks: nodes.Hooks{OnAnswer: func(context.Context, nodes.Answer) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	return a, model
}

const questionScript = `{"steps": [
	{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [
		{"id": "l1", "name": "lookup", "args": {"q": "a.txt"}},
		{"id": "d1", "name": "careful_delete", "args": {"path": "/tmp/a.txt"}}]}},
	{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
	{"match": {"node": "write"}, "reply": {"text": "Done."}}
]}`

// A question nobody answers parks the run; answered later, the run goes
// on: the call that finished before is not run again, and the asking call
// runs again with its answer, acting once.
func TestAQuestionParksTheRunAndTheAnswerResumesIt(t *testing.T) {
	tools := &questionTools{}
	el := &parkingElicitor{}
	a, _ := questionAgent(t, questionScript, tools.provider(t), el)
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "delete a.txt", RequestID: "req1"}))
	ri := last[*events.RunInterrupted](r)
	if ri == nil || ri.Reason != "elicitation" || len(ri.ElicitationIDs) != 1 || len(ri.Pending) != 1 {
		t.Fatalf("run: %s (%v); want it parked on the question", r.trace(), r.err)
	}
	p := ri.Pending[0]
	if p.Kind != events.PendingElicitation || p.ToolCallID != "d1" || p.Message != "Delete /tmp/a.txt?" || !p.Replayable || p.ElicitationID != ri.ElicitationIDs[0] {
		t.Errorf("pending %+v", p)
	}
	if req := last[*events.ElicitationRequest](r); req == nil || req.ElicitationID != p.ElicitationID {
		t.Errorf("elicitation.request %+v, want id %s", req, p.ElicitationID)
	}
	if strings.Contains(r.trace(), "elicitation.response") {
		t.Errorf("a parked question was reported answered: %s", r.trace())
	}
	if tools.lookups.Load() != 1 || tools.deletes.Load() != 0 {
		t.Fatalf("lookups %d, deletes %d", tools.lookups.Load(), tools.deletes.Load())
	}
	// Continuing the parked run (a restart) runs nothing again.
	r = collect(a.Continue(t.Context(), "c1"))
	if ri := last[*events.RunInterrupted](r); ri == nil || ri.Reason != "elicitation" || tools.lookups.Load() != 1 {
		t.Fatalf("continue: %s (%v), lookups %d", r.trace(), r.err, tools.lookups.Load())
	}
	// A new message waits for the answer.
	if r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "hello"})); !errors.Is(r.err, nodes.ErrApprovalPending) {
		t.Errorf("a new message while the question waits: %v", r.err)
	}
	if r := collect(a.AnswerElicitation(t.Context(), "c1", nodes.ElicitationAnswer{ElicitationID: "nope", Action: events.ElicitAccept})); !errors.Is(r.err, nodes.ErrNoPendingElicitation) {
		t.Errorf("unknown id: %v", r.err)
	}

	r = collect(a.AnswerElicitation(t.Context(), "c1", nodes.ElicitationAnswer{ElicitationID: p.ElicitationID,
		Action: events.ElicitAccept, Content: json.RawMessage(`{"confirm": true}`)}))
	if r.err != nil || last[*events.RunCompleted](r) == nil {
		t.Fatalf("answered: %s (%v)", r.trace(), r.err)
	}
	if !strings.HasPrefix(r.trace(), "elicitation.response") || strings.Contains(r.trace(), "tool.start:lookup") {
		t.Errorf("answered run: %s", r.trace())
	}
	if tools.lookups.Load() != 1 || tools.deletes.Load() != 1 {
		t.Errorf("lookups %d, deletes %d; want each once", tools.lookups.Load(), tools.deletes.Load())
	}
	if len(el.asked) != 1 {
		t.Errorf("the elicitor was asked %d times, want once (the answer is given at once on the second run)", len(el.asked))
	}
	s, err := a.State(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range s.State.ToolResults {
		got = append(got, tr.ToolCallID+"="+tr.Content)
	}
	if strings.Join(got, ",") != "l1=found a.txt,d1=deleted /tmp/a.txt" {
		t.Errorf("tool results %v", got)
	}
}

// A question that cannot take a late answer expires with its call: the
// model and the user are told so, and the call is not issued again.
func TestALateAnswerToAQuestionThatCannotTakeItExpires(t *testing.T) {
	tools := &questionTools{}
	a, _ := questionAgent(t, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "q1", "name": "legacy_ask", "args": {"q": "color"}}]}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write"}, "reply": {"text": "Sorry."}}
	]}`, tools.provider(t), &parkingElicitor{})
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "ask me", RequestID: "req1"}))
	ri := last[*events.RunInterrupted](r)
	if ri == nil || ri.Reason != "elicitation" || ri.Pending[0].Replayable {
		t.Fatalf("run: %s (%v)", r.trace(), r.err)
	}
	r = collect(a.AnswerElicitation(t.Context(), "c1", nodes.ElicitationAnswer{ElicitationID: ri.ElicitationIDs[0],
		Action: events.ElicitAccept, Content: json.RawMessage(`{"color": "red"}`)}))
	if r.err != nil || last[*events.RunCompleted](r) == nil {
		t.Fatalf("answered: %s (%v)", r.trace(), r.err)
	}
	te := last[*events.ToolError](r)
	if te == nil || te.ToolCallID != "q1" || !strings.Contains(te.Error, "cannot take a late answer") {
		t.Errorf("tool.error %+v", te)
	}
	if n := tools.legacy.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
}

// A parked question its deadline declined resumes the run as the user's
// decline does, announced first by elicitation.expired.
func TestAnExpiredQuestionAnnouncesItsDeadline(t *testing.T) {
	tools := &questionTools{}
	a, _ := questionAgent(t, questionScript, tools.provider(t), &parkingElicitor{})
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "delete a.txt", RequestID: "req1"}))
	ri := last[*events.RunInterrupted](r)
	if ri == nil || len(ri.ElicitationIDs) != 1 {
		t.Fatalf("run: %s (%v); want it parked on the question", r.trace(), r.err)
	}
	id := ri.ElicitationIDs[0]
	x := &events.ElicitationExpired{ElicitationID: id, Kind: events.PendingElicitation, Outcome: events.ExpiryDecline,
		ExpiresAt: time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)}
	r = collect(a.AnswerElicitation(t.Context(), "c1", nodes.ElicitationAnswer{ElicitationID: id, Action: events.ElicitDecline, Expired: x}))
	if r.err != nil || last[*events.RunCompleted](r) == nil {
		t.Fatalf("declined at the deadline: %s (%v)", r.trace(), r.err)
	}
	if got := last[*events.ElicitationExpired](r); got == nil || *got != *x || !strings.HasPrefix(r.trace(), "elicitation.expired elicitation.response") {
		t.Errorf("declined at the deadline: %s", r.trace())
	}
	if tools.deletes.Load() != 0 {
		t.Errorf("a declined question's tool acted %d times", tools.deletes.Load())
	}
}
