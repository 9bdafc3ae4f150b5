package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"strconv"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/operators"
)

// At most once, or a person decides. A call of a tool that is neither
// read-only nor idempotent is recorded in the CallLog before it starts,
// under its idempotency key, and again when it ends, with its outcome.
// execute_tool run again for the same calls — after a crash, or after a
// question parked it — asks the log first: a call that ended is not run
// again (its recorded outcome is the result); a call that started and
// never ended may have run, so the execution parks on it as on a
// question, with a human request of kind uncertain_call
// (events.PendingUncertainCall, announced by tool.uncertain), and
// AnswerUncertainCall resumes it: retry runs it again with the same key,
// skip and fail tell the model it was skipped or failed. Read-only and
// idempotent tools are run again, with the same key, and write nothing.

// CallLog is the durable record of the calls that must not run twice on
// their own. The run service implements it over its store; nil (the
// zero Options) records nothing, and a call that was running when its
// process died runs again.
type CallLog interface {
	// Begin records that the call key of tool starts and returns what
	// an earlier attempt of it left (see CallRecord). again is the id
	// of the uncertain call a person answered "retry": a call started
	// before is taken over, once per such answer.
	Begin(ctx context.Context, key, tool, again string) (CallRecord, error)
	// Asking records that the call waits for the user's answer to a
	// question it will be issued again with: it has done nothing yet.
	Asking(ctx context.Context, key string) error
	// End records how the call ended: outcome is the agent's encoding.
	End(ctx context.Context, key string, outcome json.RawMessage) error
}

// CallRecord is what an earlier attempt of a call left: nothing (the
// zero value: the call starts now), a start without an end (Started: it
// may have run), or its Outcome. Again is the uncertain call whose retry
// last let it start.
type CallRecord struct {
	Started bool
	Outcome json.RawMessage
	Again   string
}

// callKey is the idempotency key of the call toolCallID of the
// execution's turn, derived as elicitation ids are; the agent's
// namespace and the supervisor's iteration keep apart the calls of a
// sub-agent and those of a model that numbers its calls afresh.
func (x *execution) callKey(toolCallID string) string {
	return derivedID("call_", x.conversationID, x.requestID, x.namespace, strconv.Itoa(x.iteration), toolCallID)
}

// callContext is the context of a call of a catalog tool: its node's,
// answering operators.IdempotencyKey with the call's key. The key is
// derived when something reads it (an MCP call does, few local tools
// do), not for every call; a recorded call's is made before the call
// starts, and kept. It is a part of the call's messenger, so that it
// costs no allocation of its own.
type callContext struct {
	context.Context
	x          *execution
	toolCallID string
	key        string // made before the call: a recorded call's
}

// Value answers the call's idempotency key; anything else, the node's
// context does.
func (c *callContext) Value(k any) any {
	if _, ok := k.(operators.IdempotencyKeyContextKey); !ok {
		return c.Context.Value(k)
	}
	if c.key != "" {
		return c.key
	}
	return c.x.callKey(c.toolCallID)
}

// uncertainID names the human request about the call key left started:
// the key for the first, and one of its own for each time the call was
// let run again and left started anew.
func uncertainID(key, again string) string {
	if again == "" {
		return key
	}
	return derivedID("call_", key, again)
}

// recorded reports whether calls of tool go through the CallLog: every
// tool not known to be read-only or idempotent, when there is a log.
func (x *execution) recorded(tool string) bool {
	return x.a.opts.Calls != nil && !x.repeatable[tool]
}

// begin records step i's call as started and reports whether it may run
// now. When it may not, the step's result or parked question is set: the
// outcome an earlier attempt recorded, the question to a person about an
// attempt that may have run, or a failure to record.
func (x *execution) begin(ctx context.Context, i int, key string, args json.RawMessage) bool {
	st := x.steps[i]
	again := ""
	if d, ok := x.decided[key]; ok && d.Decision == events.CallRetry {
		again = d.ID
	}
	prior, err := x.a.opts.Calls.Begin(ctx, key, st.Tool, again)
	switch {
	case err != nil:
		x.a.log.LogAttrs(ctx, slog.LevelError, "recording a tool call's start failed; the call is not run", slog.String("tool", st.Tool),
			slog.String("tool_call_id", st.ToolCallID), slog.Any("error", err))
		x.results[i] = x.skip(ctx, i, "its start could not be recorded, and a tool that must not run twice runs only once its start is")
		return false
	case prior.Outcome != nil:
		var kept keptCall
		if err := json.Unmarshal(prior.Outcome, &kept); err != nil || kept.Result.Status == "" {
			x.results[i] = x.skip(ctx, i, "it ran before, and its recorded outcome cannot be read")
			return false
		}
		// Ran before the run was cut short: its outcome is the result.
		_ = emit(ctx, &events.ToolStart{ToolCallID: st.ToolCallID, Tool: st.Tool, Source: x.sources[st.Tool], Args: args})
		if kept.Result.Status == ToolSuccess {
			_ = emit(ctx, &events.ToolComplete{ToolCallID: st.ToolCallID, Tool: st.Tool, Result: kept.Result.Content, DurationMS: kept.Result.DurationMS})
		} else {
			_ = emit(ctx, &events.ToolError{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: kept.Result.Content})
		}
		x.results[i], x.chunks[i], x.direct[i] = kept.Result, kept.Chunks, kept.Direct
		return false
	case prior.Started:
		x.parked[i] = &events.Pending{Kind: events.PendingUncertainCall, UncertainCallID: uncertainID(key, prior.Again),
			ToolCallID: st.ToolCallID, Tool: st.Tool, Args: args, Namespace: x.namespace}
		return false
	}
	return true
}

// end records step i's outcome, once its call ended.
func (x *execution) end(ctx context.Context, i int, key string) {
	outcome, err := json.Marshal(keptCall{Result: x.results[i], Chunks: x.chunks[i], Direct: x.direct[i]})
	if err == nil {
		err = x.a.opts.Calls.End(context.WithoutCancel(ctx), key, outcome)
	}
	if err != nil {
		// The record keeps the call started: after a crash a person is
		// asked about a call that did end. Without one, the step's
		// checkpoint keeps its result.
		x.a.log.LogAttrs(ctx, slog.LevelError, "recording a tool call's end failed", slog.String("tool", x.steps[i].Tool),
			slog.String("tool_call_id", x.steps[i].ToolCallID), slog.Any("error", err))
	}
}

// decidedCall is a person's answer to an uncertain call, by its id.
type decidedCall struct {
	ID       string
	Decision events.CallDecision
	TimedOut bool
}

// undo returns what the model reads for step i, a call a person decided
// not to run again, and reports whether there is one.
func (x *execution) undo(ctx context.Context, i int) (ToolResult, bool) {
	if len(x.decided) == 0 { // no call to derive a key for
		return ToolResult{}, false
	}
	st := x.steps[i]
	d, ok := x.decided[x.callKey(st.ToolCallID)]
	if !ok || d.Decision == events.CallRetry {
		return ToolResult{}, false
	}
	chose := "the user chose to"
	if d.TimedOut {
		chose = "nobody decided in time, so as the operator set it was decided to"
	}
	if d.Decision == events.CallSkip {
		return x.skip(ctx, i, "it was running when the service stopped, so it may or may not have taken effect, "+
			"and "+chose+" skip it rather than run it again"), true
	}
	text := "Failed: the call was running when the service stopped, so it may or may not have taken effect, " +
		"and " + chose + " treat it as failed."
	_ = emit(ctx, &events.ToolError{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: text})
	return ToolResult{ToolCallID: st.ToolCallID, Tool: st.Tool, Args: st.Args, Status: ToolError, Content: text, Iteration: x.iteration}, true
}

// AnswerUncertainCall answers a person's decision on a call a recovered
// run found started and not ended, and continues the run; it yields the
// run's events with the contract of Run. Errors: ErrInvalidInput for an
// unknown decision, ErrNoPendingElicitation when no such call waits.
func (a *Agent) AnswerUncertainCall(ctx context.Context, conversationID, id string, d events.CallDecision, timedOut bool) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		switch d {
		case events.CallRetry, events.CallSkip, events.CallFail:
		default:
			fail(yield, fmt.Errorf("nodes: answer uncertain call: %w: decision %q is not retry, skip or fail", ErrInvalidInput, d))
			return
		}
		ins, err := a.interrupts(ctx, conversationID)
		if err != nil {
			failOrCancel(ctx, yield, err)
			return
		}
		if in, q, ok := parkedOn(ins, events.PendingUncertainCall, id); ok {
			a.runGraph(ctx, yield, nil, graph.RunConfig{ThreadID: conversationID,
				ResumeByID: map[string]any{in.ID: questionAnswered{Decision: d, TimedOut: timedOut, Question: q}}})
			return
		}
		fail(yield, fmt.Errorf("nodes: answer uncertain call in conversation %s: %w (id %q)", conversationID, ErrNoPendingElicitation, id))
	}
}
