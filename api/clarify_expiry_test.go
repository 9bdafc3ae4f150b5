package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// clarifyDeadlineEnv is a server whose clarifying questions expire after
// timeout with outcome, and the deadlines it schedules (the job queue's
// part, which the test plays).
func clarifyDeadlineEnv(t *testing.T, b backend, timeout time.Duration, outcome events.ExpiryOutcome) (*env, <-chan scheduled) {
	jobs := make(chan scheduled, 8)
	return newEnv(t, clarifyDeadlineOptions(envOptions{backend: b}, timeout, outcome, jobs)), jobs
}

// clarifyDeadlineOptions is o with clarifying questions that expire after
// timeout with outcome, their deadlines sent to jobs.
func clarifyDeadlineOptions(o envOptions, timeout time.Duration, outcome events.ExpiryOutcome, jobs chan<- scheduled) envOptions {
	o.configure = func(c *apitest.Config) {
		c.Runs.ClarificationExpiry = operators.Expiry{Timeout: timeout, Outcome: outcome}
		c.Runs.ScheduleExpiry = func(_ context.Context, kind events.PendingKind, user, id string, at time.Time) error {
			jobs <- scheduled{kind, user, id, at}
			return nil
		}
	}
	return o
}

// askedClarification chats the message that makes the agent ask "In
// which city?" and returns the run's run.interrupted, its conversation
// and run, and the deadline job scheduled for the question.
func askedClarification(t *testing.T, e *env, jobs <-chan scheduled) (event, string, string, scheduled) {
	t.Helper()
	s := e.chat(map[string]any{"message": "book a table for two"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	evs := s.all()
	last := evs[len(evs)-1]
	if last.Type != "run.interrupted" || last.str("reason") != "clarification" {
		t.Fatalf("events %v", types(evs))
	}
	select {
	case job := <-jobs:
		return last, conv, runID, job
	case <-time.After(5 * time.Second):
		t.Fatal("no deadline was scheduled for the clarifying question")
	}
	panic("unreachable")
}

// followFrom reads the conversation's stream after seq to the end of the
// run that follows.
func followFrom(e *env, conv string, seq int64) []event {
	return e.open(e.request("GET", fmt.Sprintf("/api/v1/conversations/%s/stream?after=%d", conv, seq), nil, aliceKey)).all()
}

// A clarifying question with a deadline shows it (run.interrupted's
// pending item, the pending list) and has it scheduled; Expire before it
// is ErrNotDue. At the deadline, continue: the run that asked goes on,
// its events beginning with clarification.expired, the agent told that
// the user did not answer, and completes; the record says answered,
// timed out, with no answer; no message joined the conversation; Expire
// again does nothing.
func TestClarificationDeadlineContinues(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, jobs := clarifyDeadlineEnv(t, b, 300*time.Millisecond, events.ExpiryContinue)
			last, conv, runID, job := askedClarification(t, e, jobs)
			id := last.str("clarification_id")
			p, _ := last.Data["pending"].([]any)
			item, _ := p[0].(map[string]any)
			at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(item["expires_at"]))
			if err != nil || item["on_expiry"] != "continue" || job.kind != events.PendingClarification || job.id != id || !job.at.Equal(at) {
				t.Fatalf("run.interrupted %s; scheduled %+v", last.Raw, job)
			}
			status, body := e.do("GET", "/api/v1/clarifications/pending?conversation_id="+conv, nil)
			pending := jsonOf[struct {
				Clarifications []struct {
					ExpiresAt time.Time `json:"expires_at"`
					OnExpiry  string    `json:"on_expiry"`
				}
			}](t, body)
			if status != 200 || len(pending.Clarifications) != 1 || !pending.Clarifications[0].ExpiresAt.Equal(at) || pending.Clarifications[0].OnExpiry != "continue" {
				t.Fatalf("pending: %d %s", status, body)
			}
			svc := e.srv.Runs()
			if err := svc.Expire(t.Context(), events.PendingClarification, "alice", id); time.Now().Before(at) && !errors.Is(err, runs.ErrNotDue) {
				t.Errorf("Expire before the deadline: %v, want ErrNotDue", err)
			}
			time.Sleep(time.Until(at))
			if err := svc.Expire(t.Context(), events.PendingClarification, "alice", id); err != nil {
				t.Fatalf("Expire: %v", err)
			}
			evs := followFrom(e, conv, last.ID)
			if len(evs) == 0 || evs[0].Type != "clarification.expired" || evs[0].str("clarification_id") != id || evs[0].str("outcome") != "continue" ||
				evs[len(evs)-1].Type != "run.completed" {
				t.Fatalf("after the deadline: %v", types(evs))
			}
			for _, ev := range evs {
				if ev.Type == "run.started" {
					t.Errorf("the deadline started a new run: %v", types(evs))
				}
			}
			if c, err := e.store.GetHumanRequest(t.Context(), events.PendingClarification, "alice", id); err != nil ||
				c.Status != store.HumanAnswered || !c.TimedOut || c.Clarification.Answer != "" {
				t.Errorf("stored %+v %v", c, err)
			}
			if r, err := e.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunCompleted {
				t.Errorf("the run that asked: %+v %v", r, err)
			}
			for _, m := range messagesOf(t, e.store, "alice", conv) {
				if m.Role == store.RoleUser && m.Content != "book a table for two" {
					t.Errorf("a message joined the conversation: %+v", m)
				}
			}
			if err := svc.Expire(t.Context(), events.PendingClarification, "alice", id); err != nil {
				t.Errorf("Expire again: %v", err)
			}
		})
	}
}

// A run that a clarifying question's deadline let go on, stopped by a
// shutdown while it writes its answer, is continued by the next server,
// whose recovered run stores that answer: the question the run asked
// first is its other answer, not this one said again.
func TestClarificationDeadlineContinuedAcrossARestartKeepsItsAnswer(t *testing.T) {
	const script = `{"steps": [
		{"match": {"node": "supervisor", "system": "did not answer in time"}, "reply": {"json": {"action": "ANSWER"}}, "repeat": true},
		{"match": {"node": "supervisor", "contains": "book a table"}, "reply": {"json": {"action": "CLARIFY", "question": "In which city?"}}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"text": "Booked.", "delay_ms": 1000}, "repeat": true}
	]}`
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			jobs := make(chan scheduled, 8)
			o := clarifyDeadlineOptions(envOptions{backend: b, script: script}, 100*time.Millisecond, events.ExpiryContinue, jobs)
			o.data = newStorage(t, b)
			e1 := newEnv(t, o)
			last, conv, runID, job := askedClarification(t, e1, jobs)
			time.Sleep(time.Until(job.at))
			if err := e1.srv.Runs().Expire(t.Context(), events.PendingClarification, "alice", last.str("clarification_id")); err != nil {
				t.Fatalf("Expire: %v", err)
			}
			// The server shuts down while the answer is written: the run
			// stops before stream stores and says the answer.
			w := e1.open(e1.request("GET", fmt.Sprintf("/api/v1/conversations/%s/stream?after=%d", conv, last.ID), nil, aliceKey))
			for ev := w.until("node.start"); ev.str("node") != "write"; ev = w.until("node.start") {
			}
			if err := e1.srv.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			stopped := w.all()
			if end := stopped[len(stopped)-1]; end.Type != "run.interrupted" || end.str("reason") != "shutdown" || slices.Contains(types(stopped), "response.done") {
				t.Fatalf("stopped by the shutdown: %v", types(stopped))
			}
			e1.close()

			e2 := newEnv(t, o)
			if n, err := e2.srv.Recover(t.Context()); err != nil || n != 1 {
				t.Fatalf("recovered %d runs, %v", n, err)
			}
			evs := followFrom(e2, conv, stopped[len(stopped)-1].ID)
			if len(evs) == 0 || evs[len(evs)-1].Type != "run.completed" {
				t.Fatalf("continued run: %v", types(evs))
			}
			var answers []string
			for _, m := range messagesOf(t, e2.store, "alice", conv) {
				if m.Role == store.RoleAssistant && m.RunID == runID {
					answers = append(answers, m.Content)
				}
			}
			if want := []string{"In which city?", "Booked."}; !slices.Equal(answers, want) {
				t.Errorf("the run's answers %q, want %q", answers, want)
			}
		})
	}
}

// A clarifying question whose deadline cancels: the run ends with
// run.cancelled after clarification.expired; the record says expired,
// timed out; the next message starts a fresh turn.
func TestClarificationDeadlineCancels(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, jobs := clarifyDeadlineEnv(t, b, 100*time.Millisecond, events.ExpiryCancel)
			last, conv, runID, job := askedClarification(t, e, jobs)
			id := last.str("clarification_id")
			time.Sleep(time.Until(job.at))
			if err := e.srv.Runs().Expire(t.Context(), events.PendingClarification, "alice", id); err != nil {
				t.Fatalf("Expire: %v", err)
			}
			evs := followFrom(e, conv, last.ID)
			if len(evs) != 2 || evs[0].Type != "clarification.expired" || evs[0].str("outcome") != "cancel" || evs[1].Type != "run.cancelled" {
				t.Fatalf("after the deadline: %v", types(evs))
			}
			if c, err := e.store.GetHumanRequest(t.Context(), events.PendingClarification, "alice", id); err != nil || c.Status != store.HumanExpired || !c.TimedOut {
				t.Errorf("stored %+v %v", c, err)
			}
			if r, err := e.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunCancelled {
				t.Errorf("the run that asked: %+v %v", r, err)
			}
			status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "what is 2+2", "conversation_id": conv})
			if status != 200 {
				t.Errorf("a message after the cancel: %d %s", status, body)
			}
		})
	}
}

// Of the user's message answering a clarifying question and its
// deadline, racing, exactly one wins: either the message answers it (a
// new run, the record answered with the message, no
// clarification.expired) or the deadline does (the run that asked goes
// on after clarification.expired, and the message is refused with 409,
// or, once that run ended, starts a run of its own that answers nothing).
func TestClarificationDeadlineRacesAMessage(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			for i := range 3 {
				e, jobs := clarifyDeadlineEnv(t, b, time.Millisecond, events.ExpiryContinue)
				last, conv, runID, job := askedClarification(t, e, jobs)
				id := last.str("clarification_id")
				time.Sleep(time.Until(job.at))
				var (
					wg      sync.WaitGroup
					status  int
					body    []byte
					expired error
				)
				wg.Go(func() {
					status, body = e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "Paris", "conversation_id": conv})
				})
				wg.Go(func() {
					for range 50 { // tried again on an error, as the job queue does
						if expired = e.srv.Runs().Expire(context.Background(), events.PendingClarification, "alice", id); expired == nil {
							return
						}
						time.Sleep(20 * time.Millisecond)
					}
				})
				wg.Wait()
				if expired != nil {
					t.Fatalf("Expire: %v", expired)
				}
				c, err := e.store.GetHumanRequest(t.Context(), events.PendingClarification, "alice", id)
				if err != nil {
					t.Fatal(err)
				}
				waitFor(t, "the run that asked to settle", func() bool {
					r, err := e.store.GetRun(t.Context(), "alice", runID)
					return err == nil && r.Status != store.RunRunning
				})
				r, _ := e.store.GetRun(t.Context(), "alice", runID)
				stored, err := e.store.EventsAfter(t.Context(), "alice", runID, 0, 1000)
				if err != nil {
					t.Fatal(err)
				}
				var rest []string
				wentOn := false
				for _, ev := range stored {
					rest = append(rest, ev.Type)
					wentOn = wentOn || ev.Type == events.TypeClarificationExpired
				}
				switch {
				case c.TimedOut:
					if !wentOn || c.Status != store.HumanAnswered || c.Clarification.Answer != "" || r.Status != store.RunCompleted ||
						status != http.StatusConflict && status != http.StatusOK {
						t.Errorf("%d: the deadline won: %+v, run %s, events %v; message %d %s", i, c, r.Status, rest, status, body)
					}
				default:
					if wentOn || c.Status != store.HumanAnswered || c.Clarification.Answer != "Paris" || r.Status != store.RunInterrupted || status != http.StatusOK {
						t.Errorf("%d: the message won: %+v, run %s, events %v; message %d %s", i, c, r.Status, rest, status, body)
					}
				}
			}
		})
	}
}

// A clarifying question its deadline decides before its run has parked
// on it (here the job comes at once, as the question is recorded: a
// short deadline, or a run recovered after a crash between the decision
// and the resume) is taken up as the run parks: the run that asked goes
// on after clarification.expired and completes.
func TestClarificationDecidedBeforeItsRunParks(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			var svc atomic.Pointer[runs.Service]
			expired := make(chan error, 1)
			e := newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) {
				c.Runs.ClarificationExpiry = operators.Expiry{Timeout: time.Millisecond, Outcome: events.ExpiryContinue}
				c.Runs.ScheduleExpiry = func(ctx context.Context, kind events.PendingKind, user, id string, at time.Time) error {
					time.Sleep(time.Until(at))
					expired <- svc.Load().Expire(ctx, kind, user, id)
					return nil
				}
			}})
			svc.Store(e.srv.Runs())
			s := e.chat(map[string]any{"message": "book a table for two"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			if err := <-expired; err != nil {
				t.Fatalf("Expire: %v", err)
			}
			evs := s.all()
			last := evs[len(evs)-1]
			if last.Type != "run.interrupted" {
				t.Fatalf("events %v", types(evs))
			}
			rest := followFrom(e, conv, last.ID)
			if len(rest) == 0 || rest[0].Type != "clarification.expired" || rest[len(rest)-1].Type != "run.completed" {
				t.Fatalf("after the question: %v", types(rest))
			}
			if r, err := e.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunCompleted {
				t.Errorf("the run that asked: %+v %v", r, err)
			}
		})
	}
}
