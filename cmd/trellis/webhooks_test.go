package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/webhooks"
)

// hookReceiver is a webhook endpoint in the test: it checks every
// delivery's signature; until accept is set it holds each request a
// while and answers 500, so that deliveries are pending, failing and in
// flight when a process is killed; then it answers 204 and counts what
// it accepted per webhook-id.
type hookReceiver struct {
	t       *testing.T
	secret  webhooks.Secret
	mu      sync.Mutex
	accept  bool
	tries   map[string]int
	got     map[string]int
	bad     []string
	inFlite int
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get(webhooks.HeaderID)
	ts, err := strconv.ParseInt(r.Header.Get(webhooks.HeaderTimestamp), 10, 64)
	h.mu.Lock()
	if err != nil || r.Header.Get(webhooks.HeaderSignature) != webhooks.Sign(h.secret, id, ts, body) {
		h.bad = append(h.bad, id)
	}
	h.tries[id]++
	accept := h.accept
	if !accept {
		h.inFlite++
	}
	h.mu.Unlock()
	if !accept {
		time.Sleep(300 * time.Millisecond)
		h.mu.Lock()
		h.inFlite--
		h.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	h.mu.Lock()
	h.got[id]++
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Webhooks survive the SIGKILL of the process sending them, while the
// receiver fails them, one is in flight and one was just stored: on SQLite the process
// started after it, on PostgreSQL a peer that was up all along, delivers
// every event, each accepted once under one webhook-id, signed.
func TestCrashWhileWebhooksFail(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel() // each backend has its own processes and receiver; most of it is waiting for retries
			s, err := webhooks.ParseSecret(secret)
			if err != nil {
				t.Fatal(err)
			}
			h := &hookReceiver{t: t, secret: s, tries: map[string]int{}, got: map[string]int{}}
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			dir := t.TempDir()
			file := filepath.Join(dir, "webhooks.json")
			cfg, _ := json.Marshal(map[string]any{"timeout": "2s", "max_attempts": 20, "endpoints": []map[string]any{
				{"id": "ops", "url": srv.URL + "/hooks", "secret": secret, "events": []string{"run.completed"}}}})
			if err := os.WriteFile(file, cfg, 0o600); err != nil {
				t.Fatal(err)
			}
			// A job of a process that died is taken again after 8 s.
			env := []string{"TRELLIS_WEBHOOKS_FILE=" + file, "TRELLIS_JOB_TIMEOUT=4s"}
			if db == "sqlite" {
				env = append(env, "TRELLIS_DATA_DIR="+filepath.Join(dir, "data"))
			} else {
				env = append(env, "DATABASE_URL="+pgDSN(t))
			}
			first := startServe(t, env...)
			var peer *child
			if db == "postgres" {
				peer = startServe(t, env...)
			}
			var runIDs []string
			for range 3 {
				out := syncChat(t, first, map[string]any{"message": "hello"})
				id, _ := out["run_id"].(string)
				runIDs = append(runIDs, id)
			}
			// Every event tried at least once and one attempt in flight.
			deadline := time.Now().Add(30 * time.Second)
			for {
				h.mu.Lock()
				ready := len(h.tries) == 3 && h.inFlite > 0
				h.mu.Unlock()
				if ready {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the deliveries were not tried: %v\n%s", h.tries, first.logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			// One more event, and the kill at once: its delivery is
			// stored and, most likely, not yet handed to the queue.
			out := syncChat(t, first, map[string]any{"message": "hello"})
			id, _ := out["run_id"].(string)
			runIDs = append(runIDs, id)
			first.stop(syscall.SIGKILL)
			h.mu.Lock()
			h.accept = true
			h.mu.Unlock()

			second := peer
			if second == nil {
				second = startServe(t, env...)
			}
			var log struct{ Deliveries []store.WebhookDelivery }
			deadline = time.Now().Add(60 * time.Second)
			for {
				resp := second.do(http.MethodGet, "/api/v1/webhooks/deliveries", nil)
				err := json.NewDecoder(resp.Body).Decode(&log)
				resp.Body.Close()
				done := err == nil && len(log.Deliveries) == len(runIDs) && !slices.ContainsFunc(log.Deliveries, func(d store.WebhookDelivery) bool {
					return d.Status != store.WebhookDelivered
				})
				if done {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("deliveries %+v %v\n%s", log.Deliveries, err, second.logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			var logged []string
			for _, d := range log.Deliveries {
				if d.EventType != "run.completed" || d.Endpoint != "ops" || d.UserID != "local" {
					t.Errorf("delivery %+v", d)
				}
				if !slices.Contains(runIDs, d.RunID) {
					t.Errorf("delivery of run %s, not one of %v", d.RunID, runIDs)
				}
				logged = append(logged, d.EventID)
			}
			slices.Sort(logged)
			if logged = slices.Compact(logged); len(logged) != len(runIDs) {
				t.Errorf("event ids %v: two deliveries of one event", logged)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			var accepted []string
			for id, n := range h.got {
				accepted = append(accepted, id)
				if n != 1 {
					t.Errorf("%s accepted %d times", id, n)
				}
			}
			slices.Sort(accepted)
			if !slices.Equal(accepted, logged) {
				t.Errorf("accepted %v, want the events %v", accepted, logged)
			}
			if len(h.bad) > 0 {
				t.Errorf("bad signatures on %v", h.bad)
			}
		})
	}
}

// The webhooks file is read at start: a file that is missing or wrong,
// or whose attempts could outlast the rescue of a dead process's jobs,
// stops serve with an error that names the file and never the secret.
func TestServeWebhooksFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const secret = "a-secret-that-must-never-show-0123456"
	good := write("good.json", `{"timeout":"3s","endpoints":[{"id":"ops","url":"https://x/h","secret":"`+secret+`","events":["run.failed"]}]}`)
	c, err := parseServe([]string{"--webhooks-file", good}, func(string) string { return "" }, io.Discard)
	if err != nil || len(c.webhooks.Endpoints) != 1 || c.webhooks.Timeout != 3*time.Second {
		t.Fatalf("%+v %v", c.webhooks, err)
	}
	for name, tc := range map[string]struct {
		args []string
		says string
	}{
		"missing":  {[]string{"--webhooks-file", filepath.Join(dir, "none.json")}, "no such file"},
		"invalid":  {[]string{"--webhooks-file", write("bad.json", `{"endpoints":[{"id":"ops","url":"ftp://x","secret":"`+secret+`","events":["run.failed"]}]}`)}, `"url"`},
		"too slow": {[]string{"--webhooks-file", good, "--job-timeout", "3s"}, "raise job-timeout"},
	} {
		_, err := parseServe(tc.args, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "webhooks-file") || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: %v, want an error saying %s", name, err, tc.says)
		}
	}
}
