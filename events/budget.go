package events

import (
	"math"
	"time"
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
	Tokens int `json:"max_tokens,omitempty"`
	// ToolCalls caps the tool calls of the run, delegations to
	// sub-agents included.
	ToolCalls int `json:"max_tool_calls,omitempty"`
	// Time caps the run's working time: wall time, less the time the
	// run was paused waiting for a person (see BudgetSpent.WorkMS).
	Time time.Duration `json:"-"`
	// Seconds is Time in seconds (a number, fractions allowed), as a
	// request gives it.
	Seconds float64 `json:"max_seconds,omitempty"`
}

// Limit returns the budget's wall time: Time, else Seconds.
func (b Budget) Limit() time.Duration {
	if b.Time > 0 {
		return b.Time
	}
	if b.Seconds >= float64(math.MaxInt64)/float64(time.Second) {
		return math.MaxInt64 // no overflow: as good as no limit
	}
	return time.Duration(b.Seconds * float64(time.Second))
}

// Zero reports whether the budget sets no limit.
func (b Budget) Zero() bool { return b.Tokens <= 0 && b.ToolCalls <= 0 && b.Limit() <= 0 }

// BudgetUsage is a run's use of its budget, in response.done.
type BudgetUsage struct {
	// Limits are the run's limits (0: none).
	Limits Budget `json:"limits"`
	// Tokens, ToolCalls and Seconds are what the run used, across its
	// pauses and resumptions, against Limits' max_tokens, max_tool_calls
	// and max_seconds.
	Tokens    int     `json:"tokens"`
	ToolCalls int     `json:"tool_calls"`
	Seconds   float64 `json:"seconds"`
	// Exceeded names the limit the run reached: tokens, tool_calls or
	// time; "" when none.
	Exceeded string `json:"exceeded,omitempty"`
}
