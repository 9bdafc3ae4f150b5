package main

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// A conversation deleted while another connection keeps the record's
// write-ahead log in use is scrubbed once the log is free: the delete
// answers at once, and a job empties the logs when it can, so the
// deleted text ends in no file of the data directory. The reader is a
// read transaction of another process, as a backup tool or a second
// server's would be.
func TestDeleteScrubsABusyLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, canary, conv := serveCanary(t, dir)

	db, err := sqlopen.SQLite(filepath.Join(dir, "trellis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn := holdSnapshot(t, db)

	start := time.Now()
	if code, b := as(t, c, "", http.MethodDelete, "/api/v1/conversations/"+conv, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, b)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the delete waited %v for the reader", d)
	}
	if found := fileScan(t, dir, canary); len(found[canary]) == 0 {
		t.Fatal("the log was emptied under the reader's snapshot: this test proves nothing")
	}
	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted text gone from every file", func() bool {
		return len(fileScan(t, dir, canary)[canary]) == 0
	})
}

// A process killed between a delete and its scrub leaves the deleted text
// in the logs; the next process started on the data directory scrubs
// them as it starts, whatever became of the job the dead one queued:
// never stored, or stored and marked running when the process died, which
// the queue takes again only after the job timeout (six minutes by
// default). The reader is opened read-only: a read-write connection that
// is a file's last one empties its log as it closes, which would scrub
// the text before the new process starts and prove nothing.
func TestScrubAfterACrash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// job changes the scrub job the dead process queued, in jobs.db,
		// and returns its id.
		job string
	}{
		{"job never stored", `DELETE FROM river_job WHERE kind = ? RETURNING id`},
		{"job killed while running", `UPDATE river_job SET state = 'running', attempt = attempt + 1,
    attempted_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), attempted_by = jsonb_array('a-dead-process')
    WHERE kind = ? RETURNING id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			c, canary, conv := serveCanary(t, dir)

			db, err := sqlopen.SQLite("file:" + filepath.Join(dir, "trellis.db") + "?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn := holdSnapshot(t, db)
			if code, b := as(t, c, "", http.MethodDelete, "/api/v1/conversations/"+conv, nil); code != http.StatusNoContent {
				t.Fatalf("delete: %d %s", code, b)
			}
			c.stop(syscall.SIGKILL)
			if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			if err := conn.Close(); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if found := fileScan(t, dir, canary); len(found[canary]) == 0 {
				t.Fatal("the logs were emptied before the crash or as the reader closed: this test proves nothing")
			}

			// The dead process queued the scrub job durably; make it what
			// the case names, so that the new process's scrub as it starts
			// is what this test proves.
			jobsDB, err := sqlopen.SQLite(filepath.Join(dir, "jobs.db"))
			if err != nil {
				t.Fatal(err)
			}
			var job int64
			if err := jobsDB.QueryRowContext(t.Context(), tc.job, scrubArgs{}.Kind()).Scan(&job); err != nil {
				t.Fatalf("the scrub job the dead process queued: %v", err)
			}
			if err := jobsDB.Close(); err != nil {
				t.Fatal(err)
			}

			startServe(t, "TRELLIS_DATA_DIR="+dir)
			waitFor(t, "the deleted text gone from every file after the restart", func() bool {
				return len(fileScan(t, dir, canary)[canary]) == 0
			})
		})
	}
}

// serveCanary starts a server on the data directory dir and tells it,
// in a new conversation, a canary to look for in the files.
func serveCanary(t *testing.T, dir string) (c *child, canary, conv string) {
	t.Helper()
	c = startServe(t, "TRELLIS_DATA_DIR="+dir)
	canary = newCanary(t)
	out := asJSON(t, c, "", http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "my code word is " + canary}, http.StatusOK)
	conv, _ = out["conversation_id"].(string)
	if out["status"] != "completed" || conv == "" {
		t.Fatalf("chat: %v", out)
	}
	return c, canary, conv
}

// holdSnapshot opens a read transaction on db that keeps its write-ahead
// log in use until the test rolls it back on the connection returned.
func holdSnapshot(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM conversations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return conn
}
