package nodes

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/llm"
)

// Budget limits one run: the model tokens it spends, the tool calls it
// makes and the time it takes, its sub-agents' included. A zero field is
// no limit. A run that reaches a limit makes no further model or tool
// call: it ends through handle_blocked with an honest answer of what was
// done and what was not (written from the brief's fallback, with no model
// call, when the tokens are what ran out). Limits are checked between
// steps: a model call or a tool under way finishes.
type Budget struct {
	// Tokens caps the model tokens (input and output) of the run.
	Tokens int `json:"tokens,omitempty"`
	// ToolCalls caps the tool calls of the run, delegations to
	// sub-agents included.
	ToolCalls int `json:"tool_calls,omitempty"`
	// Time caps the run's wall time.
	Time time.Duration `json:"-"`
	// TimeMS is Time in milliseconds, as a request gives it.
	TimeMS int64 `json:"time_ms,omitempty"`
}

// limit returns the budget's wall time.
func (b Budget) limit() time.Duration {
	if b.Time > 0 {
		return b.Time
	}
	return time.Duration(b.TimeMS) * time.Millisecond
}

// Zero reports whether the budget sets no limit.
func (b Budget) Zero() bool { return b.Tokens <= 0 && b.ToolCalls <= 0 && b.limit() <= 0 }

// tighter is b with every limit of o that is tighter (or b's unset):
// a request may lower the server's limits, never raise them.
func (b Budget) tighter(o Budget) Budget {
	pick := func(x, y int) int {
		if y > 0 && (x <= 0 || y < x) {
			return y
		}
		return x
	}
	out := Budget{Tokens: pick(b.Tokens, o.Tokens), ToolCalls: pick(b.ToolCalls, o.ToolCalls)}
	t := b.limit()
	if ot := o.limit(); ot > 0 && (t <= 0 || ot < t) {
		t = ot
	}
	out.Time, out.TimeMS = t, t.Milliseconds()
	return out
}

// BudgetUsage is a run's use of its budget, in response.done.
type BudgetUsage struct {
	// Limits are the run's limits (0: none).
	Limits Budget `json:"limits"`
	// Tokens, ToolCalls and TimeMS are what the run used.
	Tokens    int   `json:"tokens"`
	ToolCalls int   `json:"tool_calls"`
	TimeMS    int64 `json:"time_ms"`
	// Exceeded names the limit the run reached: tokens, tool_calls or
	// time; "" when none.
	Exceeded string `json:"exceeded,omitempty"`
}

// budget tracks one run's use, shared by every agent of the run's tree
// (it travels in the context, which sub-agents' runs inherit).
type budget struct {
	start time.Time

	mu      sync.Mutex
	limits  Budget
	adopted bool
	tokens  int
	calls   int
}

type budgetKey struct{}

// withBudget starts tracking a run under the agent's default limits.
func withBudget(ctx context.Context, limits Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, &budget{start: time.Now(), limits: limits})
}

// budgetFrom returns the run's tracker; nil (which tracks nothing) in a
// context without one.
func budgetFrom(ctx context.Context) *budget {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

// adopt tightens the limits with the request's, once per run (the
// request is read from the state, which a resumed run loads).
func (b *budget) adopt(req *Budget) {
	if b == nil || req == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.adopted {
		b.limits, b.adopted = b.limits.tighter(*req), true
	}
}

func (b *budget) spend(u llm.TokenUsage) {
	if b == nil {
		return
	}
	n := u.TotalTokens
	if n == 0 {
		n = u.InputTokens + u.OutputTokens
	}
	b.mu.Lock()
	b.tokens += n
	b.mu.Unlock()
}

// call counts one tool call about to run, or says why it may not.
func (b *budget) call() string {
	if b == nil {
		return ""
	}
	if why := b.exceeded(); why != "" {
		return why
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limits.ToolCalls > 0 && b.calls >= b.limits.ToolCalls {
		return fmt.Sprintf("tool_calls (%d of %d made)", b.calls, b.limits.ToolCalls)
	}
	b.calls++
	return ""
}

// exceeded says which limit the run has reached, with its figures; ""
// while none.
func (b *budget) exceeded() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch l := b.limits; {
	case l.Tokens > 0 && b.tokens >= l.Tokens:
		return fmt.Sprintf("tokens (%d of %d spent)", b.tokens, l.Tokens)
	case l.limit() > 0 && time.Since(b.start) >= l.limit():
		return fmt.Sprintf("time (%s of %s taken)", time.Since(b.start).Round(time.Millisecond), l.limit())
	case l.ToolCalls > 0 && b.calls >= l.ToolCalls:
		return fmt.Sprintf("tool_calls (%d of %d made)", b.calls, l.ToolCalls)
	}
	return ""
}

// usage reports the run's use; nil without limits.
func (b *budget) usage() *BudgetUsage {
	if b == nil {
		return nil
	}
	why := b.exceeded()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limits.Zero() {
		return nil
	}
	u := &BudgetUsage{Limits: b.limits, Tokens: b.tokens, ToolCalls: b.calls, TimeMS: time.Since(b.start).Milliseconds()}
	u.Limits.Time = 0
	if why != "" {
		for _, k := range []string{"tokens", "time", "tool_calls"} {
			if len(why) >= len(k) && why[:len(k)] == k {
				u.Exceeded = k
			}
		}
	}
	return u
}
