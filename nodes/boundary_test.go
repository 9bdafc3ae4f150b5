package nodes_test

import (
	"context"
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// planned records the nodes each written checkpoint plans.
type planned struct {
	graph.Checkpointer
	plans [][]string
}

func (p *planned) Put(ctx context.Context, cp graph.Checkpoint, blobs []graph.Blob) error {
	var next []string
	for _, t := range cp.Tasks {
		next = append(next, t.Node)
	}
	p.plans = append(p.plans, next)
	return p.Checkpointer.Put(ctx, cp, blobs)
}

// batched is planned that writes batches: it records the plans of each.
type batched struct {
	*planned
	batches [][][]string
}

func (b *batched) PutBatch(ctx context.Context, puts []graph.CheckpointPut) error {
	from := len(b.plans)
	for _, p := range puts {
		if err := b.Put(ctx, p.Checkpoint, p.Blobs); err != nil {
			return err
		}
	}
	b.batches = append(b.batches, b.plans[from:])
	return nil
}

// A turn whose caller names its run (WithRun) writes its input's
// checkpoint in one batch with the next, the same checkpoints as one
// that does not.
func TestBoundaryDurabilityDefersTheInput(t *testing.T) {
	reg, _ := scriptedModels(t, `{"steps": [{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}, "repeat": true}, {"match": {"node": "write"}, "reply": {"text": "Done."}, "repeat": true}]}`)
	saver := &batched{planned: &planned{Checkpointer: memory.New()}}
	a, err := nodes.New(reg, operators.NewProvider(operators.ProviderConfig{Local: operators.NewRegistry()}), saver, nodes.Options{
		Durability: graph.DurabilityBoundary, Calls: &callLog{}, Hooks: nodes.Hooks{OnAnswer: func(context.Context, nodes.Answer) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"", "run-1"} {
		ctx := t.Context()
		if run != "" {
			ctx = nodes.WithRun(ctx, run)
		}
		saver.plans, saver.batches = nil, nil
		if r := collect(a.Run(ctx, "c1", nodes.Input{Message: "go", RequestID: "req-" + run})); r.err != nil || r.text() != "Done." {
			t.Fatalf("run %q: %s (%v)", run, r.trace(), r.err)
		}
		want := [][]string{{nodes.NodeInitialize}, {nodes.NodeStream}, nil}
		if !slices.EqualFunc(saver.plans, want, slices.Equal) {
			t.Errorf("run %q: checkpoints plan %v, want %v", run, saver.plans, want)
		}
		var batches [][][]string
		if run != "" {
			batches = [][][]string{want[:2]}
		}
		if !slices.EqualFunc(saver.batches, batches, func(a, b [][]string) bool { return slices.EqualFunc(a, b, slices.Equal) }) {
			t.Errorf("run %q: batches %v, want %v", run, saver.batches, batches)
		}
	}
}

// In boundary durability a turn writes its input's checkpoint, the one
// that plans an execute_tool step calling a tool neither read-only nor
// idempotent (not one calling only read-only tools), the ones holding
// the tools' results and the answer, and its last.
func TestBoundaryDurabilityBarsSideEffects(t *testing.T) {
	local := operators.NewRegistry()
	local.MustAdd(
		operators.NewTool("peek", "Looks.", func(ctx context.Context, c operators.Call, in searchIn) (operators.Result, error) {
			return operators.TextResult("saw " + in.Q), nil
		}, operators.ReadOnly()),
		operators.NewTool("charge", "Charges.", func(ctx context.Context, c operators.Call, in searchIn) (operators.Result, error) {
			return operators.TextResult("charged " + in.Q), nil
		}),
	)
	for _, tc := range []struct {
		tool string
		want [][]string
	}{
		{"charge", [][]string{{nodes.NodeInitialize}, {nodes.NodeExecuteTool}, {nodes.NodeReflect}, {nodes.NodeStream}, nil}},
		{"peek", [][]string{{nodes.NodeInitialize}, {nodes.NodeReflect}, {nodes.NodeStream}, nil}},
		{"", [][]string{{nodes.NodeInitialize}, {nodes.NodeStream}, nil}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			script := `{"steps": [
				{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "x1", "name": "` + tc.tool + `", "args": {"q": "a"}}]}},
				{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
				{"match": {"node": "write"}, "reply": {"text": "Done."}, "repeat": true}
			]}`
			if tc.tool == "" {
				script = `{"steps": [{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}}, {"match": {"node": "write"}, "reply": {"text": "Done."}}]}`
			}
			reg, _ := scriptedModels(t, script)
			saver := &planned{Checkpointer: memory.New()}
			a, err := nodes.New(reg, operators.NewProvider(operators.ProviderConfig{Local: local}), saver, nodes.Options{
				Durability: graph.DurabilityBoundary, Calls: &callLog{}, Hooks: nodes.Hooks{OnAnswer: func(context.Context, nodes.Answer) error { return nil }}})
			if err != nil {
				t.Fatal(err)
			}
			r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "go", RequestID: "req1"}))
			if r.err != nil || last[*events.RunCompleted](r) == nil || r.text() != "Done." {
				t.Fatalf("run: %s (%v)", r.trace(), r.err)
			}
			if !slices.EqualFunc(saver.plans, tc.want, slices.Equal) {
				t.Errorf("checkpoints plan %v, want %v", saver.plans, tc.want)
			}
		})
	}
}
