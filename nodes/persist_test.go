package nodes_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// richScript makes a conversation that fills most of ChatState: parallel
// calls (one citable, one approved with edited args), a synthesis with
// citations, then a turn with a clarifying question.
const richScript = `{"steps": [
	{"match": {"node": "supervisor", "turn": 1, "tool_result": false}, "reply": {"tool_calls": [
		{"id": "s1", "name": "search", "args": {"q": "go"}},
		{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/old"}}]}},
	{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied", "reasoning": "ok"}}},
	{"match": {"node": "write", "turn": 1}, "reply": {"text": "Searched [1] and deleted.", "usage": {"input_tokens": 5, "output_tokens": 3, "cache_read_tokens": 2}}},
	{"match": {"node": "supervisor", "contains": "again"}, "reply": {"json": {"action": "CLARIFY", "question": "Again what?", "reasoning": "vague"}}},
	{"match": {"node": "supervisor", "contains": "the search"}, "reply": {"json": {"action": "ANSWER"}}},
	{"match": {"node": "write"}, "reply": {"text": "Sure."}}
]}`

func newAgentOn(t testing.TB, saver graph.Checkpointer, script string) (*nodes.Agent, *llm.Scripted) {
	t.Helper()
	sc, err := llm.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	m := llm.NewScripted(sc)
	reg, err := llm.NewRegistry(llm.Config{
		Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: m, ToolCalling: true}},
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := testTools(t)
	a, err := nodes.New(reg, tools, saver, nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a, m
}

func playRich(t *testing.T, a *nodes.Agent) nodes.ChatState {
	t.Helper()
	ctx := t.Context()
	steps := []func() run{
		func() run {
			return collect(a.Run(ctx, "rich", nodes.Input{Message: "search and clean", RequestID: "r1", UserID: "u1", Model: "scripted"}))
		},
		func() run {
			return collect(a.Resume(ctx, "rich", nodes.ApprovalDecision{Decision: events.DecisionEdit, Args: json.RawMessage(`{"path": "/tmp/older"}`)}))
		},
		func() run { return collect(a.Run(ctx, "rich", nodes.Input{Message: "do it again", RequestID: "r2"})) },
		func() run { return collect(a.Run(ctx, "rich", nodes.Input{Message: "the search", RequestID: "r3"})) },
	}
	for i, step := range steps {
		if r := step(); r.err != nil {
			t.Fatalf("step %d: %v (%s)", i, r.err, r.trace())
		}
	}
	snap, err := a.State(ctx, "rich")
	if err != nil {
		t.Fatal(err)
	}
	return snap.State
}

// normalized drops what differs between runs by design: durations and
// the interrupt ids, which hash the run's checkpoint ids.
func normalized(t testing.TB, s nodes.ChatState) string {
	t.Helper()
	for i := range s.ToolResults {
		s.ToolResults[i].DurationMS = 0
	}
	for i := range s.Approvals {
		s.Approvals[i].ApprovalID = ""
	}
	return mustJSON(t, s)
}

func TestStateRoundTripsEveryCheckpointer(t *testing.T) {
	backends := map[string]func(t *testing.T) graph.Checkpointer{
		"memory": func(t *testing.T) graph.Checkpointer { return memory.New() },
		"sqlite": func(t *testing.T) graph.Checkpointer {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "cp.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		"postgres": func(t *testing.T) graph.Checkpointer {
			s, err := postgres.New(t.Context(), pgtest.New(t))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	states := map[string]string{}
	for _, name := range []string{"memory", "sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			a, m := newAgentOn(t, backends[name](t), richScript)
			s := playRich(t, a)
			if left := m.Unconsumed(); len(left) > 0 {
				t.Errorf("unused steps: %v", left)
			}
			if s.Turn != 2 || len(s.DataChunks) != 0 || len(s.Messages) != 9 || s.Usage.CacheReadTokens != 2 {
				t.Errorf("turn %d, chunks %d, messages %d (%s), usage %+v", s.Turn, len(s.DataChunks), len(s.Messages), roles(s.Messages), s.Usage)
			}
			// What the state holds decodes back to itself.
			var back nodes.ChatState
			if err := json.Unmarshal([]byte(mustJSON(t, s)), &back); err != nil || !reflect.DeepEqual(back, s) {
				t.Errorf("JSON round trip changed the state (%v)", err)
				bv, sv := reflect.ValueOf(back), reflect.ValueOf(s)
				for i := range bv.NumField() {
					if !reflect.DeepEqual(bv.Field(i).Interface(), sv.Field(i).Interface()) {
						t.Errorf("field %s: %#v vs %#v", bv.Type().Field(i).Name, bv.Field(i).Interface(), sv.Field(i).Interface())
					}
				}
			}
			states[name] = normalized(t, s)
		})
	}
	for _, name := range []string{"sqlite", "postgres"} {
		if states[name] != "" && states[name] != states["memory"] {
			t.Errorf("%s state differs from memory's:\n%s\n%s", name, states[name], states["memory"])
		}
	}
}

// A run parked at an approval on Postgres is resumed by another agent — its
// own pool, saver, model and tools — and finishes.
func TestResumeAcrossInstancesPostgres(t *testing.T) {
	pool := pgtest.New(t)
	saver1, err := postgres.New(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := newAgentOn(t, saver1, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/x"}}]}}
	]}`)
	r := collect(first.Run(t.Context(), "pg", nodes.Input{Message: "delete /tmp/x", RequestID: "r1"}))
	if r.err != nil || last[*events.RunInterrupted](r) == nil {
		t.Fatalf("first run: %s, %v", r.trace(), r.err)
	}
	id := last[*events.ApprovalRequired](r).ApprovalID

	pool2, err := pgxpool.NewWithConfig(context.Background(), pool.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool2.Close)
	saver2, err := postgres.New(t.Context(), pool2)
	if err != nil {
		t.Fatal(err)
	}
	second, m2 := newAgentOn(t, saver2, `{"steps": [
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write"}, "reply": {"text": "Deleted /tmp/x."}}
	]}`)
	pending, err := second.Pending(t.Context(), "pg")
	if err != nil || len(pending) != 1 || pending[0].ID != id || pending[0].Tool != "delete_file" {
		t.Fatalf("pending on the second instance = %+v, %v", pending, err)
	}
	r = collect(second.Resume(t.Context(), "pg", nodes.ApprovalDecision{ApprovalID: id, Decision: events.DecisionApprove}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `approval.resolved:approve +execute_tool tool.start:delete_file tool.complete:delete_file -execute_tool
		+reflect -reflect +synthesize -synthesize +write response.chunk* -write +stream response.done -stream run.completed`)
	snap, err := second.State(t.Context(), "pg")
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.FinalResponse != "Deleted /tmp/x." || len(snap.Pending) != 0 || !slices.Equal(toolNames(snap.State.ToolResults), []string{"delete_file=success"}) {
		t.Errorf("final state: %q, pending %+v, results %v", snap.State.FinalResponse, snap.Pending, toolNames(snap.State.ToolResults))
	}
	if left := m2.Unconsumed(); len(left) > 0 {
		t.Errorf("unused steps: %v", left)
	}
}

// TestBeganTellsWhetherARunStoredAnything: Began is true once a run
// named by WithRun has a checkpoint — also a run whose message answers a
// clarifying question, which resumes the turn before it — and false for
// a run that stored nothing yet, in a new conversation or an old one.
// Checkpoints that record no run (written without WithRun, or by
// Abandon) are passed over, however many.
func TestBeganTellsWhetherARunStoredAnything(t *testing.T) {
	a, _ := newAgentOn(t, memory.New(), `{"steps": [
		{"match": {"node": "supervisor", "contains": "again"}, "reply": {"json": {"action": "CLARIFY", "question": "Again what?", "reasoning": "vague"}}, "repeat": true},
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}, "repeat": true},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"text": "Sure."}, "repeat": true}
	]}`)
	ctx := t.Context()
	began := func(conv, run string, want bool) {
		t.Helper()
		if got, err := a.Began(ctx, conv, run); err != nil || got != want {
			t.Fatalf("Began(%s, %s) = %v, %v; want %v", conv, run, got, err, want)
		}
	}
	turn := func(ctx context.Context, conv, msg, wantEnd string) {
		t.Helper()
		if r := collect(a.Run(ctx, conv, nodes.Input{Message: msg})); !strings.HasSuffix(r.trace(), wantEnd) {
			t.Fatalf("%s: %v (%s)", msg, r.err, r.trace())
		}
	}
	began("c", "run-1", false)
	turn(nodes.WithRun(ctx, "run-1"), "c", "hello", "run.completed")
	began("c", "run-1", true)
	began("c", "run-2", false)
	turn(nodes.WithRun(ctx, "run-2"), "c", "do it again", "run.interrupted:clarification")
	began("c", "run-3", false)
	turn(nodes.WithRun(ctx, "run-3"), "c", "the greeting", "run.completed")
	began("c", "run-3", true)

	turn(ctx, "old", "hello", "run.completed")
	began("old", "run-4", false)
	turn(nodes.WithRun(ctx, "run-4"), "old", "hello", "run.completed")
	for range 3 { // more checkpoints than a page
		turn(ctx, "old", "hello", "run.completed")
	}
	began("old", "run-4", true)
	turn(nodes.WithRun(ctx, "run-5"), "old", "do it again", "run.interrupted:clarification")
	if err := a.Abandon(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	began("old", "run-5", true)
	began("old", "run-6", false)
}
