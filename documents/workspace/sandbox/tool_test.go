package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/documents/workspace/sandbox"
	"github.com/trellis-ai/trellis/operators"
)

func TestTool(t *testing.T) {
	tool := sandbox.Tool(sandbox.Limits{Time: 300 * time.Millisecond}, nil)
	spec := tool.Spec()
	if spec.Name != "run_code" || !spec.Annotations.ReadOnly || !spec.Annotations.Idempotent || spec.Annotations.Destructive {
		t.Errorf("spec %+v: want run_code, read-only and idempotent", spec)
	}
	if !strings.Contains(spec.Description, "300ms of wall time") {
		t.Errorf("the description does not give the limits: %s", spec.Description)
	}
	call := func(code string) (operators.Result, error) {
		args, _ := json.Marshal(map[string]string{"code": code})
		return tool.Execute(t.Context(), operators.Call{}, args)
	}
	for code, want := range map[string]string{
		"1+2": "=> 3",
		"console.log('a'); console.log('b'); [1, 2]": "a\nb\n=> [1,2]",
		"console.log('only')":                        "only",
		"let x = 1":                                  "(no output, and the value is undefined)",
	} {
		res, err := call(code)
		if err != nil || res.Text() != want {
			t.Errorf("%s: %q, %v; want %q", code, res.Text(), err, want)
		}
	}
	_, err := call("console.log('started'); for (;;) {}")
	if err == nil || !strings.Contains(err.Error(), "time limit") || !strings.Contains(err.Error(), "started") {
		t.Errorf("err = %v, want the time limit and the output so far", err)
	}
	if _, err := tool.Execute(t.Context(), operators.Call{}, json.RawMessage(`{"code": 1}`)); err == nil {
		t.Error("a code that is not a string was run")
	}
}

// TestToolThroughProvider: run_code is a tool like any other in the one
// provider: the approval policy can name it (and does not ask for it by
// default, since it is read-only), its results and failures come back as
// any tool's, and a cancelled call stops the program.
func TestToolThroughProvider(t *testing.T) {
	local := operators.NewRegistry()
	local.MustAdd(sandbox.Tool(sandbox.Limits{Time: time.Minute}, nil))
	plain := operators.NewProvider(operators.ProviderConfig{Local: local})
	if plain.NeedsApproval("run_code") {
		t.Error("run_code asks for approval by default")
	}
	asking := operators.NewProvider(operators.ProviderConfig{Local: local, Approval: operators.ApprovalPolicy{Tools: []string{"run_code"}}})
	if !asking.NeedsApproval("run_code") {
		t.Error("the approval policy naming run_code does not make it ask")
	}
	res := plain.Execute(t.Context(), "run_code", json.RawMessage(`{"code": "6*7"}`), operators.Call{})
	if res.IsError() || res.Text() != "=> 42" {
		t.Errorf("result %+v", res)
	}
	res = plain.Execute(t.Context(), "run_code", json.RawMessage(`{"code": "throw new TypeError('nope')"}`), operators.Call{})
	if !res.IsError() || !strings.Contains(res.Error, "TypeError: nope") {
		t.Errorf("a throw: %+v", res)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res = plain.Execute(ctx, "run_code", json.RawMessage(`{"code": "for (;;) {}"}`), operators.Call{})
	if !res.IsError() || time.Since(start) > 10*time.Second {
		t.Errorf("a call whose context ended: %+v after %s", res, time.Since(start))
	}
}

// heldFiles is a file API whose reads wait until released, counting the
// programs inside one at a time.
type heldFiles struct {
	in, most atomic.Int32
	entered  chan struct{}
	release  chan struct{}
}

func (h *heldFiles) List(context.Context, string) ([]string, error) { return nil, nil }
func (h *heldFiles) Write(context.Context, string, string) error    { return nil }
func (h *heldFiles) Read(ctx context.Context, _ string) (string, error) {
	n := h.in.Add(1)
	defer h.in.Add(-1)
	for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
	}
	h.entered <- struct{}{}
	select {
	case <-h.release:
		return "x", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// A tool runs at most Limits.Concurrent programs at once: a call beyond
// them waits for a slot, and one that finds none within the time a
// program may run fails with ErrBusy, without running.
func TestToolConcurrent(t *testing.T) {
	h := &heldFiles{entered: make(chan struct{}, 8), release: make(chan struct{})}
	tool := sandbox.Tool(sandbox.Limits{Time: 5 * time.Second, Concurrent: 2},
		func(context.Context, operators.Call) (sandbox.Files, error) { return h, nil })
	call := func(ctx context.Context) error {
		args, _ := json.Marshal(map[string]string{"code": "files.read('a')"})
		_, err := tool.Execute(ctx, operators.Call{}, args)
		return err
	}
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- call(t.Context()) }()
	}
	<-h.entered
	<-h.entered
	select {
	case <-h.entered:
		t.Fatal("a third program ran beside two, over Concurrent")
	case <-time.After(100 * time.Millisecond):
	}
	h.release <- struct{}{}
	<-h.entered // the third, in the slot the first left
	h.release <- struct{}{}
	h.release <- struct{}{}
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("call: %v", err)
		}
	}
	if m := h.most.Load(); m != 2 {
		t.Errorf("at most %d programs ran at once, want 2", m)
	}

	busy := sandbox.Tool(sandbox.Limits{Time: 200 * time.Millisecond, Concurrent: 1},
		func(context.Context, operators.Call) (sandbox.Files, error) { return h, nil })
	held := make(chan error, 1)
	go func() {
		args, _ := json.Marshal(map[string]string{"code": "files.read('a')"})
		_, err := busy.Execute(t.Context(), operators.Call{}, args)
		held <- err
	}()
	<-h.entered
	args, _ := json.Marshal(map[string]string{"code": "files.read('b')"})
	if _, err := busy.Execute(t.Context(), operators.Call{}, args); !errors.Is(err, sandbox.ErrBusy) {
		t.Errorf("a call with the one slot taken: %v, want ErrBusy", err)
	}
	h.release <- struct{}{}
	<-held
	if len(h.entered) != 0 {
		t.Error("the refused call's program ran")
	}
}
