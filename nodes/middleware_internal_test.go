package nodes

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/graph"
)

// recorder is a middleware that logs its hooks into a shared trace.
type recorder struct {
	name  string
	trace *[]string
}

func (r recorder) Name() string { return r.name }
func (r recorder) BeforeModel(_ context.Context, c *ModelCall) error {
	*r.trace = append(*r.trace, "before:"+r.name)
	c.System += "+" + r.name
	return nil
}
func (r recorder) AfterModel(_ context.Context, _ *ModelCall) error {
	*r.trace = append(*r.trace, "after:"+r.name)
	return nil
}
func (r recorder) Prompt(b *strings.Builder, _ *ChatState, node string) {
	b.WriteString("[" + r.name + "@" + node + "]")
}

// The chain is a sandwich: before first to last, after last to first;
// prompts in order.
func TestMiddlewareSandwich(t *testing.T) {
	var trace []string
	c := newChain([]Middleware{recorder{"a", &trace}, recorder{"b", &trace}, recorder{"c", &trace}})
	mc := &ModelCall{System: "sys"}
	if err := c.beforeModel(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	if err := c.afterModel(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	if want := []string{"before:a", "before:b", "before:c", "after:c", "after:b", "after:a"}; !slices.Equal(trace, want) {
		t.Errorf("order %v, want %v", trace, want)
	}
	if mc.System != "sys+a+b+c" {
		t.Errorf("system %q: each before hook sees the one before it", mc.System)
	}
	var b strings.Builder
	c.prompt(&b, &ChatState{}, NodeWrite)
	if b.String() != "[a@write][b@write][c@write]" {
		t.Errorf("prompt %q", b.String())
	}
}

// starter is a TurnStarter that runs fail, if set, then sets Summary.
type starter struct {
	name string
	fail func()
}

func (m starter) Name() string { return m.name }
func (m starter) StartTurn(context.Context, *ChatState) (func(*ChatState), error) {
	if m.fail != nil {
		m.fail()
	}
	return func(s *ChatState) { s.Summary += m.name }, nil
}

// A TurnStarter that panics on its own goroutine fails like one that
// returns an error: logged, and the others' parts still apply.
func TestStartTurnPanicIsAFailure(t *testing.T) {
	c := newChain([]Middleware{
		starter{name: "a"},
		starter{name: "boom", fail: func() { panic("bad index") }},
		starter{name: "c"},
	})
	var failed []string
	sets := c.startTurn(t.Context(), &ChatState{}, func(name string, err error) {
		failed = append(failed, name+": "+strings.SplitN(err.Error(), "\n", 2)[0])
	})
	var s ChatState
	for _, set := range sets {
		if set != nil {
			set(&s)
		}
	}
	if s.Summary != "ac" || !slices.Equal(failed, []string{"boom: panic: bad index"}) {
		t.Errorf("applied %q, failed %q", s.Summary, failed)
	}
}

// The task tool is offered to agents shallower than MaxDepth.
func TestSubagentDepth(t *testing.T) {
	m, err := newSubagents(SubAgents{Agents: []SubAgent{{Name: "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"": 1, "r:c1": 1, "r:c1/r:c2": 0} {
		if got := len(m.Tools(&ChatState{Input: Input{Namespace: path}})); got != want {
			t.Errorf("agent %q: %d tools, want %d", path, got, want)
		}
	}
	if got := agentPath([]string{"execute_tool:x", "@r:c1", "execute_tool:y", "@q:c7"}); got != "r:c1/q:c7" {
		t.Errorf("agentPath = %q", got)
	}
}

// A load that panics on bounded's goroutine is an error, not the end of
// the process.
func TestBoundedPanicIsAnError(t *testing.T) {
	_, err := bounded(t.Context(), time.Second, func(context.Context) (string, error) { panic("bad load") })
	var p *graph.PanicError
	if !errors.As(err, &p) || p.Value != "bad load" {
		t.Errorf("err = %v, want a PanicError", err)
	}
}
