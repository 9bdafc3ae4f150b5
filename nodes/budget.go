package nodes

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/events"
)

// tighter is b with every limit of o that is tighter (or b's unset):
// a request may lower the server's limits, never raise them.
func tighter(b, o events.Budget) events.Budget {
	pick := func(x, y int) int {
		if y > 0 && (x <= 0 || y < x) {
			return y
		}
		return x
	}
	out := events.Budget{Tokens: pick(b.Tokens, o.Tokens), ToolCalls: pick(b.ToolCalls, o.ToolCalls)}
	t := b.Limit()
	if ot := o.Limit(); ot > 0 && (t <= 0 || ot < t) {
		t = ot
	}
	out.Time, out.Seconds = t, t.Seconds()
	return out
}

// budget tracks one run's use, shared by every agent of the run's tree
// (it travels in the context, which sub-agents' runs inherit). A run
// paused for a human, or cut by a crash, goes on in a new segment with a
// new tracker: the tracker's figures are run totals, written to the state
// after each step (ChatState.BudgetSpent) and adopted back from it when a
// resumed segment's steps start (resume), so a resumption never spends
// the budget again.
type budget struct {
	mu      sync.Mutex
	start   time.Time // the run's working time is time.Since(start)
	limits  events.Budget
	adopted bool
	tokens  int
	calls   int
}

// BudgetSpent is a run's use of its budget so far, kept in the state
// (ChatState.BudgetSpent) so that a run resumed after an approval, a
// question or a crash goes on counting from it.
type BudgetSpent struct {
	// Tokens are the model tokens of the whole run, its sub-agents'
	// included. (The root's TurnUsage lacks a paused sub-agent's use so
	// far, which its own state holds; hence this count.)
	Tokens int `json:"tokens,omitempty"`
	// ToolCalls are the tool calls made, delegations included.
	ToolCalls int `json:"tool_calls,omitempty"`
	// WorkMS is the run's working time in milliseconds: from its start to
	// its last step, less the time it was paused waiting for a human (or
	// lying crashed) — the time between a pause and its resumption does
	// not count.
	WorkMS int64 `json:"work_ms,omitempty"`
}

// maxSpent merges two snapshots of the same run's growing totals: the
// larger of each.
func maxSpent(a, b BudgetSpent) BudgetSpent {
	return BudgetSpent{Tokens: max(a.Tokens, b.Tokens), ToolCalls: max(a.ToolCalls, b.ToolCalls), WorkMS: max(a.WorkMS, b.WorkMS)}
}

type budgetKey struct{}

// withBudget starts tracking a run under the agent's default limits.
func withBudget(ctx context.Context, limits events.Budget) context.Context {
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
func (b *budget) adopt(req *events.Budget) {
	if b == nil || req == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.adopted {
		b.limits, b.adopted = tighter(b.limits, *req), true
	}
}

func (b *budget) spend(u events.Usage) {
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

// resume adopts what the run had used before this segment, as the state
// s of the step about to run records it. Every figure is a run total, so
// the larger of the tracker's and the state's is the run's: adopting at
// every step is safe, and a step of a sub-agent resumed inside its
// parent's step raises the figures to what the sub-agent had seen. A
// checkpoint written before BudgetSpent existed still gives the turn's
// tokens (TurnUsage).
func (b *budget) resume(s *ChatState) {
	if b == nil {
		return
	}
	was := s.BudgetSpent
	tokens := max(was.Tokens, s.TurnUsage.TotalTokens, s.TurnUsage.InputTokens+s.TurnUsage.OutputTokens)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = max(b.tokens, tokens)
	b.calls = max(b.calls, was.ToolCalls)
	if work := time.Duration(was.WorkMS) * time.Millisecond; time.Since(b.start) < work {
		b.start = time.Now().Add(-work)
	}
}

// spent is the run's use so far, for the state; zero without a tracker
// or without limits (a resumed run's tracker, whose request set none),
// so that a run with no budget records nothing.
func (b *budget) spent() BudgetSpent {
	if b == nil {
		return BudgetSpent{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limits.Zero() {
		return BudgetSpent{}
	}
	return BudgetSpent{Tokens: b.tokens, ToolCalls: b.calls, WorkMS: time.Since(b.start).Milliseconds()}
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
	case l.Limit() > 0 && time.Since(b.start) >= l.Limit():
		return fmt.Sprintf("time (%s of %s taken)", time.Since(b.start).Round(time.Millisecond), l.Limit())
	case l.ToolCalls > 0 && b.calls >= l.ToolCalls:
		return fmt.Sprintf("tool_calls (%d of %d made)", b.calls, l.ToolCalls)
	}
	return ""
}

// usage reports the run's use; nil without limits.
func (b *budget) usage() *events.BudgetUsage {
	if b == nil {
		return nil
	}
	why := b.exceeded()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limits.Zero() {
		return nil
	}
	u := &events.BudgetUsage{Limits: b.limits, Tokens: b.tokens, ToolCalls: b.calls, Seconds: float64(time.Since(b.start).Milliseconds()) / 1000}
	u.Limits.Time, u.Limits.Seconds = 0, 0
	if t := b.limits.Limit(); t > 0 {
		u.Limits.Seconds = t.Seconds() // the server's limit (Time) too
	}
	if why != "" {
		for _, k := range []string{"tokens", "time", "tool_calls"} {
			if len(why) >= len(k) && why[:len(k)] == k {
				u.Exceeded = k
			}
		}
	}
	return u
}
