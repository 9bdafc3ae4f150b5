package api_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// scheduled is a deadline the run service asked to keep.
type scheduled struct {
	kind     events.PendingKind
	user, id string
	at       time.Time
}

// deadlineEnv is a server whose tools' questions expire after timeout
// with outcome, and the deadlines it schedules (the job queue's part,
// which the test plays).
func deadlineEnv(t *testing.T, b backend, timeout time.Duration, outcome events.ExpiryOutcome) (*env, <-chan scheduled) {
	jobs := make(chan scheduled, 8)
	e := newEnv(t, envOptions{backend: b, questionExpiry: operators.Expiry{Timeout: timeout, Outcome: outcome},
		configure: func(c *apitest.Config) {
			c.Runs.ScheduleExpiry = func(_ context.Context, kind events.PendingKind, user, id string, at time.Time) error {
				jobs <- scheduled{kind, user, id, at}
				return nil
			}
		}})
	return e, jobs
}

// A tool's question with a deadline shows it (elicitation.request, the
// pending list) and has it scheduled; Expire before it is ErrNotDue.
// At the deadline Expire declines it: the tool, still waiting on the open
// stream, hears a decline, announced by elicitation.expired; the record
// says declined, timed out; an answer after it is 409, and Expire again
// does nothing.
func TestElicitationDeadlineDeclines(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, jobs := deadlineEnv(t, b, 300*time.Millisecond, events.ExpiryDecline)
			s := e.chat(map[string]any{"message": "ask me my name"})
			conv := s.header("X-Conversation-ID")
			req := s.until("elicitation.request")
			id := req.str("elicitation_id")
			at, err := time.Parse(time.RFC3339Nano, req.str("expires_at"))
			if err != nil || req.str("on_expiry") != "decline" {
				t.Fatalf("elicitation.request %s, want a deadline", req.Raw)
			}
			job := <-jobs
			if job.kind != events.PendingElicitation || job.id != id || job.user != "alice" || !job.at.Equal(at) {
				t.Fatalf("scheduled %+v, want the question's deadline %s", job, at)
			}
			status, body := e.do("GET", "/api/v1/elicitation/pending?conversation_id="+conv, nil)
			pending := jsonOf[struct {
				Elicitations []struct {
					ExpiresAt time.Time `json:"expires_at"`
					OnExpiry  string    `json:"on_expiry"`
				}
			}](t, body)
			if status != 200 || len(pending.Elicitations) != 1 || !pending.Elicitations[0].ExpiresAt.Equal(at) || pending.Elicitations[0].OnExpiry != "decline" {
				t.Fatalf("pending: %d %s", status, body)
			}

			svc := e.srv.Runs()
			if err := svc.Expire(t.Context(), events.PendingElicitation, "alice", id); time.Now().Before(at) && !errors.Is(err, runs.ErrNotDue) {
				t.Errorf("Expire before the deadline: %v, want ErrNotDue", err)
			}
			time.Sleep(time.Until(at)) // the job queue's wait, which this test plays
			if err := svc.Expire(t.Context(), events.PendingElicitation, "alice", id); err != nil {
				t.Fatalf("Expire: %v", err)
			}
			evs := s.all()
			x := indexOf(evs, "elicitation.expired")
			if x < 0 || evs[x].str("outcome") != "decline" || evs[x+1].Type != "elicitation.response" || evs[x+1].str("action") != "decline" {
				t.Fatalf("events %v", types(evs))
			}
			if got := toolResult(t, evs); got != "the user would not say (decline)" {
				t.Errorf("tool result %q", got)
			}
			if el, err := e.store.GetHumanRequest(t.Context(), events.PendingElicitation, "alice", id); err != nil || el.Status != store.HumanDeclined || !el.TimedOut {
				t.Errorf("stored %+v %v", el, err)
			}
			status, body = e.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "accept", "content": map[string]any{"name": "Ada"}})
			wantError(t, status, body, http.StatusConflict)
			if err := svc.Expire(t.Context(), events.PendingElicitation, "alice", id); err != nil {
				t.Errorf("Expire again: %v", err)
			}
		})
	}
}

// Of the user's answer and the deadline, racing, exactly one wins: the
// tool hears one of them, and the stream shows elicitation.expired only
// when the deadline won.
func TestElicitationDeadlineRacesAnAnswer(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, jobs := deadlineEnv(t, b, time.Millisecond, events.ExpiryDecline)
			s := e.chat(map[string]any{"message": "ask me my name"})
			id := s.until("elicitation.request").str("elicitation_id")
			job := <-jobs
			time.Sleep(time.Until(job.at)) // the job queue's wait, which this test plays
			var wg sync.WaitGroup
			var answerStatus int
			wg.Go(func() {
				answerStatus, _ = e.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": id, "action": "accept",
					"content": map[string]any{"name": "Ada"}})
			})
			wg.Go(func() {
				// Tried again on an error, as the job queue does.
				var err error
				for range 50 {
					if err = e.srv.Runs().Expire(context.Background(), events.PendingElicitation, "alice", id); err == nil {
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				t.Errorf("Expire: %v", err)
			})
			wg.Wait()
			evs := s.all()
			el, err := e.store.GetHumanRequest(t.Context(), events.PendingElicitation, "alice", id)
			if err != nil {
				t.Fatal(err)
			}
			expired := indexOf(evs, "elicitation.expired") >= 0
			switch result := toolResult(t, evs); {
			case el.TimedOut:
				if !expired || result != "the user would not say (decline)" || el.Status != store.HumanDeclined || answerStatus != http.StatusConflict {
					t.Errorf("the deadline won: %s %q %v, answer %d", el.Status, result, types(evs), answerStatus)
				}
			default:
				if expired || result != "hello Ada" || el.Status != store.HumanAccepted || answerStatus != http.StatusOK {
					t.Errorf("the answer won: %s %q %v, answer %d", el.Status, result, types(evs), answerStatus)
				}
			}
		})
	}
}
