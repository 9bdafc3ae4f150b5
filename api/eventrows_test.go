package api_test

import (
	"database/sql"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A sync chat turn stores its events a batch a row, as the run flushed
// them, not a row per event: counted in the database after a few turns,
// on both backends. How many batches a turn makes depends on timing (a
// short turn stores them all with its end: see runs.Config.EventDelay),
// so the test asks only that some event shared a row.
func TestSyncChatEventRows(t *testing.T) {
	const turns = 4
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b, local: true})
			for range turns {
				if status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "hello"}); status != http.StatusOK {
					t.Fatalf("%d %s", status, body)
				}
			}
			const count = `SELECT (SELECT count(*) FROM events), (SELECT sum(last_seq) FROM runs), (SELECT count(*) FROM runs)`
			var rows, evs, runs int
			switch b {
			case postgresBackend:
				pool, err := pgxpool.New(t.Context(), e.data.dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer pool.Close()
				if err := pool.QueryRow(t.Context(), count).Scan(&rows, &evs, &runs); err != nil {
					t.Fatal(err)
				}
			default:
				db, err := sql.Open("sqlite", e.data.path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if err := db.QueryRowContext(t.Context(), count).Scan(&rows, &evs, &runs); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d turns: %d events in %d rows", runs, evs, rows)
			if runs != turns || rows >= evs {
				t.Errorf("%d turns stored %d events in %d rows, want fewer rows than events", runs, evs, rows)
			}
		})
	}
}
