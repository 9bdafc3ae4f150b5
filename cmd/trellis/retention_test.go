package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/internal/sqlopen"
	"github.com/trellis-ai/trellis/store"
)

// age sets when the conversation was last written to, as a conversation
// left alone that long would have it.
func age(t *testing.T, e *erasureEnv, conv string, by time.Duration) {
	t.Helper()
	e.exec(t, `UPDATE conversations SET updated_at = ? WHERE id = ?`, time.Now().Add(-by), conv)
}

// exec runs query, with ? for its arguments, on the stopped server's
// database, as that backend stores a time.
func (e *erasureEnv) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if e.dsn != "" {
		conn, err := pgx.Connect(t.Context(), e.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		for i := range args {
			query = strings.Replace(query, "?", fmt.Sprintf("$%d", i+1), 1)
		}
		if _, err := conn.Exec(t.Context(), query, args...); err != nil {
			t.Fatal(err)
		}
		return
	}
	db, err := sqlopen.SQLite(filepath.Join(e.dir, "data", "trellis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, a := range args {
		if at, ok := a.(time.Time); ok {
			args[i] = at.UTC().Format("2006-01-02T15:04:05.000000Z")
		}
	}
	if _, err := db.ExecContext(t.Context(), query, args...); err != nil {
		t.Fatal(err)
	}
}

// With TRELLIS_RETENTION_DAYS, a conversation no one wrote to for longer
// is erased as its user's deletion would erase it, leaving its canary in
// no file and no table; a recent one stays. On both backends.
func TestRetentionErasesIdleConversations(t *testing.T) {
	t.Parallel()
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
			// The job scrubs the files once the record no longer has the
			// conversation: what it leaves must be gone soon after.
			var found map[string][]string
			waitFor(t, "the files scrubbed", func() bool {
				found = e.scan(oldWord, newWord)
				return len(found[oldWord]) == 0
			})
			if len(found[newWord]) == 0 {
				t.Error("the recent conversation's canary is gone too")
			}
		})
	}
}

// With TRELLIS_EVENT_RETENTION_DAYS, the events of a run that ended
// longer ago are compacted to its start, answer and end, under their
// numbers, and its conversation's messages stay; a recent run keeps its
// events. On both backends.
func TestRetentionCompactsOldRunsEvents(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := newErasureEnv(t, backend)
			c := startServe(t, e.env...)
			runsOf := func(conv string) convRuns { return aliceRuns(t, c, conv) }
			old := plant(t, c, aliceKey, newCanary(t), false)
			recent := plant(t, c, aliceKey, newCanary(t), false)
			before := runsOf(old)
			c.stop(syscall.SIGTERM)
			e.exec(t, `UPDATE runs SET completed_at = ? WHERE conversation_id = ?`, time.Now().Add(-8*24*time.Hour), old)

			c = startServe(t, append(e.env, "TRELLIS_EVENT_RETENTION_DAYS=7")...)
			var after convRuns
			waitFor(t, "compaction", func() bool {
				after = runsOf(old)
				return len(after.Runs) > 0 && len(after.Runs[0].Events) == 3
			})
			for i, r := range after.Runs {
				was := before.Runs[i].Events
				want := slices.DeleteFunc(slices.Clone(was), func(ev runEvent) bool {
					return !slices.Contains(store.CompactedKeeps, ev.Type)
				})
				if r.EventsTruncated || before.Runs[i].EventsTruncated || len(want) != 3 || !slices.Equal(r.Events, want) {
					t.Errorf("run %d's events %+v (truncated %v), want %+v", i, r.Events, r.EventsTruncated, want)
				}
			}
			if !slices.Equal(after.Messages, before.Messages) {
				t.Errorf("messages after compaction %+v, before %+v", after.Messages, before.Messages)
			}
			if got := runsOf(recent); len(got.Runs) == 0 || len(got.Runs[0].Events) <= 3 {
				t.Errorf("a recent run's events were compacted: %+v", got.Runs)
			}
		})
	}
}
