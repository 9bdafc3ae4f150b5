package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/events"
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

// TestListPagesBoundedByBytes: GET /approvals/pending and GET
// /documents/{conversation_id} stop a page at store.PageBytes, however
// many its limit allows, with a next_cursor that goes on without losing
// or repeating an item; a bad cursor or limit is 400.
func TestListPagesBoundedByBytes(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newDocEnv(t, b, ingest.Config{})
			ctx := t.Context()
			c, err := e.store.CreateConversation(ctx, store.NewConversation{UserID: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			r, err := e.store.StartRun(ctx, store.NewRun{UserID: "alice", ConversationID: c.ID, UserMessage: "write them"})
			if err != nil {
				t.Fatal(err)
			}
			docs := e.store.(store.Documents)
			large := strings.Repeat("x", store.PageBytes*2/5)
			var approvals, documents []string
			for i := range 4 {
				a, err := e.store.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: r.ID, Kind: events.PendingApproval,
					Approval: store.Approval{Tool: "write", Args: json.RawMessage(fmt.Sprintf(`{"content":%q}`, large))}})
				if err != nil {
					t.Fatal(err)
				}
				d, err := docs.CreateDocument(ctx, store.NewDocument{UserID: "alice", ConversationID: c.ID, Filename: fmt.Sprint(i, ".md"), ContentType: "text/markdown", SizeBytes: 1})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := docs.FinishDocument(ctx, d.ID, large); err != nil {
					t.Fatal(err)
				}
				approvals, documents = append(approvals, a.ID), append(documents, d.ID)
			}
			pages := func(path, key, id string) []string {
				t.Helper()
				var got []string
				for cursor, n := "", 0; ; n++ {
					req := e.request("GET", path+"limit=200&cursor="+url.QueryEscape(cursor), nil, e.key)
					res, err := e.ts.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						t.Fatalf("GET %s: %d %s", path, res.StatusCode, body)
					}
					// The body is API.md's, the list alone; the next page
					// is named in a header.
					var p map[string][]map[string]any
					if err := json.Unmarshal(body, &p); err != nil || len(p) != 1 {
						t.Fatalf("GET %s: %s: %v", path, body, err)
					}
					items := p[key]
					if len(items) == 0 || len(body) > store.PageBytes+len(large)+64<<10 {
						t.Errorf("GET %s page %d: %d items, %d bytes; want some, at most a page and one item", path, n+1, len(items), len(body))
					}
					for _, it := range items {
						got = append(got, it[id].(string))
					}
					if cursor = res.Header.Get("X-Next-Cursor"); cursor == "" {
						if n == 0 {
							t.Errorf("GET %s: every item in one page", path)
						}
						return got
					}
				}
			}
			if got := pages("/api/v1/approvals/pending?", "approvals", "approval_id"); !slices.Equal(got, approvals) {
				t.Errorf("pending approvals paged through: %v, want %v", got, approvals)
			}
			if got := pages("/api/v1/documents/"+c.ID+"?", "documents", "document_id"); !slices.Equal(got, documents) {
				t.Errorf("documents paged through: %v, want %v", got, documents)
			}
			for _, path := range []string{"/api/v1/approvals/pending?cursor=nonsense", "/api/v1/uncertain-calls/pending?limit=-1",
				"/api/v1/documents/" + c.ID + "?cursor=nonsense"} {
				status, body := e.do("GET", path, nil)
				wantError(t, status, body, http.StatusBadRequest)
			}
		})
	}
}

// TestLangGraphHistoryBoundedByBytes: a page of POST
// /langgraph/threads/{id}/history stops at store.PageBytes of the
// states' messages, however many its limit allows, and paging on with
// before gives every checkpoint once, in order.
func TestLangGraphHistoryBoundedByBytes(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) { c.Runs.MaxMessageRunes = store.PageBytes }})
			big := strings.Repeat("w", store.PageBytes/4)
			conv := ""
			for range 3 {
				body := map[string]any{"message": big}
				if conv != "" {
					body["conversation_id"] = conv
				}
				status, res := e.do("POST", "/api/v1/chat/sync", body)
				if status != http.StatusOK {
					t.Fatalf("chat: %d %.300s", status, res)
				}
				conv = jsonOf[struct {
					ConversationID string `json:"conversation_id"`
				}](t, res).ConversationID
			}
			type state struct {
				Checkpoint struct {
					CheckpointID string `json:"checkpoint_id"`
				} `json:"checkpoint"`
			}
			// pages returns the checkpoints a page at a time, the largest
			// page's size, and how many pages there were.
			pages := func(limit int) (ids []string, largest, n int) {
				before := map[string]any(nil)
				for {
					status, res := e.do("POST", "/langgraph/threads/"+conv+"/history", map[string]any{"limit": limit, "before": before})
					if status != http.StatusOK {
						t.Fatalf("history: %d %.300s", status, res)
					}
					page := jsonOf[[]state](t, res)
					if len(page) == 0 {
						return ids, largest, n
					}
					n, largest = n+1, max(largest, len(res))
					for _, s := range page {
						ids = append(ids, s.Checkpoint.CheckpointID)
					}
					before = map[string]any{"configurable": map[string]any{"checkpoint_id": ids[len(ids)-1]}}
				}
			}
			one, single, _ := pages(1)
			got, largest, n := pages(100)
			if !slices.Equal(got, one) || len(one) < 3 {
				t.Fatalf("pages of 100 gave checkpoints %v, pages of one %v", got, one)
			}
			if n < 2 || largest > store.PageBytes+2*single {
				t.Errorf("%d checkpoints in %d pages of up to %d bytes; want more than one page, each at most a page and one state (%d)", len(got), n, largest, single)
			}
		})
	}
}

// A history's before that no checkpoint can have (a NUL, bytes that are
// not UTF-8; JSON carries only the NUL) is refused with 400 on both
// backends; one that is merely unknown bounds the page as an id does.
func TestLangGraphHistoryBeforeNoCheckpointHas(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			_, conv, _ := e.turn("", "hello")
			for _, before := range []string{"a\x00b", "\xff"} {
				status, res := e.do("GET", "/langgraph/threads/"+conv+"/history?before="+url.QueryEscape(before), nil)
				wantError(t, status, res, http.StatusBadRequest)
			}
			status, res := e.do("POST", "/langgraph/threads/"+conv+"/history",
				map[string]any{"before": map[string]any{"configurable": map[string]any{"checkpoint_id": "a\x00b"}}})
			wantError(t, status, res, http.StatusBadRequest)
			status, res = e.do("GET", "/langgraph/threads/"+conv+"/history?before=zzz", nil)
			if status != http.StatusOK || len(jsonOf[[]any](t, res)) == 0 {
				t.Errorf("history before zzz: %d %.300s", status, res)
			}
		})
	}
}

// TestLangGraphSearchBoundedByBytes: POST /langgraph/threads/search
// lists every thread its limit allows, but gives their values (each
// the conversation so far) only while the page stays within
// store.PageBytes; the first always has them.
func TestLangGraphSearchBoundedByBytes(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) { c.Runs.MaxMessageRunes = store.PageBytes }})
			big := strings.Repeat("w", store.PageBytes*2/5)
			var convs []string
			for range 4 {
				status, res := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": big})
				if status != http.StatusOK {
					t.Fatalf("chat: %d %.300s", status, res)
				}
				convs = append(convs, jsonOf[struct {
					ConversationID string `json:"conversation_id"`
				}](t, res).ConversationID)
			}
			status, res := e.do("POST", "/langgraph/threads/search", map[string]any{"limit": 10})
			if status != http.StatusOK {
				t.Fatalf("search: %d %.300s", status, res)
			}
			threads := jsonOf[[]struct {
				ThreadID string          `json:"thread_id"`
				Values   json.RawMessage `json:"values"`
			}](t, res)
			var listed, withValues []string
			for _, th := range threads {
				listed = append(listed, th.ThreadID)
				if string(th.Values) != "null" {
					withValues = append(withValues, th.ThreadID)
				}
			}
			slices.Reverse(convs) // newest first
			if !slices.Equal(listed, convs) {
				t.Errorf("search listed %v, want every thread, newest first: %v", listed, convs)
			}
			if len(withValues) == 0 || withValues[0] != convs[0] || len(withValues) == len(convs) || len(res) > store.PageBytes+len(big)+64<<10 {
				t.Errorf("search: %d bytes, values of %v; want those of the first threads only, within a page and one state", len(res), withValues)
			}
		})
	}
}
