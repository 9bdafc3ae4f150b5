package api_test

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/store"
)

// busy starts a run that waits for a person (an approval, on its open
// stream) or in its wait tool, and returns its stream, conversation and
// run.
func (e *env) busy(waitsForPerson bool) (s *stream, conv, runID string) {
	e.t.Helper()
	if waitsForPerson {
		s, conv, runID, _ = e.awaitApproval(false)
		return s, conv, runID
	}
	s = e.chat(map[string]any{"message": "wait for it"})
	<-e.tools.waiting
	s.until("tool.start")
	return s, s.header("X-Conversation-ID"), s.header("X-Run-ID")
}

func TestMultitaskRejectIsTheDefault(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			noLeaks(t)
			e := newApprovalEnv(t, b, false)
			s, conv, _ := e.busy(true)
			before := e.snapshot()
			for _, body := range []map[string]any{
				{"message": "hello", "conversation_id": conv},
				{"message": "hello", "conversation_id": conv, "multitask_strategy": "reject"},
			} {
				status, resp := e.do("POST", "/api/v1/chat", body)
				wantError(t, status, resp, http.StatusConflict)
			}
			status, resp := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "hello", "conversation_id": conv, "multitask_strategy": "later"})
			wantError(t, status, resp, http.StatusBadRequest)
			if after := e.snapshot(); after != before {
				t.Errorf("a refused message changed the store:\n%s\n%s", before, after)
			}
			s.close()
			e.close()
		})
	}
}

// TestMultitaskInterruptAndRollback: the busy run — running, or waiting
// for a person — is cancelled (what it waits for expires, its stream
// ends with run.cancelled, its tool call never runs) and the new message
// runs. Interrupted, the turn stays in the history; rolled back, it is
// gone from what the model sees (the agent reruns from before it) and
// its run is superseded for the user.
func TestMultitaskInterruptAndRollback(t *testing.T) {
	for _, b := range backends {
		for _, strategy := range []string{"interrupt", "rollback"} {
			for _, person := range []bool{true, false} {
				name := string(b) + "/" + strategy + "/running"
				if person {
					name = string(b) + "/" + strategy + "/waiting_for_a_person"
				}
				t.Run(name, func(t *testing.T) {
					noLeaks(t)
					e := newApprovalEnv(t, b, false)
					first := e.chat(map[string]any{"message": "first question"})
					first.all()
					conv := first.header("X-Conversation-ID")
					busy := "wait for it"
					if person {
						busy = "please delete /tmp/a.txt"
					}
					old := e.chat(map[string]any{"message": busy, "conversation_id": conv})
					if person {
						old.until("approval.required")
					} else {
						<-e.tools.waiting
						old.until("tool.start")
					}
					oldRun := old.header("X-Run-ID")

					next := e.chat(map[string]any{"message": "hello", "conversation_id": conv, "multitask_strategy": strategy})
					evs := next.all()
					checkRun(t, evs, 1, next.header("X-Run-ID"), conv)
					if evs[len(evs)-1].Type != "run.completed" {
						t.Fatalf("the new message: %v", types(evs))
					}
					if rest := old.all(); rest[len(rest)-1].Type != "run.cancelled" {
						t.Errorf("the busy run's stream ended with %v", types(rest))
					}
					r, err := e.store.GetRun(t.Context(), "alice", oldRun)
					if err != nil || r.Status != store.RunCancelled || r.Superseded != (strategy == "rollback") {
						t.Errorf("the busy run: %+v %v", r, err)
					}
					p, err := e.store.PendingHumanRequests(t.Context(), events.PendingApproval, "alice", conv, store.Page{})
					if err != nil || len(p.Requests) != 0 {
						t.Errorf("pending approvals after the %s: %+v %v", strategy, p.Requests, err)
					}
					snap, err := e.srv.Runs().State(t.Context(), conv)
					var said []string
					for _, m := range snap.State.Messages {
						if m.Role == nodes.RoleUser {
							said = append(said, m.Content)
						}
					}
					want := []string{"first question", busy, "hello"}
					if strategy == "rollback" {
						want = []string{"first question", "hello"}
					}
					if err != nil || !slices.Equal(said, want) {
						t.Errorf("the model's history after the %s: %q, want %q (%v)", strategy, said, want, err)
					}
					select {
					case p := <-e.tools.deleted:
						t.Errorf("the cancelled tool call ran: deleted %s", p)
					default:
					}
					e.close()
				})
			}
		}
	}
}

// TestMultitaskEnqueue: messages sent while a run goes wait, answered 202
// with their place; each runs after the one before it, in order, as the
// run the answer named; a queued message can be cancelled.
func TestMultitaskEnqueue(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			noLeaks(t)
			e := newApprovalEnv(t, b, false)
			old, conv, oldRun := e.busy(false)
			type queued struct {
				Status, RunID, ConversationID string
				Position                      int
			}
			var q []queued
			for i, msg := range []string{"one", "two", "three"} {
				path := "/api/v1/chat"
				if i == 1 {
					path = "/api/v1/chat/sync"
				}
				status, body := e.do("POST", path, map[string]any{"message": msg, "conversation_id": conv, "multitask_strategy": "enqueue"})
				if status != http.StatusAccepted {
					t.Fatalf("enqueue %q: %d %s", msg, status, body)
				}
				got := jsonOf[struct {
					Status         string
					RunID          string `json:"run_id"`
					ConversationID string `json:"conversation_id"`
					Position       int
				}](t, body)
				if got.Status != "queued" || got.RunID == "" || got.ConversationID != conv || got.Position != i+1 {
					t.Errorf("enqueue %q answered %s", msg, body)
				}
				q = append(q, queued{got.Status, got.RunID, got.ConversationID, got.Position})
			}
			status, body := e.do("GET", "/api/v1/conversations/"+conv+"/queue", nil)
			if status != http.StatusOK || len(jsonOf[map[string][]any](t, body)["queued"]) != 3 {
				t.Fatalf("the queue: %d %s", status, body)
			}
			if status, body := e.do("DELETE", "/api/v1/conversations/"+conv+"/queue/"+q[1].RunID, nil); status != http.StatusNoContent {
				t.Fatalf("cancel a queued message: %d %s", status, body)
			}
			status, body = e.do("DELETE", "/api/v1/conversations/"+conv+"/queue/"+q[1].RunID, nil)
			wantError(t, status, body, http.StatusNotFound)

			close(e.tools.release)
			old.all()
			var runs []store.Run
			waitFor(t, "the queued messages to run", func() bool {
				p, err := e.store.ListRuns(t.Context(), "alice", conv, store.RunQuery{})
				if err != nil {
					t.Fatal(err)
				}
				runs = nil
				for _, r := range p.Runs {
					runs = append(runs, r.Run)
				}
				return len(runs) == 3 && runs[2].Status.Final()
			})
			want := []struct{ id, msg string }{{oldRun, "wait for it"}, {q[0].RunID, "one"}, {q[2].RunID, "three"}}
			for i, r := range runs {
				if r.ID != want[i].id || r.UserMessage != want[i].msg || r.Status != store.RunCompleted {
					t.Errorf("run %d: %s %q %s; want %s %q completed", i, r.ID, r.UserMessage, r.Status, want[i].id, want[i].msg)
				}
			}
			if !runs[1].CreatedAt.Before(runs[2].CreatedAt) || runs[1].CompletedAt == nil || runs[1].CompletedAt.After(runs[2].CreatedAt) {
				t.Errorf("the queued runs overlapped: %+v", runs[1:])
			}
			evs := e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, aliceKey)).all()
			checkRun(t, evs, 1, q[2].RunID, conv)
			e.close()
		})
	}
}

// TestDeleteAConversationWithAQueue: deleting a conversation drops what
// waits in its queue; the end of its run starts nothing.
func TestDeleteAConversationWithAQueue(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			noLeaks(t)
			e := newApprovalEnv(t, b, false)
			old, conv, _ := e.busy(false)
			status, body := e.do("POST", "/api/v1/chat", map[string]any{"message": "one", "conversation_id": conv, "multitask_strategy": "enqueue"})
			if status != http.StatusAccepted {
				t.Fatalf("enqueue: %d %s", status, body)
			}
			queued := jsonOf[struct {
				RunID string `json:"run_id"`
			}](t, body).RunID
			if status, body := e.do("DELETE", "/api/v1/conversations/"+conv, nil); status != http.StatusNoContent {
				t.Fatalf("delete: %d %s", status, body)
			}
			old.all()
			if _, err := e.store.GetRun(t.Context(), "alice", queued); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the queued message of a deleted conversation: %v", err)
			}
			if _, err := e.store.GetQueuedRun(t.Context(), "alice", queued); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the queue of a deleted conversation: %v", err)
			}
			e.close()
		})
	}
}
