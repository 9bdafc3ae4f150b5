package langgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/runs"
)

// errorf is an answer given on purpose. Every mistake of the client is a
// 4xx: the SDK retries 5xx.
func errorf(status int, code, format string, args ...any) *httperr.Problem {
	return httperr.New(status, code, fmt.Sprintf(format, args...))
}

// mode is one stream mode, a bit of a modes set.
type mode uint16

const (
	modeValues mode = 1 << iota
	modeUpdates
	modeMessagesTuple
	modeMessages
	modeEvents
	modeCustom
	// modeOther: debug, tasks and checkpoints are accepted and send
	// nothing.
	modeOther
)

type modes uint16

func (m modes) has(x mode) bool { return m&modes(x) != 0 }

var modeNames = map[string]mode{
	"values": modeValues, "updates": modeUpdates, "messages-tuple": modeMessagesTuple, "messages": modeMessages,
	"events": modeEvents, "custom": modeCustom, "debug": modeOther, "tasks": modeOther, "checkpoints": modeOther,
}

// parseModes reads stream_mode: a name, a list of names, or absent
// (values).
func parseModes(names []string) (modes, error) {
	if len(names) == 0 {
		return modes(modeValues), nil
	}
	var m modes
	for _, n := range names {
		x, ok := modeNames[n]
		if !ok {
			return 0, httperr.Invalid("unknown stream_mode %q; supported: values, updates, messages-tuple, messages, events, custom", n)
		}
		m |= modes(x)
	}
	return m, nil
}

// runBody is the body of the runs endpoints. Fields Trellis does not use
// (config, checkpoint, interrupt_before, durability, …) are tolerated, as
// the Agent Server does. Context, the run's runtime context, is the
// request's context object (runs.Input.Context).
type runBody struct {
	Context           json.RawMessage `json:"context"`
	AssistantID       string          `json:"assistant_id"`
	Input             json.RawMessage `json:"input"`
	Command           *commandBody    `json:"command"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	OnDisconnect      string          `json:"on_disconnect"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	Metadata          json.RawMessage `json:"metadata"`
	IfNotExists       string          `json:"if_not_exists"`
}

type commandBody struct {
	Resume json.RawMessage `json:"resume"`
	Update json.RawMessage `json:"update"`
	Goto   json.RawMessage `json:"goto"`
}

type inputBody struct {
	Messages []messageIn `json:"messages"`
}

type messageIn struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// decision is one answer of command.resume.decisions, in
// HumanInTheLoopMiddleware's shape.
type decision struct {
	Type         string `json:"type"`
	EditedAction *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"edited_action"`
	Message string `json:"message"`
}

// runSpec is a decoded run request.
type runSpec struct {
	assistant string
	// message is the new human message; "" when the run resumes.
	message string
	// answers answer the thread's pending approvals, in order; set when
	// the run resumes.
	answers []runs.ApprovalAnswer
	// resuming: command.resume was given.
	resuming bool
	// multitask is multitask_strategy: what becomes of the message when
	// the thread's run is going or waiting (runs.Multitask).
	multitask runs.Multitask
	modes     modes
	// onDisconnect is on_disconnect: the run goes on, or is cancelled.
	onDisconnect runs.Disconnect
	metadata     json.RawMessage
	// context is the run's context object, compact; nil when none.
	context json.RawMessage
}

// parseRun decodes a run request's body. Any mistake is an *httperr.Problem
// with a 4xx status.
func parseRun(body []byte) (runSpec, error) {
	var b runBody
	if err := unmarshal(body, &b); err != nil {
		return runSpec{}, err
	}
	spec := runSpec{assistant: strings.TrimSpace(b.AssistantID)}
	names, err := stringOrList(b.StreamMode, "stream_mode")
	if err != nil {
		return runSpec{}, err
	}
	if spec.modes, err = parseModes(names); err != nil {
		return runSpec{}, err
	}
	switch b.OnDisconnect {
	case "", "continue":
	case "cancel":
		spec.onDisconnect = runs.DisconnectCancel
	default:
		return runSpec{}, httperr.Invalid(`on_disconnect must be "cancel" or "continue"`)
	}
	if spec.multitask = runs.Multitask(b.MultitaskStrategy); !spec.multitask.Valid() {
		return runSpec{}, httperr.Invalid(`multitask_strategy must be reject, interrupt, rollback or enqueue`)
	}
	if m := bytes.TrimSpace(b.Metadata); len(m) > 0 && !bytes.Equal(m, []byte("null")) {
		if err := runs.CheckMetadata(m); err != nil {
			return runSpec{}, httperr.Invalid("metadata must be a JSON object")
		}
		spec.metadata = m
	}
	if c := bytes.TrimSpace(b.Context); len(c) > 0 && !bytes.Equal(c, []byte("null")) {
		var compact bytes.Buffer
		if c[0] != '{' || json.Compact(&compact, c) != nil {
			return runSpec{}, httperr.Invalid("context must be a JSON object")
		}
		spec.context = compact.Bytes()
	}
	if b.Command != nil && isSet(b.Command.Resume) {
		spec.resuming = true
		if spec.answers, spec.message, err = parseResume(b.Command.Resume); err != nil {
			return runSpec{}, err
		}
		return spec, nil
	}
	if b.Command != nil && (isSet(b.Command.Update) || isSet(b.Command.Goto)) {
		return runSpec{}, errorf(http.StatusUnprocessableEntity, "unsupported", "command.update and command.goto are not supported; resume with command.resume")
	}
	if spec.message, err = parseInput(b.Input); err != nil {
		return runSpec{}, err
	}
	return spec, nil
}

// parseInput finds the new human message: the last message of type
// human (or role user) in input.messages.
func parseInput(raw json.RawMessage) (string, error) {
	if !isSet(raw) {
		return "", httperr.Invalid("input.messages must hold a human message, or command.resume must answer an interrupt")
	}
	var in inputBody
	if err := unmarshal(raw, &in); err != nil {
		return "", err
	}
	for i := len(in.Messages) - 1; i >= 0; i-- {
		m := in.Messages[i]
		if m.Type != "human" && m.Role != "user" && m.Role != "human" {
			continue
		}
		text, err := contentText(m.Content)
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(text) == "" {
			return "", httperr.Invalid("the human message is empty")
		}
		return text, nil
	}
	return "", httperr.Invalid("input.messages must hold a human message (type human or role user)")
}

// contentText reads a message's content: a string, or a list of content
// blocks whose text blocks are joined.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &blocks) != nil {
		return "", httperr.Invalid("a message's content must be a string or a list of content blocks")
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String(), nil
}

// parseResume reads command.resume: {decisions: [...]} answering the
// pending approvals, or a string answering a clarifying question (sent
// as the next message).
func parseResume(raw json.RawMessage) ([]runs.ApprovalAnswer, string, error) {
	raw = bytes.TrimSpace(raw)
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || strings.TrimSpace(s) == "" {
			return nil, "", httperr.Invalid("command.resume as a string must be a non-empty answer")
		}
		return nil, s, nil
	}
	var r struct {
		Decisions []decision `json:"decisions"`
	}
	if raw[0] != '{' {
		return nil, "", httperr.Invalid("command.resume must be {decisions: [...]} or a string")
	}
	if err := unmarshal(raw, &r); err != nil {
		return nil, "", err
	}
	if len(r.Decisions) == 0 {
		return nil, "", httperr.Invalid("command.resume.decisions must hold one decision per action request")
	}
	out := make([]runs.ApprovalAnswer, len(r.Decisions))
	for i, d := range r.Decisions {
		switch d.Type {
		case "approve":
			out[i] = runs.ApprovalAnswer{Decision: runs.DecisionApprove}
		case "reject":
			out[i] = runs.ApprovalAnswer{Decision: runs.DecisionReject, Reason: d.Message}
		case "edit":
			if d.EditedAction == nil || len(bytes.TrimSpace(d.EditedAction.Args)) == 0 || bytes.TrimSpace(d.EditedAction.Args)[0] != '{' {
				return nil, "", httperr.Invalid("an edit decision needs edited_action.args, a JSON object")
			}
			out[i] = runs.ApprovalAnswer{Decision: runs.DecisionEdit, Args: d.EditedAction.Args}
		default:
			return nil, "", httperr.Invalid("decision %d: type must be approve, edit or reject", i)
		}
	}
	return out, "", nil
}

// threadBody is POST /threads's and PATCH /threads/{id}'s body.
type threadBody struct {
	Metadata json.RawMessage `json:"metadata"`
	ThreadID string          `json:"thread_id"`
	IfExists string          `json:"if_exists"`
}

// searchBody is POST /threads/search's and /assistants/search's body.
type searchBody struct {
	Metadata json.RawMessage `json:"metadata"`
	IDs      []string        `json:"ids"`
	Status   string          `json:"status"`
	GraphID  string          `json:"graph_id"`
	Limit    *int            `json:"limit"`
	Offset   int             `json:"offset"`
}

// historyBody is POST /threads/{id}/history's body.
type historyBody struct {
	Limit  *int `json:"limit"`
	Before *struct {
		Configurable struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"configurable"`
	} `json:"before"`
}

// page reads limit and offset: limit defaults to def and is at most
// most.
func page(limit *int, offset, def, most int) (int, int, error) {
	n := def
	if limit != nil {
		n = *limit
	}
	if n < 1 || offset < 0 {
		return 0, 0, httperr.Invalid("limit must be positive and offset not negative")
	}
	return min(n, most), offset, nil
}

// unmarshal decodes a JSON value into v; a body that is not JSON, not
// UTF-8, or has a field of the wrong type is a 400 naming it.
func unmarshal(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return httperr.Invalid("the body is empty; send a JSON object")
	}
	if !utf8.Valid(body) {
		return httperr.Invalid("the body is not valid UTF-8")
	}
	err := json.Unmarshal(body, v)
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typ) && typ.Field != "":
		return httperr.Invalid("field %q must be %s", typ.Field, typ.Type)
	case errors.As(err, &typ):
		return httperr.Invalid("the body must be a JSON object")
	}
	return httperr.Invalid("the body is not valid JSON: %v", err)
}

// stringOrList reads a field that is a string or a list of strings.
func stringOrList(raw json.RawMessage, field string) ([]string, error) {
	if !isSet(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list, nil
	}
	return nil, httperr.Invalid("%s must be a string or a list of strings", field)
}

// metadataObject decodes a body's metadata: nil when it is absent or
// null, an invalid-request problem when it is not a JSON object.
func metadataObject(raw json.RawMessage) (map[string]any, error) {
	var m map[string]any
	if isSet(raw) && json.Unmarshal(raw, &m) != nil {
		return nil, httperr.Invalid("metadata must be a JSON object")
	}
	return m, nil
}

// isSet reports whether a field was given and is not null.
func isSet(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}
