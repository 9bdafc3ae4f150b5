package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A retry, once accepted, is not lost with its process: the retry of a
// turn a model outage failed is killed before it stored anything, and
// the next process takes it up from the failed turn's last checkpoint
// and answers, the failed run's record kept beside it.
func TestCrashWhileARetryStarts(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			e.env = append(e.env, "TRELLIS_RATE_PER_MINUTE=-1") // it polls
			agent, err := filepath.Abs("../../api/testdata/agent.json")
			if err != nil {
				t.Fatal(err)
			}
			// The first process's model fails a flaky question once (the
			// last TRELLIS_MODEL counts); the next one's has recovered.
			app := fmt.Sprintf("trellis_crash_%016x", rand.Uint64())
			env := append(slices.Clone(e.env), "TRELLIS_MODEL=scripted:"+agent)
			if db == "postgres" {
				env = append(env, "DATABASE_URL="+e.dsn+"&application_name="+app)
			}
			first := startServe(t, env...)
			var turn struct {
				ConversationID string `json:"conversation_id"`
				RunID          string `json:"run_id"`
				Status         string
			}
			if err := json.NewDecoder(first.do("POST", "/api/v1/chat/sync", map[string]any{"message": "first question"}).Body).Decode(&turn); err != nil {
				t.Fatal(err)
			}
			conv := turn.ConversationID
			r := first.do("POST", "/api/v1/chat/sync", map[string]any{"message": "a flaky question", "conversation_id": conv})
			if err := json.NewDecoder(r.Body).Decode(&turn); err != nil || turn.Status != "failed" {
				t.Fatalf("the flaky question: %+v", turn)
			}
			failed := turn.RunID

			release := e.holdCheckpoints()
			defer release()
			var sent sync.WaitGroup
			sent.Go(func() {
				// Killed under it: the request fails.
				if resp, err := first.try("POST", "/api/v1/conversations/"+conv+"/runs/"+failed+"/retry", nil); err == nil {
					resp.Body.Close()
				}
			})
			for deadline := time.Now().Add(8 * time.Second); ; {
				if st := conversationRuns(t, first, conv).statuses(); slices.Equal(st, []string{"completed", "failed", "running"}) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the retry did not start: %v\n%s", conversationRuns(t, first, conv).statuses(), first.logs.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			first.stop(syscall.SIGKILL)
			sent.Wait()
			if db == "postgres" {
				terminate(t, e.dsn, app) // so that nothing the dead process sent is stored once the lock is gone
			}
			release()

			second := e.start()
			var c convRuns
			for deadline := time.Now().Add(30 * time.Second); ; {
				c = conversationRuns(t, second, conv)
				if st := c.statuses(); len(st) == 3 && st[2] != "running" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the retry was not taken up: %+v\n%s", c, second.logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			retry := c.Runs[2]
			if !strings.Contains(second.logs.String(), "starting again a run that had stored nothing") {
				t.Errorf("the retry was not taken up from its stored start:\n%s", second.logs.String())
			}
			var answers []string
			for _, m := range c.Messages {
				if m.RunID == retry.ID && m.Role == "assistant" {
					answers = append(answers, m.Content)
				}
			}
			if retry.Status != "completed" || retry.UserMessage != "a flaky question" || !slices.Equal(answers, []string{"Done."}) ||
				retry.ParentID != c.Runs[0].ID || !c.Runs[1].Superseded || c.Runs[1].Status != "failed" {
				t.Errorf("runs %+v, the retry's answers %q\n%s", c.Runs, answers, second.logs.String())
			}
			// The failed run is no longer the conversation's last: it is not
			// retried again.
			if r := second.do("POST", "/api/v1/conversations/"+conv+"/runs/"+failed+"/retry", nil); r.StatusCode != http.StatusConflict {
				t.Errorf("a second retry answered %d, want 409", r.StatusCode)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}
