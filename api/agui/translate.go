package agui

import (
	"encoding/json"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/runs"
)

// translator turns one run's events into AG-UI events, and keeps what
// the run added to the thread for MESSAGES_SNAPSHOT.
type translator struct {
	in    input
	emit  func(v any) error
	runID string // Trellis' run
	conv  string

	text     string // the open text message's id
	textBody []byte
	// thought is the open reasoning message's id, of the node thinker;
	// thoughtBody its text so far.
	thought     string
	thinker     string
	thoughtBody []byte
	calls       *assistantMessage // the assistant message holding this run's tool calls
	announced   map[string]bool   // tool calls whose TOOL_CALL_START went out
	approvals   []events.ApprovalRequired
	// lookup finds a human request (an approval, a tool's question)
	// announced before this stream began: a resumed run asks again only
	// what it had not asked.
	lookup    func(kind runs.HumanKind, id string) (runs.HumanRequest, bool)
	questions map[string]events.ElicitationRequest
	uncertain map[string]events.ToolUncertain
	added     []any // messages the run added, in order
}

func newTranslator(in input, conv, runID string, emit func(any) error) *translator {
	announced := map[string]bool{}
	for id := range in.calls {
		announced[id] = true
	}
	return &translator{in: in, emit: emit, runID: runID, conv: conv, announced: announced,
		questions: map[string]events.ElicitationRequest{}, uncertain: map[string]events.ToolUncertain{}}
}

// event translates one run event; done reports that the terminal AG-UI
// event went out.
func (t *translator) event(e *runs.Event) (done bool, err error) {
	id := e.Key()
	p, err := e.Typed()
	if err != nil {
		return false, err
	}
	switch d := p.(type) {
	case *events.ApprovalRequired:
		t.approvals = append(t.approvals, *d)
		return false, t.announce(id, d.ToolCallID, d.Tool, d.Args)
	case *events.ToolStart:
		return false, t.announce(id, d.ToolCallID, d.Tool, d.Args)
	case *events.ToolComplete:
		return false, t.result(d.ToolCallID, d.Result)
	case *events.ToolError:
		return false, t.result(d.ToolCallID, "error: "+d.Error)
	case *events.ElicitationRequest:
		t.questions[d.ElicitationID] = *d
	case *events.ToolUncertain:
		t.uncertain[d.UncertainCallID] = *d
		return false, t.announce(id, d.ToolCallID, d.Tool, d.Args)
	case *events.ReasoningChunk:
		return false, t.reason(id, d.Node, d.Content)
	case *events.NodeEnd:
		if d.Node == t.thinker {
			return false, t.closeThought()
		}
	case *events.ResponseChunk:
		return false, t.chunk(id, d.Content)
	case *events.ResponseDone:
		if t.text == "" && d.Content != "" { // not streamed
			if err := t.chunk(id, d.Content); err != nil {
				return false, err
			}
		}
		return false, t.closeText()
	case *events.DirectResponse:
		if err := t.chunk(id, d.Content); err != nil {
			return false, err
		}
		return false, t.closeText()
	case *events.RunCompleted:
		return true, t.finish("completed", outcome{Type: "success"}, usage(d))
	case *events.RunInterrupted:
		return true, t.interrupted(id, d)
	case *events.RunCancelled:
		return true, t.finish("cancelled", outcome{Type: "cancelled"}, nil)
	case *events.RunFailed:
		if err := t.closeThought(); err != nil {
			return false, err
		}
		if err := t.closeText(); err != nil {
			return false, err
		}
		return true, t.emit(runError{Type: "RUN_ERROR", Message: d.Error.Message, Code: d.Error.Code})
	}
	return false, nil
}

// approval finds the approval id, announced in this stream or before.
func (t *translator) approval(id string) (events.ApprovalRequired, bool) {
	for _, a := range t.approvals {
		if a.ApprovalID == id {
			return a, true
		}
	}
	if t.lookup != nil {
		if a, ok := t.lookup(runs.KindApproval, id); ok {
			return events.ApprovalRequired{ApprovalID: a.ID, ToolCallID: a.Approval.ToolCallID, Tool: a.Approval.Tool, Args: a.Approval.Args}, true
		}
	}
	return events.ApprovalRequired{}, false
}

// announce sends a tool call's start, arguments and end, once.
func (t *translator) announce(id, callID, tool string, args json.RawMessage) error {
	if t.announced[callID] {
		return nil
	}
	t.announced[callID] = true
	if err := t.closeThought(); err != nil {
		return err
	}
	if err := t.closeText(); err != nil {
		return err
	}
	if t.calls == nil {
		t.calls = &assistantMessage{ID: id, Role: "assistant"}
		t.added = append(t.added, t.calls)
	}
	a := string(args)
	if len(args) == 0 {
		a = "{}"
	}
	tc := toolCall{ID: callID, Type: "function"}
	tc.Function.Name, tc.Function.Arguments = tool, a
	t.calls.ToolCalls = append(t.calls.ToolCalls, tc)
	if err := t.emit(toolCallStart{Type: "TOOL_CALL_START", ToolCallID: callID, ToolCallName: tool, ParentMessageID: t.calls.ID}); err != nil {
		return err
	}
	if err := t.emit(toolCallArgs{Type: "TOOL_CALL_ARGS", ToolCallID: callID, Delta: a}); err != nil {
		return err
	}
	return t.emit(toolCallEnd{Type: "TOOL_CALL_END", ToolCallID: callID})
}

// result sends a tool call's result as a tool message.
func (t *translator) result(callID, content string) error {
	if err := t.closeThought(); err != nil {
		return err
	}
	if err := t.closeText(); err != nil {
		return err
	}
	m := toolMessage{ID: callID + "-result", Role: "tool", Content: content, ToolCallID: callID}
	t.added = append(t.added, m)
	t.calls = nil // later calls go in a new assistant message, after this result
	return t.emit(toolCallResult{Type: "TOOL_CALL_RESULT", MessageID: m.ID, ToolCallID: callID, Content: content, Role: "tool"})
}

// chunk sends text, opening a text message first if none is open; an
// empty delta is not sent (AG-UI refuses it).
func (t *translator) chunk(id, s string) error {
	if s == "" {
		return nil
	}
	if err := t.closeThought(); err != nil {
		return err
	}
	if t.text == "" {
		t.text, t.textBody = id, t.textBody[:0]
		if err := t.emit(textMessageStart{Type: "TEXT_MESSAGE_START", MessageID: id, Role: "assistant"}); err != nil {
			return err
		}
	}
	t.textBody = append(t.textBody, s...)
	return t.emit(textMessageContent{Type: "TEXT_MESSAGE_CONTENT", MessageID: t.text, Delta: s})
}

// reason sends a piece of node's reasoning, in the node's reasoning
// message: opened (REASONING_START, REASONING_MESSAGE_START) on its first
// piece, closed when the node ends or other output comes.
func (t *translator) reason(id, node, s string) error {
	if s == "" {
		return nil
	}
	if t.thought != "" && t.thinker != node {
		if err := t.closeThought(); err != nil {
			return err
		}
	}
	if t.thought == "" {
		if err := t.closeText(); err != nil {
			return err
		}
		t.thought, t.thinker, t.thoughtBody = id, node, t.thoughtBody[:0]
		if err := t.emit(reasoningEvent{Type: "REASONING_START", MessageID: id}); err != nil {
			return err
		}
		if err := t.emit(reasoningMessageStart{Type: "REASONING_MESSAGE_START", MessageID: id, Role: "reasoning"}); err != nil {
			return err
		}
	}
	t.thoughtBody = append(t.thoughtBody, s...)
	// REASONING_MESSAGE_CONTENT has TEXT_MESSAGE_CONTENT's shape.
	return t.emit(textMessageContent{Type: "REASONING_MESSAGE_CONTENT", MessageID: t.thought, Delta: s})
}

// closeThought ends the open reasoning message, if any.
func (t *translator) closeThought() error {
	if t.thought == "" {
		return nil
	}
	id := t.thought
	t.thought, t.thinker = "", ""
	t.added = append(t.added, reasoningMessage{ID: id, Role: "reasoning", Content: string(t.thoughtBody)})
	if err := t.emit(reasoningEvent{Type: "REASONING_MESSAGE_END", MessageID: id}); err != nil {
		return err
	}
	return t.emit(reasoningEvent{Type: "REASONING_END", MessageID: id})
}

func (t *translator) closeText() error {
	if t.text == "" {
		return nil
	}
	id := t.text
	t.text = ""
	t.added = append(t.added, assistantMessage{ID: id, Role: "assistant", Content: string(t.textBody)})
	t.calls = nil
	return t.emit(textMessageEnd{Type: "TEXT_MESSAGE_END", MessageID: id})
}

// interrupted ends a run parked on a human: approvals, tool questions
// and calls that may have run as interrupts; a clarifying question as the assistant's
// text, which the user's next message answers; a server going down as
// an error.
func (t *translator) interrupted(id string, d *events.RunInterrupted) error {
	switch d.Reason {
	case string(events.PendingApproval), string(events.PendingElicitation), string(events.PendingUncertainCall):
	case string(events.PendingClarification):
		if err := t.chunk(id, d.Question); err != nil {
			return err
		}
		return t.finish("completed", outcome{Type: "success"}, nil)
	default:
		if err := t.closeThought(); err != nil {
			return err
		}
		if err := t.closeText(); err != nil {
			return err
		}
		return t.emit(runError{Type: "RUN_ERROR", Message: "the server stopped the run on its way down; send the message again", Code: d.Reason})
	}
	// One interrupt per request the run waits on, of every kind: an
	// approval and a call that may have run can wait side by side.
	var out []interrupt
	for _, aid := range d.ApprovalIDs {
		a, ok := t.approval(aid)
		if !ok {
			continue
		}
		out = append(out, interrupt{ID: aid, Reason: "tool_call", ToolCallID: a.ToolCallID,
			Message: "Approve the call of " + a.Tool + "?", ResponseSchema: approvalSchema})
	}
	for _, eid := range d.ElicitationIDs {
		q, ok := t.questions[eid]
		if !ok && t.lookup != nil {
			if e, found := t.lookup(runs.KindElicitation, eid); found {
				q = events.ElicitationRequest{ElicitationID: eid, Message: e.Elicitation.Message, Schema: e.Elicitation.Schema}
			}
		}
		schema := q.Schema
		if len(schema) == 0 || schema[0] != '{' {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, interrupt{ID: eid, Reason: "input_required", Message: q.Message, ResponseSchema: schema})
	}
	for _, uid := range d.UncertainCallIDs {
		u, ok := t.uncertain[uid]
		if !ok && t.lookup != nil {
			if h, found := t.lookup(runs.KindUncertainCall, uid); found {
				u = events.ToolUncertain{UncertainCallID: uid, ToolCallID: h.UncertainCall.ToolCallID, Tool: h.UncertainCall.Tool}
			}
		}
		out = append(out, interrupt{ID: uid, Reason: "uncertain_call", ToolCallID: u.ToolCallID,
			Message:        "The call of " + u.Tool + " was running when the service stopped and may have run: run it again, skip it, or treat it as failed?",
			ResponseSchema: uncertainSchema})
	}
	if len(out) == 0 {
		return t.emit(runError{Type: "RUN_ERROR", Message: "the run waits for something this protocol cannot name", Code: "interrupted"})
	}
	return t.finish("interrupted", outcome{Type: "interrupt", Interrupts: out}, nil)
}

// finish sends the snapshots and RUN_FINISHED.
func (t *translator) finish(status string, o outcome, u []tokenUsage) error {
	if err := t.closeThought(); err != nil {
		return err
	}
	if err := t.closeText(); err != nil {
		return err
	}
	msgs := append([]json.RawMessage(nil), t.in.Messages...)
	for _, m := range t.added {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		msgs = append(msgs, b)
	}
	if err := t.emit(messagesSnapshot{Type: "MESSAGES_SNAPSHOT", Messages: msgs}); err != nil {
		return err
	}
	if err := t.emit(stateSnapshot{Type: "STATE_SNAPSHOT", Snapshot: state{ConversationID: t.conv, RunID: t.runID, Status: status}}); err != nil {
		return err
	}
	return t.emit(runFinished{Type: "RUN_FINISHED", ThreadID: t.in.ThreadID, RunID: t.in.RunID, Outcome: o, Usage: u})
}

func usage(d *events.RunCompleted) []tokenUsage {
	u := d.Usage
	if u.TotalTokens == 0 && u.InputTokens == 0 && u.OutputTokens == 0 {
		return nil
	}
	return []tokenUsage{{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens, ReasoningTokens: u.ThinkingTokens}}
}
