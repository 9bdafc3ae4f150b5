package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// testQueue: messages queue behind an active run in order, start one at
// a time once no run is active, keep their id and input as runs, and
// can be cancelled or dropped until they start.
func testQueue(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	first := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "first"}))(t)
	var queued []store.QueuedRun
	for i, msg := range []string{"second", "third", "fourth"} {
		q := must(s.EnqueueRun(ctx, store.NewQueuedRun{UserID: alice, ConversationID: c.ID, UserMessage: msg, RequestID: "req-" + msg,
			Input: json.RawMessage(`{"n":` + string(rune('1'+i)) + `}`)}))(t)
		if q.ID == "" || q.Position != i+1 || q.UserMessage != msg || q.RequestID != "req-"+msg || q.ConversationID != c.ID {
			t.Errorf("EnqueueRun %d = %+v", i, q)
		}
		utc(t, "queued", q.CreatedAt)
		queued = append(queued, q)
	}
	wantErr(t, "StartQueuedRun behind an active run", second(s.StartQueuedRun(ctx, c.ID, "proc-a")), store.ErrRunActive)
	if got := must(s.QueuedRuns(ctx, alice, c.ID))(t); len(got) != 3 || got[0].ID != queued[0].ID || got[2].Position != 3 {
		t.Errorf("QueuedRuns after a refused start = %+v", got)
	}
	if got := must(s.IdleQueues(ctx, 0))(t); len(got) != 0 {
		t.Errorf("IdleQueues with the run active = %+v", got)
	}
	must(s.FinishRun(ctx, first.ID, store.RunEnd{Status: store.RunCompleted}))(t)
	if got := must(s.IdleQueues(ctx, 0))(t); len(got) != 1 || got[0].ID != queued[0].ID {
		t.Errorf("IdleQueues once the run ended = %+v, want the queue's first", got)
	}

	if err := s.CancelQueuedRun(ctx, alice, queued[1].ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "CancelQueuedRun twice", s.CancelQueuedRun(ctx, alice, queued[1].ID), store.ErrNotFound)
	wantErr(t, "GetQueuedRun of a cancelled one", second(s.GetQueuedRun(ctx, alice, queued[1].ID)), store.ErrNotFound)
	if got := must(s.GetQueuedRun(ctx, alice, queued[2].ID))(t); got.Position != 2 {
		t.Errorf("the fourth message after the third was cancelled: position %d, want 2", got.Position)
	}

	r := must(s.StartQueuedRun(ctx, c.ID, "proc-b"))(t)
	if r.ID != queued[0].ID || r.UserMessage != "second" || r.RequestID != "req-second" || r.Owner != "proc-b" || r.Status != store.RunRunning {
		t.Errorf("StartQueuedRun = %+v, want the second message running as %s", r, queued[0].ID)
	}
	if in := must(s.RunInput(ctx, alice, r.ID))(t); string(in) != `{"n":1}` {
		t.Errorf("the started run's input = %s", in)
	}
	if msgs := must(s.RunMessages(ctx, alice, r.ID))(t); len(msgs) != 1 || msgs[0].Content != "second" {
		t.Errorf("the started run's messages = %+v", msgs)
	}
	wantErr(t, "GetQueuedRun of a started one", second(s.GetQueuedRun(ctx, alice, r.ID)), store.ErrNotFound)
	wantErr(t, "CancelQueuedRun of a started one", s.CancelQueuedRun(ctx, alice, r.ID), store.ErrNotFound)
	if !endRun(t, s, r.ID).Queued {
		t.Error("EndRun says that no message waits, with the fourth queued")
	}

	if err := s.DropQueuedRuns(ctx, alice, c.ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "StartQueuedRun of an empty queue", second(s.StartQueuedRun(ctx, c.ID, "proc-b")), store.ErrNotFound)
	last := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "last"}))(t)
	if endRun(t, s, last.ID).Queued {
		t.Error("EndRun says that a message waits, with the queue dropped")
	}

	// Another user's ids name nothing.
	q := must(s.EnqueueRun(ctx, store.NewQueuedRun{UserID: alice, ConversationID: c.ID, UserMessage: "mine"}))(t)
	wantErr(t, "EnqueueRun on another's conversation",
		second(s.EnqueueRun(ctx, store.NewQueuedRun{UserID: bob, ConversationID: c.ID, UserMessage: "x"})), store.ErrNotFound)
	wantErr(t, "GetQueuedRun of another's", second(s.GetQueuedRun(ctx, bob, q.ID)), store.ErrNotFound)
	wantErr(t, "CancelQueuedRun of another's", s.CancelQueuedRun(ctx, bob, q.ID), store.ErrNotFound)
	wantErr(t, "QueuedRuns of another's", second(s.QueuedRuns(ctx, bob, c.ID)), store.ErrNotFound)
	wantErr(t, "DropQueuedRuns of another's", s.DropQueuedRuns(ctx, bob, c.ID), store.ErrNotFound)
	wantErr(t, "EnqueueRun without a message",
		second(s.EnqueueRun(ctx, store.NewQueuedRun{UserID: alice, ConversationID: c.ID})), store.ErrInvalid)

	// Deleting the conversation deletes its queue.
	if err := s.DeleteConversation(ctx, alice, c.ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "GetQueuedRun of a deleted conversation's", second(s.GetQueuedRun(ctx, alice, q.ID)), store.ErrNotFound)
}

// endRun ends run runID completed with its run.completed event.
func endRun(t *testing.T, s store.Store, runID string) store.RunEnded {
	t.Helper()
	return must(s.EndRun(t.Context(), runID, store.RunEnd{Status: store.RunCompleted},
		[]store.NewEvent{{RunID: runID, Type: "run.completed", Data: json.RawMessage(`{}`)}}))(t)
}

// testQueueStartConcurrent: of processes racing to start a queue's
// messages, each message starts exactly once and in order, one run at a
// time.
func testQueueStartConcurrent(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	const n = 4
	var want []string
	for range n {
		want = append(want, must(s.EnqueueRun(ctx, store.NewQueuedRun{UserID: alice, ConversationID: c.ID, UserMessage: "m"}))(t).ID)
	}
	var started []string
	for range n {
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			won []store.Run
		)
		for range 6 {
			wg.Go(func() {
				r, err := s.StartQueuedRun(ctx, c.ID, "racer")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won = append(won, r)
				case errors.Is(err, store.ErrRunActive), errors.Is(err, store.ErrNotFound):
				default:
					t.Errorf("StartQueuedRun: %v", err)
				}
			})
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("racing StartQueuedRuns started %d runs, want 1", len(won))
		}
		started = append(started, won[0].ID)
		must(s.FinishRun(ctx, won[0].ID, store.RunEnd{Status: store.RunCompleted}))(t)
	}
	for i := range want {
		if started[i] != want[i] {
			t.Fatalf("started %v, want the queue's order %v", started, want)
		}
	}
}
