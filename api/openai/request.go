package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/trellis-ai/trellis/runs"
)

// chatRequest is the part of a chat completion request Trellis reads;
// the protocol's other fields (temperature, max_tokens, …) are accepted
// and ignored: the agent's models are configured on the server.
type chatRequest struct {
	Model         string          `json:"model"`
	Messages      []message       `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	Tools         []tool          `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	N             *int            `json:"n"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []toolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	// param names the message in the request, for errors.
	param string
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
	// at names the call in the request when it is not its message's
	// tool_calls[j] (a Responses function_call item), for errors.
	at string
}

// param names the call, the j-th of the message named msg, in the
// request.
func (c toolCall) param(msg string, j int) string {
	if c.at != "" {
		return c.at
	}
	return fmt.Sprintf("%s.tool_calls[%d]", msg, j)
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type tool struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// turn is a decoded request: the run's input (without user and
// conversation) and how to answer.
type turn struct {
	model        string
	stream       bool
	includeUsage bool
	input        runs.Input
}

// toolName is what OpenAI accepts as a function's name.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// request is a request body as the endpoints decode it.
type request interface {
	// requestedModel is the request's model field.
	requestedModel() string
}

func (r *chatRequest) requestedModel() string { return r.Model }

// unmarshalRequest decodes body into req, a request of the kind what
// names, and requires its model: every endpoint's first two refusals.
func unmarshalRequest(body []byte, req request, what string) error {
	if err := json.Unmarshal(body, req); err != nil {
		return invalid("", "the request body is not a valid "+what+": "+err.Error())
	}
	if strings.TrimSpace(req.requestedModel()) == "" {
		return invalid("model", "you must provide a model parameter")
	}
	return nil
}

// parseRequest decodes and checks a chat completion request. Every
// error is an *apiError with status 400.
func parseRequest(body []byte) (turn, error) {
	var req chatRequest
	if err := unmarshalRequest(body, &req, "chat completion request"); err != nil {
		return turn{}, err
	}
	if req.N != nil && *req.N != 1 {
		return turn{}, invalid("n", "only n=1 is supported")
	}
	if len(req.Messages) == 0 {
		return turn{}, invalid("messages", "messages must be a non-empty array")
	}
	t := turn{model: req.Model, stream: req.Stream, includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	var err error
	if t.input.ClientTools, err = offeredTools(req.ToolChoice, req.Tools, false); err != nil {
		return turn{}, err
	}
	for i := range req.Messages {
		req.Messages[i].param = fmt.Sprintf("messages[%d]", i)
	}
	instructions, err := replay(req.Messages, "messages", chatTextParts, &t.input)
	if err != nil {
		return turn{}, err
	}
	t.input.Context = instructionsContext(instructions)
	t.input.Model = req.Model
	return t, nil
}

// chatTextParts are the content part types of chat completion messages.
var chatTextParts = []string{"text"}

// replay reads a stateless client's conversation into in: the last user
// message is the turn's message (Message), what came before it the
// conversation so far (History), what came after it the assistant's
// calls of client tools and their results (Continued); system and
// developer messages are returned, for the request's context (see
// instructionsContext). list names the request's field of the messages,
// textParts the content part types read as text.
func replay(msgs []message, list string, textParts []string, in *runs.Input) ([]string, error) {
	last := -1
	for i, m := range msgs {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return nil, invalid(list, list+" must include a user message")
	}
	var instructions []string
	for i, m := range msgs {
		param := m.param
		text, err := content(m.Content, param, textParts)
		if err != nil {
			return nil, err
		}
		var nm runs.Message
		switch m.Role {
		case "system", "developer":
			if text != "" {
				instructions = append(instructions, text)
			}
			continue
		case "user":
			if i == last {
				if strings.TrimSpace(text) == "" {
					return nil, invalid(param+".content", "the last user message is empty")
				}
				in.Message = text
				continue
			}
			nm = runs.Message{Role: runs.RoleUser, Content: text}
		case "assistant":
			nm = runs.Message{Role: runs.RoleAssistant, Content: text}
			for j, c := range m.ToolCalls {
				args := json.RawMessage(c.Function.Arguments)
				if c.ID == "" || c.Function.Name == "" || !json.Valid(args) {
					return nil, invalid(c.param(param, j), "a tool call needs an id, a function name and JSON arguments")
				}
				nm.ToolCalls = append(nm.ToolCalls, runs.ToolCall{ID: c.ID, Tool: c.Function.Name, Args: args})
			}
		case "tool":
			if m.ToolCallID == "" {
				return nil, invalid(param+".tool_call_id", "a tool message needs the tool_call_id it answers")
			}
			nm = runs.Message{Role: runs.RoleTool, ToolCallID: m.ToolCallID, Name: toolCalled(msgs[:i], m.ToolCallID), Content: text}
		default:
			return nil, invalid(param+".role", fmt.Sprintf("unknown role %q: use system, developer, user, assistant or tool", m.Role))
		}
		if i < last {
			in.History = append(in.History, nm)
		} else {
			in.Continued = append(in.Continued, nm)
		}
	}
	return instructions, nil
}

// instructionsContext is the run's context of the request's system and
// developer messages: given to the agent as the client's data, as
// Trellis keeps its own system prompt; nil when there are none.
func instructionsContext(instructions []string) json.RawMessage {
	if len(instructions) == 0 {
		return nil
	}
	c, _ := json.Marshal(map[string][]string{"instructions": instructions})
	return c
}

// content reads a message's content: a string, an array of parts of
// the textParts types, or null.
func content(raw json.RawMessage, param string, textParts []string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", invalid(param+".content", "content is not a valid string")
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(param+".content", "content must be a string or an array of content parts")
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if !slices.Contains(textParts, p.Type) {
			return "", invalid(param+".content", fmt.Sprintf("content parts of type %q are not supported; only %s", p.Type, strings.Join(textParts, " and ")))
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// offeredTools is what the request's tools offer the agent: the
// checked tool definitions (flat as clientTools takes them), none when
// tool_choice is "none".
func offeredTools(choice json.RawMessage, tools []tool, flat bool) ([]runs.ClientTool, error) {
	offer, err := toolChoice(choice)
	if err != nil {
		return nil, err
	}
	checked, err := clientTools(tools, flat)
	if err != nil || !offer {
		return nil, err
	}
	return checked, nil
}

// toolChoice reports whether the client's tools are offered: "auto" (or
// absent) offers them, "none" does not. Forcing a call ("required" or a
// named function) is not something the agent can promise.
func toolChoice(raw json.RawMessage) (bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return true, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch s {
		case "auto":
			return true, nil
		case "none":
			return false, nil
		}
	}
	return false, invalid("tool_choice", `only tool_choice "auto" and "none" are supported`)
}

// clientTools checks the request's tool definitions; flat: the
// function's fields are the tool's own (the Responses shape), not under
// "function".
func clientTools(tools []tool, flat bool) ([]runs.ClientTool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]runs.ClientTool, 0, len(tools))
	seen := make(map[string]bool, len(tools))
	for i, t := range tools {
		param := fmt.Sprintf("tools[%d]", i)
		fn := param + ".function"
		if flat {
			fn = param
		}
		if t.Type != "function" {
			return nil, invalid(param+".type", `only tools of type "function" are supported`)
		}
		f := t.Function
		if !toolName.MatchString(f.Name) {
			return nil, invalid(fn+".name", "a function name is 1 to 64 letters, digits, _ or -")
		}
		if seen[f.Name] {
			return nil, invalid(fn+".name", fmt.Sprintf("two tools are named %q", f.Name))
		}
		seen[f.Name] = true
		params := bytes.TrimSpace(f.Parameters)
		if bytes.Equal(params, []byte("null")) {
			params = nil
		}
		if len(params) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(params, &obj); err != nil {
				return nil, invalid(fn+".parameters", "parameters must be a JSON Schema object")
			}
		}
		out = append(out, runs.ClientTool{Name: f.Name, Description: f.Description, Parameters: params})
	}
	return out, nil
}

// toolCalled names the function of the call id among earlier messages.
func toolCalled(before []message, id string) string {
	for i := len(before) - 1; i >= 0; i-- {
		for _, c := range before[i].ToolCalls {
			if c.ID == id {
				return c.Function.Name
			}
		}
	}
	return ""
}
