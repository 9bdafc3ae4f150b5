package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/trellis-ai/trellis/runs"
)

// responsesRequest is the part of a Responses API request Trellis reads;
// sampling fields (temperature, max_output_tokens, …) are accepted and
// ignored, as for chat completions: the agent's models are configured on
// the server. Fields Trellis cannot honour are refused (see
// parseResponsesRequest).
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	Stream             bool            `json:"stream"`
	Tools              []responsesTool `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Conversation       json.RawMessage `json:"conversation"`
	Background         *bool           `json:"background"`
}

func (r *responsesRequest) requestedModel() string { return r.Model }

// responsesTool is a tool of the request: a function is flat, its name
// and schema the tool's own fields.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// inputItem is one item of a request's input list: a message, a
// function call the model made, or its output.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// responsesTextParts are the content part types of Responses messages.
var responsesTextParts = []string{"input_text", "output_text"}

// responsesTurn is a decoded Responses request.
type responsesTurn struct {
	model  string
	stream bool
	// store false: the conversation is deleted once the response ends.
	store bool
	// previous is the run id previous_response_id names, "" for none.
	previous string
	// outputs, with previous, are the function_call_output items that
	// answer the previous response's function calls: the request goes on
	// with that turn (input then has only the client tools and context).
	outputs []runs.Message
	// instructions is the request's instructions field, echoed back.
	instructions *string
	tools        []responsesTool
	input        runs.Input
}

// responsePrefix starts every response id: resp_<run id>.
const responsePrefix = "resp_"

// parseResponsesRequest decodes and checks a Responses request. Every
// error is an *apiError with status 400.
func parseResponsesRequest(body []byte) (responsesTurn, error) {
	var req responsesRequest
	if err := unmarshalRequest(body, &req, "Responses request"); err != nil {
		return responsesTurn{}, err
	}
	if c := bytes.TrimSpace(req.Conversation); len(c) > 0 && !bytes.Equal(c, []byte("null")) {
		return responsesTurn{}, invalid("conversation", "conversation is not supported: continue a conversation with previous_response_id")
	}
	if req.Background != nil && *req.Background {
		return responsesTurn{}, invalid("background", "background responses are not supported")
	}
	t := responsesTurn{model: req.Model, stream: req.Stream, store: req.Store == nil || *req.Store,
		instructions: req.Instructions, tools: req.Tools}
	if p := req.PreviousResponseID; p != nil {
		id, ok := strings.CutPrefix(*p, responsePrefix)
		if !ok || id == "" {
			return responsesTurn{}, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: ptr("previous_response_id"),
				Code: ptr("previous_response_not_found"), Message: fmt.Sprintf("previous response %q not found", *p)}
		}
		if !t.store {
			return responsesTurn{}, invalid("store", "store: false cannot continue a stored response: "+
				"the conversation of previous_response_id is kept, and this turn would be kept with it")
		}
		t.previous = id
	}
	fns := make([]tool, len(req.Tools))
	for i, rt := range req.Tools {
		fns[i] = tool{Type: rt.Type, Function: functionDef{Name: rt.Name, Description: rt.Description, Parameters: rt.Parameters}}
	}
	var err error
	if t.input.ClientTools, err = offeredTools(req.ToolChoice, fns, true); err != nil {
		return responsesTurn{}, err
	}
	var instructions []string
	if req.Instructions != nil && strings.TrimSpace(*req.Instructions) != "" {
		instructions = append(instructions, *req.Instructions)
	}
	msgs, outputs, err := inputMessages(req.Input)
	if err != nil {
		return responsesTurn{}, err
	}
	if len(outputs) > 0 {
		// The function's results continue the turn that called it: a new
		// message cannot come with them.
		if t.previous == "" {
			// Stateless, the items replay the whole conversation.
			msgs = mergeOutputs(msgs, outputs)
		} else if len(msgs) > 0 {
			return responsesTurn{}, invalid("input", "with previous_response_id, function_call_output items come alone: "+
				"they continue the previous response's turn; send a new message in the next request")
		} else {
			for _, o := range outputs {
				t.outputs = append(t.outputs, runs.Message{Role: runs.RoleTool, ToolCallID: o.msg.ToolCallID, Content: o.text})
			}
			t.input.Context = instructionsContext(instructions)
			return t, nil
		}
	}
	more, err := replay(msgs, "input", responsesTextParts, &t.input)
	if err != nil {
		return responsesTurn{}, err
	}
	t.input.Context = instructionsContext(append(instructions, more...))
	if !t.store {
		t.input.NoMemory = true
	}
	t.input.Model = req.Model
	return t, nil
}

// indexedOutput is a function_call_output item with its place among the
// input's messages.
type indexedOutput struct {
	at   int
	msg  message
	text string
}

// inputMessages reads the input: a string is one user message; a list's
// messages and function calls are returned as chat messages (a call
// joins the assistant message before it, or makes one), the
// function_call_output items apart, each with its place.
func inputMessages(raw json.RawMessage) ([]message, []indexedOutput, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil, invalid("input", "you must provide an input")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, nil, invalid("input", "input is not a valid string")
		}
		if strings.TrimSpace(s) == "" {
			return nil, nil, invalid("input", "input is empty")
		}
		c, _ := json.Marshal(s)
		return []message{{Role: "user", Content: c, param: "input"}}, nil, nil
	}
	var items []inputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, nil, invalid("input", "input must be a string or a list of input items")
	}
	if len(items) == 0 {
		return nil, nil, invalid("input", "input must not be empty")
	}
	var msgs []message
	var outputs []indexedOutput
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "message", "":
			if it.Role == "tool" {
				return nil, nil, invalid(param+".role", "a function's output is a function_call_output item, not a message")
			}
			msgs = append(msgs, message{Role: it.Role, Content: it.Content, param: param})
		case "function_call":
			c := toolCall{ID: it.CallID, Type: "function", Function: functionCall{Name: it.Name, Arguments: it.Arguments}, at: param}
			if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
				msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, c)
			} else {
				msgs = append(msgs, message{Role: "assistant", ToolCalls: []toolCall{c}, param: param})
			}
		case "function_call_output":
			if it.CallID == "" {
				return nil, nil, invalid(param+".call_id", "a function_call_output needs the call_id it answers")
			}
			text, err := content(it.Output, param+".output", responsesTextParts)
			if err != nil {
				return nil, nil, err
			}
			c, _ := json.Marshal(text)
			outputs = append(outputs, indexedOutput{at: len(msgs), msg: message{Role: "tool", ToolCallID: it.CallID, Content: c, param: param}, text: text})
		case "mcp_approval_response":
			return nil, nil, invalid(param+".type", "Trellis' approvals are answered through its own API: POST /api/v1/approvals/{approval_id}")
		default:
			return nil, nil, invalid(param+".type", fmt.Sprintf("input items of type %q are not supported; only message, function_call and function_call_output", it.Type))
		}
	}
	return msgs, outputs, nil
}

// mergeOutputs puts the function_call_output items back among the
// messages, each where it came.
func mergeOutputs(msgs []message, outputs []indexedOutput) []message {
	out := make([]message, 0, len(msgs)+len(outputs))
	j := 0
	for i := 0; i <= len(msgs); i++ {
		for ; j < len(outputs) && outputs[j].at == i; j++ {
			out = append(out, outputs[j].msg)
		}
		if i < len(msgs) {
			out = append(out, msgs[i])
		}
	}
	return out
}
