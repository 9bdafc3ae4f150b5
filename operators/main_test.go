package operators_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/operators"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSource is a remote source whose CallTool runs call with the 1-based
// number of the call.
type fakeSource struct {
	name    string
	specs   []operators.Spec
	listErr error
	calls   atomic.Int32
	call    func(ctx context.Context, n int, tool string, args json.RawMessage) (operators.Result, error)
	// withCall, when set, runs instead of call and sees the Call.
	withCall func(ctx context.Context, call operators.Call) (operators.Result, error)
}

func (s *fakeSource) Name() string { return s.name }

func (s *fakeSource) ListTools(context.Context) ([]operators.Spec, error) {
	if s.listErr != nil {
		return nil, s.listErr
	}
	return s.specs, nil
}

func (s *fakeSource) CallTool(ctx context.Context, name string, args json.RawMessage, call operators.Call) (operators.Result, error) {
	n := int(s.calls.Add(1))
	if s.withCall != nil {
		return s.withCall(ctx, call)
	}
	if s.call == nil {
		return operators.TextResult("ok from " + s.name + "." + name), nil
	}
	return s.call(ctx, n, name, args)
}

func (s *fakeSource) Health(context.Context) error { return s.listErr }

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// objectSchema is {"type":"object", properties: {q: string}, required: [q]}.
func querySpec(name string) operators.Spec {
	return operators.Spec{Name: name, Description: name + " tool", InputSchema: operators.QuerySchema("q")}
}
