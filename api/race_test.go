package api_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// A cancel and an approval of one waiting run sent at the same moment:
// exactly one wins the approval. Either the cancel does (the answer gets
// 409 and changes nothing, the approval expires, the tool never runs) or
// the answer does (the run resumes, and the cancel that came after it
// stops it or finds it done). The run ends cancelled or completed, never
// failed.
func TestCancelRacingApprove(t *testing.T) {
	for _, b := range backends {
		for _, parked := range []bool{false, true} {
			name := string(b) + "/waiting"
			if parked {
				name = string(b) + "/parked"
			}
			t.Run(name, func(t *testing.T) {
				noLeaks(t)
				e := newApprovalEnv(t, b, parked)
				defer e.close()
				for i := range 10 {
					stream, conv, runID, id := e.awaitApproval(parked)
					var (
						wg                  sync.WaitGroup
						cancelSt, approveSt int
						cancelB, approveB   []byte
					)
					wg.Go(func() { cancelSt, cancelB = e.do("POST", "/api/v1/conversations/"+conv+"/cancel", nil) })
					wg.Go(func() {
						approveSt, approveB = e.do("POST", "/api/v1/approvals/"+id, map[string]any{"decision": "approve"})
					})
					wg.Wait()
					evs := stream.all()
					end := evs[len(evs)-1].Type
					r, err := e.store.GetRun(t.Context(), "alice", runID)
					if err != nil {
						t.Fatal(err)
					}
					ran := len(e.tools.deleted)
					for range ran {
						<-e.tools.deleted
					}
					t.Logf("round %d: cancel %d, approve %d, stream ended %s, run %s, tool ran %d", i, cancelSt, approveSt, end, r.Status, ran)
					a, err := e.store.GetHumanRequest(t.Context(), events.PendingApproval, "alice", id)
					if err != nil {
						t.Fatal(err)
					}
					switch r.Status {
					case store.RunCancelled:
						if end != "run.cancelled" || cancelSt != http.StatusAccepted || ran > 1 {
							t.Fatalf("round %d: cancelled run: stream %v, tool ran %d times, cancel %d %s", i, types(evs), ran, cancelSt, cancelB)
						}
						if approveSt == http.StatusOK {
							// The answer won the approval; the cancel came
							// after it and stopped the run it resumed.
							if a.Status != store.HumanApproved {
								t.Errorf("round %d: approve answered 200 but the approval is %s", i, a.Status)
							}
							break
						}
						// The cancel won: the answer was refused and
						// recorded nothing; the tool never ran.
						wantError(t, approveSt, approveB, http.StatusConflict)
						if a.Status != store.HumanExpired || ran != 0 {
							t.Errorf("round %d: cancel won, but the approval is %s and the tool ran %d times", i, a.Status, ran)
						}
					case store.RunCompleted:
						if end != "run.completed" || ran != 1 || approveSt != http.StatusOK || a.Status != store.HumanApproved {
							t.Fatalf("round %d: completed run: stream %v, tool ran %d times, approve %d %s, approval %s", i, types(evs), ran, approveSt, approveB, a.Status)
						}
						if cancelSt != http.StatusAccepted {
							wantError(t, cancelSt, cancelB, http.StatusConflict)
						}
					default:
						t.Fatalf("round %d: run ended %s (stream %v); cancel %d %s, approve %d %s", i, r.Status, types(evs), cancelSt, cancelB, approveSt, approveB)
					}
				}
			})
		}
	}
}
