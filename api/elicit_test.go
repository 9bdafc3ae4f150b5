package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// toolResult returns the result of the run's tool.complete.
func toolResult(t testing.TB, evs []event) string {
	t.Helper()
	for _, ev := range evs {
		if ev.Type == "tool.complete" {
			return ev.str("result")
		}
	}
	t.Fatalf("no tool.complete in %v", types(evs))
	return ""
}

func TestElicitationAnswered(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			s := e.chat(map[string]any{"message": "ask me my name"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			req := s.until("elicitation.request")
			id := req.str("elicitation_id")
			if id == "" || req.str("message") != "What is your name?" || req.str("source") != "ask" || req.Data["schema"] == nil {
				t.Fatalf("elicitation.request %s", req.Raw)
			}
			status, body := e.do("GET", "/api/v1/elicitation/pending?conversation_id="+conv, nil)
			pending := jsonOf[struct {
				Elicitations []struct {
					ID    string `json:"elicitation_id"`
					RunID string `json:"run_id"`
				}
			}](t, body)
			if status != 200 || len(pending.Elicitations) != 1 || pending.Elicitations[0].ID != id || pending.Elicitations[0].RunID != runID {
				t.Fatalf("pending: %d %s", status, body)
			}
			// Another user cannot answer it.
			status, body = e.doAs(bobKey, "POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "accept", "content": map[string]any{"name": "Bob"}})
			wantError(t, status, body, http.StatusNotFound)
			// Content that fails the schema is refused and changes nothing.
			before := e.snapshot()
			for _, bad := range []map[string]any{{}, {"name": ""}, {"name": 7}} {
				status, body = e.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "accept", "content": bad})
				wantError(t, status, body, http.StatusUnprocessableEntity)
			}
			if after := e.snapshot(); after != before {
				t.Errorf("a refused answer changed the store:\n%s\n%s", before, after)
			}
			status, body = e.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "accept", "content": map[string]any{"name": "Ada"}})
			if status != 200 {
				t.Fatalf("respond: %d %s", status, body)
			}
			status, body = e.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "decline"})
			wantError(t, status, body, http.StatusConflict)

			evs := s.all()
			checkRun(t, evs, 1, runID, conv)
			if got := toolResult(t, evs); got != "hello Ada" {
				t.Errorf("tool result %q", got)
			}
			if resp := s.events[indexOf(evs, "elicitation.response")]; resp.str("action") != "accept" || resp.str("elicitation_id") != id {
				t.Errorf("elicitation.response %s", resp.Raw)
			}
			el, err := e.store.GetHumanRequest(t.Context(), events.PendingElicitation, "alice", id)
			if err != nil || el.Status != store.HumanAccepted || !strings.Contains(string(el.Elicitation.Content), "Ada") {
				t.Errorf("stored %+v %v", el, err)
			}
		})
	}
}

func indexOf(evs []event, typ string) int {
	for i, ev := range evs {
		if ev.Type == typ {
			return i
		}
	}
	return -1
}

func TestElicitationDeclined(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.chat(map[string]any{"message": "ask me my name"})
	id := s.until("elicitation.request").str("elicitation_id")
	status, body := e.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "decline"})
	if status != 200 {
		t.Fatalf("decline: %d %s", status, body)
	}
	evs := s.all()
	if got := toolResult(t, evs); got != "the user would not say (decline)" {
		t.Errorf("tool result %q", got)
	}
	if el, _ := e.store.GetHumanRequest(t.Context(), events.PendingElicitation, "alice", id); el.Status != store.HumanDeclined {
		t.Errorf("stored status %s", el.Status)
	}
}

// A question nobody answers in time parks the run, as an approval does;
// the question stays pending, and an answer given later resumes the run,
// whose tool is asked again and takes the answer at once.
func TestElicitationNotAnsweredInTimeParks(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			noLeaks(t)
			e := newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) { c.Runs.ElicitTimeout = 100 * time.Millisecond }})
			s := e.chat(map[string]any{"message": "ask me my name"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			id := s.until("elicitation.request").str("elicitation_id")
			evs := s.all() // nobody answers
			last := evs[len(evs)-1]
			if last.Type != "run.interrupted" || last.str("reason") != "elicitation" || indexOf(evs, "elicitation.response") >= 0 {
				t.Fatalf("stream: %v %s", types(evs), last.Raw)
			}
			if r, err := e.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunInterrupted || r.InterruptReason != events.PendingElicitation {
				t.Fatalf("run %+v %v", r, err)
			}
			if el, _ := e.store.GetHumanRequest(t.Context(), events.PendingElicitation, "alice", id); el.Status != store.HumanPending {
				t.Fatalf("stored status %s, want pending", el.Status)
			}
			// A new message waits for the answer.
			status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "hello", "conversation_id": conv})
			wantError(t, status, body, http.StatusConflict)
			// Content that fails the schema is refused and changes nothing.
			status, body = e.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "accept", "content": map[string]any{"name": 7}})
			wantError(t, status, body, http.StatusUnprocessableEntity)

			status, body = e.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "accept", "content": map[string]any{"name": "Late"}})
			if status != http.StatusOK {
				t.Fatalf("respond: %d %s", status, body)
			}
			status, body = e.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "decline"})
			wantError(t, status, body, http.StatusConflict)
			w := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey, "Last-Event-ID", strconv.FormatInt(last.ID, 10)))
			rest := w.all()
			checkRun(t, rest, last.ID+1, runID, conv)
			if rest[0].Type != "elicitation.response" || rest[0].str("action") != "accept" || rest[len(rest)-1].Type != "run.completed" {
				t.Fatalf("resumed: %v", types(rest))
			}
			if got := toolResult(t, rest); got != "hello Late" {
				t.Errorf("tool result %q", got)
			}
			if el, _ := e.store.GetHumanRequest(t.Context(), events.PendingElicitation, "alice", id); el.Status != store.HumanAccepted {
				t.Errorf("stored status %s", el.Status)
			}
			e.close()
		})
	}
}

func TestElicitationCancelled(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.chat(map[string]any{"message": "ask me my name"})
	id := s.until("elicitation.request").str("elicitation_id")
	status, body := e.doAs(bobKey, "DELETE", "/api/v1/elicitation/"+id, nil)
	wantError(t, status, body, http.StatusNotFound)
	status, body = e.do("DELETE", "/api/v1/elicitation/"+id, nil)
	if status != http.StatusNoContent {
		t.Fatalf("cancel: %d %s", status, body)
	}
	evs := s.all()
	if resp := evs[indexOf(evs, "elicitation.response")]; resp.str("action") != "cancel" {
		t.Errorf("elicitation.response %s", resp.Raw)
	}
	if el, _ := e.store.GetHumanRequest(t.Context(), events.PendingElicitation, "alice", id); el.Status != store.HumanCancelled {
		t.Errorf("stored status %s", el.Status)
	}
	status, body = e.do("DELETE", "/api/v1/elicitation/"+id, nil)
	wantError(t, status, body, http.StatusConflict)
}

func TestCancelWhileAToolAsks(t *testing.T) {
	noLeaks(t)
	e := newEnv(t, envOptions{})
	s := e.chat(map[string]any{"message": "ask me my name"})
	conv := s.header("X-Conversation-ID")
	id := s.until("elicitation.request").str("elicitation_id")
	if status, body := e.do("POST", "/api/v1/conversations/"+conv+"/cancel", nil); status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", status, body)
	}
	evs := s.all()
	if evs[len(evs)-1].Type != "run.cancelled" {
		t.Errorf("run: %v", types(evs))
	}
	if el, _ := e.store.GetHumanRequest(t.Context(), events.PendingElicitation, "alice", id); el.Status == store.HumanPending {
		t.Errorf("the elicitation of a cancelled run is still pending")
	}
	e.close()
}
