package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

func TestChatStreamsARun(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			s := e.chat(map[string]any{"message": "what is 2+2?"})
			for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
				if got := s.header(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			if conv == "" || runID == "" {
				t.Fatal("no X-Conversation-ID or X-Run-ID")
			}
			evs := s.all()
			checkRun(t, evs, 1, runID, conv)
			if evs[0].Type != "run.started" || evs[0].str("request_id") == "" {
				t.Errorf("first event %s", evs[0].Raw)
			}
			if last := evs[len(evs)-1]; last.Type != "run.completed" {
				t.Fatalf("last event %s", last.Raw)
			}
			for _, want := range []string{"node.start", "supervisor.decided", "tool.start", "tool.complete", "response.chunk", "response.done"} {
				if !slices.Contains(types(evs), want) {
					t.Errorf("no %s in %v", want, types(evs))
				}
			}

			// The history shows the run with every event as sent, and both
			// messages.
			status, body := e.do("GET", "/api/v1/conversations/"+conv, nil)
			if status != http.StatusOK {
				t.Fatalf("get conversation: %d %s", status, body)
			}
			c := jsonOf[struct {
				ID       string
				Status   string
				Messages []store.Message
				Runs     []struct {
					ID          string
					Status      string
					UserMessage string `json:"user_message"`
					Events      []map[string]any
					Superseded  bool
					CompletedAt *string `json:"completed_at"`
				}
			}](t, body)
			if c.ID != conv || c.Status != "completed" || len(c.Runs) != 1 || c.Runs[0].ID != runID || c.Runs[0].Status != "completed" ||
				c.Runs[0].UserMessage != "what is 2+2?" || len(c.Runs[0].Events) != len(evs) || c.Runs[0].CompletedAt == nil {
				t.Errorf("conversation: %s", body)
			}
			if len(c.Messages) != 2 || c.Messages[0].Role != store.RoleUser || c.Messages[1].Role != store.RoleAssistant ||
				c.Messages[1].Content != "Done: all good." || c.Messages[1].RunID != runID {
				t.Errorf("messages: %+v", c.Messages)
			}

			// A second message continues the conversation.
			s2 := e.chat(map[string]any{"message": "thanks", "conversation_id": conv})
			evs2 := s2.all()
			checkRun(t, evs2, 1, s2.header("X-Run-ID"), conv)
			if s2.header("X-Conversation-ID") != conv || s2.header("X-Run-ID") == runID {
				t.Errorf("second run: conversation %s run %s", s2.header("X-Conversation-ID"), s2.header("X-Run-ID"))
			}
			status, body = e.do("GET", "/api/v1/conversations", nil)
			list := jsonOf[struct{ Conversations []store.Conversation }](t, body)
			if status != http.StatusOK || len(list.Conversations) != 1 || list.Conversations[0].Title != "2+2" {
				t.Errorf("list: %d %s", status, body)
			}
		})
	}
}

func TestChatSync(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "what is 2+2?"})
			if status != http.StatusOK {
				t.Fatalf("%d %s", status, body)
			}
			res := jsonOf[struct {
				ConversationID string `json:"conversation_id"`
				RunID          string `json:"run_id"`
				RequestID      string `json:"request_id"`
				Status         string
				Response       string
				Usage          map[string]int
				ToolCalls      []struct {
					ToolCallID string `json:"tool_call_id"`
					Tool       string
					Args       map[string]any
					Status     string
					Result     string
				} `json:"tool_calls"`
				Citations []any
				Pending   any
			}](t, body)
			if res.Status != "completed" || res.Response != "Done: all good." || res.ConversationID == "" || res.RunID == "" || res.RequestID == "" {
				t.Errorf("sync: %s", body)
			}
			if len(res.ToolCalls) != 1 || res.ToolCalls[0].Tool != "calculator" || res.ToolCalls[0].Status != "success" ||
				res.ToolCalls[0].Result != "4" || res.ToolCalls[0].Args["expression"] != "2+2" {
				t.Errorf("tool calls: %s", body)
			}
			if res.Usage["output_tokens"] == 0 || res.Usage["total_tokens"] == 0 || res.Citations == nil || res.Pending != nil {
				t.Errorf("usage, citations, pending: %s", body)
			}
			// The run is stored like a streamed one.
			r, err := e.store.GetRun(t.Context(), "alice", res.RunID)
			if err != nil || r.Status != store.RunCompleted || r.Usage.OutputTokens == 0 || r.RequestID != res.RequestID {
				t.Errorf("stored run %+v, %v", r, err)
			}
		})
	}
}

// A sync chat's run lets its events wait, to be stored with its end; a
// run that waits on a tool still shows them, in the store within
// EventDelay (a follower in another process reads them there) and to a
// stream that joins it, and the sync answer is whole.
func TestSyncRunCanBeWatchedWhileItRuns(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			answered := make(chan []byte, 1)
			go func() {
				status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "wait for it"})
				if status != http.StatusOK {
					t.Errorf("sync chat: %d %s", status, body)
				}
				answered <- body
			}()
			<-e.tools.waiting
			page, err := e.store.ListConversations(t.Context(), "alice", store.Page{})
			if err != nil || len(page.Conversations) != 1 {
				t.Fatalf("conversations %+v, %v", page, err)
			}
			conv := page.Conversations[0].ID
			run, err := e.store.LatestRun(t.Context(), "alice", conv)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the waiting run's tool.start in the store", func() bool {
				evs, err := e.store.EventsAfter(t.Context(), "alice", run.ID, 0, 0)
				return err == nil && slices.ContainsFunc(evs, func(ev store.Event) bool { return ev.Type == "tool.start" })
			})
			s := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey))
			s.until("tool.start")
			close(e.tools.release)
			s.until("run.completed")
			res := jsonOf[struct {
				Status    string
				ToolCalls []struct{ Tool, Status string } `json:"tool_calls"`
			}](t, <-answered)
			if res.Status != "completed" || len(res.ToolCalls) != 1 || res.ToolCalls[0].Tool != "wait" || res.ToolCalls[0].Status != "success" {
				t.Errorf("sync answer %+v", res)
			}
		})
	}
}

func TestLocalModeNeedsNoKey(t *testing.T) {
	e := newEnv(t, envOptions{local: true})
	status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "hello"})
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	page, err := e.store.ListConversations(t.Context(), "local", store.Page{})
	if err != nil || len(page.Conversations) != 1 {
		t.Errorf("local user's conversations: %+v, %v", page, err)
	}
}

func TestRequestIDIsTheRunsRequestID(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.open(e.request("POST", "/api/v1/chat", map[string]any{"message": "hello"}, aliceKey, "X-Request-Id", "my-req-42"))
	first, _ := s.read()
	if first.Type != "run.started" || first.str("request_id") != "my-req-42" || s.header("X-Request-Id") != "my-req-42" {
		t.Errorf("run.started %s, header %q", first.Raw, s.header("X-Request-Id"))
	}
	s.all()
}
