package operators_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

func add(_ context.Context, _ operators.Call, in addIn) (operators.Result, error) {
	return operators.Result{Status: operators.StatusSuccess}, nil
}

var addArgs = json.RawMessage(`{"a":1,"b":2}`)

// Baseline: the function called directly with its typed input.
func BenchmarkLocalToolDirect(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		_, _ = add(ctx, operators.Call{}, addIn{A: 1, B: 2})
	}
}

// Baseline: decoding the model's JSON arguments, then the call.
func BenchmarkLocalToolDirectDecode(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		var in addIn
		if err := json.Unmarshal(addArgs, &in); err != nil {
			b.Fatal(err)
		}
		_, _ = add(ctx, operators.Call{}, in)
	}
}

// Through the provider: name lookup, schema validation, decoding, panic
// recovery.
func BenchmarkLocalToolViaProvider(b *testing.B) {
	local := operators.NewRegistry()
	local.MustAdd(operators.NewTool("add", "Adds.", add))
	p := operators.NewProvider(operators.ProviderConfig{Local: local})
	ctx := context.Background()
	for b.Loop() {
		if res := p.Execute(ctx, "add", addArgs, operators.Call{}); res.IsError() {
			b.Fatal(res.Error)
		}
	}
}

func remoteCall(context.Context) (operators.Result, error) {
	return operators.Result{Status: operators.StatusSuccess}, nil
}

// Baseline: a successful remote call without resilience.
func BenchmarkRemoteCallDirect(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		_, _ = remoteCall(ctx)
	}
}

// The same call under Retry(CircuitBreaker(Bulkhead(call))) within its timeout.
func BenchmarkRemoteCallGuarded(b *testing.B) {
	g := llm.NewGuard[operators.Result]("srv", operators.RemoteToolDefaults(), nil)
	ctx := context.Background()
	for b.Loop() {
		if _, err := g.Do(ctx, remoteCall); err != nil {
			b.Fatal(err)
		}
	}
}
