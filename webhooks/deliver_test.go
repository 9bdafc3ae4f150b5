package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
	"github.com/trellis-ai/trellis/webhooks"
)

type webhookStore interface {
	store.Store
	store.Webhooks
}

// backend opens a store, then a job queue, as serve does: on SQLite in
// two files, on PostgreSQL in one schema.
type backend struct {
	name string
	open func(t *testing.T) (webhookStore, func(ws *jobs.Workers) *jobs.Queue)
}

var backends = []backend{
	{"sqlite", func(t *testing.T) (webhookStore, func(*jobs.Workers) *jobs.Queue) {
		dir := t.TempDir()
		st, err := sqlitestore.Open(t.Context(), filepath.Join(dir, "trellis.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st, func(ws *jobs.Workers) *jobs.Queue {
			q, err := jobs.SQLite(t.Context(), filepath.Join(dir, "jobs.db"), ws, jobs.Config{PollInterval: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = q.Close() })
			return q
		}
	}},
	{"postgres", func(t *testing.T) (webhookStore, func(*jobs.Workers) *jobs.Queue) {
		pool := pgtest.New(t)
		st, err := pgstore.New(t.Context(), pool)
		if err != nil {
			t.Fatal(err)
		}
		return st, func(ws *jobs.Workers) *jobs.Queue {
			q, err := jobs.Postgres(t.Context(), pool, ws, jobs.Config{PollInterval: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
	}},
}

// receiver is an endpoint that checks every delivery's signature,
// answers 500 to the first fail attempts at each event, then 204, and
// counts what it accepted per webhook-id.
type receiver struct {
	t      *testing.T
	secret webhooks.Secret
	fail   int
	mu     sync.Mutex
	tries  map[string]int    // attempts per webhook-id
	got    map[string]int    // 2xx answered per webhook-id
	bodies map[string][]byte // the first body per webhook-id
	bad    []string          // what failed a check
}

func newReceiver(t *testing.T, secret string, fail int) (*receiver, *httptest.Server) {
	s, err := webhooks.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, secret: s, fail: fail, tries: map[string]int{}, got: map[string]int{}, bodies: map[string][]byte{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id, ts := r.Header.Get(webhooks.HeaderID), r.Header.Get(webhooks.HeaderTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch {
	case err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute:
		rc.bad = append(rc.bad, "timestamp "+ts)
	case r.Header.Get(webhooks.HeaderSignature) != webhooks.Sign(rc.secret, id, sec, body):
		rc.bad = append(rc.bad, "signature of "+id)
	case r.Header.Get("Content-Type") != "application/json" || !json.Valid(body):
		rc.bad = append(rc.bad, "body of "+id)
	case rc.bodies[id] != nil && !bytes.Equal(rc.bodies[id], body):
		rc.bad = append(rc.bad, "a second body for "+id)
	}
	if rc.bodies[id] == nil {
		rc.bodies[id] = body
	}
	rc.tries[id]++
	if rc.tries[id] <= rc.fail {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	rc.got[id]++
	w.WriteHeader(http.StatusNoContent)
}

// accepted returns the ids accepted, sorted.
func (rc *receiver) accepted() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var ids []string
	for id := range rc.got {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func eventOf(r store.Run, typ string) store.NewEvent {
	return store.NewEvent{RunID: r.ID, Type: typ,
		Data: json.RawMessage(fmt.Sprintf(`{"type":%q,"run_id":%q,"conversation_id":%q,"ts":"2026-11-28T18:00:00Z"}`, typ, r.ID, r.ConversationID))}
}

// Every event of a routed type reaches its endpoint signed, exactly once
// as the receiver counts by webhook-id, after the receiver failed the
// first attempts; the log shows each delivered after three attempts;
// a redelivery sends it again under the same id; and no log line,
// recorded error or log entry holds the secret or the URL's token.
func TestDeliveredOnceAfterFailures(t *testing.T) {
	const secret = "a-plain-secret-of-enough-bytes-0123"
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			rc, srv := newReceiver(t, secret, 2)
			settings, err := webhooks.ParseSettings([]byte(`{"timeout":"2s","endpoints":[{"id":"ops","url":"` + srv.URL +
				`/hook?token=sesame","secret":"` + secret + `","events":["approval.required","run.completed","run.failed","tool.uncertain"]},
 {"id":"gone","url":"http://127.0.0.1:1/","secret":"` + secret + `","events":["run.failed"]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			// The service's logs, in a file: its writes are safe from
			// several goroutines.
			logs, err := os.Create(filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = logs.Close() })
			st, openQueue := b.open(t)
			ws := jobs.NewWorkers()
			svc, err := webhooks.New(webhooks.Config{Store: st, Settings: settings, Poll: 50 * time.Millisecond,
				Backoff: func(int) time.Duration { return 20 * time.Millisecond },
				Logger:  slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, ws)
			if err != nil {
				t.Fatal(err)
			}
			q := openQueue(ws)
			if err := q.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if err := svc.Start(ctx, q); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				cancel()
				svc.Wait()
				_ = q.Stop(context.Background())
			})

			// Two runs: one asks an approval and completes, the other
			// finds an uncertain call and fails.
			c, err := st.CreateConversation(ctx, store.NewConversation{UserID: "ann"})
			if err != nil {
				t.Fatal(err)
			}
			r1, err := st.StartRun(ctx, store.NewRun{UserID: "ann", ConversationID: c.ID, UserMessage: "one"})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, typ := range []string{events.TypeRunStarted, events.TypeApprovalRequired, events.TypeApprovalResolved} {
				e, err := st.AppendEvent(ctx, eventOf(r1, typ))
				if err != nil {
					t.Fatal(err)
				}
				if typ == events.TypeApprovalRequired {
					want = append(want, store.WebhookEventID(r1.ID, e.Seq))
				}
			}
			end, err := st.EndRun(ctx, r1.ID, store.RunEnd{Status: store.RunCompleted}, []store.NewEvent{eventOf(r1, events.TypeRunCompleted)})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, store.WebhookEventID(r1.ID, end.Events[0].Seq))
			r2, err := st.StartRun(ctx, store.NewRun{UserID: "ann", ConversationID: c.ID, UserMessage: "two"})
			if err != nil {
				t.Fatal(err)
			}
			evs, err := st.AppendEvents(ctx, []store.NewEvent{eventOf(r2, events.TypeRunStarted), eventOf(r2, events.TypeToolUncertain)})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, store.WebhookEventID(r2.ID, evs[1].Seq))
			end, err = st.EndRun(ctx, r2.ID, store.RunEnd{Status: store.RunFailed}, []store.NewEvent{eventOf(r2, events.TypeRunFailed)})
			if err != nil {
				t.Fatal(err)
			}
			failed := store.WebhookEventID(r2.ID, end.Events[0].Seq)
			want = append(want, failed)
			slices.Sort(want)

			deliveries := waitDeliveries(t, st, func(ds []store.WebhookDelivery) bool {
				for _, d := range ds {
					if d.Endpoint == "ops" && d.Status != store.WebhookDelivered || d.Endpoint == "gone" && d.Status == store.WebhookPending {
						return false
					}
				}
				return len(ds) == len(want)+1
			})
			if got := rc.accepted(); !slices.Equal(got, want) {
				t.Errorf("accepted %v, want %v", got, want)
			}
			rc.mu.Lock()
			for id, n := range rc.got {
				if n != 1 || rc.tries[id] != 3 {
					t.Errorf("%s: accepted %d times after %d attempts, want once after 3", id, n, rc.tries[id])
				}
			}
			if len(rc.bad) > 0 {
				t.Errorf("the receiver found %v", rc.bad)
			}
			var body struct {
				ID, Type string
				Data     struct {
					UserID         string `json:"user_id"`
					ConversationID string `json:"conversation_id"`
					RunID          string `json:"run_id"`
					Event          struct{ Type string }
				}
			}
			if err := json.Unmarshal(rc.bodies[failed], &body); err != nil || body.ID != failed || body.Type != events.TypeRunFailed ||
				body.Data.UserID != "ann" || body.Data.ConversationID != c.ID || body.Data.RunID != r2.ID || body.Data.Event.Type != events.TypeRunFailed {
				t.Errorf("body %s: %+v %v", rc.bodies[failed], body, err)
			}
			rc.mu.Unlock()
			var gone store.WebhookDelivery
			for _, d := range deliveries {
				if d.Endpoint == "gone" {
					gone = d
					continue
				}
				if d.Attempts != 3 || d.LastStatus != http.StatusNoContent || d.DeliveredAt == nil {
					t.Errorf("delivery %+v, want delivered at the third attempt", d)
				}
			}
			// Nothing listens on port 1: the attempts are spent (8).
			if gone.Status != store.WebhookFailed || gone.Attempts != webhooks.DefaultMaxAttempts || gone.LastStatus != 0 || gone.LastError == "" {
				t.Errorf("the delivery nobody answers: %+v", gone)
			}

			// Redelivered: sent again under the same id, accepted at once.
			var again store.WebhookDelivery
			for _, d := range deliveries {
				if d.EventID == failed && d.Endpoint == "ops" {
					again = d
				}
			}
			if _, err := svc.Redeliver(ctx, again.ID); err != nil {
				t.Fatal(err)
			}
			waitDeliveries(t, st, func(ds []store.WebhookDelivery) bool {
				return slices.ContainsFunc(ds, func(d store.WebhookDelivery) bool {
					return d.ID == again.ID && d.Attempts == 4 && d.Status == store.WebhookDelivered
				})
			})
			rc.mu.Lock()
			if rc.got[failed] != 2 {
				t.Errorf("redelivered: accepted %d times, want twice under one id", rc.got[failed])
			}
			rc.mu.Unlock()

			all, _ := json.Marshal(waitDeliveries(t, st, func([]store.WebhookDelivery) bool { return true }))
			logged, err := os.ReadFile(logs.Name())
			if err != nil || len(logged) == 0 {
				t.Fatalf("the logs: %v", err)
			}
			for _, leak := range []string{secret, "sesame"} {
				if strings.Contains(string(logged), leak) || strings.Contains(string(all), leak) {
					t.Errorf("%q shows in the logs or the delivery log:\n%s\n%s", leak, logged, all)
				}
			}
		})
	}
}

// waitDeliveries reads the delivery log until done says it is as
// wanted, 30 s at most, and returns it.
func waitDeliveries(t *testing.T, st store.Webhooks, done func([]store.WebhookDelivery) bool) []store.WebhookDelivery {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := st.ListWebhookDeliveries(t.Context(), store.Page{Limit: store.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		if done(p.Deliveries) {
			return p.Deliveries
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deliveries are %+v", p.Deliveries)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
