package nodes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// errNoDecision: the model said nothing usable.
var errNoDecision = errors.New("the reply was empty: no text and no tool call")

// parseDecision reads the supervisor's decision from a model reply, in
// this order: a call of `decide`; direct calls of real tools (CALL_TOOL,
// so models that only know how to call tools — the offline model among
// them — drive the whole graph); a JSON object in the text; plain text,
// which is an ANSWER whose text is the model's answer.
func parseDecision(text string, calls []llms.ToolCall) (Decision, error) {
	var direct []ToolCall
	for _, c := range calls {
		if c.FunctionCall == nil {
			continue
		}
		if c.FunctionCall.Name == decideToolName {
			d, err := decodeDecision([]byte(c.FunctionCall.Arguments))
			if err != nil {
				return Decision{}, fmt.Errorf("decide's arguments: %w", err)
			}
			return d, nil
		}
		direct = append(direct, ToolCall{ID: c.ID, Tool: c.FunctionCall.Name, Args: normalizeArgs(json.RawMessage(c.FunctionCall.Arguments))})
	}
	text = strings.TrimSpace(text)
	if len(direct) > 0 {
		return Decision{Action: ActionCallTool, ToolCalls: direct, Reasoning: text}, nil
	}
	if text == "" {
		return Decision{}, errNoDecision
	}
	if obj, ok := jsonObject(text); ok {
		return decodeDecision(obj)
	}
	return Decision{Action: ActionAnswer, Answer: text}, nil
}

// jsonObject finds the JSON object a text reply consists of: the whole
// text, or a fenced ```json block. Text that merely mentions braces is
// not one.
func jsonObject(text string) ([]byte, bool) {
	if strings.HasPrefix(text, "{") {
		return []byte(text), true
	}
	if i := strings.Index(text, "```"); i >= 0 {
		rest := text[i+3:]
		rest = strings.TrimPrefix(rest, "json")
		rest = strings.TrimSpace(rest)
		if j := strings.Index(rest, "```"); j >= 0 && strings.HasPrefix(rest, "{") {
			return []byte(strings.TrimSpace(rest[:j])), true
		}
	}
	return nil, false
}

// actionSeparators turns "call tool" and "call-tool" into "call_tool".
var actionSeparators = strings.NewReplacer(" ", "_", "-", "_")

// decodeDecision parses and checks a decision object.
func decodeDecision(raw []byte) (Decision, error) {
	var d Decision
	if err := json.Unmarshal(raw, &d); err != nil {
		return Decision{}, fmt.Errorf("not a decision object: %w", err)
	}
	d.Action = Action(strings.ToUpper(actionSeparators.Replace(strings.TrimSpace(string(d.Action)))))
	for i := range d.ToolCalls {
		d.ToolCalls[i].Args = normalizeArgs(d.ToolCalls[i].Args)
	}
	for i := range d.Workflow {
		d.Workflow[i].Args = normalizeArgs(d.Workflow[i].Args)
	}
	return d, d.check()
}

// check reports what makes a decision unusable.
func (d *Decision) check() error {
	switch d.Action {
	case ActionAnswer:
		return nil
	case ActionClarify:
		if strings.TrimSpace(d.Question) == "" {
			return errors.New("CLARIFY needs a question")
		}
		return nil
	case ActionCallTool:
		if len(d.ToolCalls) == 0 {
			return errors.New("CALL_TOOL needs tool_calls")
		}
		for i, c := range d.ToolCalls {
			if c.Tool == "" {
				return fmt.Errorf("tool_calls[%d] has no tool", i)
			}
			if err := checkArgs(c.Args); err != nil {
				return fmt.Errorf("tool_calls[%d] (%s): %w", i, c.Tool, err)
			}
		}
		return nil
	case ActionCreateWorkflow:
		return checkWorkflow(d.Workflow)
	case "":
		return errors.New(`"action" is missing`)
	default:
		return fmt.Errorf("unknown action %q (use ANSWER, CALL_TOOL, CREATE_WORKFLOW or CLARIFY)", d.Action)
	}
}

func checkArgs(args json.RawMessage) error {
	if t := bytes.TrimSpace(args); len(t) > 0 && t[0] != '{' {
		return errors.New("args must be a JSON object")
	}
	return nil
}

// checkWorkflow requires unique step ids, known dependencies and no cycle.
func checkWorkflow(steps []WorkflowStep) error {
	if len(steps) == 0 {
		return errors.New("CREATE_WORKFLOW needs workflow steps")
	}
	index := make(map[string]int, len(steps))
	for i, st := range steps {
		switch {
		case st.ID == "":
			return fmt.Errorf("workflow[%d] has no id", i)
		case st.Tool == "":
			return fmt.Errorf("workflow step %q has no tool", st.ID)
		}
		if _, dup := index[st.ID]; dup {
			return fmt.Errorf("workflow step id %q is used twice", st.ID)
		}
		if err := checkArgs(st.Args); err != nil {
			return fmt.Errorf("workflow step %q: %w", st.ID, err)
		}
		index[st.ID] = i
	}
	for _, st := range steps {
		for _, dep := range st.DependsOn {
			if _, ok := index[dep]; !ok {
				return fmt.Errorf("workflow step %q depends on unknown step %q", st.ID, dep)
			}
		}
	}
	// Depth-first search for a cycle.
	state := make([]uint8, len(steps)) // 0 new, 1 on the path, 2 done
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 1:
			return fmt.Errorf("workflow steps form a cycle through %q", steps[i].ID)
		case 2:
			return nil
		}
		state[i] = 1
		for _, dep := range steps[i].DependsOn {
			if err := visit(index[dep]); err != nil {
				return err
			}
		}
		state[i] = 2
		return nil
	}
	for i := range steps {
		if err := visit(i); err != nil {
			return err
		}
	}
	return nil
}

// normalizeArgs turns empty or null arguments into {} and unwraps an
// object some models send as a JSON string.
func normalizeArgs(args json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage("{}")
	}
	if t[0] == '"' {
		var s string
		if json.Unmarshal(t, &s) == nil {
			if u := bytes.TrimSpace([]byte(s)); len(u) > 0 && u[0] == '{' && json.Valid(u) {
				return u
			}
		}
	}
	return t
}
