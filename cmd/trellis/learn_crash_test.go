package main

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A conversation's turns are learned by one job, and a process killed
// after answering them, before that job was due, loses none of them:
// the job is stored with the answer, and the next process learns every
// turn once. A turn after it is learned alone, from where the last job
// stopped.
func TestCrashBeforeLearningLearnsAfterRestart(t *testing.T) {
	t.Parallel()
	const learnAfter = 15 * time.Second
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel() // each backend has its own processes and database; most of it is waiting for learn-after
			data := t.TempDir()
			env := []string{"TRELLIS_DATA_DIR=" + data, "TRELLIS_MODEL=offline", "TRELLIS_COGNITION_BUDGET=5s",
				"TRELLIS_RATE_PER_MINUTE=-1", "TRELLIS_LEARN_AFTER=" + learnAfter.String()}
			dsn := ""
			if db == "postgres" {
				dsn = pgDSN(t)
				env = append(env, "DATABASE_URL="+dsn)
			}
			first := startServe(t, env...)
			start := time.Now()
			conv := ""
			for _, q := range []string{"how do tides work?", "which whales sing?", "why is the sky blue?"} {
				body := map[string]any{"message": q}
				if conv != "" {
					body["conversation_id"] = conv
				}
				out := syncChat(t, first, body)
				if out["status"] != "completed" {
					t.Fatalf("%q: %v", q, out)
				}
				conv, _ = out["conversation_id"].(string)
			}
			if ms := listMemories(t, first); len(ms) != 0 {
				t.Fatalf("learned before learn-after: %+v", ms)
			}
			var jobs int
			queryRow(t, data, "jobs.db", dsn, `SELECT count(*) FROM river_job WHERE kind = `, "cognition_learn_conversation", &jobs)
			if jobs != 1 {
				t.Errorf("%d learning jobs for three turns of one conversation, want 1", jobs)
			}
			first.stop(syscall.SIGKILL)
			if time.Since(start) >= learnAfter {
				t.Fatalf("the process was killed %v after the first answer, after its learning job was due", time.Since(start))
			}

			second := startServe(t, env...)
			var got []string
			waitFor(t, "learning the three turns after the crash", func() bool {
				got = got[:0]
				for _, m := range listMemories(t, second) {
					got = append(got, m.Summary)
				}
				return len(got) >= 3
			})
			slices.Sort(got)
			want := []string{"Asked: how do tides work?", "Asked: which whales sing?", "Asked: why is the sky blue?"}
			if !slices.Equal(got, want) {
				t.Errorf("memories after the crash = %q, want %q", got, want)
			}

			syncChat(t, second, map[string]any{"message": "where do comets come from?", "conversation_id": conv})
			waitFor(t, "learning the turn after", func() bool {
				_, id := getJSON(t, second, "/api/v1/cognition/identity")
				return agentCalls(id) >= 4
			})
			if ms := listMemories(t, second); len(ms) != 4 || !strings.Contains(ms[0].Summary, "comets") {
				t.Errorf("memories after the fourth turn: %+v", ms)
			}
			// The agent's own stats count each turn learned: none twice.
			if _, id := getJSON(t, second, "/api/v1/cognition/identity"); agentCalls(id) != 4 {
				t.Errorf("identity counts %v turns learned, want 4", agentCalls(id))
			}
			second.stop(syscall.SIGTERM)
		})
	}
}
