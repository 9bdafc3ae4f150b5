package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// history is GET /conversations/{id}, the fields paging concerns.
type history struct {
	Messages []store.Message `json:"messages"`
	Runs     []struct {
		ID              string            `json:"id"`
		UserMessage     string            `json:"user_message"`
		LastSeq         int64             `json:"last_seq"`
		Events          []json.RawMessage `json:"events"`
		EventsTruncated bool              `json:"events_truncated"`
	} `json:"runs"`
	NextCursor string `json:"next_cursor"`
}

type eventsPage struct {
	Events    []struct{ Seq int64 } `json:"events"`
	NextAfter int64                 `json:"next_after"`
}

// TestConversationHistoryPages: GET /conversations/{id} gives a page of
// runs with their first events and their messages, next_cursor leads to
// the next page, and .../runs/{run_id}/events gives the rest of a run.
func TestConversationHistoryPages(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			conv, long := bigRun(t, e.store, 450)
			var runs []string
			for i := range 2 {
				r, err := e.store.StartRun(t.Context(), store.NewRun{UserID: "alice", ConversationID: conv, UserMessage: fmt.Sprint("short ", i)})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.store.FinishRun(t.Context(), r.ID, store.RunEnd{Status: store.RunCompleted}); err != nil {
					t.Fatal(err)
				}
				runs = append(runs, r.ID)
			}
			get := func(path string, v any) {
				t.Helper()
				status, body := e.do("GET", path, nil)
				if status != http.StatusOK {
					t.Fatalf("GET %s: %d %s", path, status, body)
				}
				if err := json.Unmarshal(body, v); err != nil {
					t.Fatalf("GET %s: %s: %v", path, body, err)
				}
			}

			// The defaults: every run here, the long one cut.
			var h history
			get("/api/v1/conversations/"+conv, &h)
			if len(h.Runs) != 3 || h.NextCursor != "" || len(h.Messages) != 3 {
				t.Fatalf("default page: %d runs, %d messages, cursor %q; want 3, 3, none", len(h.Runs), len(h.Messages), h.NextCursor)
			}
			if r := h.Runs[0]; r.ID != long || len(r.Events) != store.DefaultEventLimit || !r.EventsTruncated || r.LastSeq != 450 {
				t.Errorf("long run: %s, %d events, truncated %v, last_seq %d; want %s, %d, true, 450", r.ID, len(r.Events), r.EventsTruncated, r.LastSeq, long, store.DefaultEventLimit)
			}
			if r := h.Runs[1]; r.ID != runs[0] || len(r.Events) != 0 || r.EventsTruncated {
				t.Errorf("short run: %+v", r)
			}

			// Pages of two runs and five events.
			h = history{}
			get("/api/v1/conversations/"+conv+"?limit=2&events_limit=5", &h)
			if len(h.Runs) != 2 || h.NextCursor == "" || len(h.Runs[0].Events) != 5 || !h.Runs[0].EventsTruncated || len(h.Messages) != 2 {
				t.Fatalf("first page: %d runs (%d events), %d messages, cursor %q", len(h.Runs), len(h.Runs[0].Events), len(h.Messages), h.NextCursor)
			}
			for _, m := range h.Messages {
				if m.RunID != long && m.RunID != runs[0] {
					t.Errorf("first page has a message of run %s, not on it", m.RunID)
				}
			}
			var h2 history
			get("/api/v1/conversations/"+conv+"?limit=2&events_limit=5&cursor="+url.QueryEscape(h.NextCursor), &h2)
			if len(h2.Runs) != 1 || h2.Runs[0].ID != runs[1] || h2.NextCursor != "" || len(h2.Messages) != 1 || h2.Messages[0].RunID != runs[1] {
				t.Errorf("second page: %+v", h2)
			}

			// The rest of the long run, 200 at a time after the first five.
			seq, pages := int64(5), 0
			for after := seq; after != 0; pages++ {
				var p eventsPage
				get(fmt.Sprintf("/api/v1/conversations/%s/runs/%s/events?after=%d&limit=200", conv, long, after), &p)
				for _, ev := range p.Events {
					if ev.Seq != seq+1 {
						t.Fatalf("event %d after %d", ev.Seq, seq)
					}
					seq = ev.Seq
				}
				after = p.NextAfter
			}
			if seq != 450 || pages != 3 {
				t.Errorf("read to event %d in %d pages, want 450 in 3", seq, pages)
			}
			var p eventsPage
			get(fmt.Sprintf("/api/v1/conversations/%s/runs/%s/events?after=450", conv, long), &p)
			if len(p.Events) != 0 || p.NextAfter != 0 {
				t.Errorf("after the last event: %+v, want none", p)
			}
		})
	}
}

// TestReplayAcrossPages: a live run with more stored events than a page
// is replayed whole, then followed live, with no gap and no repeat; a
// stream that meets a gap in its live events fills it from the store,
// page by page.
func TestReplayAcrossPages(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			noLeaks(t)
			e := newEnv(t, envOptions{backend: b})
			live := e.chat(map[string]any{"message": "wait for it"})
			conv, runID := live.header("X-Conversation-ID"), live.header("X-Run-ID")
			live.until("tool.start")
			<-e.tools.waiting
			// Events stored but never published here, as another
			// process's would be: more than two pages of them.
			const extra = 600
			evs := make([]store.NewEvent, extra)
			for i := range evs {
				evs[i] = store.NewEvent{RunID: runID, Type: "tool.progress", Data: json.RawMessage(fmt.Sprintf(
					`{"type":"tool.progress","run_id":%q,"conversation_id":%q,"ts":"2026-11-24T06:00:00Z","progress":%d}`, runID, conv, i))}
			}
			if _, err := e.store.AppendEvents(t.Context(), evs); err != nil {
				t.Fatal(err)
			}
			r, err := e.store.GetRun(t.Context(), "alice", runID)
			if err != nil {
				t.Fatal(err)
			}
			// The replay reaches the last stored event before the run
			// publishes anything more.
			replay := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, e.key, "Last-Event-ID", "0"))
			for {
				ev, ok := replay.read()
				if !ok {
					t.Fatalf("the replay ended at event %d, before the last stored, %d", len(replay.events), r.LastSeq)
				}
				if ev.ID == r.LastSeq {
					break
				}
			}
			close(e.tools.release)
			replayed, followed := replay.all(), live.all()
			checkRun(t, replayed, 1, runID, conv)
			checkRun(t, followed, 1, runID, conv)
			if len(replayed) != len(followed) || len(replayed) < extra+5 || replayed[len(replayed)-1].Type != "run.completed" {
				t.Errorf("replayed %d events, followed %d; want the same, over %d, ending run.completed", len(replayed), len(followed), extra)
			}
			e.close()
		})
	}
}
