package agui

import (
	"encoding/json"
	"slices"
	"strings"

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
	// steps are the open steps (the nodes running), by the path of the
	// sub-agent whose nodes they are ("" for the agent's own).
	steps map[string][]string
	// subagents are the sub-agents this stream opened and has not
	// finished, in the order they opened; ended those it finished (an
	// id is not opened twice in one run).
	subagents []string
	ended     map[string]bool
}

func newTranslator(in input, conv, runID string, emit func(any) error) *translator {
	announced := map[string]bool{}
	for id := range in.calls {
		announced[id] = true
	}
	return &translator{in: in, emit: emit, runID: runID, conv: conv, announced: announced,
		questions: map[string]events.ElicitationRequest{}, uncertain: map[string]events.ToolUncertain{},
		steps: map[string][]string{}, ended: map[string]bool{}}
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
	case *events.SubagentStart:
		return false, t.openSubagent(d.Namespace, d.Subagent, d.Task)
	case *events.SubagentEnd:
		return false, t.endSubagent(d)
	case *events.TasksUpdated:
		// One board for the conversation, whoever changed it: the
		// agent's activity, whatever sub-agent's event it came in.
		return false, t.emit(activitySnapshot{Type: "ACTIVITY_SNAPSHOT", MessageID: t.conv + "-tasks", ActivityType: "tasks",
			Content: map[string]any{"tasks": d.Tasks, "revision": d.Revision}, Replace: true})
	case *events.FileChanged:
		// One activity per file, replaced by its latest change, whoever
		// made it.
		return false, t.emit(activitySnapshot{Type: "ACTIVITY_SNAPSHOT", ActivityType: "file",
			MessageID: t.conv + "-file-" + d.Scope + "/" + d.ScopeID + "/" + d.Path, Content: d, Replace: true})
	}
	if ns := e.Namespace(); ns != "" {
		return false, t.inner(id, ns, p)
	}
	switch d := p.(type) {
	case *events.NodeStart:
		return false, t.startStep("", d.Node)
	case *events.NodeEnd:
		if d.Node == t.thinker {
			if err := t.closeThought(); err != nil {
				return false, err
			}
		}
		return false, t.endStep("", d.Node)
	case *events.ApprovalRequired:
		t.approvals = append(t.approvals, *d)
		return false, t.announce(id, "", d.ToolCallID, d.Tool, d.Args)
	case *events.ToolStart:
		return false, t.announce(id, "", d.ToolCallID, d.Tool, d.Args)
	case *events.ToolProgress:
		return false, t.progress("", d)
	case *events.ToolComplete:
		return false, t.result("", d.ToolCallID, d.Result)
	case *events.ToolError:
		return false, t.result("", d.ToolCallID, "error: "+d.Error)
	case *events.ElicitationRequest:
		t.questions[d.ElicitationID] = *d
	case *events.ToolUncertain:
		t.uncertain[d.UncertainCallID] = *d
		return false, t.announce(id, "", d.ToolCallID, d.Tool, d.Args)
	case *events.ReasoningChunk:
		return false, t.reason(id, d.Node, d.Content)
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
		return true, t.fail(d.Error.Message, d.Error.Code)
	}
	return false, nil
}

// inner translates an event of the sub-agent at path ns: its nodes as
// steps and its tool calls, each attributed to it; the human requests
// it raises are the run's, as the agent's own are. Its reasoning and
// text are not sent: its answer is the task tool's result.
func (t *translator) inner(id, ns string, p events.Payload) error {
	if err := t.openSubagent(ns, "", ""); err != nil {
		return err
	}
	switch d := p.(type) {
	case *events.NodeStart:
		return t.startStep(ns, d.Node)
	case *events.NodeEnd:
		return t.endStep(ns, d.Node)
	case *events.ApprovalRequired:
		t.approvals = append(t.approvals, *d)
		return t.announce(id, ns, d.ToolCallID, d.Tool, d.Args)
	case *events.ToolStart:
		return t.announce(id, ns, d.ToolCallID, d.Tool, d.Args)
	case *events.ToolProgress:
		return t.progress(ns, d)
	case *events.ToolComplete:
		return t.result(ns, d.ToolCallID, d.Result)
	case *events.ToolError:
		return t.result(ns, d.ToolCallID, "error: "+d.Error)
	case *events.ElicitationRequest:
		t.questions[d.ElicitationID] = *d
	case *events.ToolUncertain:
		t.uncertain[d.UncertainCallID] = *d
		return t.announce(id, ns, d.ToolCallID, d.Tool, d.Args)
	}
	return nil
}

// startStep opens the step of a node, unless a step of that name is
// open already where the node runs (AG-UI names a step once at a time).
func (t *translator) startStep(ns, node string) error {
	if slices.Contains(t.steps[ns], node) {
		return nil
	}
	t.steps[ns] = append(t.steps[ns], node)
	return t.emit(step{Type: "STEP_STARTED", StepName: node, SubagentRunID: ns})
}

// endStep finishes the node's open step, if it has one.
func (t *translator) endStep(ns, node string) error {
	i := slices.Index(t.steps[ns], node)
	if i < 0 {
		return nil
	}
	t.steps[ns] = slices.Delete(t.steps[ns], i, i+1)
	return t.emit(step{Type: "STEP_FINISHED", StepName: node, SubagentRunID: ns})
}

// endSteps finishes every step open where ns runs: a run or a
// sub-agent that stops stops its nodes.
func (t *translator) endSteps(ns string) error {
	for len(t.steps[ns]) > 0 {
		if err := t.endStep(ns, t.steps[ns][len(t.steps[ns])-1]); err != nil {
			return err
		}
	}
	return nil
}

// openSubagent sends SUBAGENT_STARTED for the sub-agent at path, once in
// a stream, its parent first: a resumed run's stream opens the
// sub-agents it continues as their first events come. Name and task are
// subagent.start's; without them the name is the path's.
func (t *translator) openSubagent(path, name, task string) error {
	if slices.Contains(t.subagents, path) || t.ended[path] {
		return nil
	}
	parent, own := "", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		parent, own = path[:i], path[i+1:]
		if err := t.openSubagent(parent, "", ""); err != nil {
			return err
		}
	}
	callName, callID, _ := strings.Cut(own, ":")
	if name == "" {
		name = callName
	}
	t.subagents = append(t.subagents, path)
	return t.emit(subagentStarted{Type: "SUBAGENT_STARTED", SubagentRunID: path, Name: name, Description: task,
		ParentSubagentRunID: parent, ParentToolCallID: callID})
}

// endSubagent finishes the sub-agent subagent.end reports: its steps,
// then SUBAGENT_FINISHED with its answer, or SUBAGENT_ERROR when it
// failed or was cancelled.
func (t *translator) endSubagent(d *events.SubagentEnd) error {
	if err := t.openSubagent(d.Namespace, d.Subagent, ""); err != nil {
		return err
	}
	if t.ended[d.Namespace] {
		return nil
	}
	if err := t.endSteps(d.Namespace); err != nil {
		return err
	}
	t.subagents = slices.DeleteFunc(t.subagents, func(p string) bool { return p == d.Namespace })
	t.ended[d.Namespace] = true
	switch d.Status {
	case events.SubagentCompleted, events.SubagentBlocked:
		return t.emit(subagentFinished{Type: "SUBAGENT_FINISHED", SubagentRunID: d.Namespace, Result: d.Result,
			Outcome: subagentOutcome{Type: "success"}})
	}
	msg := d.Result
	if msg == "" {
		msg = "the sub-agent " + string(d.Status)
	}
	return t.emit(subagentError{Type: "SUBAGENT_ERROR", SubagentRunID: d.Namespace, Message: msg, Code: string(d.Status)})
}

// stop ends what is open when the run's stream ends: the reasoning and
// text, each open sub-agent's steps and the sub-agent (suspended when
// the run waits for a person, an error otherwise, code the run's
// status), innermost first, then the agent's own steps.
func (t *translator) stop(status string) error {
	if err := t.closeThought(); err != nil {
		return err
	}
	if err := t.closeText(); err != nil {
		return err
	}
	for len(t.subagents) > 0 {
		path := t.subagents[len(t.subagents)-1]
		t.subagents = t.subagents[:len(t.subagents)-1]
		t.ended[path] = true
		if err := t.endSteps(path); err != nil {
			return err
		}
		var err error
		if status == "interrupted" {
			err = t.emit(subagentFinished{Type: "SUBAGENT_FINISHED", SubagentRunID: path, Outcome: subagentOutcome{Type: "suspended"}})
		} else {
			err = t.emit(subagentError{Type: "SUBAGENT_ERROR", SubagentRunID: path, Message: "the run " + status, Code: status})
		}
		if err != nil {
			return err
		}
	}
	return t.endSteps("")
}

// fail ends the stream with RUN_ERROR, after what is open.
func (t *translator) fail(message, code string) error {
	if err := t.stop("failed"); err != nil {
		return err
	}
	return t.emit(runError{Type: "RUN_ERROR", Message: message, Code: code})
}

// progress sends a tool's progress as its tool_progress activity.
func (t *translator) progress(ns string, d *events.ToolProgress) error {
	return t.emit(activitySnapshot{Type: "ACTIVITY_SNAPSHOT", MessageID: d.ToolCallID + "-progress", ActivityType: "tool_progress",
		Content: progress{ToolCallID: d.ToolCallID, Progress: d.Progress, Total: d.Total, Message: d.Message}, Replace: true, SubagentRunID: ns})
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

// announce sends a tool call's start, arguments and end, once. The
// agent's calls share an assistant message until a result or text comes;
// a sub-agent's (ns its path) each have one of its own, named by the
// call, so that no message is shared between two agents.
func (t *translator) announce(id, ns, callID, tool string, args json.RawMessage) error {
	if t.announced[callID] {
		return nil
	}
	t.announced[callID] = true
	a := string(args)
	if len(args) == 0 {
		a = "{}"
	}
	tc := toolCall{ID: callID, Type: "function", Function: functionCall{Name: tool, Arguments: a}}
	start := toolCallStart{Type: "TOOL_CALL_START", ToolCallID: callID, ToolCallName: tool, SubagentRunID: ns}
	if ns != "" {
		t.added = append(t.added, &assistantMessage{ID: callID, Role: "assistant", ToolCalls: []toolCall{tc}, SubagentRunID: ns})
	} else {
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
		t.calls.ToolCalls = append(t.calls.ToolCalls, tc)
		start.ParentMessageID = t.calls.ID
	}
	if err := t.emit(start); err != nil {
		return err
	}
	if err := t.emit(toolCallArgs{Type: "TOOL_CALL_ARGS", ToolCallID: callID, Delta: a, SubagentRunID: ns}); err != nil {
		return err
	}
	return t.emit(toolCallEnd{Type: "TOOL_CALL_END", ToolCallID: callID, SubagentRunID: ns})
}

// result sends a tool call's result as a tool message.
func (t *translator) result(ns, callID, content string) error {
	if ns == "" {
		if err := t.closeThought(); err != nil {
			return err
		}
		if err := t.closeText(); err != nil {
			return err
		}
		t.calls = nil // later calls go in a new assistant message, after this result
	}
	m := toolMessage{ID: callID + "-result", Role: "tool", Content: content, ToolCallID: callID, SubagentRunID: ns}
	t.added = append(t.added, m)
	return t.emit(toolCallResult{Type: "TOOL_CALL_RESULT", MessageID: m.ID, ToolCallID: callID, Content: content, Role: "tool", SubagentRunID: ns})
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
		return t.fail("the server stopped the run on its way down; send the message again", d.Reason)
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
		return t.fail("the run waits for something this protocol cannot name", "interrupted")
	}
	return t.finish("interrupted", outcome{Type: "interrupt", Interrupts: out}, nil)
}

// finish ends what is open, then sends the snapshots and RUN_FINISHED.
func (t *translator) finish(status string, o outcome, u []tokenUsage) error {
	if err := t.stop(status); err != nil {
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
