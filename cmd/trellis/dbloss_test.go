package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/internal/pgtest"
)

// slowScript answers every message with a text the write node streams
// slowly, so that a run is under way for a few seconds.
const slowScript = `{"steps": [
  {"name": "the supervisor answers", "match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}, "repeat": true},
  {"name": "write streams slowly", "match": {"node": "write"},
   "reply": {"text": "one two three four five six seven eight", "delay_ms": 250}, "repeat": true}
]}`

// TestServeSurvivesLosingItsDatabaseSessions ends every PostgreSQL session
// of a running `trellis serve` while a run streams its answer, as
// pg_terminate_backend (or a database restart) does: the process
// reconnects by itself, is ready again, and continues the run from its
// last checkpoint to run.completed, which a client reconnecting with
// Last-Event-ID sees; the run is never marked failed.
func TestServeSurvivesLosingItsDatabaseSessions(t *testing.T) {
	t.Parallel()
	app := fmt.Sprintf("trellis_test_%016x", rand.Uint64())
	script := filepath.Join(t.TempDir(), "slow.json")
	if err := os.WriteFile(script, []byte(slowScript), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "DATABASE_URL="+pgDSN(t)+"&application_name="+app, "TRELLIS_MODEL=scripted:"+script,
		"TRELLIS_CLAIM_INTERVAL=100ms")
	resp := srv.do("POST", "/api/v1/chat", map[string]any{"message": "tell me something"})
	conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
	seen := sseEvents(t, resp, func(e event) bool { return e.typ == "response.chunk" })
	resp.Body.Close()
	// A client following the run live while the sessions go.
	live := srv.do("GET", "/api/v1/conversations/"+conv+"/stream", nil, "Last-Event-ID", strconv.FormatInt(seen[len(seen)-1].id, 10))

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, adminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil || n == 0 {
		t.Fatalf("terminated %d sessions: %v", n, err)
	}

	// Its stream goes on to the run's end, or ends saying to reconnect:
	// never silently.
	if rest := sseEvents(t, live, nil); len(rest) > 0 {
		end := rest[len(rest)-1]
		if end.typ != "run.completed" && end.typ != "stream.reconnect" {
			t.Fatalf("the live stream ended with %s, neither the run's end nor stream.reconnect", end.typ)
		}
		if end.typ == "stream.reconnect" {
			t.Logf("the live stream asked to reconnect: %v", end.data)
		}
	} else {
		t.Fatal("the live stream ended with nothing")
	}

	seen = followToEnd(t, srv, conv, runID, seen)
	chunks := 0
	for _, e := range seen {
		if e.typ == "response.chunk" {
			chunks++
		}
	}
	// Eight words; more were streamed when the run went on from the
	// checkpoint before the answer, as it must once stopped midway.
	if chunks <= 8 {
		t.Fatalf("%d chunks, want more than the answer's 8 words\n%s", chunks, srv.logs.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.do("GET", "/readyz", nil).StatusCode != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 again\n%s", srv.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status := srv.do("GET", "/healthz", nil).StatusCode; status != http.StatusOK {
		t.Errorf("/healthz %d", status)
	}
	srv.stop(syscall.SIGTERM)
}

// adminDSN is the test database's URL, for a connection of the test's
// own.
func adminDSN() string {
	if dsn := os.Getenv(pgtest.EnvDatabase); dsn != "" {
		return dsn
	}
	return pgtest.DefaultDatabase
}
