package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A client that started a run goes away (with cancel on disconnect, so
// its going cancels the run) at the moment the user approves the run's
// gated tool from elsewhere, and the process dies a moment later, at a
// different moment in each round. Whichever of the cancel and the
// approval won, the next process finds the run in a state that says so,
// and the tool has run at most once — and never without the yes: if
// the approval was refused because the cancel won, the tool never runs.
func TestCrashWhenADisconnectRacesAnApproval(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			e.env = append(e.env, "TRELLIS_CANCEL_ON_DISCONNECT=true")
			for _, delay := range []time.Duration{5 * time.Millisecond, 30 * time.Millisecond, 150 * time.Millisecond} {
				before := e.effects("write")
				first := e.startConnected()
				resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "write a note"})
				conv := resp.Header.Get("X-Conversation-ID")
				seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == "approval.required" })
				approval, _ := seen[len(seen)-1].data["approval_id"].(string)
				if approval == "" {
					t.Fatalf("no approval: %+v", seen[len(seen)-1])
				}

				var wg sync.WaitGroup
				answered := make(chan int, 1)
				wg.Go(func() { resp.Body.Close() }) // the client goes away: cancel
				wg.Go(func() {
					status := 0
					if r, err := first.try("POST", "/api/v1/approvals/"+approval, map[string]any{"decision": "approve"}); err == nil {
						status = r.StatusCode
						r.Body.Close()
					}
					answered <- status
				})
				time.Sleep(delay)
				first.stop(syscall.SIGKILL)
				wg.Wait()
				status := <-answered

				second := e.start()
				final := settledRun(t, second, conv)
				reasked := final == "interrupted"
				if reasked {
					// Neither the cancel nor the yes reached the record
					// before the crash: the question stands, and a yes
					// now runs the tool once.
					if ids := pendingIDs(t, second, "approvals", conv); len(ids) != 1 || ids[0] != approval {
						t.Fatalf("delay %v: parked run with pending approvals %v, want [%s]", delay, ids, approval)
					}
					if n := e.effects("write") - before; n != 0 {
						t.Fatalf("delay %v: the tool ran %d times while its approval is pending", delay, n)
					}
					r := second.do("POST", "/api/v1/approvals/"+approval, map[string]any{"decision": "approve"})
					r.Body.Close()
					if r.StatusCode != http.StatusOK {
						t.Fatalf("delay %v: approving after the crash: %d", delay, r.StatusCode)
					}
					final = settledRun(t, second, conv)
				}
				n := e.effects("write") - before
				switch {
				case n > 1:
					t.Errorf("delay %v: the tool ran %d times (run %s, approve answered %d)", delay, n, final, status)
				case n == 1 && !reasked && status != http.StatusOK && status != 0:
					t.Errorf("delay %v: the tool ran though its approval was refused with %d", delay, status)
				case final == "completed" && n != 1:
					t.Errorf("delay %v: the run completed but the approved tool ran %d times", delay, n)
				case final != "completed" && final != "cancelled":
					t.Errorf("delay %v: the run ended %s (approve answered %d, tool ran %d times)", delay, final, status, n)
				}
				if t.Failed() {
					t.Logf("delay %v: events %v", delay, eventTypes(t, second, conv))
				}
				if ids := pendingIDs(t, second, "approvals", conv); len(ids) != 0 {
					t.Errorf("delay %v: approvals still pending after the run ended %s: %v", delay, final, ids)
				}
				second.stop(syscall.SIGTERM)
			}
		})
	}
}

// settledRun waits, 30 s at most, until the conversation's only run has
// stopped moving (interrupted, or ended), and returns its status.
func settledRun(t *testing.T, c *child, conv string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got struct{ Runs []struct{ Status string } }
		err := json.NewDecoder(c.do("GET", "/api/v1/conversations/"+conv, nil).Body).Decode(&got)
		if err == nil && len(got.Runs) == 1 && got.Runs[0].Status != "running" {
			return got.Runs[0].Status
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not settle: %+v %v\n%s", got, err, c.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventTypes lists the types of every stored event of the
// conversation's runs, with each tool event's tool and result.
func eventTypes(t *testing.T, c *child, conv string) []string {
	t.Helper()
	var out []string
	for _, ev := range sseEvents(t, c.do("GET", "/api/v1/conversations/"+conv+"/stream?after=0", nil), nil) {
		s := ev.typ
		if tool, ok := ev.data["tool"]; ok {
			s += fmt.Sprintf("(%v %v%v)", tool, ev.data["result"], ev.data["error"])
		}
		out = append(out, s)
	}
	return out
}
