package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// aguiReport is what api/agui/testdata/agui.mjs prints of one scenario.
type aguiReport struct {
	Events   []string `json:"events"`
	Outcomes []struct {
		Outcome    string          `json:"outcome"`
		Interrupts []aguiInterrupt `json:"interrupts"`
	} `json:"outcomes"`
	Messages []aguiMessage `json:"messages"`
	Details  []aguiDetail  `json:"details"`
	State    struct {
		ConversationID string `json:"conversationId"`
		RunID          string `json:"trellisRunId"`
		Status         string `json:"status"`
	} `json:"state"`
	Warnings []string `json:"warnings"`
	Error    *string  `json:"error"`
	Errors   []*string
	First    []aguiInterrupt `json:"first"`
	Second   []aguiInterrupt `json:"second"`
	Aborted  *string         `json:"aborted"`
	Chunks   int             `json:"chunks"`
	MS       int             `json:"ms"`
}

type aguiInterrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	ToolCallID     string          `json:"toolCallId"`
	ResponseSchema json.RawMessage `json:"responseSchema"`
}

// aguiDetail is an event of the steps, sub-agents, activities and tool
// calls, as the client saw it.
type aguiDetail struct {
	Type             string          `json:"type"`
	StepName         string          `json:"stepName"`
	SubagentRunID    string          `json:"subagentRunId"`
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	ParentToolCallID string          `json:"parentToolCallId"`
	ToolCallName     string          `json:"toolCallName"`
	ActivityType     string          `json:"activityType"`
	Content          json.RawMessage `json:"content"`
	Result           any             `json:"result"`
	Outcome          struct {
		Type string `json:"type"`
	} `json:"outcome"`
}

// withoutSteps is the events but the steps, which frame every node.
func withoutSteps(events []string) []string {
	return slices.DeleteFunc(slices.Clone(events), func(e string) bool { return strings.HasPrefix(e, "STEP_") })
}

// stepsOf lists the steps the details start and finish, each as
// "+name" or "-name", with "@owner" for a sub-agent's, and checks that
// each finishes after it started, all by the end.
func stepsOf(t *testing.T, details []aguiDetail) []string {
	t.Helper()
	var out []string
	open := map[string]bool{}
	for _, d := range details {
		key := d.StepName
		if d.SubagentRunID != "" {
			key += "@" + d.SubagentRunID
		}
		switch d.Type {
		case "STEP_STARTED":
			open[key] = true
			out = append(out, "+"+key)
		case "STEP_FINISHED":
			if !open[key] {
				t.Errorf("step %s finished, not started", key)
			}
			delete(open, key)
			out = append(out, "-"+key)
		}
	}
	if len(open) > 0 {
		t.Errorf("steps never finished: %v", open)
	}
	return out
}

type aguiMessage struct {
	ID            string `json:"id"`
	Role          string `json:"role"`
	Content       any    `json:"content"`
	ToolCallID    string `json:"toolCallId"`
	SubagentRunID string `json:"subagentRunId"`
	ToolCalls     []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"toolCalls"`
}

// roles is the messages' roles, with each assistant message's tool calls
// named: "user", "assistant(calculator)", "tool", "assistant".
func roles(ms []aguiMessage) []string {
	var out []string
	for _, m := range ms {
		r := m.Role
		if len(m.ToolCalls) > 0 {
			var names []string
			for _, c := range m.ToolCalls {
				names = append(names, c.Function.Name)
			}
			r += "(" + strings.Join(names, ",") + ")"
		}
		out = append(out, r)
	}
	return out
}

func lastText(ms []aguiMessage) string {
	for i := len(ms) - 1; i >= 0; i-- {
		if s, ok := ms[i].Content.(string); ok && ms[i].Role == "assistant" {
			return s
		}
	}
	return ""
}

// TestAGUIClient drives POST /ag-ui with @ag-ui/client's HttpAgent,
// whose verifier checks the order of every run's events: a tool call
// answered with the agent's nodes as steps, an approval approved and
// one rejected, a delegation to a sub-agent with its steps and call
// attributed to it and the task board as an activity, the declared
// capabilities, an abort mid-stream and the next message accepted, and
// client mistakes answered 4xx.
func TestAGUIClient(t *testing.T) {
	t.Parallel()
	dir := clientDir(t, "../../api/agui/testdata", "@ag-ui/client")
	subagents := filepath.Join(t.TempDir(), "subagents.json")
	if err := os.WriteFile(subagents, []byte(`{"agents": [{"name": "checker", "description": "checks sums", "tools": ["current_time", "calculator"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := serveProtocols(t, "TRELLIS_SUBAGENTS="+subagents)
	scenario := func(t *testing.T, name string) aguiReport {
		var r aguiReport
		runClient(t, "node", dir, "agui.mjs", &r, c.url, name)
		if len(r.Warnings) > 0 {
			t.Errorf("the client warned: %q", r.Warnings)
		}
		return r
	}

	t.Run("Reasoning", func(t *testing.T) {
		r := scenario(t, "think")
		if r.Error != nil {
			t.Fatalf("run failed: %s", *r.Error)
		}
		thought := []string{"REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END"}
		want := slices.Concat([]string{"RUN_STARTED"}, thought, thought,
			[]string{"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"})
		if got := slices.Compact(withoutSteps(r.Events)); !slices.Equal(got, want) {
			t.Errorf("events %v\nwant %v", got, want)
		}
		var got []string
		for _, m := range r.Messages {
			s, _ := m.Content.(string)
			got = append(got, m.Role+": "+s)
		}
		if want := []string{"user: please think it over", "reasoning: The user asks me to think; an answer will do.",
			"reasoning: Keep it short.", "assistant: Thought it over."}; !slices.Equal(got, want) {
			t.Errorf("messages %q\nwant %q", got, want)
		}
	})

	t.Run("ToolCall", func(t *testing.T) {
		r := scenario(t, "tool")
		if r.Error != nil {
			t.Fatalf("run failed: %s", *r.Error)
		}
		want := []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
			"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"}
		if got := slices.Compact(withoutSteps(r.Events)); !slices.Equal(got, want) {
			t.Errorf("events %v\nwant %v", got, want)
		}
		// The agent's nodes, as steps, in the order they ran.
		steps := stepsOf(t, r.Details)
		for _, node := range []string{"initialize", "supervisor", "execute_tool", "reflect", "synthesize", "write", "stream"} {
			if !slices.Contains(steps, "+"+node) {
				t.Errorf("no step of %s: %v", node, steps)
			}
		}
		if i, j := slices.Index(steps, "+execute_tool"), slices.Index(steps, "+write"); i < 0 || j < i {
			t.Errorf("steps out of order: %v", steps)
		}
		if got := roles(r.Messages); !slices.Equal(got, []string{"user", "assistant(current_time)", "tool", "assistant"}) {
			t.Errorf("messages %v", got)
		}
		if lastText(r.Messages) != "Done: all good." || len(r.Outcomes) != 1 || r.Outcomes[0].Outcome != "success" {
			t.Errorf("answer %q, outcomes %+v", lastText(r.Messages), r.Outcomes)
		}
		if r.State.ConversationID == "" || r.State.Status != "completed" {
			t.Errorf("state %+v", r.State)
		}
		// The thread is a Trellis conversation of the user's.
		resp := c.do(http.MethodGet, "/api/v1/conversations/"+r.State.ConversationID, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the thread as a conversation: %d", resp.StatusCode)
		}
	})

	t.Run("Approvals", func(t *testing.T) {
		r := scenario(t, "approvals")
		for i, e := range r.Errors {
			if e != nil {
				t.Errorf("run %d failed: %s", i, *e)
			}
		}
		if len(r.First) != 1 || r.First[0].Reason != "tool_call" || r.First[0].ToolCallID == "" || len(r.First[0].ResponseSchema) == 0 {
			t.Fatalf("first interrupt %+v", r.First)
		}
		if len(r.Second) != 1 || r.Second[0].ID == r.First[0].ID {
			t.Fatalf("second interrupt %+v", r.Second)
		}
		var outs []string
		for _, o := range r.Outcomes {
			outs = append(outs, o.Outcome)
		}
		if !slices.Equal(outs, []string{"interrupt", "success", "interrupt", "success"}) {
			t.Errorf("outcomes %v", outs)
		}
		want := []string{"user", "assistant(calculator)", "tool", "assistant", "user", "assistant(calculator)", "tool", "assistant"}
		if got := roles(r.Messages); !slices.Equal(got, want) {
			t.Fatalf("messages %v\nwant %v", got, want)
		}
		if got := r.Messages[2].Content; got != "4" {
			t.Errorf("the approved call's result %q, want 4", got)
		}
		if got, _ := r.Messages[6].Content.(string); !strings.Contains(got, "reject") {
			t.Errorf("the rejected call's result %q", got)
		}
		if r.Messages[2].ToolCallID != r.First[0].ToolCallID || r.Messages[6].ToolCallID != r.Second[0].ToolCallID {
			t.Errorf("results of calls %s, %s; interrupts of %s, %s", r.Messages[2].ToolCallID, r.Messages[6].ToolCallID,
				r.First[0].ToolCallID, r.Second[0].ToolCallID)
		}
	})

	t.Run("Delegation", func(t *testing.T) {
		r := scenario(t, "delegate")
		if r.Error != nil {
			t.Fatalf("run failed: %s", *r.Error)
		}
		const checker = "checker:call_d1"
		var got []string
		for _, d := range r.Details {
			switch d.Type {
			case "SUBAGENT_STARTED":
				got = append(got, d.Type+" "+d.SubagentRunID+" "+d.Name+" "+d.Description+" "+d.ParentToolCallID)
			case "SUBAGENT_FINISHED":
				got = append(got, fmt.Sprintf("%s %s %v %s", d.Type, d.SubagentRunID, d.Result, d.Outcome.Type))
			case "TOOL_CALL_START":
				got = append(got, d.Type+" "+d.ToolCallName+" "+d.SubagentRunID)
			case "ACTIVITY_SNAPSHOT":
				got = append(got, d.Type+" "+d.ActivityType)
			}
		}
		want := []string{
			"ACTIVITY_SNAPSHOT tasks",
			"TOOL_CALL_START write_todos ", "TOOL_CALL_START task ",
			"SUBAGENT_STARTED " + checker + " checker check the sums call_d1",
			"TOOL_CALL_START current_time " + checker,
			"SUBAGENT_FINISHED " + checker + " Done: all good. success",
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("no %q in %q", w, got)
			}
		}
		if i, j, k := slices.Index(got, want[3]), slices.Index(got, want[4]), slices.Index(got, want[5]); !(i < j && j < k) {
			t.Errorf("the sub-agent's events out of order: %q", got)
		}
		steps := stepsOf(t, r.Details)
		if !slices.Contains(steps, "+supervisor@"+checker) || !slices.Contains(steps, "-write@"+checker) {
			t.Errorf("the checker's nodes are not its steps: %v", steps)
		}
		for _, d := range r.Details {
			if d.Type == "ACTIVITY_SNAPSHOT" && !strings.Contains(string(d.Content), "Check the sums") {
				t.Errorf("the board as an activity: %s", d.Content)
			}
		}
		// The client keeps the checker's call as the checker's, and the
		// board as an activity message, after the run's snapshot.
		var owned, board bool
		for _, m := range r.Messages {
			owned = owned || (m.SubagentRunID == checker && len(m.ToolCalls) == 1 && m.ToolCalls[0].Function.Name == "current_time")
			board = board || m.Role == "activity"
		}
		if !owned || !board {
			t.Errorf("messages %+v: the checker's call kept as its own %v, the board kept %v", r.Messages, owned, board)
		}
		if lastText(r.Messages) != "Done: all good." {
			t.Errorf("answer %q", lastText(r.Messages))
		}
	})

	t.Run("DelegationWaitsForApproval", func(t *testing.T) {
		r := scenario(t, "delegateApproval")
		for i, e := range r.Errors {
			if e != nil {
				t.Errorf("run %d failed: %s", i, *e)
			}
		}
		const checker = "checker:call_d2"
		if len(r.First) != 1 || r.First[0].Reason != "tool_call" {
			t.Fatalf("interrupts %+v, want the checker's approval", r.First)
		}
		var got []string
		for _, d := range r.Details {
			if strings.HasPrefix(d.Type, "SUBAGENT_") {
				got = append(got, d.Type+" "+d.SubagentRunID+" "+d.Outcome.Type)
			}
		}
		want := []string{"SUBAGENT_STARTED " + checker + " ", "SUBAGENT_FINISHED " + checker + " suspended",
			"SUBAGENT_STARTED " + checker + " ", "SUBAGENT_FINISHED " + checker + " success"}
		if !slices.Equal(got, want) {
			t.Errorf("sub-agent events %q\nwant %q", got, want)
		}
		var result string
		for _, m := range r.Messages {
			if m.Role == "tool" && m.ToolCallID == r.First[0].ToolCallID {
				result, _ = m.Content.(string)
			}
		}
		if result != "4" || lastText(r.Messages) != "Done: all good." {
			t.Errorf("the approved call's result %q, answer %q", result, lastText(r.Messages))
		}
	})

	t.Run("Capabilities", func(t *testing.T) {
		var r struct {
			Capabilities struct {
				Transport struct {
					Streaming bool `json:"streaming"`
					Resumable bool `json:"resumable"`
				} `json:"transport"`
				MultiAgent struct {
					Supported bool `json:"supported"`
					Subagents []struct {
						Name        string `json:"name"`
						Description string `json:"description"`
					} `json:"subagents"`
				} `json:"multiAgent"`
				HumanInTheLoop struct {
					Approvals bool `json:"approvals"`
				} `json:"humanInTheLoop"`
			} `json:"capabilities"`
			Error    *string  `json:"error"`
			Warnings []string `json:"warnings"`
		}
		runClient(t, "node", dir, "agui.mjs", &r, c.url, "capabilities")
		if r.Error != nil {
			t.Fatalf("getCapabilities: %s", *r.Error)
		}
		caps := r.Capabilities
		if !caps.Transport.Streaming || caps.Transport.Resumable || !caps.HumanInTheLoop.Approvals || !caps.MultiAgent.Supported ||
			len(caps.MultiAgent.Subagents) != 1 || caps.MultiAgent.Subagents[0].Name != "checker" {
			t.Errorf("capabilities %+v", caps)
		}
	})

	t.Run("CancelThenNextMessage", func(t *testing.T) {
		r := scenario(t, "cancel")
		if r.Chunks < 2 || r.Error != nil {
			t.Fatalf("chunks %d before the abort; the next run: %v", r.Chunks, r.Error)
		}
		t.Logf("the next message's run took %d ms", r.MS)
		if lastText(r.Messages) != "Done: all good." {
			t.Errorf("the next message's answer %q", lastText(r.Messages))
		}
		resp := c.do(http.MethodGet, "/api/v1/conversations/"+r.State.ConversationID, nil)
		var runs struct {
			Runs []struct {
				Status string `json:"status"`
			} `json:"runs"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&runs); err != nil {
			t.Fatal(err)
		}
		if len(runs.Runs) != 2 || runs.Runs[0].Status != "cancelled" || runs.Runs[1].Status != "completed" {
			t.Errorf("runs %+v, want cancelled then completed", runs.Runs)
		}
	})

	t.Run("BadRequests", func(t *testing.T) {
		var r struct {
			Raw struct {
				Status int    `json:"status"`
				Body   string `json:"body"`
			} `json:"raw"`
			NotUser  string   `json:"notUser"`
			Waiting  int      `json:"waiting"`
			Busy     string   `json:"busy"`
			Unknown  string   `json:"unknown"`
			Warnings []string `json:"warnings"`
		}
		runClient(t, "node", dir, "agui.mjs", &r, c.url, "bad")
		if r.Raw.Status != http.StatusBadRequest || !strings.Contains(r.Raw.Body, "runId") {
			t.Errorf("no runId: %d %s", r.Raw.Status, r.Raw.Body)
		}
		if !strings.Contains(r.NotUser, "HTTP 400") {
			t.Errorf("last message not the user's: %q", r.NotUser)
		}
		if r.Waiting != 1 || !strings.Contains(r.Busy, "HTTP 409") {
			t.Errorf("new input on a thread waiting for an interrupt: %d pending, %q", r.Waiting, r.Busy)
		}
		if !strings.Contains(r.Unknown, "HTTP 404") {
			t.Errorf("resume of an unknown interrupt: %q", r.Unknown)
		}
	})
}
