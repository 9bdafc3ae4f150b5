package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// aisdkReport is what api/aisdk/testdata/aisdk.mjs prints of one
// scenario.
type aisdkReport struct {
	Chat     string         `json:"chat"`
	Status   string         `json:"status"`
	Error    string         `json:"error"`
	Messages []aisdkMessage `json:"messages"`
	// Shown is the messages before the scenario answered.
	Shown    []aisdkMessage `json:"shown"`
	Finishes []struct {
		IsAbort bool `json:"isAbort"`
		IsError bool `json:"isError"`
	} `json:"finishes"`
	Warnings []string `json:"warnings"`
	Rounds   []struct {
		AskedID, AnsweredID, ApprovalID string
	} `json:"rounds"`
	Failed  string `json:"failed"`
	Stopped string `json:"stopped"`
	MS      int    `json:"ms"`
	Before  string `json:"before"`
	Idle    int    `json:"idle"`
	Unknown int    `json:"unknown"`
	Raw     map[string]struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	} `json:"raw"`
}

// aisdkMessage is a message of the chat, as aisdk.mjs prints it.
type aisdkMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Text  string   `json:"text"`
	Parts []string `json:"parts"`
	// Reasoning is the text of each reasoning part.
	Reasoning []string `json:"reasoning"`
	Tools     []struct {
		ToolName   string          `json:"toolName"`
		ToolCallID string          `json:"toolCallId"`
		State      string          `json:"state"`
		Input      json.RawMessage `json:"input"`
		Output     any             `json:"output"`
		ErrorText  string          `json:"errorText"`
	} `json:"tools"`
}

// TestAISDKClient drives POST /api/ai-sdk/chat and GET …/{id}/stream
// with the ai package's AbstractChat and DefaultChatTransport, ai 7 and
// ai 5: a tool call answered, approvals approved and rejected (ai 7;
// ai 5 gets a text), stop() mid-stream and the next message accepted, a
// stream resumed after a reload, and client mistakes answered 4xx.
func TestAISDKClient(t *testing.T) {
	t.Parallel()
	dir := clientDir(t, "../../api/aisdk/testdata", "ai5")
	node := filepath.Join(dir, "node_modules", "node22", "bin", "node") // ai 7 needs Node 22
	c := serveProtocols(t)
	scenario := func(t *testing.T, version, name string) aisdkReport {
		var r aisdkReport
		runClient(t, node, dir, "aisdk.mjs", &r, version, c.url, name)
		if len(r.Warnings) > 0 {
			t.Errorf("the client warned: %q", r.Warnings)
		}
		return r
	}
	for _, v := range []string{"7", "5"} {
		t.Run("ai"+v, func(t *testing.T) {
			t.Run("ToolCall", func(t *testing.T) {
				r := scenario(t, v, "tool")
				if r.Status != "ready" || r.Error != "" || len(r.Messages) != 2 {
					t.Fatalf("status %q, error %q, %d messages", r.Status, r.Error, len(r.Messages))
				}
				a := r.Messages[1]
				if len(a.Tools) != 1 || a.Tools[0].ToolName != "current_time" || a.Tools[0].State != "output-available" || a.Tools[0].Output == "" {
					t.Errorf("tool parts %+v", a.Tools)
				}
				if a.Text != "Done: all good." || a.Parts[0] != "step-start" {
					t.Errorf("answer %q, parts %v", a.Text, a.Parts)
				}
			})

			t.Run("Reasoning", func(t *testing.T) {
				r := scenario(t, v, "think")
				if r.Status != "ready" || r.Error != "" || len(r.Messages) != 2 {
					t.Fatalf("status %q, error %q, %d messages", r.Status, r.Error, len(r.Messages))
				}
				a := r.Messages[1]
				// One step per model call: the supervisor's reasoning,
				// then write's reasoning and text.
				if want := []string{"step-start", "reasoning", "step-start", "reasoning", "text"}; !slices.Equal(a.Parts, want) {
					t.Errorf("parts %v, want %v", a.Parts, want)
				}
				if want := []string{"The user asks me to think; an answer will do.", "Keep it short."}; !slices.Equal(a.Reasoning, want) {
					t.Errorf("reasoning %q, want %q", a.Reasoning, want)
				}
				if a.Text != "Thought it over." {
					t.Errorf("answer %q", a.Text)
				}
			})

			t.Run("CancelThenNextMessage", func(t *testing.T) {
				r := scenario(t, v, "cancel")
				if r.Error != "" || len(r.Finishes) != 2 || !r.Finishes[0].IsAbort || r.Finishes[1].IsAbort {
					t.Fatalf("error %q, finishes %+v", r.Error, r.Finishes)
				}
				if strings.Contains(r.Stopped, "twenty") {
					t.Errorf("the stopped answer went to its end: %q", r.Stopped)
				}
				if last := r.Messages[len(r.Messages)-1]; last.Text != "Done: all good." {
					t.Errorf("the next message's answer %q", last.Text)
				}
				t.Logf("the next message's answer took %d ms", r.MS)
				if got := runStatuses(t, c, r.Chat); !slices.Equal(got, []string{"cancelled", "completed"}) {
					t.Errorf("runs %v, want cancelled then completed", got)
				}
			})

			t.Run("Resume", func(t *testing.T) {
				r := scenario(t, v, "resume")
				if r.Error != "" || len(r.Messages) != 2 {
					t.Fatalf("error %q, messages %+v", r.Error, r.Messages)
				}
				if got := r.Messages[1].Text; !strings.HasPrefix(got, "one two three") || !strings.HasSuffix(got, "twenty") {
					t.Errorf("the resumed answer %q (before the reload: %q)", got, r.Before)
				}
				if got := runStatuses(t, c, r.Chat); !slices.Equal(got, []string{"completed"}) {
					t.Errorf("runs %v: the reload must not cancel the run that was resumed", got)
				}
				if r.Idle != http.StatusNoContent || r.Unknown != http.StatusNoContent {
					t.Errorf("an idle chat's stream %d, an unknown chat's %d; want 204", r.Idle, r.Unknown)
				}
			})

			t.Run("BadRequests", func(t *testing.T) {
				r := scenario(t, v, "bad")
				for name, raw := range r.Raw {
					if raw.Status != http.StatusBadRequest || !strings.Contains(raw.Body, `"error"`) {
						t.Errorf("%s: %d %s", name, raw.Status, raw.Body)
					}
				}
				if len(r.Raw) != 4 || r.Status != "error" || !strings.Contains(r.Error, "approvals") {
					t.Errorf("%d raw requests; the chat: status %q, error %q", len(r.Raw), r.Status, r.Error)
				}
			})
		})
	}

	t.Run("ai7/Approvals", func(t *testing.T) {
		r := scenario(t, "7", "approvals")
		if r.Failed != "" || r.Error != "" || len(r.Rounds) != 2 {
			t.Fatalf("failed %q, error %q, rounds %+v", r.Failed, r.Error, r.Rounds)
		}
		for _, round := range r.Rounds {
			if round.AskedID != round.AnsweredID {
				t.Errorf("the answer came in message %s, not the one that asked (%s)", round.AnsweredID, round.AskedID)
			}
		}
		var roles []string
		for _, m := range r.Messages {
			roles = append(roles, m.Role)
		}
		if !slices.Equal(roles, []string{"user", "assistant", "user", "assistant"}) {
			t.Fatalf("messages %v", roles)
		}
		approved, rejected := r.Messages[1], r.Messages[3]
		if len(approved.Tools) != 1 || approved.Tools[0].State != "output-available" || approved.Tools[0].Output != "4" || approved.Text != "Done: all good." {
			t.Errorf("approved: %+v %q", approved.Tools, approved.Text)
		}
		if len(rejected.Tools) != 1 || rejected.Tools[0].State != "output-denied" || rejected.Text != "Done: all good." {
			t.Errorf("rejected: %+v %q", rejected.Tools, rejected.Text)
		}
	})

	t.Run("ai5/ApprovalAsText", func(t *testing.T) {
		r := scenario(t, "5", "approvalText")
		if r.Status != "ready" || r.Error != "" || len(r.Messages) != 2 {
			t.Fatalf("status %q, error %q, messages %+v", r.Status, r.Error, r.Messages)
		}
		a := r.Messages[1]
		if len(a.Tools) != 1 || a.Tools[0].ToolName != "calculator" || a.Tools[0].State != "input-available" || !strings.Contains(a.Text, "waits for approval") {
			t.Errorf("tools %+v, text %q", a.Tools, a.Text)
		}
	})
}

// runStatuses is the statuses of the conversation's runs, oldest first,
// read through the native API.
func runStatuses(t *testing.T, c *child, conversationID string) []string {
	t.Helper()
	resp := c.do(http.MethodGet, "/api/v1/conversations/"+conversationID, nil)
	var body struct {
		Runs []struct {
			Status string `json:"status"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("conversation %s: %d %v", conversationID, resp.StatusCode, err)
	}
	var out []string
	for _, r := range body.Runs {
		out = append(out, r.Status)
	}
	return out
}
