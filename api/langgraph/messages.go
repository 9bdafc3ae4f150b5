package langgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/runs"
)

// message is a LangChain message dict: what values, updates and the
// messages modes carry, and what useStream and agent-chat-ui render.
type message struct {
	Type       string     `json:"type"`
	Content    string     `json:"content"`
	ID         string     `json:"id"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	Status     string     `json:"status,omitempty"`
}

// blockMessage is a message whose content is content blocks: a piece of
// a model's reasoning, as LangChain streams a reasoning model's.
type blockMessage struct {
	Type    string           `json:"type"`
	Content []reasoningBlock `json:"content"`
	ID      string           `json:"id"`
}

// reasoningBlock is LangChain's standard reasoning content block.
type reasoningBlock struct {
	Type      string `json:"type"` // "reasoning"
	Reasoning string `json:"reasoning"`
}

type toolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	ID   string          `json:"id"`
	Type string          `json:"type"`
}

// Message ids are made from what both the checkpoint and the event
// stream know, so that a message streamed and the same message read
// back from the state have one id: a tool call's id for an assistant
// message proposing calls and for each tool message, and the turn with
// a count within it for the user's messages and the answers.
func humanID(turn, k int) string      { return fmt.Sprintf("t%d-u%d", turn, k) }
func answerID(turn, k int) string     { return fmt.Sprintf("t%d-a%d", turn, k) }
func callsID(firstCall string) string { return "ai-" + firstCall }
func toolID(callID string) string     { return "tool-" + callID }

// objectArgs returns args as a JSON object, {} for none.
func objectArgs(args json.RawMessage) json.RawMessage {
	if a := bytes.TrimSpace(args); len(a) > 0 && a[0] == '{' {
		return a
	}
	return json.RawMessage("{}")
}

func newToolCall(id, name string, args json.RawMessage) toolCall {
	return toolCall{Name: name, Args: objectArgs(args), ID: id, Type: "tool_call"}
}

// fromState converts the agent's messages to LangChain's.
func fromState(msgs []runs.Message) []message {
	out := make([]message, 0, len(msgs))
	var turn, users, answers int
	for i, m := range msgs {
		if m.Turn != turn {
			turn, users, answers = m.Turn, 0, 0
		}
		switch {
		case m.Role == runs.RoleUser:
			out = append(out, message{Type: "human", Content: m.Content, ID: humanID(m.Turn, users)})
			users++
		case m.Role == runs.RoleTool:
			out = append(out, message{Type: "tool", Content: m.Content, ID: toolID(m.ToolCallID), ToolCallID: m.ToolCallID,
				Name: m.Name, Status: "success"})
		case m.Role == runs.RoleAssistant && len(m.ToolCalls) > 0:
			am := message{Type: "ai", Content: m.Content, ID: callsID(m.ToolCalls[0].ID)}
			for _, c := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, newToolCall(c.ID, c.Tool, c.Args))
			}
			out = append(out, am)
		case m.Role == runs.RoleAssistant:
			out = append(out, message{Type: "ai", Content: m.Content, ID: answerID(m.Turn, answers)})
			answers++
		default:
			out = append(out, message{Type: string(m.Role), Content: m.Content, ID: fmt.Sprintf("m%d", i)})
		}
	}
	return out
}

// interrupt is one of LangGraph's {id, value}.
type interrupt struct {
	ID    string `json:"id"`
	Value any    `json:"value"`
}

// hitlRequest is HumanInTheLoopMiddleware's interrupt value, which
// agent-chat-ui renders as its approval form.
type hitlRequest struct {
	ActionRequests []actionRequest `json:"action_requests"`
	ReviewConfigs  []reviewConfig  `json:"review_configs"`
}

type actionRequest struct {
	Name        string          `json:"name"`
	Args        json.RawMessage `json:"args"`
	Description string          `json:"description"`
}

type reviewConfig struct {
	ActionName       string   `json:"action_name"`
	AllowedDecisions []string `json:"allowed_decisions"`
}

// interruptsOf turns what the agent waits for into interrupts: every
// pending approval and every call that may have run into one
// HumanInTheLoopMiddleware request (its id the first one's; decisions
// answer the action requests in order: for a call that may have run,
// approve runs it again and reject skips it), a
// clarifying question into {question}, a tool's question into
// {message, schema, source}.
func interruptsOf(pending []events.Pending) []interrupt {
	var out []interrupt
	var hitl *hitlRequest
	for _, p := range pending {
		switch p.Kind {
		case events.PendingApproval:
			if hitl == nil {
				hitl = &hitlRequest{}
				out = append(out, interrupt{ID: p.ID, Value: hitl})
			}
			hitl.ActionRequests = append(hitl.ActionRequests, actionRequest{Name: p.Tool, Args: objectArgs(p.Args),
				Description: fmt.Sprintf("Tool execution requires approval\n\nTool: %s\nArgs: %s", p.Tool, objectArgs(p.Args))})
			hitl.ReviewConfigs = append(hitl.ReviewConfigs, reviewConfig{ActionName: p.Tool,
				AllowedDecisions: []string{"approve", "edit", "reject"}})
		case events.PendingUncertainCall:
			if hitl == nil {
				hitl = &hitlRequest{}
				out = append(out, interrupt{ID: p.UncertainCallID, Value: hitl})
			}
			hitl.ActionRequests = append(hitl.ActionRequests, actionRequest{Name: p.Tool, Args: objectArgs(p.Args),
				Description: fmt.Sprintf("This call was running when the service stopped and may have run; approve runs it again, reject skips it\n\nTool: %s\nArgs: %s",
					p.Tool, objectArgs(p.Args))})
			hitl.ReviewConfigs = append(hitl.ReviewConfigs, reviewConfig{ActionName: p.Tool, AllowedDecisions: []string{"approve", "reject"}})
		case events.PendingClarification:
			out = append(out, interrupt{ID: p.ID, Value: map[string]string{"question": p.Question}})
		case events.PendingElicitation:
			out = append(out, interrupt{ID: p.ElicitationID, Value: map[string]any{"message": p.Message,
				"schema": objectArgs(p.Schema), "source": p.Source}})
		}
	}
	return out
}

// values is the values of a thread or of a values event.
type values struct {
	Messages  []message   `json:"messages"`
	Interrupt []interrupt `json:"__interrupt__,omitempty"`
}

// checkpointRef names a checkpoint.
type checkpointRef struct {
	ThreadID     string `json:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id"`
}

// task is a state's pending task: the node that waits, with its
// interrupts.
type task struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Error      *string     `json:"error"`
	Interrupts []interrupt `json:"interrupts"`
	Path       []string    `json:"path"`
	Checkpoint any         `json:"checkpoint"`
	State      any         `json:"state"`
	Result     any         `json:"result"`
}

// threadState is a thread's state at one checkpoint (GET state, POST
// history).
type threadState struct {
	Values           values         `json:"values"`
	Next             []string       `json:"next"`
	Tasks            []task         `json:"tasks"`
	Metadata         map[string]any `json:"metadata"`
	CreatedAt        string         `json:"created_at"`
	Checkpoint       checkpointRef  `json:"checkpoint"`
	ParentCheckpoint *checkpointRef `json:"parent_checkpoint"`
}

func stateOf(threadID string, s runs.Snapshot) threadState {
	st := threadState{
		Values:     values{Messages: fromState(s.State.Messages)},
		Next:       s.Next,
		Tasks:      []task{},
		Metadata:   map[string]any{"step": s.Step, "source": "loop", "thread_id": threadID, "graph_id": graphID},
		CreatedAt:  timestamp(s.CreatedAt),
		Checkpoint: checkpointRef{ThreadID: threadID, CheckpointID: s.CheckpointID},
	}
	if st.Next == nil {
		st.Next = []string{}
	}
	if s.ParentID != "" {
		st.ParentCheckpoint = &checkpointRef{ThreadID: threadID, CheckpointID: s.ParentID}
	}
	if ins := interruptsOf(s.Pending); len(ins) > 0 {
		name := "execute_tool"
		if len(s.Next) > 0 {
			name = s.Next[0]
		}
		st.Tasks = append(st.Tasks, task{ID: s.CheckpointID, Name: name, Interrupts: ins, Path: []string{"__pregel_pull", name}})
	}
	return st
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
