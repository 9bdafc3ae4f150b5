package aisdk

import (
	"encoding/json"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/runs"
)

// UI message chunks, as Trellis sends them: only the types ai 5 knows
// (a closed union there), and tool-approval-request and
// tool-output-denied for clients that take approvals.

type chunk struct {
	Type string `json:"type"`
	// start
	MessageID string `json:"messageId,omitempty"`
	// text-*, reasoning-*
	ID    string `json:"id,omitempty"`
	Delta string `json:"delta,omitempty"`
	// tool-*
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Dynamic    bool            `json:"dynamic,omitempty"`
	Output     *string         `json:"output,omitempty"`
	ApprovalID string          `json:"approvalId,omitempty"`
	// tool-output-error, error
	ErrorText string `json:"errorText,omitempty"`
	// finish
	FinishReason string `json:"finishReason,omitempty"`
}

// translator turns one run's events into the chunks of its assistant
// message.
type translator struct {
	emit      func(chunk) error
	runID     string
	approvals bool // the client takes approval chunks

	step      string // the open step's kind: "", "tool" or "text"
	text      string // the open text's id
	reasoning string // the open reasoning's id
	// thinker is the node whose reasoning the open text step shows: one
	// model call, one step.
	thinker   string
	announced map[string]bool
	// through is the seq up to which a replay's terminal events end
	// segments the run went on from: they are passed over.
	through int64
	// byApproval maps an approval's id to its tool call; denied holds
	// the calls whose approval was rejected.
	byApproval map[string]string
	denied     map[string]bool
}

func newTranslator(runID string, approvals bool, emit func(chunk) error) *translator {
	return &translator{emit: emit, runID: runID, approvals: approvals, announced: map[string]bool{},
		byApproval: map[string]string{}, denied: map[string]bool{}}
}

// begin opens the assistant message: the run's id is its id, so a run
// continued after an approval continues the same message.
func (t *translator) begin() error { return t.emit(chunk{Type: "start", MessageID: t.runID}) }

// event translates one run event; done reports that the stream's
// finishing chunk went out.
func (t *translator) event(e *runs.Event) (done bool, err error) {
	if events.Terminal(e.Type) && e.Seq <= t.through {
		return false, nil
	}
	p, err := e.Typed()
	if err != nil {
		return false, err
	}
	id := e.Key()
	switch d := p.(type) {
	case *events.ApprovalRequired:
		t.byApproval[d.ApprovalID] = d.ToolCallID
		if err := t.input(d.ToolCallID, d.Tool, d.Args); err != nil {
			return false, err
		}
		if t.approvals {
			return false, t.emit(chunk{Type: "tool-approval-request", ApprovalID: d.ApprovalID, ToolCallID: d.ToolCallID})
		}
		return false, t.whole(id, "The call of "+d.Tool+" waits for approval "+d.ApprovalID+
			" — this client cannot answer it; approve or reject it in Trellis.")
	case *events.ToolUncertain:
		// Put to the user as an approval of the call: approved, it runs
		// again; denied, it is skipped.
		t.byApproval[d.UncertainCallID] = d.ToolCallID
		if err := t.input(d.ToolCallID, d.Tool, d.Args); err != nil {
			return false, err
		}
		if t.approvals {
			return false, t.emit(chunk{Type: "tool-approval-request", ApprovalID: d.UncertainCallID, ToolCallID: d.ToolCallID})
		}
		return false, t.whole(id, "The call of "+d.Tool+" was running when the service stopped and may have run; it waits for "+
			d.UncertainCallID+" — this client cannot answer it; run it again, skip it or treat it as failed in Trellis.")
	case *events.ApprovalResolved:
		if d.Decision == events.DecisionReject {
			t.denied[t.byApproval[d.ApprovalID]] = true
		}
	case *events.UncertainCallResolved:
		if d.Decision == string(runs.CallSkip) { // what a denial answers
			t.denied[d.ToolCallID] = true
		}
	case *events.ToolStart:
		return false, t.input(d.ToolCallID, d.Tool, d.Args)
	case *events.ToolComplete:
		if err := t.toolStep(); err != nil {
			return false, err
		}
		out := d.Result
		return false, t.emit(chunk{Type: "tool-output-available", ToolCallID: d.ToolCallID, Output: &out, Dynamic: true})
	case *events.ToolError:
		if err := t.toolStep(); err != nil {
			return false, err
		}
		if t.denied[d.ToolCallID] && t.approvals {
			return false, t.emit(chunk{Type: "tool-output-denied", ToolCallID: d.ToolCallID})
		}
		return false, t.emit(chunk{Type: "tool-output-error", ToolCallID: d.ToolCallID, ErrorText: d.Error, Dynamic: true})
	case *events.ReasoningChunk:
		return false, t.reason(id, d.Node, d.Content)
	case *events.NodeEnd:
		if d.Node == t.thinker {
			return false, t.closeReasoning()
		}
	case *events.ResponseChunk:
		return false, t.delta(id, d.Content)
	case *events.ResponseDone:
		if t.text == "" && d.Content != "" {
			if err := t.delta(id, d.Content); err != nil {
				return false, err
			}
		}
		return false, t.closeText()
	case *events.DirectResponse:
		return false, t.whole(id, d.Content)
	case *events.RunCompleted:
		return true, t.finish("stop")
	case *events.RunInterrupted:
		switch d.Reason {
		case string(events.PendingApproval), string(events.PendingUncertainCall):
			return true, t.finish("tool-calls")
		case string(events.PendingClarification):
			if err := t.whole(id, d.Question); err != nil {
				return false, err
			}
			return true, t.finish("stop")
		case string(events.PendingElicitation):
			if err := t.whole(id, "A tool asks something this client cannot answer; answer it in Trellis."); err != nil {
				return false, err
			}
			return true, t.finish("other")
		}
		if err := t.emit(chunk{Type: "error", ErrorText: "the server stopped the run on its way down; send the message again"}); err != nil {
			return false, err
		}
		return true, t.finish("error")
	case *events.RunCancelled:
		if err := t.end(); err != nil {
			return false, err
		}
		return true, t.emit(chunk{Type: "abort"})
	case *events.RunFailed:
		if err := t.end(); err != nil {
			return false, err
		}
		if err := t.emit(chunk{Type: "error", ErrorText: d.Error.Message}); err != nil {
			return false, err
		}
		return true, t.emit(chunk{Type: "finish", FinishReason: "error"})
	}
	return false, nil
}

// input announces a tool call once, in a step of tool calls.
func (t *translator) input(callID, tool string, args []byte) error {
	if t.announced[callID] {
		return nil
	}
	t.announced[callID] = true
	if err := t.toolStep(); err != nil {
		return err
	}
	return t.emit(chunk{Type: "tool-input-available", ToolCallID: callID, ToolName: tool, Input: jsonValue(args), Dynamic: true})
}

// toolStep makes the open step one of tool calls.
func (t *translator) toolStep() error { return t.stepOf("tool") }

func (t *translator) stepOf(kind string) error {
	if t.step == kind {
		return nil
	}
	if err := t.end(); err != nil {
		return err
	}
	t.step = kind
	return t.emit(chunk{Type: "start-step"})
}

// delta sends text, opening a text (in a step of its own) first.
func (t *translator) delta(id, s string) error {
	if s == "" {
		return nil
	}
	if err := t.closeReasoning(); err != nil {
		return err
	}
	if t.text == "" {
		if err := t.stepOf("text"); err != nil {
			return err
		}
		t.text = id
		if err := t.emit(chunk{Type: "text-start", ID: id}); err != nil {
			return err
		}
	}
	return t.emit(chunk{Type: "text-delta", ID: t.text, Delta: s})
}

// reason sends a piece of node's reasoning: a reasoning part in the step
// of the node's model call, opened on its first piece, before the call's
// text.
func (t *translator) reason(id, node, s string) error {
	if s == "" {
		return nil
	}
	if t.thinker != node {
		// Another model call: a step of its own.
		if err := t.end(); err != nil {
			return err
		}
	}
	if t.reasoning == "" {
		if err := t.stepOf("text"); err != nil {
			return err
		}
		if err := t.closeText(); err != nil {
			return err
		}
		t.reasoning, t.thinker = id, node
		if err := t.emit(chunk{Type: "reasoning-start", ID: id}); err != nil {
			return err
		}
	}
	return t.emit(chunk{Type: "reasoning-delta", ID: t.reasoning, Delta: s})
}

func (t *translator) closeReasoning() error {
	if t.reasoning == "" {
		return nil
	}
	id := t.reasoning
	t.reasoning = ""
	return t.emit(chunk{Type: "reasoning-end", ID: id})
}

// whole sends a whole text.
func (t *translator) whole(id, s string) error {
	if err := t.delta(id, s); err != nil {
		return err
	}
	return t.closeText()
}

func (t *translator) closeText() error {
	if t.text == "" {
		return nil
	}
	id := t.text
	t.text = ""
	return t.emit(chunk{Type: "text-end", ID: id})
}

// end closes the open reasoning, text and step.
func (t *translator) end() error {
	if err := t.closeReasoning(); err != nil {
		return err
	}
	if err := t.closeText(); err != nil {
		return err
	}
	t.thinker = ""
	if t.step == "" {
		return nil
	}
	t.step = ""
	return t.emit(chunk{Type: "finish-step"})
}

func (t *translator) finish(reason string) error {
	if err := t.end(); err != nil {
		return err
	}
	return t.emit(chunk{Type: "finish", FinishReason: reason})
}
