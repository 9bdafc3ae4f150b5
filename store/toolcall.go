package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// ToolCalls is the record behind "at most once, or a person decides":
// before a call of a tool that is neither read-only nor idempotent
// starts, the run records it started under its idempotency key; when it
// ends, its outcome. A run recovered after a crash that finds a call
// started and not ended does not start it again on its own: it asks
// (events.PendingUncertainCall).
//
// Why here and not in the agent's checkpoint: a checkpoint is written by
// the graph engine after a whole step, and under the async and exit
// durability modes not even then, while the mark must be committed
// before the call starts, in the middle of execute_tool. The store is
// already written synchronously by the run (its human requests), is
// shared by every process that may take the run over, and deletes a
// run's rows with its conversation. A row costs one insert before the
// call and one update after; read-only and idempotent tools write
// nothing.
type ToolCalls interface {
	// BeginToolCall records that the call c.Key of run c.RunID starts and
	// returns what an earlier attempt of the same call left: the zero
	// ToolCall when there was none. An earlier attempt's record is
	// returned as it is (started: the call may have run; ended: its
	// outcome), except that one asking, or one started when c.Again
	// names an uncertain call whose retry has not let it start yet, is
	// set started again (with Again recorded) and the zero ToolCall
	// returned: a retry lets the call start once, however often the run
	// is recovered. Returns ErrNotFound for an unknown run and
	// ErrInvalid for a missing key, run or tool.
	BeginToolCall(ctx context.Context, c NewToolCall) (ToolCall, error)

	// SetToolCall moves the call's record to state: asking (the call
	// waits for the user's answer and will be issued again with it;
	// nothing was done yet) or ended, with outcome (a JSON value, the
	// caller's). Returns ErrNotFound for an unknown key and ErrInvalid
	// for another state or an outcome that is not JSON.
	SetToolCall(ctx context.Context, key string, state ToolCallState, outcome json.RawMessage) error
}

// ToolCallState is where a recorded call is.
type ToolCallState string

// States of a recorded call.
const (
	// CallStarted: the call began and has not ended; it may have run.
	CallStarted ToolCallState = "started"
	// CallAsking: the call waits for the user's answer, and is issued
	// again with it.
	CallAsking ToolCallState = "asking"
	// CallEnded: the call ended; Outcome says how.
	CallEnded ToolCallState = "ended"
)

// ToolCall is the record of one call.
type ToolCall struct {
	Key     string
	RunID   string
	Tool    string
	State   ToolCallState
	Outcome json.RawMessage // with CallEnded
	// Again is the uncertain call whose retry last let the call start;
	// "" when none did.
	Again string
}

// NewToolCall is what BeginToolCall records.
type NewToolCall struct {
	Key, RunID, Tool string
	// Again is the id of the uncertain call a person answered with
	// CallRetry: a record of the call started is taken over, once.
	Again string
}

// Validate reports an ErrInvalid error for a call that cannot be
// recorded.
func (c NewToolCall) Validate() error {
	if c.Key == "" || c.RunID == "" || c.Tool == "" {
		return fmt.Errorf("%w: a tool call needs its key, run and tool", ErrInvalid)
	}
	return checkText("key", c.Key, "tool", c.Tool, "again", c.Again)
}
