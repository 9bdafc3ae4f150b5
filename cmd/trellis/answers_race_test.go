package main

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// Two trellis serve processes on one PostgreSQL database take answers to
// the same approval at once, half of them approving and half rejecting,
// while the run waits on its open stream in the first process or is
// parked: exactly one answer wins (200, the others 409), and the run
// resumes once, doing what that answer said.
func TestConcurrentAnswersOnTwoProcesses(t *testing.T) {
	t.Parallel()
	for _, parked := range []bool{false, true} {
		name := "waiting"
		if parked {
			name = "parked"
		}
		t.Run(name, func(t *testing.T) {
			dsn := "DATABASE_URL=" + pgDSN(t)
			a, b := startServe(t, dsn), startServe(t, dsn)
			resp := a.do("POST", "/api/v1/chat", map[string]any{"message": "what is 2+2?"})
			conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
			seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == "approval.required" })
			id, _ := seen[len(seen)-1].data["approval_id"].(string)
			if parked {
				resp.Body.Close()
				runStatus(t, b, conv, "interrupted")
				last := strconv.FormatInt(seen[len(seen)-1].id, 10)
				seen = append(seen, sseEvents(t, b.do("GET", "/api/v1/conversations/"+conv+"/stream", nil, "Last-Event-ID", last), nil)...)
			} else {
				defer resp.Body.Close()
			}

			const n = 8
			var (
				wg     sync.WaitGroup
				mu     sync.Mutex
				won    []string
				others []int
			)
			for i := range n {
				wg.Go(func() {
					c, decision := a, "approve"
					if i%2 == 1 {
						c, decision = b, "reject"
					}
					r, err := c.try("POST", "/api/v1/approvals/"+id, map[string]any{"decision": decision})
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, r.Body)
					r.Body.Close()
					mu.Lock()
					defer mu.Unlock()
					if r.StatusCode == http.StatusOK {
						won = append(won, decision)
					} else {
						others = append(others, r.StatusCode)
					}
				})
			}
			wg.Wait()
			if len(won) != 1 {
				t.Fatalf("%d answers won (%v), others %v; want exactly one", len(won), won, others)
			}
			for _, s := range others {
				if s != http.StatusConflict {
					t.Errorf("a losing answer got %d, want 409", s)
				}
			}
			seen = followToEnd(t, b, conv, runID, seen)
			var resolved []string
			calls := 0
			for _, ev := range seen {
				switch ev.typ {
				case "approval.resolved":
					d, _ := ev.data["decision"].(string)
					resolved = append(resolved, d)
				case "tool.complete":
					calls++
				}
			}
			if len(resolved) != 1 || resolved[0] != won[0] {
				t.Errorf("approval.resolved %v, want the winner's %s once", resolved, won[0])
			}
			if want := map[string]int{"approve": 1, "reject": 0}[won[0]]; calls != want {
				t.Errorf("the calculator ran %d times after %s, want %d", calls, won[0], want)
			}
			a.stop(syscall.SIGTERM)
			b.stop(syscall.SIGTERM)
		})
	}
}
