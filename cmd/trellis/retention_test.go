package main

import (
	"context"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// age sets when the conversation was last written to, as a conversation
// left alone that long would have it.
func age(t *testing.T, e *erasureEnv, conv string, by time.Duration) {
	t.Helper()
	at := time.Now().Add(-by).UTC()
	if e.dsn != "" {
		conn, err := pgx.Connect(t.Context(), e.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(t.Context(), `UPDATE conversations SET updated_at = $1 WHERE id = $2`, at, conv); err != nil {
			t.Fatal(err)
		}
		return
	}
	db, err := sqlopen.SQLite(filepath.Join(e.dir, "data", "trellis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `UPDATE conversations SET updated_at = ? WHERE id = ?`,
		at.Format("2006-01-02T15:04:05.000000Z"), conv); err != nil {
		t.Fatal(err)
	}
}

// With TRELLIS_RETENTION_DAYS, a conversation no one wrote to for longer
// is erased as its user's deletion would erase it, leaving its canary in
// no file and no table; a recent one stays. On both backends.
func TestRetentionErasesIdleConversations(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := newErasureEnv(t, backend)
			c := startServe(t, e.env...)
			oldWord, newWord := newCanary(t), newCanary(t)
			old := plant(t, c, aliceKey, oldWord, false)
			recent := plant(t, c, aliceKey, newWord, false)
			c.stop(syscall.SIGTERM)
			age(t, e, old, 31*24*time.Hour)
			age(t, e, recent, 29*24*time.Hour)

			c = startServe(t, append(e.env, "TRELLIS_RETENTION_DAYS=30")...)
			waitFor(t, "retention", func() bool {
				code, _ := as(t, c, aliceKey, http.MethodGet, "/api/v1/conversations/"+old, nil)
				return code == http.StatusNotFound
			})
			if code, b := as(t, c, aliceKey, http.MethodGet, "/api/v1/conversations/"+recent, nil); code != http.StatusOK {
				t.Fatalf("the recent conversation: %d %s", code, b)
			}
			found := e.scan(oldWord, newWord)
			if len(found[oldWord]) > 0 {
				t.Errorf("an erased conversation's canary is still in %v", found[oldWord])
			}
			if len(found[newWord]) == 0 {
				t.Error("the recent conversation's canary is gone too")
			}
		})
	}
}
