package a2a

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/trellis-ai/trellis/runs"
)

// turn is what a message asks of Trellis.
type turn struct {
	contextID, taskID string
	// text is the message's text parts, joined by lines; data its data
	// parts.
	text string
	data []json.RawMessage
	// history is how many messages of history a task returned shows;
	// -1 for all.
	history   int
	immediate bool
}

// decodeTurn reads SendMessage's params.
func decodeTurn(params json.RawMessage) (turn, error) {
	var req sendMessageRequest
	if err := decodeParams(params, &req, "a SendMessageRequest {message, configuration}"); err != nil {
		return turn{}, err
	}
	m := req.Message
	switch {
	case m == nil:
		return turn{}, invalidParams("message is required")
	case m.Role != roleUser:
		return turn{}, invalidParams("message.role must be %s", roleUser)
	case len(m.Parts) == 0:
		return turn{}, invalidParams("message.parts must hold the message")
	}
	t := turn{contextID: strings.TrimSpace(m.ContextID), taskID: strings.TrimSpace(m.TaskID), history: -1,
		immediate: req.Configuration.ReturnImmediately}
	if h := req.Configuration.HistoryLength; h != nil {
		if *h < 0 {
			return turn{}, invalidParams("configuration.historyLength must not be negative")
		}
		t.history = *h
	}
	var texts []string
	for i, p := range m.Parts {
		switch {
		case p.Text != nil:
			texts = append(texts, *p.Text)
		case len(bytes.TrimSpace(p.Data)) > 0 && !bytes.Equal(bytes.TrimSpace(p.Data), []byte("null")):
			t.data = append(t.data, p.Data)
		case p.URL != "" || p.Raw != "":
			return turn{}, &rpcError{Code: codeContentType, Status: http.StatusBadRequest,
				Message: "Trellis takes text and data parts; part " + strconv.Itoa(i) + " is a file"}
		default:
			return turn{}, invalidParams("part %d has no text, data, url or raw", i)
		}
	}
	t.text = strings.TrimSpace(strings.Join(texts, "\n"))
	return t, nil
}

// message is the turn as the run's message: its text, then each data
// part as JSON.
func (t turn) message() string {
	parts := []string{}
	if t.text != "" {
		parts = append(parts, t.text)
	}
	for _, d := range t.data {
		parts = append(parts, string(d))
	}
	return strings.Join(parts, "\n")
}

// decision reads the turn as the answer to an approval, or to a call
// that may have run: a data part {"decision": "approve"|"reject",
// "reason"}, or text whose first word says it (approve, approved, yes,
// ok; reject, rejected, deny, denied, no), the rest of a rejection being
// its reason.
func (t turn) decision() (approve bool, reason string, err error) {
	for _, d := range t.data {
		var a struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}
		if json.Unmarshal(d, &a) == nil && a.Decision != "" {
			switch strings.ToLower(a.Decision) {
			case "approve", "approved":
				return true, "", nil
			case "reject", "rejected", "deny", "denied":
				return false, a.Reason, nil
			}
			return false, "", invalidParams(`decision must be "approve" or "reject"`)
		}
	}
	word, rest, _ := strings.Cut(t.text, " ")
	switch strings.ToLower(strings.Trim(word, ".,:;!")) {
	case "approve", "approved", "yes", "y", "ok":
		return true, "", nil
	case "reject", "rejected", "deny", "denied", "no", "n":
		return false, strings.TrimSpace(rest), nil
	}
	return false, "", invalidParams(`the task waits for an approval: reply "approve", or "reject" and a reason ` +
		`(or a data part {"decision": "approve"|"reject", "reason"})`)
}

// elicitation reads the turn as the answer to a tool's question: its
// one data part accepts with that content; "decline" or "cancel" as the
// text declines or cancels.
func (t turn) elicitation() (runs.ElicitationAnswer, error) {
	if len(t.data) == 1 {
		return runs.ElicitationAnswer{Action: runs.ActionAccept, Content: t.data[0]}, nil
	}
	switch strings.ToLower(strings.Trim(t.text, ".! ")) {
	case "decline":
		return runs.ElicitationAnswer{Action: runs.ActionDecline}, nil
	case "cancel":
		return runs.ElicitationAnswer{Action: runs.ActionCancel}, nil
	}
	return runs.ElicitationAnswer{}, invalidParams(`the task waits for a tool's question: reply with one data part holding the answer, or "decline" or "cancel"`)
}
