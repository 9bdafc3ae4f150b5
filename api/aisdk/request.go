package aisdk

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/trellis-ai/trellis/api/httperr"
)

// chatRequest is DefaultChatTransport's body: the chat's id, its whole
// message list, what triggered the request, and the app's own fields,
// of which Trellis reads approvals.
type chatRequest struct {
	ID        string      `json:"id"`
	Messages  []uiMessage `json:"messages"`
	Trigger   string      `json:"trigger"`
	MessageID string      `json:"messageId"`
	// Approvals false: the client cannot take approval chunks (ai 5).
	Approvals *bool `json:"approvals"`
}

type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

// uiPart is a message part as far as Trellis reads it: text, and tool
// parts' approval answers.
type uiPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text"`
	ToolCallID string      `json:"toolCallId"`
	State      string      `json:"state"`
	Approval   *uiApproval `json:"approval"`
}

type uiApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved"`
	Reason   string `json:"reason"`
}

// turn is what a request asks of Trellis: a user's message, or answers
// to approvals.
type turn struct {
	chat       string
	message    string
	regenerate bool
	answers    []answer
	approvals  bool
}

// answer is the user's answer to one approval.
type answer struct {
	approvalID, toolCallID string
	approved               bool
	reason                 string
}

// decodeRequest reads a chat request and says what it asks.
func decodeRequest(r io.Reader) (turn, error) {
	var req chatRequest
	if err := httperr.DecodeBody(r, &req, "a chat request {id, messages, trigger}"); err != nil {
		return turn{}, err
	}
	t := turn{chat: strings.TrimSpace(req.ID), approvals: req.Approvals == nil || *req.Approvals}
	switch {
	case t.chat == "":
		return turn{}, httperr.Invalid("id (the chat's id) is required")
	case len(req.Messages) == 0:
		return turn{}, httperr.Invalid("messages must hold the chat's messages")
	}
	switch req.Trigger {
	case "", "submit-message":
	case "regenerate-message":
		t.regenerate = true
	default:
		return turn{}, httperr.Invalid("trigger must be submit-message or regenerate-message")
	}
	last := req.Messages[len(req.Messages)-1]
	switch last.Role {
	case "user":
		var b strings.Builder
		for _, p := range last.Parts {
			if p.Type == "text" {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(p.Text)
			}
		}
		t.message = strings.TrimSpace(b.String())
		if t.message == "" {
			return turn{}, httperr.Invalid("the user's message has no text")
		}
	case "assistant":
		if t.regenerate {
			return turn{}, httperr.Invalid("regenerate-message ends with the user's message")
		}
		for _, p := range last.Parts {
			if !isToolPart(p.Type) || p.State != "approval-responded" {
				continue
			}
			if p.Approval == nil || p.Approval.ID == "" || p.Approval.Approved == nil || p.ToolCallID == "" {
				return turn{}, httperr.Invalid("a tool part in state approval-responded needs toolCallId and approval {id, approved}")
			}
			t.answers = append(t.answers, answer{approvalID: p.Approval.ID, toolCallID: p.ToolCallID,
				approved: *p.Approval.Approved, reason: p.Approval.Reason})
		}
		if len(t.answers) == 0 {
			return turn{}, httperr.Invalid("the last message is the assistant's and answers no approval: send the user's message")
		}
	default:
		return turn{}, httperr.Invalid("the last message's role must be user or assistant")
	}
	return t, nil
}

// isToolPart reports whether a part type is a tool's: tool-<name> or
// dynamic-tool.
func isToolPart(typ string) bool {
	return typ == "dynamic-tool" || strings.HasPrefix(typ, "tool-") && len(typ) > len("tool-")
}

// jsonValue is args as a chunk's input: the JSON itself, or {} when
// there is none or it does not parse.
func jsonValue(args []byte) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || !json.Valid(a) {
		return json.RawMessage("{}")
	}
	return a
}
