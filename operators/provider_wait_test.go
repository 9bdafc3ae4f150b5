package operators_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

// A source that has not listed its tools yet (a process that just
// started, an MCP server still connecting) may offer any name: calls wait
// for it, and approval fails closed meanwhile.
func TestCallsWaitForASourceThatHasNotListed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{name: "mail", specs: []operators.Spec{{Name: "send"}}, listErr: errors.New("connecting")}
		p := operators.NewProvider(operators.ProviderConfig{SourceWait: 30 * time.Second})
		if err := p.AddSource(t.Context(), src); err == nil {
			t.Fatal("listing a source that is not up succeeded")
		}
		for _, name := range []string{"send", "mail.send", "anything"} {
			if !p.NeedsApproval(name) {
				t.Errorf("NeedsApproval(%q) = false while the source that may offer it is not up", name)
			}
		}
		if p.NeedsApproval("other.send") {
			t.Error("NeedsApproval of a source that does not exist = true")
		}

		done := make(chan operators.Result, 2)
		go func() { done <- p.Execute(t.Context(), "send", nil, operators.Call{}) }()
		go func() { done <- p.Execute(t.Context(), "mail.send", nil, operators.Call{}) }()
		synctest.Wait() // both wait for the source
		select {
		case r := <-done:
			t.Fatalf("a call did not wait for the source: %+v", r)
		default:
		}
		src.listErr = nil
		if err := p.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if r := <-done; r.IsError() {
				t.Errorf("call after the source came up: %s", r.Error)
			}
		}
		if n := src.calls.Load(); n != 2 {
			t.Errorf("source ran %d calls, want 2", n)
		}
		// Listed now: unknown names are decidable, and fail at once.
		if p.NeedsApproval("anything") || p.NeedsApproval("send") {
			t.Error("NeedsApproval after listing: want false for an unknown and an ungated tool")
		}
		if r := p.Execute(t.Context(), "anything", nil, operators.Call{}); !errors.Is(r.Err, operators.ErrUnknownTool) {
			t.Errorf("unknown tool after listing: %v", r.Err)
		}
	})
}

// A source that does not come up within SourceWait fails the call as
// unavailable, never as an unknown tool.
func TestCallGivesUpWaitingForASource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{name: "mail", specs: []operators.Spec{{Name: "send"}}, listErr: errors.New("connecting")}
		p := operators.NewProvider(operators.ProviderConfig{SourceWait: 5 * time.Second})
		_ = p.AddSource(t.Context(), src)
		start := time.Now()
		r := p.Execute(t.Context(), "send", nil, operators.Call{})
		if !errors.Is(r.Err, llm.ErrUnavailable) || errors.Is(r.Err, operators.ErrUnknownTool) {
			t.Fatalf("err = %v, want unavailable and not unknown", r.Err)
		}
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("waited %s, want SourceWait (5s)", waited)
		}
		if src.calls.Load() != 0 {
			t.Error("the source was called")
		}
	})
}

// While a source lists its tools for the first time, its gated tool
// needs approval at every instant, and a call to it never fails as an
// unknown tool: the sources are seen before the listing or after it,
// never between. Between is a few instructions wide: the rounds are
// many so that a build with that window open fails (it did, in every
// run of this test, for both checks).
func TestFirstListingIsSeenWhole(t *testing.T) {
	for range 20000 {
		src := &fakeSource{name: "mail", specs: []operators.Spec{{Name: "send", RequiresApproval: true}}, listErr: errors.New("connecting")}
		p := operators.NewProvider(operators.ProviderConfig{})
		_ = p.AddSource(t.Context(), src)
		src.listErr = nil
		done := make(chan error, 1)
		go func() { done <- p.Refresh(t.Context()) }()
		for listing := true; listing; {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				listing = false
			default:
			}
			if !p.NeedsApproval("send") {
				t.Fatal("NeedsApproval(send) = false while its source listed its tools")
			}
			if r := p.Execute(t.Context(), "send", nil, operators.Call{}); r.IsError() {
				t.Fatalf("a call while its source listed its tools: %s", r.Error)
			}
		}
	}
}
