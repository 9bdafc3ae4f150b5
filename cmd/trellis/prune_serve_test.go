package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// checkpointCount counts the stopped or running server's checkpoints of
// conv.
func (e *erasureEnv) checkpointCount(t *testing.T, conv string) int {
	t.Helper()
	var n int
	if e.dsn != "" {
		conn, err := pgx.Connect(t.Context(), e.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM checkpoints WHERE thread_id = $1`, conv).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	db, err := sqlopen.SQLite(filepath.Join(e.dir, "data", "checkpoints.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM checkpoints WHERE thread_id = ?`, conv).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// With --keep-checkpoints, the job serve runs at start prunes a long
// conversation's checkpoints and reports the bytes left in
// trellis_checkpoint_bytes; the conversation still reads, goes on, and
// every one of its turns can still be edited, the early ones too, whose
// checkpoints are older than the kept window. On both backends.
func TestServePruneKeepsEveryTurnEditable(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			const turns = 8
			e := newErasureEnv(t, backend)
			c := startServe(t, e.env...)
			var conv string
			say := func(msg string) {
				t.Helper()
				body := map[string]any{"message": msg}
				if conv != "" {
					body["conversation_id"] = conv
				}
				out := asJSON(t, c, aliceKey, http.MethodPost, "/api/v1/chat/sync", body, http.StatusOK)
				if out["status"] != "completed" {
					t.Fatalf("chat %q: %v", msg, out)
				}
				conv, _ = out["conversation_id"].(string)
			}
			for i := range turns {
				say(fmt.Sprint("message ", i))
			}
			c.stop(syscall.SIGTERM)
			before := e.checkpointCount(t, conv)

			c = startServe(t, append(e.env, "TRELLIS_KEEP_CHECKPOINTS=2")...)
			var reported int64
			waitFor(t, "the prune job's metric", func() bool {
				_, b := as(t, c, aliceKey, http.MethodGet, "/metrics", nil)
				for line := range strings.Lines(string(b)) {
					if v, ok := strings.CutPrefix(line, `trellis_checkpoint_bytes{backend="`+backend+`"} `); ok {
						reported, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
						return reported > 0
					}
				}
				return false
			})
			// Each turn keeps the checkpoint its input made, and the
			// head its window of 2.
			after := e.checkpointCount(t, conv)
			if after >= before || after > turns+2 {
				t.Fatalf("%d checkpoints before the prune, %d after; want at most %d", before, after, turns+2)
			}
			t.Logf("%d checkpoints pruned to %d, %d bytes stored", before, after, reported)

			runs := aliceRuns(t, c, conv)
			if len(runs.Runs) != turns || len(runs.Messages) != 2*turns {
				t.Fatalf("after the prune the conversation reads %d runs, %d messages", len(runs.Runs), len(runs.Messages))
			}
			say("message after the prune")

			// Edit the second turn: it forks from the checkpoint the
			// second run started from, long outside the kept window.
			code, b := as(t, c, aliceKey, http.MethodPost, "/api/v1/conversations/"+conv+"/runs/"+runs.Runs[1].ID+"/edit",
				map[string]any{"message": "message 1, edited"})
			if code != http.StatusOK || !strings.Contains(string(b), "run.completed") {
				t.Fatalf("edit of the second turn: %d %s", code, b)
			}
			edited := aliceRuns(t, c, conv)
			active := map[string]bool{}
			for _, r := range edited.Runs {
				if !r.Superseded {
					active[r.ID] = true
				}
			}
			var users []string
			for _, m := range edited.Messages {
				if m.Role == "user" && active[m.RunID] {
					users = append(users, m.Content)
				}
			}
			if want := []string{"message 0", "message 1, edited"}; !slices.Equal(users, want) {
				t.Fatalf("after the edit the active branch's user messages are %q, want %q", users, want)
			}
			say("message after the edit")
		})
	}
}

// aliceRuns reads alice's conversation.
func aliceRuns(t *testing.T, c *child, conv string) convRuns {
	t.Helper()
	var got convRuns
	code, b := as(t, c, aliceKey, http.MethodGet, "/api/v1/conversations/"+conv, nil)
	if err := json.Unmarshal(b, &got); code != http.StatusOK || err != nil {
		t.Fatalf("GET the conversation: %d %s %v", code, b, err)
	}
	return got
}
