package runs

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

// TestMain checks that no test of the package leaves a goroutine behind:
// a question's wait ends with its answer, its timeout or its run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var discard = slog.New(slog.DiscardHandler)

// waiting lists the ids of the questions waiting in m.
func waiting(m *questions) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.pending))
}

func nameSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"name":  {Type: "string"},
			"email": {Type: "string", Format: "email"},
			"age":   {Type: "integer", Minimum: jsonschema.Ptr(0.0)},
		},
		Required: []string{"name"},
	}
}

// recorder collects hook calls.
type recorder struct {
	mu       sync.Mutex
	pending  []asked
	resolved []resolution
	asked    chan asked
}

func newRecorder() *recorder { return &recorder{asked: make(chan asked, 8)} }

func (r *recorder) hooks() questionHooks {
	return questionHooks{
		Requested: func(_ context.Context, p asked) error {
			r.mu.Lock()
			r.pending = append(r.pending, p)
			r.mu.Unlock()
			r.asked <- p
			return nil
		},
		Resolved: func(_ context.Context, res resolution) {
			r.mu.Lock()
			r.resolved = append(r.resolved, res)
			r.mu.Unlock()
		},
	}
}

func (r *recorder) resolutions() []resolution {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]resolution(nil), r.resolved...)
}

type askResult struct {
	resp operators.ElicitResponse
	err  error
}

func ask(ctx context.Context, m *questions, req question, h questionHooks) <-chan askResult {
	out := make(chan askResult, 1)
	go func() {
		resp, err := m.ask(ctx, req, h)
		out <- askResult{resp, err}
	}()
	return out
}

func request(user string) question {
	return question{
		ElicitRequest:  operators.ElicitRequest{Source: "srv.tool", Message: "Who are you?", Schema: nameSchema()},
		ConversationID: "c1", UserID: user,
	}
}

func TestAcceptValidatesContent(t *testing.T) {
	m := newQuestions(0, discard)
	rec := newRecorder()
	done := ask(t.Context(), m, request("u1"), rec.hooks())
	p := <-rec.asked
	if p.Source != "srv.tool" || p.ConversationID != "c1" || p.ExpiresAt.Sub(p.CreatedAt) != DefaultElicitTimeout {
		t.Fatalf("pending = %+v", p)
	}
	if got := waiting(m); len(got) != 1 || got[0] != p.ElicitationID {
		t.Fatalf("waiting = %v", got)
	}
	for _, bad := range []string{`{"age": 3}`, `{"name": "Ada", "age": -1}`, `{"name": "Ada", "email": "nope"}`, `[1]`, `nope`} {
		err := m.respond("u1", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: events.ElicitAccept, Content: json.RawMessage(bad)})
		var ve *ValidationError
		if !errors.Is(err, ErrInvalidContent) || !errors.As(err, &ve) {
			t.Fatalf("Respond(%s) = %v, want a ValidationError", bad, err)
		}
	}
	if len(waiting(m)) != 1 {
		t.Fatal("a refused answer must leave the elicitation pending")
	}
	good := json.RawMessage(`{"name": "Ada", "email": "ada@example.com", "age": 36}`)
	if err := m.respond("u1", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: events.ElicitAccept, Content: good}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.resp.Action != events.ElicitAccept || string(r.resp.Content) != string(good) || r.resp.ElicitationID != p.ElicitationID {
		t.Fatalf("Ask = %+v, %v", r.resp, r.err)
	}
	if res := rec.resolutions(); len(res) != 1 || res[0].Reason != reasonAnswered || res[0].Action != events.ElicitAccept {
		t.Fatalf("resolutions = %+v", res)
	}
	if err := m.respond("u1", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: events.ElicitDecline}); !errors.Is(err, store.ErrAlreadyResolved) {
		t.Fatalf("second answer: %v, want ErrResolved", err)
	}
	if len(waiting(m)) != 0 {
		t.Fatal("answered elicitation still pending")
	}
}

func TestDeclineCancelAndOwnership(t *testing.T) {
	m := newQuestions(0, discard)
	for _, tc := range []struct {
		name   string
		answer func(id string) error
		action events.ElicitAction
		reason reason
	}{
		{"decline", func(id string) error {
			return m.respond("u1", operators.ElicitResponse{ElicitationID: id, Action: events.ElicitDecline, Content: json.RawMessage(`{"x":1}`)})
		}, events.ElicitDecline, reasonAnswered},
		{"cancel by user", func(id string) error {
			return m.respond("u1", operators.ElicitResponse{ElicitationID: id, Action: events.ElicitCancel})
		}, events.ElicitCancel, reasonAnswered},
		{"cancel by DELETE", func(id string) error { return m.cancel("u1", id) }, events.ElicitCancel, reasonCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			done := ask(t.Context(), m, request("u1"), rec.hooks())
			p := <-rec.asked
			if err := m.respond("u2", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: events.ElicitDecline}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("other user's answer: %v, want ErrNotFound", err)
			}
			if err := m.cancel("u2", p.ElicitationID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("other user's cancel: %v, want ErrNotFound", err)
			}
			if err := tc.answer(p.ElicitationID); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil || r.resp.Action != tc.action || r.resp.Content != nil {
				t.Fatalf("Ask = %+v, %v", r.resp, r.err)
			}
			if res := rec.resolutions(); len(res) != 1 || res[0].Reason != tc.reason {
				t.Fatalf("resolutions = %+v", res)
			}
		})
	}
	if err := m.respond("", operators.ElicitResponse{ElicitationID: "nope", Action: events.ElicitDecline}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := m.respond("", operators.ElicitResponse{ElicitationID: "nope", Action: "maybe"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad action: %v", err)
	}
}

func TestTimeoutCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newQuestions(time.Minute, discard)
		rec := newRecorder()
		start := time.Now()
		done := ask(t.Context(), m, request(""), rec.hooks())
		p := <-rec.asked
		r := <-done
		if r.err != nil || r.resp.Action != events.ElicitCancel {
			t.Fatalf("Ask = %+v, %v", r.resp, r.err)
		}
		if waited := time.Since(start); waited != time.Minute {
			t.Fatalf("waited %s, want 1m", waited)
		}
		if res := rec.resolutions(); len(res) != 1 || res[0].Reason != reasonTimeout {
			t.Fatalf("resolutions = %+v", res)
		}
		if err := m.respond("", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: events.ElicitDecline}); !errors.Is(err, store.ErrAlreadyResolved) {
			t.Fatalf("late answer: %v, want ErrResolved", err)
		}
	})
}

func TestContextEndAbandons(t *testing.T) {
	m := newQuestions(0, discard)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(t.Context())
	done := ask(ctx, m, request(""), rec.hooks())
	<-rec.asked
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) || r.resp.Action != events.ElicitCancel {
		t.Fatalf("Ask = %+v, %v", r.resp, r.err)
	}
	if res := rec.resolutions(); len(res) != 1 || res[0].Reason != reasonAbandoned {
		t.Fatalf("resolutions = %+v", res)
	}
	if len(waiting(m)) != 0 {
		t.Fatal("abandoned elicitation still pending")
	}
}

func TestAnnounceFailureWithdraws(t *testing.T) {
	m := newQuestions(0, discard)
	boom := errors.New("stream gone")
	_, err := m.ask(t.Context(), request(""), questionHooks{Requested: func(context.Context, asked) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if len(waiting(m)) != 0 {
		t.Fatal("withdrawn elicitation still pending")
	}
}
