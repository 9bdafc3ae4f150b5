package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/runs"
)

// input is the part of a RunAgentInput Trellis reads. Other fields
// (state, tools, forwardedProps) are accepted and ignored: Trellis' tools
// are its own and its state is the conversation's. Context, the
// client's [{description, value}] list, is the run's context object,
// {"context": [...]} (runs.Input.Context).
type input struct {
	Context     []contextEntry    `json:"context"`
	ThreadID    string            `json:"threadId"`
	RunID       string            `json:"runId"`
	ParentRunID string            `json:"parentRunId"`
	Messages    []json.RawMessage `json:"messages"`
	Resume      []resumeEntry     `json:"resume"`
	// message is the text of the last message, which must be the
	// user's unless the input resumes.
	message string
	// calls are the ids of the tool calls the client's messages hold:
	// a resumed run does not announce them again.
	calls map[string]bool
}

// contextEntry is one item of a RunAgentInput's context.
type contextEntry struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// contextObject is the input's context as the run's context object:
// {"context": [{"description", "value"}, …]}, compact; nil for none.
func (in *input) contextObject() json.RawMessage {
	if len(in.Context) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string][]contextEntry{"context": in.Context}) // strings only: cannot fail
	return b
}

// resumeEntry answers one interrupt.
type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

// approvalPayload is an approval interrupt's answer.
type approvalPayload struct {
	Approved   *bool           `json:"approved"`
	EditedArgs json.RawMessage `json:"editedArgs"`
	Reason     string          `json:"reason"`
}

// message is one of the client's messages, as far as Trellis reads it.
type message struct {
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID string `json:"id"`
	} `json:"toolCalls"`
}

// decodeInput reads and checks a RunAgentInput: threadId and runId are
// required; with no resume the last message must be the user's, with
// text; resume entries name their interrupt, have a known status, and
// an approval's payload says approved.
func decodeInput(r io.Reader) (input, error) {
	var in input
	if err := httperr.DecodeBody(r, &in, "a RunAgentInput"); err != nil {
		return input{}, err
	}
	if strings.TrimSpace(in.ThreadID) == "" || strings.TrimSpace(in.RunID) == "" {
		return input{}, httperr.Invalid("threadId and runId are required")
	}
	roles := make([]string, len(in.Messages))
	in.calls = map[string]bool{}
	for i, raw := range in.Messages {
		var m message
		if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" || m.Role == "" {
			return input{}, httperr.Invalid("messages[%d] is not a message with an id and a role", i)
		}
		switch m.Role {
		case "user", "assistant", "system", "developer", "tool", "activity", "reasoning":
		default:
			return input{}, httperr.Invalid("messages[%d] has the unknown role %q", i, m.Role)
		}
		roles[i] = m.Role
		for _, c := range m.ToolCalls {
			in.calls[c.ID] = true
		}
		if i == len(in.Messages)-1 && m.Role == "user" {
			text, err := textOf(m.Content)
			if err != nil {
				return input{}, httperr.Invalid("messages[%d]: %v", i, err)
			}
			in.message = strings.TrimSpace(text)
		}
	}
	seen := map[string]bool{}
	for i, e := range in.Resume {
		switch {
		case e.InterruptID == "":
			return input{}, httperr.Invalid("resume[%d] names no interruptId", i)
		case seen[e.InterruptID]:
			return input{}, httperr.Invalid("resume[%d] answers interrupt %s again", i, e.InterruptID)
		case e.Status != "resolved" && e.Status != "cancelled":
			return input{}, httperr.Invalid("resume[%d].status must be resolved or cancelled", i)
		}
		seen[e.InterruptID] = true
	}
	if len(in.Resume) == 0 {
		if len(roles) == 0 || roles[len(roles)-1] != "user" {
			return input{}, httperr.Invalid("the last message must be the user's: Trellis answers it (the thread keeps the rest)")
		}
		if in.message == "" {
			return input{}, httperr.Invalid("the user's message has no text")
		}
	}
	return in, nil
}

// textOf is a user message's text: its content string, or its text
// parts joined; other parts (images, files) Trellis cannot read.
func textOf(content json.RawMessage) (string, error) {
	content = bytes.TrimSpace(content)
	if len(content) > 0 && content[0] == '"' {
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(content, &parts); err != nil {
		return "", errors.New("content must be a string or a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("a %q part: Trellis reads text only", p.Type)
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// decodeApproval reads an approval interrupt's payload.
func decodeApproval(raw json.RawMessage) (approvalPayload, error) {
	var p approvalPayload
	if err := json.Unmarshal(raw, &p); err != nil || p.Approved == nil {
		return p, httperr.Invalid("an approval's payload is {approved: boolean, editedArgs?: object}")
	}
	if a := bytes.TrimSpace(p.EditedArgs); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		if a[0] != '{' || !json.Valid(a) {
			return p, httperr.Invalid("editedArgs must be an object")
		}
		p.EditedArgs = a
	} else {
		p.EditedArgs = nil
	}
	return p, nil
}

// answerOf is the answer resume[i] gives to the interrupt hr: a cancel
// of the run, an approval's decision, the decision on a call that may
// have run, or the object a question asks for.
func answerOf(i int, e resumeEntry, hr runs.HumanRequest) (runs.Answer, error) {
	switch {
	case e.Status == "cancelled":
		return runs.Answer{Cancel: true}, nil
	case hr.Kind == runs.KindApproval:
		p, err := decodeApproval(e.Payload)
		if err != nil {
			return runs.Answer{}, err
		}
		switch {
		case !*p.Approved:
			return runs.Answer{Approval: runs.ApprovalAnswer{Decision: runs.DecisionReject, Reason: p.Reason}}, nil
		case p.EditedArgs != nil:
			return runs.Answer{Approval: runs.ApprovalAnswer{Decision: runs.DecisionEdit, Args: p.EditedArgs}}, nil
		}
		return runs.Answer{Approval: runs.ApprovalAnswer{Decision: runs.DecisionApprove}}, nil
	case hr.Kind == runs.KindUncertainCall:
		var p struct {
			Decision runs.CallDecision `json:"decision"`
		}
		a := runs.CallAnswer{}
		if json.Unmarshal(e.Payload, &p) == nil {
			a.Decision = p.Decision
		}
		if a.Validate() != nil {
			return runs.Answer{}, httperr.Invalid("resume[%d]: an uncertain call's payload is {decision: \"retry\" | \"skip\" | \"fail\"}", i)
		}
		return runs.Answer{Call: a}, nil
	}
	if len(e.Payload) == 0 || e.Payload[0] != '{' {
		return runs.Answer{}, httperr.Invalid("resume[%d]: a question's payload is the object it asks for", i)
	}
	return runs.Answer{Elicitation: runs.ElicitationAnswer{Action: runs.ActionAccept, Content: e.Payload}}, nil
}
