package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"
)

// Messages queued (multitask_strategy enqueue) behind a running turn
// survive a SIGKILL: the next process continues the turn and then runs
// each queued message once, in order, as the run its 202 named; none is
// lost and none runs twice.
func TestCrashWhileMessagesWaitInTheQueue(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			release := e.holdCalls()
			first := e.startConnected()
			conv, runID, _ := e.inCall(first, "stamp the record", "stamp s1 ")
			var queued []string
			for _, msg := range []string{"charge beta", "charge gamma"} {
				r := first.do("POST", "/api/v1/chat/sync", map[string]any{"message": msg, "conversation_id": conv, "multitask_strategy": "enqueue"})
				var q struct {
					Status   string
					RunID    string `json:"run_id"`
					Position int
				}
				if err := json.NewDecoder(r.Body).Decode(&q); err != nil || r.StatusCode != http.StatusAccepted || q.Status != "queued" {
					t.Fatalf("enqueue %q: %d %+v %v", msg, r.StatusCode, q, err)
				}
				r.Body.Close()
				queued = append(queued, q.RunID)
			}
			first.stop(syscall.SIGKILL) // the turn is inside its call; two messages wait
			release()

			second := e.start()
			deadline := time.Now().Add(60 * time.Second)
			var got convRuns
			for {
				got = conversationRuns(t, second, conv)
				if slices.Equal(got.statuses(), []string{"completed", "completed", "completed"}) {
					break
				}
				if time.Now().After(deadline) || len(got.Runs) > 3 {
					t.Fatalf("runs after the crash: %+v\n%s", got.Runs, second.logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			want := []struct{ id, msg string }{{runID, "stamp the record"}, {queued[0], "charge beta"}, {queued[1], "charge gamma"}}
			for i, r := range got.Runs {
				if r.ID != want[i].id || r.UserMessage != want[i].msg {
					t.Errorf("run %d: %s %q, want %s %q", i, r.ID, r.UserMessage, want[i].id, want[i].msg)
				}
			}
			for _, charge := range []string{"charge beta ", "charge gamma "} {
				if n := e.effects(charge); n != 1 {
					t.Errorf("%q ran %d times, want once", charge, n)
				}
			}
			var q struct{ Queued []any }
			if err := json.NewDecoder(second.do("GET", "/api/v1/conversations/"+conv+"/queue", nil).Body).Decode(&q); err != nil || len(q.Queued) != 0 {
				t.Errorf("the queue after every message ran: %+v %v", q.Queued, err)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}
