package runs

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/mcp/elicit"
	"github.com/trellis-ai/trellis/operators"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
	pending  []elicit.Pending
	resolved []elicit.Resolution
	asked    chan elicit.Pending
}

func newRecorder() *recorder { return &recorder{asked: make(chan elicit.Pending, 8)} }

func (r *recorder) hooks() elicit.Hooks {
	return elicit.Hooks{
		Requested: func(_ context.Context, p elicit.Pending) error {
			r.mu.Lock()
			r.pending = append(r.pending, p)
			r.mu.Unlock()
			r.asked <- p
			return nil
		},
		Resolved: func(_ context.Context, res elicit.Resolution) {
			r.mu.Lock()
			r.resolved = append(r.resolved, res)
			r.mu.Unlock()
		},
	}
}

func (r *recorder) resolutions() []elicit.Resolution {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]elicit.Resolution(nil), r.resolved...)
}

type askResult struct {
	resp operators.ElicitResponse
	err  error
}

func ask(ctx context.Context, m *elicit.Manager, req elicit.Request, h elicit.Hooks) <-chan askResult {
	out := make(chan askResult, 1)
	go func() {
		resp, err := m.Ask(ctx, req, h)
		out <- askResult{resp, err}
	}()
	return out
}

func request(user string) elicit.Request {
	return elicit.Request{
		ElicitRequest:  operators.ElicitRequest{Source: "srv.tool", Message: "Who are you?", Schema: nameSchema()},
		ConversationID: "c1", UserID: user,
	}
}

func TestAcceptValidatesContent(t *testing.T) {
	m := elicit.NewManager(elicit.Config{})
	rec := newRecorder()
	done := ask(t.Context(), m, request("u1"), rec.hooks())
	p := <-rec.asked
	if p.Source != "srv.tool" || p.ConversationID != "c1" || p.ExpiresAt.Sub(p.CreatedAt) != elicit.DefaultTimeout {
		t.Fatalf("pending = %+v", p)
	}
	if got := m.Pending("u1", "c1"); len(got) != 1 || got[0].ElicitationID != p.ElicitationID {
		t.Fatalf("Pending = %+v", got)
	}
	for _, bad := range []string{`{"age": 3}`, `{"name": "Ada", "age": -1}`, `{"name": "Ada", "email": "nope"}`, `[1]`, `nope`} {
		err := m.Respond("u1", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: operators.ElicitAccept, Content: json.RawMessage(bad)})
		var ve *elicit.ValidationError
		if !errors.Is(err, elicit.ErrInvalidContent) || !errors.As(err, &ve) {
			t.Fatalf("Respond(%s) = %v, want a ValidationError", bad, err)
		}
	}
	if len(m.Pending("", "")) != 1 {
		t.Fatal("a refused answer must leave the elicitation pending")
	}
	good := json.RawMessage(`{"name": "Ada", "email": "ada@example.com", "age": 36}`)
	if err := m.Respond("u1", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: operators.ElicitAccept, Content: good}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.resp.Action != operators.ElicitAccept || string(r.resp.Content) != string(good) || r.resp.ElicitationID != p.ElicitationID {
		t.Fatalf("Ask = %+v, %v", r.resp, r.err)
	}
	if res := rec.resolutions(); len(res) != 1 || res[0].Reason != elicit.ReasonAnswered || res[0].Action != operators.ElicitAccept {
		t.Fatalf("resolutions = %+v", res)
	}
	if err := m.Respond("u1", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: operators.ElicitDecline}); !errors.Is(err, elicit.ErrResolved) {
		t.Fatalf("second answer: %v, want ErrResolved", err)
	}
	if len(m.Pending("", "")) != 0 {
		t.Fatal("answered elicitation still pending")
	}
}

func TestDeclineCancelAndOwnership(t *testing.T) {
	m := elicit.NewManager(elicit.Config{})
	for _, tc := range []struct {
		name   string
		answer func(id string) error
		action operators.ElicitAction
		reason elicit.Reason
	}{
		{"decline", func(id string) error {
			return m.Respond("u1", operators.ElicitResponse{ElicitationID: id, Action: operators.ElicitDecline, Content: json.RawMessage(`{"x":1}`)})
		}, operators.ElicitDecline, elicit.ReasonAnswered},
		{"cancel by user", func(id string) error {
			return m.Respond("u1", operators.ElicitResponse{ElicitationID: id, Action: operators.ElicitCancel})
		}, operators.ElicitCancel, elicit.ReasonAnswered},
		{"cancel by DELETE", func(id string) error { return m.Cancel("u1", id) }, operators.ElicitCancel, elicit.ReasonCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			done := ask(t.Context(), m, request("u1"), rec.hooks())
			p := <-rec.asked
			if err := m.Respond("u2", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: operators.ElicitDecline}); !errors.Is(err, elicit.ErrNotFound) {
				t.Fatalf("other user's answer: %v, want ErrNotFound", err)
			}
			if err := m.Cancel("u2", p.ElicitationID); !errors.Is(err, elicit.ErrNotFound) {
				t.Fatalf("other user's cancel: %v, want ErrNotFound", err)
			}
			if got := m.Pending("u2", ""); len(got) != 0 {
				t.Fatalf("u2 sees %+v", got)
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
	if err := m.Respond("", operators.ElicitResponse{ElicitationID: "nope", Action: operators.ElicitDecline}); !errors.Is(err, elicit.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := m.Respond("", operators.ElicitResponse{ElicitationID: "nope", Action: "maybe"}); !errors.Is(err, elicit.ErrInvalidAction) {
		t.Fatalf("bad action: %v", err)
	}
}

func TestTimeoutCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := elicit.NewManager(elicit.Config{Timeout: time.Minute})
		rec := newRecorder()
		start := time.Now()
		done := ask(t.Context(), m, request(""), rec.hooks())
		p := <-rec.asked
		r := <-done
		if r.err != nil || r.resp.Action != operators.ElicitCancel {
			t.Fatalf("Ask = %+v, %v", r.resp, r.err)
		}
		if waited := time.Since(start); waited != time.Minute {
			t.Fatalf("waited %s, want 1m", waited)
		}
		if res := rec.resolutions(); len(res) != 1 || res[0].Reason != elicit.ReasonTimeout {
			t.Fatalf("resolutions = %+v", res)
		}
		if err := m.Respond("", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: operators.ElicitDecline}); !errors.Is(err, elicit.ErrResolved) {
			t.Fatalf("late answer: %v, want ErrResolved", err)
		}

		// A per-request timeout wins.
		req := request("")
		req.Timeout = 10 * time.Second
		start = time.Now()
		done = ask(t.Context(), m, req, elicit.Hooks{})
		<-done
		if waited := time.Since(start); waited != 10*time.Second {
			t.Fatalf("waited %s, want 10s", waited)
		}
	})
}

func TestContextEndAbandons(t *testing.T) {
	m := elicit.NewManager(elicit.Config{})
	rec := newRecorder()
	ctx, cancel := context.WithCancel(t.Context())
	done := ask(ctx, m, request(""), rec.hooks())
	<-rec.asked
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) || r.resp.Action != operators.ElicitCancel {
		t.Fatalf("Ask = %+v, %v", r.resp, r.err)
	}
	if res := rec.resolutions(); len(res) != 1 || res[0].Reason != elicit.ReasonAbandoned {
		t.Fatalf("resolutions = %+v", res)
	}
	if len(m.Pending("", "")) != 0 {
		t.Fatal("abandoned elicitation still pending")
	}
}

func TestAnnounceFailureWithdraws(t *testing.T) {
	m := elicit.NewManager(elicit.Config{})
	boom := errors.New("stream gone")
	_, err := m.Ask(t.Context(), request(""), elicit.Hooks{Requested: func(context.Context, elicit.Pending) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if len(m.Pending("", "")) != 0 {
		t.Fatal("withdrawn elicitation still pending")
	}
}

func TestMessengerServesConfirmAndChoose(t *testing.T) {
	m := elicit.NewManager(elicit.Config{})
	rec := newRecorder()
	var base operators.Recorder
	call := operators.Call{Tool: "deploy", Messenger: m.Messenger(&base, elicit.Scope{ConversationID: "c9", UserID: "u"}, rec.hooks())}
	go func() {
		p := <-rec.asked
		_ = m.Respond("u", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: operators.ElicitAccept, Content: json.RawMessage(`{"confirm": true}`)})
		p = <-rec.asked
		_ = m.Respond("u", operators.ElicitResponse{ElicitationID: p.ElicitationID, Action: operators.ElicitAccept, Content: json.RawMessage(`{"choice": "blue"}`)})
	}()
	ok, err := call.Confirm(t.Context(), "Deploy now?")
	if err != nil || !ok {
		t.Fatalf("Confirm = %v, %v", ok, err)
	}
	choice, err := call.Choose(t.Context(), "Colour?", []string{"red", "blue"})
	if err != nil || choice != "blue" {
		t.Fatalf("Choose = %q, %v", choice, err)
	}
	if err := call.Progress(t.Context(), 1, 2, "half"); err != nil {
		t.Fatal(err)
	}
	if types := base.Types(); len(types) != 1 || types[0] != events.TypeToolProgress {
		t.Fatalf("base saw %v, want progress only", types)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.pending) != 2 || rec.pending[0].Source != "deploy" || rec.pending[0].ConversationID != "c9" {
		t.Fatalf("pending = %+v", rec.pending)
	}
}
