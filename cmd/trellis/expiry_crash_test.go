package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A deadline is kept by whichever process is alive: process A stops a
// run on a request that expires — an approval of the count server's
// write that expires with approve, or its ask_name's question that
// expires with decline — parked (a sync chat), or waiting on its open
// stream, and is killed before the deadline. On SQLite B is started on
// the same data directory (one process at a time); on PostgreSQL B and C
// share the database with A from the start. At the deadline the request
// expires once: one approval.expired (elicitation.expired), the outcome
// reaches the tool exactly once, and the run completes. So does a
// clarifying question that expires with continue: the run that asked
// goes on, once.
func TestCrashBeforeADeadline(t *testing.T) {
	t.Parallel()
	kinds := []struct {
		name, message, env, pending, requested, expired, id string
		// parkedOnly: the request parks its run at once (a clarifying
		// question): there is no open stream to wait on.
		parkedOnly bool
		// done checks, after the run completed, that the outcome
		// happened once.
		done func(t *testing.T, e *crashEnv, evs []event)
	}{
		{name: "approval", message: "write a note", env: "TRELLIS_APPROVAL", pending: "approvals",
			requested: "approval.required", expired: "approval.expired", id: "approval_id",
			done: func(t *testing.T, e *crashEnv, _ []event) {
				if n := e.effects("write n1"); n != 1 {
					t.Errorf("the tool approved at its deadline ran %d times, want once", n)
				}
			}},
		{name: "elicitation", message: "greet me by name", env: "TRELLIS_QUESTION", pending: "elicitations",
			requested: "elicitation.request", expired: "elicitation.expired", id: "elicitation_id",
			done: func(t *testing.T, _ *crashEnv, evs []event) {
				resp, done := of(evs, "elicitation.response"), of(evs, "tool.complete")
				if len(resp) != 1 || resp[0].data["action"] != "decline" || len(done) != 1 ||
					done[0].data["result"] != "the user would not say (decline)" {
					t.Errorf("the question declined at its deadline: responses %v, results %v", resp, done)
				}
			}},
		{name: "clarification", message: "book a table for two", env: "TRELLIS_CLARIFICATION", pending: "clarification",
			expired: "clarification.expired", id: "clarification_id", parkedOnly: true,
			done: func(t *testing.T, _ *crashEnv, evs []event) {
				// The run that asked went on, not a new one.
				if started := of(evs, "run.started"); len(started) != 1 || len(of(evs, "response.done")) != 2 {
					t.Errorf("the question went on at its deadline: events %v", types(evs))
				}
			}},
	}
	outcomes := map[string]string{"approval": "approve", "elicitation": "decline", "clarification": "continue"}
	for _, db := range []string{"sqlite", "postgres"} {
		for _, k := range kinds {
			for _, mode := range []string{"parked", "waiting"} {
				if mode == "waiting" && k.parkedOnly {
					continue
				}
				t.Run(db+"/"+k.name+"/"+mode, func(t *testing.T) {
					t.Parallel() // each case has its own processes and database, and mostly waits for its deadline
					e := newCrashEnv(t, db)
					timeout := "6s" // time for A to reach the request
					if k.parkedOnly {
						timeout = "2s" // a sync chat that parks at once
					}
					e.env = append(e.env, k.env+"_TIMEOUT="+timeout, k.env+"_EXPIRY="+outcomes[k.name], "TRELLIS_CLAIM_INTERVAL=200ms")
					var peers []*child
					if db == "postgres" {
						peers = append(peers, e.start(), e.start())
					}
					a := e.startConnected()
					var req map[string]any
					var conv, runID string
					if mode == "parked" {
						res := syncChat(t, a, map[string]any{"message": k.message})
						if k.parkedOnly {
							pending, _ := res["pending"].(map[string]any)
							req, _ = pending[k.pending].(map[string]any)
							if req == nil {
								t.Fatalf("sync chat: %v, want it waiting on a %s", res, k.pending)
							}
							req[k.id] = req["id"]
						} else {
							req = pendingOf(t, res, k.pending)
						}
						conv, runID = res["conversation_id"].(string), res["run_id"].(string)
					} else {
						resp := a.do("POST", "/api/v1/chat", map[string]any{"message": k.message})
						conv, runID = resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
						seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == k.requested })
						req = seen[len(seen)-1].data
					}
					if req["on_expiry"] != outcomes[k.name] || req["expires_at"] == nil {
						t.Fatalf("the %s %v, want it expiring with %s", k.name, req, outcomes[k.name])
					}
					a.stop(syscall.SIGKILL)
					if n := e.effects("write"); n != 0 {
						t.Fatalf("the tool ran %d times before its deadline", n)
					}
					if db == "sqlite" {
						peers = append(peers, e.startConnected())
					}
					evs := runEvents(t, peers[0], conv, runID, "run.completed", "run.failed", "run.cancelled")
					if got := of(evs, k.expired); len(got) != 1 || got[0].data[k.id] != req[k.id] || got[0].data["outcome"] != outcomes[k.name] {
						t.Errorf("%s: %v; events %v", k.expired, got, types(evs))
					}
					if last := evs[len(evs)-1].typ; last != "run.completed" {
						t.Errorf("the run ended with %s; events %v", last, types(evs))
					}
					k.done(t, e, evs)
					for i, ev := range evs {
						if ev.id != int64(i+1) {
							t.Fatalf("event %d has seq %d; events %v", i, ev.id, types(evs))
						}
					}
				})
			}
		}
	}
}

// An uncertain call's deadline is kept by whichever process is alive:
// A is killed inside a charge, B recovers the run, parks it on the
// uncertain call with a deadline and is killed before it; at the
// deadline C (on PostgreSQL a peer up all along) applies the outcome
// (skip on SQLite, fail on PostgreSQL, so that each is seen) once:
// uncertain_call.expired, uncertain_call.resolved with it, the charge not
// run again, and the run completes.
func TestCrashBeforeAnUncertainCallDeadline(t *testing.T) {
	t.Parallel()
	for db, outcome := range map[string]string{"sqlite": "skip", "postgres": "fail"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			e.env = append(e.env, "TRELLIS_UNCERTAIN_CALL_TIMEOUT=3s", "TRELLIS_UNCERTAIN_CALL_EXPIRY="+outcome, "TRELLIS_CLAIM_INTERVAL=200ms")
			b, conv, runID := e.parkedOnUncertainCall("charge alpha", "charge alpha ")
			ids := pendingIDs(t, b, "uncertain_calls", conv)
			if len(ids) != 1 {
				t.Fatalf("uncertain calls %v, want one", ids)
			}
			var c *child
			if db == "postgres" {
				c = e.startConnected()
			}
			b.stop(syscall.SIGKILL)
			if db == "sqlite" {
				c = e.startConnected()
			}
			evs := runEvents(t, c, conv, runID, "run.completed", "run.failed", "run.cancelled")
			expired, resolved := of(evs, "uncertain_call.expired"), of(evs, "uncertain_call.resolved")
			if len(expired) != 1 || expired[0].data["uncertain_call_id"] != ids[0] || expired[0].data["outcome"] != outcome ||
				len(resolved) != 1 || resolved[0].data["decision"] != outcome {
				t.Errorf("expired %v, resolved %v; events %v", expired, resolved, types(evs))
			}
			if told := of(evs, "tool.error"); len(told) != 1 || !strings.Contains(fmt.Sprint(told[0].data["error"]), "nobody decided in time") {
				t.Errorf("the model was told %v, want that nobody decided in time", told)
			}
			if last := evs[len(evs)-1].typ; last != "run.completed" {
				t.Errorf("the run ended with %s; events %v", last, types(evs))
			}
			if n := e.effects("charge alpha "); n != 1 {
				t.Errorf("the charge ran %d times, want the once before the crash", n)
			}
		})
	}
}

// Of a person's decision on an uncertain call and its deadline, racing
// on the process the run parked in, exactly one wins: the decision
// (fail) is taken, 200, and no uncertain_call.expired comes; or the
// deadline's (skip) is, announced by uncertain_call.expired, and the
// decision is 409. One uncertain_call.resolved either way, the charge
// never run again, and the run completes.
func TestUncertainCallDeadlineRacesADecision(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			e.env = append(e.env, "TRELLIS_UNCERTAIN_CALL_TIMEOUT=2s", "TRELLIS_UNCERTAIN_CALL_EXPIRY=skip")
			b, conv, runID := e.parkedOnUncertainCall("charge alpha", "charge alpha ")
			var list struct {
				UncertainCalls []struct {
					ID        string    `json:"uncertain_call_id"`
					ExpiresAt time.Time `json:"expires_at"`
				} `json:"uncertain_calls"`
			}
			if err := json.NewDecoder(b.do("GET", "/api/v1/uncertain-calls/pending?conversation_id="+conv, nil).Body).Decode(&list); err != nil ||
				len(list.UncertainCalls) != 1 || list.UncertainCalls[0].ExpiresAt.IsZero() {
				t.Fatalf("pending %+v %v", list, err)
			}
			u := list.UncertainCalls[0]
			time.Sleep(time.Until(u.ExpiresAt))
			decided := b.do("POST", "/api/v1/uncertain-calls/"+u.ID, map[string]any{"decision": "fail"}).StatusCode
			evs := runEvents(t, b, conv, runID, "run.completed", "run.failed", "run.cancelled")
			expired, resolved := of(evs, "uncertain_call.expired"), of(evs, "uncertain_call.resolved")
			switch {
			case decided == http.StatusOK:
				if len(expired) != 0 || len(resolved) != 1 || resolved[0].data["decision"] != "fail" {
					t.Errorf("the decision won: expired %v, resolved %v", expired, resolved)
				}
			case decided == http.StatusConflict:
				if len(expired) != 1 || len(resolved) != 1 || resolved[0].data["decision"] != "skip" {
					t.Errorf("the deadline won: expired %v, resolved %v", expired, resolved)
				}
			default:
				t.Errorf("the decision: %d", decided)
			}
			t.Logf("the decision answered %d", decided)
			if last := evs[len(evs)-1].typ; last != "run.completed" {
				t.Errorf("the run ended with %s; events %v", last, types(evs))
			}
			if n := e.effects("charge alpha "); n != 1 {
				t.Errorf("the charge ran %d times, want the once before the crash", n)
			}
		})
	}
}
