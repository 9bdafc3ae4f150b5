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
	app := fmt.Sprintf("trellis_test_%016x", rand.Uint64())
	script := filepath.Join(t.TempDir(), "slow.json")
	if err := os.WriteFile(script, []byte(slowScript), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "DATABASE_URL="+pgDSN(t)+"&application_name="+app, "TRELLIS_MODEL=scripted:"+script,
		"TRELLIS_CLAIM_INTERVAL=100ms")
	resp := srv.do("POST", "/api/v1/chat", map[string]any{"message": "tell me something"})
	conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
	seen := events(t, resp, func(e event) bool { return e.typ == "response.chunk" })
	resp.Body.Close()

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

	for len(seen) < 1000 && !terminalType(seen[len(seen)-1].typ) {
		r := srv.do("GET", "/api/v1/conversations/"+conv+"/stream", nil, "Last-Event-ID", strconv.FormatInt(seen[len(seen)-1].id, 10))
		if r.StatusCode == http.StatusNoContent {
			t.Fatalf("the run ended with %s", seen[len(seen)-1].typ)
		}
		seen = append(seen, events(t, r, nil)...)
	}
	var typs []string
	for i, e := range seen {
		typs = append(typs, e.typ)
		if e.id != int64(i+1) || e.data["run_id"] != runID {
			t.Fatalf("event %d: id %d run %v; events %v", i, e.id, e.data["run_id"], typs)
		}
	}
	chunks := 0
	for _, typ := range typs {
		if typ == "response.chunk" {
			chunks++
		}
	}
	// Eight words; more were streamed when the run went on from the
	// checkpoint before the answer, as it must once stopped midway.
	if typs[len(typs)-1] != "run.completed" || chunks <= 8 {
		t.Fatalf("events: %v\n%s", typs, srv.logs.String())
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

func terminalType(typ string) bool {
	switch typ {
	case "run.completed", "run.interrupted", "run.cancelled", "run.failed":
		return true
	}
	return false
}

// adminDSN is the test database's URL, for a connection of the test's
// own.
func adminDSN() string {
	if dsn := os.Getenv(pgtest.EnvDatabase); dsn != "" {
		return dsn
	}
	return pgtest.DefaultDatabase
}
