package main

import (
	"net/http"
	"path/filepath"
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
	c := startServe(t, "TRELLIS_DATA_DIR="+dir)
	canary := newCanary(t)
	out := asJSON(t, c, "", http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "my code word is " + canary}, http.StatusOK)
	conv, _ := out["conversation_id"].(string)
	if out["status"] != "completed" || conv == "" {
		t.Fatalf("chat: %v", out)
	}

	db, err := sqlopen.SQLite(filepath.Join(dir, "trellis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if _, err := conn.ExecContext(t.Context(), "BEGIN DEFERRED"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(t.Context(), "SELECT count(*) FROM conversations").Scan(&n); err != nil {
		t.Fatal(err)
	}

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
