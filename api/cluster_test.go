package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// twoProcesses starts two servers on one Postgres database, each a
// process of the cluster: a run started on the first is answered or
// cancelled through the second.
func twoProcesses(t *testing.T) (first, second *env) {
	t.Helper()
	data := newStorage(t, postgresBackend)
	wait := func(c *apitest.Config) { c.Runs.InterruptAfter = time.Minute }
	first = newEnv(t, envOptions{backend: postgresBackend, data: data, cluster: true, configure: wait})
	second = newEnv(t, envOptions{backend: postgresBackend, data: data, cluster: true, configure: wait})
	return first, second
}

func TestClusterApprovalAnsweredThroughAnotherProcess(t *testing.T) {
	noLeaks(t)
	a, b := twoProcesses(t)
	s := a.chat(map[string]any{"message": "please delete /tmp/a.txt"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	id := s.until("approval.required").str("approval_id")
	// A watcher on the second process sees the run that the first runs.
	w := b.open(b.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey))
	status, body := b.do("POST", "/api/v1/approvals/"+id, map[string]any{"decision": "edit", "args": map[string]any{"path": "/tmp/b.txt"}})
	if status != http.StatusOK {
		t.Fatalf("approve through the second process: %d %s", status, body)
	}
	evs := s.all()
	checkRun(t, evs, 1, runID, conv)
	if slices.Contains(types(evs), "run.interrupted") || evs[len(evs)-1].Type != "run.completed" {
		t.Fatalf("the run should go on, on its open stream: %v", types(evs))
	}
	if got := <-a.tools.deleted; got != "/tmp/b.txt" {
		t.Errorf("deleted %q", got)
	}
	watched := w.all()
	checkRun(t, watched, 1, runID, conv)
	if len(watched) != len(evs) {
		t.Errorf("the watcher on the other process saw %v, the run's stream %v", types(watched), types(evs))
	}
	a.close()
	b.close()
}

func TestClusterCancelThroughAnotherProcess(t *testing.T) {
	noLeaks(t)
	a, b := twoProcesses(t)
	s := a.chat(map[string]any{"message": "wait for it"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	<-a.tools.waiting
	status, body := b.do("POST", "/api/v1/conversations/"+conv+"/cancel", nil)
	if status != http.StatusAccepted {
		t.Fatalf("cancel through the second process: %d %s", status, body)
	}
	evs := s.all()
	checkRun(t, evs, 1, runID, conv)
	if evs[len(evs)-1].Type != "run.cancelled" {
		t.Fatalf("events %v", types(evs))
	}
	if r, err := b.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunCancelled {
		t.Errorf("run %+v %v", r, err)
	}
	a.close()
	b.close()
}

func TestClusterElicitationAnsweredThroughAnotherProcess(t *testing.T) {
	noLeaks(t)
	a, b := twoProcesses(t)
	s := a.chat(map[string]any{"message": "ask me my name"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	id := s.until("elicitation.request").str("elicitation_id")
	// The schema is checked where the answer arrives.
	status, body := b.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "accept", "content": map[string]any{"name": 7}})
	wantError(t, status, body, http.StatusUnprocessableEntity)
	status, body = b.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "accept", "content": map[string]any{"name": "Ada"}})
	if status != http.StatusOK {
		t.Fatalf("respond through the second process: %d %s", status, body)
	}
	status, body = b.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "decline"})
	wantError(t, status, body, http.StatusConflict)
	evs := s.all()
	checkRun(t, evs, 1, runID, conv)
	if got := toolResult(t, evs); got != "hello Ada" {
		t.Errorf("tool result %q", got)
	}
	a.close()
	b.close()
}

// A question whose tool waits in the first process, cancelled by its
// deadline kept in the second: the run's stream, on the first, shows
// elicitation.expired once and then run.cancelled; the tool never
// replies.
func TestClusterDeadlineCancelsAQuestionWaitingInAnotherProcess(t *testing.T) {
	noLeaks(t)
	data := newStorage(t, postgresBackend)
	jobs := make(chan scheduled, 8)
	opts := envOptions{backend: postgresBackend, data: data, cluster: true,
		questionExpiry: operators.Expiry{Timeout: 300 * time.Millisecond, Outcome: events.ExpiryCancel},
		configure: func(c *apitest.Config) {
			c.Runs.InterruptAfter = time.Minute
			c.Runs.ScheduleExpiry = func(_ context.Context, kind events.PendingKind, user, id string, at time.Time) error {
				jobs <- scheduled{kind, user, id, at}
				return nil
			}
		}}
	a := newEnv(t, opts)
	b := newEnv(t, opts)
	s := a.chat(map[string]any{"message": "ask me my name"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	id := s.until("elicitation.request").str("elicitation_id")
	job := <-jobs
	time.Sleep(time.Until(job.at))
	if err := b.srv.Runs().Expire(t.Context(), events.PendingElicitation, "alice", id); err != nil {
		t.Fatalf("Expire on the second process: %v", err)
	}
	evs := s.all()
	checkRun(t, evs, 1, runID, conv)
	ts := types(evs)
	if evs[len(evs)-1].Type != "run.cancelled" || indexOf(evs, "elicitation.expired") < 0 || slices.Contains(ts, "tool.complete") {
		t.Fatalf("events %v", ts)
	}
	n := 0
	for _, ty := range ts {
		if ty == "elicitation.expired" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("elicitation.expired %d times: %v", n, ts)
	}
	if el, err := b.store.GetHumanRequest(t.Context(), events.PendingElicitation, "alice", id); err != nil || el.Status != store.HumanExpired || !el.TimedOut {
		t.Errorf("the elicitation's record: %+v %v", el, err)
	}
	a.close()
	b.close()
}

// lostNotices stands for a listener whose connection is lost when lose
// is closed, and which cannot be reopened.
type lostNotices struct{ lose chan struct{} }

func (l lostNotices) Next(ctx context.Context) (store.Notice, error) {
	select {
	case <-ctx.Done():
		return store.Notice{}, ctx.Err()
	case <-l.lose:
		return store.Notice{}, errors.New("connection lost")
	}
}

func (l lostNotices) Reopen(context.Context) error { return errors.New("still lost") }

// TestClusterTakeoverFencesTheFormerOwner: a process that lost its
// session without noticing (here: one whose lock was never held) has its
// run taken over by a peer; its next write of the run fails, so it stops,
// and the peer's events are the only ones after the takeover.
func TestClusterTakeoverFencesTheFormerOwner(t *testing.T) {
	noLeaks(t)
	data := newStorage(t, postgresBackend)
	unseen := lostNotices{lose: make(chan struct{})}
	a := newEnv(t, envOptions{backend: postgresBackend, data: data, configure: func(c *apitest.Config) {
		c.Runs.Cluster, c.Runs.Notices, c.Runs.Owner = c.API.Store.(runs.Cluster), unseen, "partitioned:"+t.Name()
	}})
	b := newEnv(t, envOptions{backend: postgresBackend, data: data, cluster: true})
	s := a.chat(map[string]any{"message": "wait for it"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	<-a.tools.waiting
	<-b.tools.waiting // b claimed the run and continued it to the same tool
	close(a.tools.release)
	evs := s.all()
	for _, ev := range evs {
		if terminal(ev.Type) {
			t.Fatalf("the former owner ended the run: %v", types(evs))
		}
	}
	close(b.tools.release)
	w := b.open(b.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey)).all()
	checkRun(t, w, 1, runID, conv)
	if w[len(w)-1].Type != "run.completed" {
		t.Fatalf("events %v", types(w))
	}
	if r, err := b.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunCompleted || r.Owner == "partitioned:"+t.Name() {
		t.Errorf("run %+v %v", r, err)
	}
	a.close()
	b.close()
}

// TestClusterSyncChatListsAnUncertainCall: a sync chat whose run a peer
// took over mid-call (see partitioned) is answered with what the peer
// made of it: status interrupted, reason uncertain_call, and
// the call in pending.uncertain_calls, as the stream's run.interrupted
// lists it; the call is not run again.
func TestClusterSyncChatListsAnUncertainCall(t *testing.T) {
	noLeaks(t)
	a, peer := partitioned(t, false)
	answered := make(chan reply, 1)
	req := a.request("POST", "/api/v1/chat/sync", map[string]any{"message": "settle the bill"}, aliceKey)
	go func() {
		resp, err := a.ts.Client().Do(req)
		if err != nil {
			answered <- reply{}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answered <- reply{status: resp.StatusCode, body: body}
	}()
	b := parkedByPeer(t, a, peer)
	r := <-answered
	type uncertainCall struct {
		ID             string          `json:"uncertain_call_id"`
		ConversationID string          `json:"conversation_id"`
		RunID          string          `json:"run_id"`
		ToolCallID     string          `json:"tool_call_id"`
		Tool           string          `json:"tool"`
		Args           json.RawMessage `json:"args"`
		Status         string          `json:"status"`
	}
	res := jsonOf[struct {
		ConversationID string `json:"conversation_id"`
		RunID          string `json:"run_id"`
		Status, Reason string
		Pending        *struct {
			Approvals      []json.RawMessage `json:"approvals"`
			Elicitations   []json.RawMessage `json:"elicitations"`
			UncertainCalls []uncertainCall   `json:"uncertain_calls"`
		}
	}](t, r.body)
	if r.status != http.StatusOK || res.Status != "interrupted" || res.Reason != "uncertain_call" || res.Pending == nil {
		t.Fatalf("sync answer %d %s", r.status, r.body)
	}
	_, listed := b.do("GET", "/api/v1/uncertain-calls/pending?conversation_id="+res.ConversationID, nil)
	want := jsonOf[struct {
		UncertainCalls []uncertainCall `json:"uncertain_calls"`
	}](t, listed).UncertainCalls
	got := res.Pending.UncertainCalls
	if len(want) != 1 || len(got) != 1 || got[0].ID != want[0].ID || got[0].RunID != res.RunID || got[0].Tool != "settle" ||
		got[0].ToolCallID == "" || got[0].Status != "pending" || len(res.Pending.Approvals) != 0 || len(res.Pending.Elicitations) != 0 {
		t.Errorf("pending %+v; the uncertain calls pending %+v", res.Pending, want)
	}
	if len(b.tools.waiting) != 0 {
		t.Error("the peer ran the call again")
	}
	a.close()
	b.close()
}

// TestClusterEnqueueThroughAnotherProcess: a message queued through the
// second process behind a run of the first starts once that run ends,
// and runs to its end.
func TestClusterEnqueueThroughAnotherProcess(t *testing.T) {
	noLeaks(t)
	a, b := twoProcesses(t)
	s := a.chat(map[string]any{"message": "wait for it"})
	conv := s.header("X-Conversation-ID")
	<-a.tools.waiting
	s.until("tool.start")
	status, body := b.do("POST", "/api/v1/chat", map[string]any{"message": "hello", "conversation_id": conv, "multitask_strategy": "enqueue"})
	if status != http.StatusAccepted {
		t.Fatalf("enqueue through the second process: %d %s", status, body)
	}
	queued := jsonOf[struct {
		RunID string `json:"run_id"`
	}](t, body).RunID
	close(a.tools.release)
	s.all()
	waitFor(t, "the queued message to run", func() bool {
		r, err := b.store.GetRun(t.Context(), "alice", queued)
		return err == nil && r.Status == store.RunCompleted
	})
	a.close()
	b.close()
}
