package nodes_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// Every call of a catalog tool reads its idempotency key from its
// context, read-only or not, recorded or not, and from any context
// the tool derives from it: a key of its own, the same when the call
// is issued again, and for a recorded call the key it is recorded
// under.
func TestEveryCallReadsItsIdempotencyKey(t *testing.T) {
	var (
		mu   sync.Mutex
		keys = map[string][]string{} // tool → the key of each of its calls
	)
	read := func(ctx context.Context, tool string) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		mu.Lock()
		keys[tool] = append(keys[tool], operators.IdempotencyKey(ctx))
		mu.Unlock()
	}
	local := operators.NewRegistry()
	local.MustAdd(
		operators.NewTool("peek", "Looks, after asking.", func(ctx context.Context, c operators.Call, in searchIn) (operators.Result, error) {
			read(ctx, "peek")
			if _, err := c.Confirm(ctx, "Look at "+in.Q+"?"); err != nil {
				return operators.Result{}, err
			}
			return operators.TextResult("saw " + in.Q), nil
		}, operators.ReadOnly()),
		operators.NewTool("charge", "Charges.", func(ctx context.Context, c operators.Call, in searchIn) (operators.Result, error) {
			read(ctx, "charge")
			return operators.TextResult("charged " + in.Q), nil
		}),
	)
	script := `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [
			{"id": "p1", "name": "peek", "args": {"q": "a"}}, {"id": "c1", "name": "charge", "args": {"q": "b"}}]}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write"}, "reply": {"text": "Done."}}
	]}`
	reg, _ := scriptedModels(t, script)
	log := &callLog{}
	a, err := nodes.New(reg, operators.NewProvider(operators.ProviderConfig{Local: local}), nil, nodes.Options{Elicitor: &parkingElicitor{},
		Calls: log, Hooks: nodes.Hooks{OnAnswer: func(context.Context, nodes.Answer) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "peek and charge", RequestID: "req1"}))
	ri := last[*events.RunInterrupted](r)
	if ri == nil || len(ri.ElicitationIDs) != 1 {
		t.Fatalf("run: %s (%v); want it parked on peek's question", r.trace(), r.err)
	}
	r = collect(a.AnswerElicitation(t.Context(), "c1", nodes.ElicitationAnswer{ElicitationID: ri.ElicitationIDs[0],
		Action: events.ElicitAccept, Content: json.RawMessage(`{"confirm": true}`)}))
	if r.err != nil || last[*events.RunCompleted](r) == nil {
		t.Fatalf("answered: %s (%v)", r.trace(), r.err)
	}

	peek, charge := keys["peek"], keys["charge"]
	if len(peek) != 2 || peek[0] != peek[1] || !strings.HasPrefix(peek[0], "call_") {
		t.Errorf("peek, asked and issued again, read keys %q; want one key twice", peek)
	}
	if len(charge) != 1 || !strings.HasPrefix(charge[0], "call_") || len(peek) > 0 && charge[0] == peek[0] {
		t.Errorf("charge read keys %q; want one of its own (peek's: %q)", charge, peek)
	}
	if len(log.begun) != 1 || len(charge) == 1 && log.begun[0] != "charge:"+charge[0]+":" {
		t.Errorf("recorded %q; want charge's call under the key it read, %q", log.begun, charge)
	}
}
