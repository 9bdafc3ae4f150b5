package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// mailSource is a remote tool source offering send, gated by its spec,
// that lists its tools only once up is set.
type mailSource struct {
	up   atomic.Bool
	sent atomic.Int32
}

func (s *mailSource) Name() string { return "mail" }

func (s *mailSource) ListTools(context.Context) ([]operators.Spec, error) {
	if !s.up.Load() {
		return nil, errors.New("mail: not connected yet")
	}
	return []operators.Spec{{Name: "send", Description: "Sends mail.", RequiresApproval: true}}, nil
}

func (s *mailSource) CallTool(context.Context, string, json.RawMessage, operators.Call) (operators.Result, error) {
	s.sent.Add(1)
	return operators.TextResult("sent"), nil
}

func (s *mailSource) Health(context.Context) error { return nil }

const mailScript = `{"steps": [
	{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "m1", "name": "send", "args": {}}]}},
	{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
	{"match": {"node": "write"}, "reply": {"text": "Sent."}}
]}`

// Whether a call needs approval is decided once, as the supervisor
// proposes it, and kept with the call: a process that continues the run
// while the gated tool's source has not connected yet neither skips the
// approval nor reports an unknown tool.
func TestApprovalGateSurvivesARestart(t *testing.T) {
	h := newHarness(t, mailScript, nodes.Options{})
	first := &mailSource{}
	first.up.Store(true)
	agentWith := func(src *mailSource) (*nodes.Agent, *operators.Provider) {
		t.Helper()
		p := operators.NewProvider(operators.ProviderConfig{})
		_ = p.AddSource(t.Context(), src) // a source not up yet fails its first listing
		reg, _ := scriptedModels(t, mailScript)
		a, err := nodes.New(reg, p, h.saver, nodes.Options{Hooks: nodes.Hooks{OnAnswer: func(context.Context, nodes.Answer) error { return nil }}})
		if err != nil {
			t.Fatal(err)
		}
		return a, p
	}
	a, _ := agentWith(first)
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "mail bob"}))
	req := last[*events.ApprovalRequired](r)
	if req == nil || req.Tool != "send" {
		t.Fatalf("no approval asked: %s (%v)", r.trace(), r.err)
	}

	// The "restarted" process: its mail source has not connected.
	later := &mailSource{}
	a, p := agentWith(later)
	r = collect(a.Continue(t.Context(), "c1"))
	if ri := last[*events.RunInterrupted](r); ri == nil || !slices.Equal(ri.ApprovalIDs, []string{req.ApprovalID}) {
		t.Fatalf("continued run: %s (%v); want it still waiting for approval %s", r.trace(), r.err, req.ApprovalID)
	}
	if first.sent.Load()+later.sent.Load() != 0 {
		t.Fatal("the gated tool ran without approval")
	}

	// Approved while the source is still connecting: the call waits for
	// it and runs once.
	done := make(chan run, 1)
	go func() {
		done <- collect(a.Resume(t.Context(), "c1", nodes.ApprovalDecision{ApprovalID: req.ApprovalID, Decision: events.DecisionApprove}))
	}()
	later.up.Store(true)
	if err := p.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	r = <-done
	if r.err != nil || last[*events.RunCompleted](r) == nil {
		t.Fatalf("resumed run: %s (%v)", r.trace(), r.err)
	}
	if n := later.sent.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
}
