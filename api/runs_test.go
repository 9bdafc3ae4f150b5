package api_test

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/store"
)

// noLeaks checks, after every other cleanup of the test (registered
// later, so run earlier), that the test left no goroutine behind.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func TestSecondRunOnAConversationConflicts(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.chat(map[string]any{"message": "wait for it"})
	conv := s.header("X-Conversation-ID")
	<-e.tools.waiting
	s.until("tool.start") // stored: the run is quiet while its tool waits
	before := e.snapshot()
	for _, path := range []string{"/api/v1/chat", "/api/v1/chat/sync"} {
		status, body := e.do("POST", path, map[string]any{"message": "hello", "conversation_id": conv})
		wantError(t, status, body, http.StatusConflict)
		if code := jsonOf[apiError](t, body).Error.Code; code != "run_active" {
			t.Errorf("%s: code %q", path, code)
		}
	}
	if after := e.snapshot(); after != before {
		t.Errorf("a refused run changed the store:\n%s\n%s", before, after)
	}
	close(e.tools.release)
	checkRun(t, s.all(), 1, s.header("X-Run-ID"), conv)
}

func TestCancelMidTool(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			noLeaks(t)
			e := newEnv(t, envOptions{backend: b})
			s := e.chat(map[string]any{"message": "wait for it"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			s.until("tool.start")
			<-e.tools.waiting
			status, body := e.do("POST", "/api/v1/conversations/"+conv+"/cancel", nil)
			if status != http.StatusAccepted {
				t.Fatalf("cancel: %d %s", status, body)
			}
			if r := jsonOf[map[string]string](t, body); r["status"] != "cancelling" || r["run_id"] != runID {
				t.Errorf("cancel answer %s", body)
			}
			evs := s.all()
			checkRun(t, evs, 1, runID, conv)
			if last := evs[len(evs)-1]; last.Type != "run.cancelled" {
				t.Fatalf("last event %s", last.Raw)
			}
			r, err := e.store.GetRun(t.Context(), "alice", runID)
			if err != nil || r.Status != store.RunCancelled || r.CompletedAt == nil {
				t.Errorf("stored run %+v %v", r, err)
			}
			// Nothing runs now.
			status, body = e.do("POST", "/api/v1/conversations/"+conv+"/cancel", nil)
			wantError(t, status, body, http.StatusConflict)
			// The conversation goes on from its checkpoint.
			s2 := e.chat(map[string]any{"message": "hello again", "conversation_id": conv})
			evs2 := s2.all()
			if evs2[len(evs2)-1].Type != "run.completed" {
				t.Errorf("next run: %v", types(evs2))
			}
			e.close()
		})
	}
}

func TestReconnectWithLastEventIDLosesNothing(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			s := e.chat(map[string]any{"message": "answer slowly"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			first := s.until("response.chunk") // mid-answer
			got := slices.Clone(s.events)
			s.close() // the client drops

			// Reconnect with Last-Event-ID, once by header and once by ?after=.
			r := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey, "Last-Event-ID", strconv.FormatInt(first.ID, 10)))
			if r.header("X-Run-ID") != runID || r.header("X-Conversation-ID") != conv {
				t.Errorf("stream headers %v", r.resp.Header)
			}
			rest := r.all()
			all := append(got, rest...)
			checkRun(t, all, 1, runID, conv)
			if all[len(all)-1].Type != "run.completed" {
				t.Fatalf("ended with %s", all[len(all)-1].Type)
			}
			var text strings.Builder
			for _, ev := range all {
				if ev.Type == "response.chunk" {
					text.WriteString(ev.str("content"))
				}
			}
			if !strings.HasPrefix(text.String(), "one two three") || !strings.HasSuffix(text.String(), "twelve") {
				t.Errorf("answer from chunks: %q", text.String())
			}
			// The replay is what the store holds, byte for byte.
			stored, err := e.store.EventsAfter(t.Context(), "alice", runID, 0, store.MaxEventLimit)
			if err != nil || len(stored) != len(all) {
				t.Fatalf("stored %d events, %v; streamed %d", len(stored), err, len(all))
			}
			for i := range stored {
				if string(stored[i].Data) != all[i].Raw {
					t.Errorf("event %d: stored %s, streamed %s", i+1, stored[i].Data, all[i].Raw)
				}
			}
			again := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream?after=3", nil, aliceKey)).all()
			checkRun(t, again, 4, runID, conv)
			// After the terminal event there is nothing more: 204 stops
			// an EventSource from reconnecting.
			resp, err := e.ts.Client().Do(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey,
				"Last-Event-ID", strconv.FormatInt(all[len(all)-1].ID, 10)))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Errorf("stream after the end: %d", resp.StatusCode)
			}
		})
	}
}

func TestDisconnectDoesNotCancelTheRun(t *testing.T) {
	noLeaks(t)
	e := newEnv(t, envOptions{})
	s := e.chat(map[string]any{"message": "wait for it"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	<-e.tools.waiting
	s.close()
	close(e.tools.release) // the tool finishes after the client left
	r := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey))
	evs := r.all()
	checkRun(t, evs, 1, runID, conv)
	if evs[len(evs)-1].Type != "run.completed" {
		t.Errorf("run: %v", types(evs))
	}
	e.close()
}

func TestCancelOnDisconnect(t *testing.T) {
	noLeaks(t)
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) { c.Runs.CancelOnDisconnect = true }})
	s := e.chat(map[string]any{"message": "wait for it"})
	runID := s.header("X-Run-ID")
	<-e.tools.waiting
	s.close()
	// Watching again shows how the run ended.
	evs := e.open(e.request("GET", "/api/v1/conversations/"+s.header("X-Conversation-ID")+"/stream", nil, aliceKey)).all()
	if last := evs[len(evs)-1]; last.Type != "run.cancelled" {
		t.Errorf("run: %v", types(evs))
	}
	if r, err := e.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunCancelled {
		t.Errorf("stored run %+v %v", r, err)
	}
	e.close()
}

func TestApprovalAnsweredOnTheOpenStream(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			s := e.chat(map[string]any{"message": "please delete /tmp/a.txt"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			req := s.until("approval.required")
			id := req.str("approval_id")
			if id == "" || req.str("tool") != "delete_file" {
				t.Fatalf("approval.required %s", req.Raw)
			}
			status, body := e.do("GET", "/api/v1/approvals/pending?conversation_id="+conv, nil)
			pending := jsonOf[struct {
				Approvals []struct {
					ID    string `json:"approval_id"`
					RunID string `json:"run_id"`
				}
			}](t, body)
			if status != 200 || len(pending.Approvals) != 1 || pending.Approvals[0].ID != id || pending.Approvals[0].RunID != runID {
				t.Fatalf("pending: %d %s", status, body)
			}
			status, body = e.do("POST", "/api/v1/approvals/"+id, map[string]any{"decision": "approve"})
			if status != 200 {
				t.Fatalf("approve: %d %s", status, body)
			}
			if r := jsonOf[map[string]string](t, body); r["status"] != "processed" || r["approval_id"] != id || r["decision"] != "approve" {
				t.Errorf("approve answer %s", body)
			}
			// A second answer loses.
			status, body = e.do("POST", "/api/v1/approvals/"+id, map[string]any{"decision": "reject"})
			wantError(t, status, body, http.StatusConflict)

			evs := s.all()
			checkRun(t, evs, 1, runID, conv)
			if slices.Contains(types(evs), "run.interrupted") || evs[len(evs)-1].Type != "run.completed" {
				t.Fatalf("the run should go on seamlessly: %v", types(evs))
			}
			if !slices.Contains(types(evs), "approval.resolved") {
				t.Errorf("no approval.resolved: %v", types(evs))
			}
			if got := <-e.tools.deleted; got != "/tmp/a.txt" {
				t.Errorf("deleted %q", got)
			}
			a, err := e.store.GetHumanRequest(t.Context(), events.PendingApproval, "alice", id)
			if err != nil || a.Status != store.HumanApproved {
				t.Errorf("stored approval %+v %v", a, err)
			}
		})
	}
}

func TestApprovalAfterTheClientLeft(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			noLeaks(t)
			// Watching the run keeps it waiting; InterruptAfter bounds the
			// wait, in case the watcher below joins before the server sees
			// the first stream go.
			e := newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) { c.Runs.InterruptAfter = 300 * time.Millisecond }})
			s := e.chat(map[string]any{"message": "please delete /tmp/a.txt"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			id := s.until("approval.required").str("approval_id")
			s.close() // nobody watches: the run parks
			seen := s.events
			again := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey,
				"Last-Event-ID", strconv.FormatInt(seen[len(seen)-1].ID, 10))).all()
			parkedAt := again[len(again)-1]
			if parkedAt.Type != "run.interrupted" || parkedAt.str("reason") != "approval" || !strings.Contains(parkedAt.Raw, id) {
				t.Fatalf("parked with %s", parkedAt.Raw)
			}
			if r, err := e.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunInterrupted || r.InterruptReason != events.PendingApproval {
				t.Fatalf("parked run %+v %v", r, err)
			}
			// A watcher with no event of the run replays the parked
			// segment from the run's first event to its run.interrupted.
			parked := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey)).all()
			checkRun(t, parked, 1, runID, conv)
			if last := parked[len(parked)-1]; last.ID != parkedAt.ID {
				t.Errorf("the parked run's stream ended at %s, want its run.interrupted", last.Raw)
			}
			// A new message is refused while the approval waits.
			status, body := e.do("POST", "/api/v1/chat", map[string]any{"message": "hello", "conversation_id": conv})
			wantError(t, status, body, http.StatusConflict)

			status, body = e.do("POST", "/api/v1/approvals/"+id, map[string]any{"decision": "edit", "args": map[string]any{"path": "/tmp/b.txt"}})
			if status != 200 {
				t.Fatalf("approve: %d %s", status, body)
			}
			// The same run goes on in the background; watch it.
			w := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey, "Last-Event-ID", strconv.FormatInt(parkedAt.ID, 10)))
			if w.header("X-Run-ID") != runID {
				t.Errorf("watching run %s, want %s", w.header("X-Run-ID"), runID)
			}
			rest := w.all()
			checkRun(t, rest, parkedAt.ID+1, runID, conv)
			if rest[0].Type != "approval.resolved" || rest[0].str("decision") != "edit" || rest[len(rest)-1].Type != "run.completed" {
				t.Errorf("resumed run: %v", types(rest))
			}
			if got := <-e.tools.deleted; got != "/tmp/b.txt" {
				t.Errorf("deleted %q", got)
			}
			// Once the run has gone on, a watcher with no event of it sees
			// the segment the answer resumed, not the parked one again,
			// whose run.interrupted would end its stream.
			fresh := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey)).all()
			checkRun(t, fresh, parkedAt.ID+1, runID, conv)
			if !slices.Equal(types(fresh), types(rest)) {
				t.Errorf("a fresh watcher saw %v, want the resumed segment %v", types(fresh), types(rest))
			}
			r, _ := e.store.GetRun(t.Context(), "alice", runID)
			if r.Status != store.RunCompleted || r.Owner == "" {
				t.Errorf("run %+v", r)
			}
			e.close()
		})
	}
}

func TestApprovalNotAnsweredInTimeInterrupts(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) { c.Runs.InterruptAfter = 100 * time.Millisecond }})
	s := e.chat(map[string]any{"message": "please delete /tmp/a.txt"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	evs := s.all()
	checkRun(t, evs, 1, runID, conv)
	last := evs[len(evs)-1]
	if last.Type != "run.interrupted" || last.str("reason") != "approval" {
		t.Fatalf("last %s", last.Raw)
	}
	ids, _ := last.Data["approval_ids"].([]any)
	if len(ids) != 1 {
		t.Fatalf("approval ids %s", last.Raw)
	}
	// A watcher that joins now waits on the parked run (heartbeats) and
	// sees it resume.
	w := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey, "Last-Event-ID", strconv.FormatInt(last.ID, 10)))
	status, body := e.do("POST", "/api/v1/approvals/"+ids[0].(string), map[string]any{"decision": "reject", "reason": "not that file"})
	if status != 200 {
		t.Fatalf("reject: %d %s", status, body)
	}
	rest := w.all()
	checkRun(t, rest, last.ID+1, runID, conv)
	if rest[0].Type != "approval.resolved" || rest[0].str("reason") != "not that file" {
		t.Errorf("resumed: %v", types(rest))
	}
}

func TestStreamHeartbeat(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) { c.Runs.InterruptAfter = -1 }})
	s := e.chat(map[string]any{"message": "please delete /tmp/a.txt"})
	conv := s.header("X-Conversation-ID")
	last := s.all()
	// The run is parked; a stream after its last event stays open and
	// sends ": ping" comments while idle (the Config says every 50 ms).
	resp, err := e.ts.Client().Do(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey,
		"Last-Event-ID", strconv.FormatInt(last[len(last)-1].ID, 10)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for pings := 0; pings < 2; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		switch line {
		case ": ping\n":
			pings++
		case "\n":
		default:
			t.Fatalf("unexpected line %q on an idle stream", line)
		}
	}
}

// A clarifying question is a human request like an approval: it is
// listed as pending while the run waits on it, the next message answers
// it, and a cancel expires it.
func TestClarificationThenAnswer(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			s := e.chat(map[string]any{"message": "book a table for two"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			evs := s.all()
			checkRun(t, evs, 1, runID, conv)
			last := evs[len(evs)-1]
			if last.Type != "run.interrupted" || last.str("reason") != "clarification" || last.str("question") != "In which city?" {
				t.Fatalf("last %s", last.Raw)
			}
			r, _ := e.store.GetRun(t.Context(), "alice", runID)
			if r.Status != store.RunInterrupted || r.InterruptReason != events.PendingClarification {
				t.Errorf("run %+v", r)
			}
			type clarification struct {
				ID             string `json:"clarification_id"`
				ConversationID string `json:"conversation_id"`
				RunID          string `json:"run_id"`
				Question       string
				Status         string
				Answer         string
			}
			pending := func() []clarification {
				t.Helper()
				status, body := e.do("GET", "/api/v1/clarifications/pending?conversation_id="+conv, nil)
				if status != 200 {
					t.Fatalf("pending clarifications: %d %s", status, body)
				}
				return jsonOf[struct{ Clarifications []clarification }](t, body).Clarifications
			}
			want := clarification{ID: last.str("clarification_id"), ConversationID: conv, RunID: runID, Question: "In which city?", Status: "pending"}
			if got := pending(); len(got) != 1 || got[0] != want || want.ID == "" {
				t.Errorf("pending %+v, want %+v", got, want)
			}
			// The next message answers it, in a new run.
			status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "Paris", "conversation_id": conv})
			res := jsonOf[struct {
				Status, Response string
				RunID            string `json:"run_id"`
			}](t, body)
			if status != 200 || res.Status != "completed" || res.RunID == runID || res.Response != "Done: all good." {
				t.Errorf("answer: %d %s", status, body)
			}
			msgs := messagesOf(t, e.store, "alice", conv)
			if len(msgs) != 4 || msgs[1].Content != "In which city?" || msgs[2].Content != "Paris" {
				t.Errorf("messages %+v", msgs)
			}
			if got := pending(); len(got) != 0 {
				t.Errorf("pending after the answer: %+v", got)
			}
			if h, err := e.store.GetHumanRequest(t.Context(), events.PendingClarification, "alice", want.ID); err != nil ||
				h.Status != store.HumanAnswered || h.Clarification.Answer != "Paris" {
				t.Errorf("the answered clarification: %+v, %v", h, err)
			}
			// Sync reports a clarification as pending; a cancel expires it.
			status, body = e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "book a table again", "conversation_id": conv})
			if !strings.Contains(string(body), `"clarification":{"id":`) || !strings.Contains(string(body), `"status":"interrupted"`) || status != 200 {
				t.Errorf("sync clarification: %d %s", status, body)
			}
			again := pending()
			if len(again) != 1 {
				t.Fatalf("pending after asking again: %+v", again)
			}
			if status, body := e.do("POST", "/api/v1/conversations/"+conv+"/cancel", nil); status != 202 {
				t.Fatalf("cancel: %d %s", status, body)
			}
			waitFor(t, "the cancelled question expires", func() bool {
				h, err := e.store.GetHumanRequest(t.Context(), events.PendingClarification, "alice", again[0].ID)
				return err == nil && h.Status == store.HumanExpired
			})
			if got := pending(); len(got) != 0 {
				t.Errorf("pending after the cancel: %+v", got)
			}
		})
	}
}

// TestEditAndRerun runs in every durability mode: an edit forks from a
// turn's input checkpoint, which exit and boundary mode write too.
func TestEditAndRerun(t *testing.T) {
	for _, tc := range []struct {
		b backend
		d graph.Durability
	}{{sqliteBackend, graph.DurabilitySync}, {postgresBackend, graph.DurabilitySync}, {sqliteBackend, graph.DurabilityExit}, {postgresBackend, graph.DurabilityExit},
		{sqliteBackend, graph.DurabilityAsync}, {postgresBackend, graph.DurabilityAsync},
		{sqliteBackend, graph.DurabilityBoundary}, {postgresBackend, graph.DurabilityBoundary}} {
		t.Run(string(tc.b)+"-"+tc.d.String(), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: tc.b, configure: func(c *apitest.Config) { c.Runs.Agent.Durability = tc.d }})
			s1 := e.chat(map[string]any{"message": "first question"})
			s1.all()
			conv, run1 := s1.header("X-Conversation-ID"), s1.header("X-Run-ID")
			s2 := e.chat(map[string]any{"message": "second question", "conversation_id": conv})
			s2.all()
			run2 := s2.header("X-Run-ID")

			ed := e.open(e.request("POST", "/api/v1/conversations/"+conv+"/runs/"+run1+"/edit", map[string]any{"message": "first question, edited"}, aliceKey))
			evs := ed.all()
			run3 := ed.header("X-Run-ID")
			checkRun(t, evs, 1, run3, conv)
			if run3 == run1 || run3 == run2 || evs[len(evs)-1].Type != "run.completed" {
				t.Fatalf("edit run %s: %v", run3, types(evs))
			}
			_, body := e.do("GET", "/api/v1/conversations/"+conv, nil)
			c := jsonOf[struct {
				Runs []struct {
					ID          string
					Superseded  bool
					UserMessage string `json:"user_message"`
				}
				Messages []store.Message
			}](t, body)
			if len(c.Runs) != 3 || !c.Runs[0].Superseded || !c.Runs[1].Superseded || c.Runs[2].Superseded || c.Runs[2].UserMessage != "first question, edited" {
				t.Errorf("runs after edit: %s", body)
			}
			// The agent forked from before the first run: the edited turn is
			// its first.
			snap, err := e.srv.Runs().State(t.Context(), conv)
			if err != nil || snap.State.Turn != 1 || len(snap.State.Messages) != 2 || snap.State.Messages[0].Content != "first question, edited" {
				t.Errorf("agent state after edit: %+v, %v", snap.State.Messages, err)
			}
			// A superseded run cannot be edited again.
			status, body := e.do("POST", "/api/v1/conversations/"+conv+"/runs/"+run2+"/edit", map[string]any{"message": "x"})
			wantError(t, status, body, http.StatusConflict)
		})
	}
}

func TestDeleteConversation(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.chat(map[string]any{"message": "wait for it"})
	conv := s.header("X-Conversation-ID")
	<-e.tools.waiting // deleting a conversation with a live run cancels the run
	status, body := e.do("DELETE", "/api/v1/conversations/"+conv, nil)
	if status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", status, body)
	}
	s.all()
	status, body = e.do("GET", "/api/v1/conversations/"+conv, nil)
	wantError(t, status, body, http.StatusNotFound)
	if _, err := e.srv.Runs().State(t.Context(), conv); err == nil {
		t.Error("the agent's state survived the delete")
	}
	status, body = e.do("DELETE", "/api/v1/conversations/"+conv, nil)
	wantError(t, status, body, http.StatusNotFound)
}

// A chat that comes while a conversation is being deleted, after its run
// was stopped and before its record goes, starts nothing: it is answered
// as for a deleted conversation, and no state of the conversation is
// written again once the delete has removed it. Before, such a run
// wrote checkpoints after the delete, which nothing ever removed.
func TestNoRunStartsWhileDeleting(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			held := &heldDelete{}
			e := newEnv(t, envOptions{backend: b, configure: held.configure})
			status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "what is 2+2?"})
			conv := jsonOf[struct {
				ConversationID string `json:"conversation_id"`
			}](t, body).ConversationID
			if status != http.StatusOK || conv == "" {
				t.Fatalf("chat: %d %s", status, body)
			}
			held.during(t, e, conv, func() {
				status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "what is 2+2?", "conversation_id": conv})
				wantError(t, status, body, http.StatusNotFound)
			})
		})
	}
}

// heldDelete holds a conversation's delete in its files step (after the
// run's stop, before the checkpoints and the record go), for a test to
// send what a delete must refuse meanwhile.
type heldDelete struct {
	deleting, release chan struct{}
}

// configure makes the service's DeleteFiles wait for the test.
func (h *heldDelete) configure(c *apitest.Config) {
	h.deleting, h.release = make(chan struct{}), make(chan struct{})
	c.Runs.DeleteFiles = func(context.Context, string, string) error {
		close(h.deleting)
		<-h.release
		return nil
	}
}

// during deletes conv and runs meanwhile while the delete is held; then
// the delete must succeed and have left no state of the conversation.
func (h *heldDelete) during(t *testing.T, e *env, conv string, meanwhile func()) {
	t.Helper()
	deleted := make(chan int, 1)
	go func() {
		status, _ := e.do("DELETE", "/api/v1/conversations/"+conv, nil)
		deleted <- status
	}()
	<-h.deleting
	free := sync.OnceFunc(func() { close(h.release) })
	defer free() // a failure in meanwhile must not leave the delete waiting
	meanwhile()
	free()
	if status := <-deleted; status != http.StatusNoContent {
		t.Fatalf("delete: %d", status)
	}
	if _, err := e.srv.Runs().State(t.Context(), conv); err == nil {
		t.Error("the conversation's state was written again after the delete")
	}
}

func TestModelFailureFailsTheRun(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.chat(map[string]any{"message": "break please"})
	evs := s.all()
	checkRun(t, evs, 1, s.header("X-Run-ID"), s.header("X-Conversation-ID"))
	last := evs[len(evs)-1]
	errObj, _ := last.Data["error"].(map[string]any)
	if last.Type != "run.failed" || errObj["code"] == "" || errObj["message"] == "" {
		t.Fatalf("last %s", last.Raw)
	}
	if r, _ := e.store.GetRun(t.Context(), "alice", s.header("X-Run-ID")); r.Status != store.RunFailed {
		t.Errorf("stored status %s", r.Status)
	}
	status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "break again"})
	if status != 200 || !strings.Contains(string(body), `"status":"failed"`) || !strings.Contains(string(body), `"error":{"code":`) {
		t.Errorf("sync: %d %s", status, body)
	}
}

func TestShutdownParksRunsAndRecoverContinuesThem(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			data := newStorage(t, b)
			e1 := newEnv(t, envOptions{backend: b, data: data})
			s := e1.chat(map[string]any{"message": "wait for it"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			<-e1.tools.waiting
			if err := e1.srv.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			evs := s.all()
			checkRun(t, evs, 1, runID, conv)
			last := evs[len(evs)-1]
			if last.Type != "run.interrupted" || last.str("reason") != "shutdown" {
				t.Fatalf("last %s", last.Raw)
			}
			r, err := e1.store.GetRun(t.Context(), "alice", runID)
			if err != nil || r.Status != store.RunRunning {
				t.Fatalf("after shutdown the run is %+v, %v; want running, for the next process", r, err)
			}
			e1.close()

			e2 := newEnv(t, envOptions{backend: b, data: data})
			close(e2.tools.release)
			n, err := e2.srv.Recover(t.Context())
			if err != nil || n != 1 {
				t.Fatalf("recovered %d runs, %v", n, err)
			}
			w := e2.open(e2.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey, "Last-Event-ID", strconv.FormatInt(last.ID, 10)))
			// The shutdown cut the call short: its cancel is not its
			// result. The read-only tool runs again, and the agent goes on
			// from what it returns.
			rest := w.all()
			checkRun(t, rest, last.ID+1, runID, conv)
			if rest[len(rest)-1].Type != "run.completed" || slices.Contains(types(rest), "run.started") {
				t.Errorf("continued run: %v", types(rest))
			}
			if len(e2.tools.waiting) != 1 {
				t.Errorf("the continued run started the cut call %d times, want once", len(e2.tools.waiting))
			}
			for _, ev := range rest {
				if ev.Type == "tool.error" {
					t.Errorf("the continued run tells of the cut call as failed: %s", ev.Raw)
				}
			}
			msgs := messagesOf(t, e2.store, "alice", conv)
			if len(msgs) != 2 || msgs[1].RunID != runID {
				t.Errorf("messages %+v", msgs)
			}
			// Nothing is left to recover.
			if n, err := e2.srv.Recover(t.Context()); n != 0 || err != nil {
				t.Errorf("second recover: %d %v", n, err)
			}
		})
	}
}

// newApprovalEnv is a server whose runs wait for an approval on their
// open stream (a minute at most), or park at once.
func newApprovalEnv(t *testing.T, b backend, parked bool) *env {
	return newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) {
		c.Runs.InterruptAfter = time.Minute
		if parked {
			c.Runs.InterruptAfter = -1 // parks at once
		}
	}})
}

// awaitApproval starts a run that asks to approve delete_file and
// returns a stream of it: its own, waiting, or, parked, a watcher from
// its run.interrupted on.
func (e *env) awaitApproval(parked bool) (s *stream, conv, runID, approvalID string) {
	s = e.chat(map[string]any{"message": "please delete /tmp/a.txt"})
	conv, runID = s.header("X-Conversation-ID"), s.header("X-Run-ID")
	approvalID = s.until("approval.required").str("approval_id")
	if parked {
		last := s.until("run.interrupted")
		s.close()
		s = e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey,
			"Last-Event-ID", strconv.FormatInt(last.ID, 10)))
	}
	return s, conv, runID, approvalID
}

// TestCancelARunWaitingForAnApproval: cancel ends a run whether it waits
// on its open stream or is parked; the tool never runs, the approval
// expires, and the next message starts a fresh turn.
func TestCancelARunWaitingForAnApproval(t *testing.T) {
	for _, b := range backends {
		for _, parked := range []bool{false, true} {
			name := string(b) + "/waiting"
			if parked {
				name = string(b) + "/parked"
			}
			t.Run(name, func(t *testing.T) {
				noLeaks(t)
				e := newApprovalEnv(t, b, parked)
				stream, conv, runID, id := e.awaitApproval(parked)
				status, body := e.do("POST", "/api/v1/conversations/"+conv+"/cancel", nil)
				if status != http.StatusAccepted {
					t.Fatalf("cancel: %d %s", status, body)
				}
				if r := jsonOf[map[string]string](t, body); r["status"] != "cancelling" || r["run_id"] != runID {
					t.Errorf("cancel answer %s", body)
				}
				rest := stream.all()
				if last := rest[len(rest)-1]; last.Type != "run.cancelled" || last.str("run_id") != runID {
					t.Fatalf("the stream ended with %v", types(rest))
				}
				r, err := e.store.GetRun(t.Context(), "alice", runID)
				if err != nil || r.Status != store.RunCancelled {
					t.Fatalf("run %+v %v", r, err)
				}
				a, err := e.store.GetHumanRequest(t.Context(), events.PendingApproval, "alice", id)
				if err != nil || a.Status != store.HumanExpired {
					t.Errorf("approval %+v %v", a, err)
				}
				status, body = e.do("POST", "/api/v1/approvals/"+id, map[string]any{"decision": "approve"})
				wantError(t, status, body, http.StatusConflict)
				status, body = e.do("POST", "/api/v1/conversations/"+conv+"/cancel", nil)
				wantError(t, status, body, http.StatusConflict)

				next := e.chat(map[string]any{"message": "hello", "conversation_id": conv})
				evs := next.all()
				checkRun(t, evs, 1, next.header("X-Run-ID"), conv)
				if evs[len(evs)-1].Type != "run.completed" {
					t.Errorf("the next turn: %v", types(evs))
				}
				select {
				case p := <-e.tools.deleted:
					t.Errorf("the cancelled tool call ran: deleted %s", p)
				default:
				}
				e.close()
			})
		}
	}
}
