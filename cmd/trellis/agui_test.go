package main

import (
	"encoding/json"
	"net/http"
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

type aguiMessage struct {
	ID         string `json:"id"`
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"toolCallId"`
	ToolCalls  []struct {
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
// answered, an approval approved and one rejected, an abort mid-stream
// and the next message accepted, and client mistakes answered 4xx.
func TestAGUIClient(t *testing.T) {
	dir := clientDir(t, "../../api/agui/testdata", "@ag-ui/client")
	c := serveProtocols(t)
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
		if got := slices.Compact(slices.Clone(r.Events)); !slices.Equal(got, want) {
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
		if got := slices.Compact(slices.Clone(r.Events)); !slices.Equal(got, want) {
			t.Errorf("events %v\nwant %v", got, want)
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
