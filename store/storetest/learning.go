package storetest

import (
	"errors"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// testUnlearnedTurns: the turns after the learned mark, in order, with
// their answers; MarkLearned only moves the mark on; another user's
// conversation is not found; forgetting everything marks every turn so
// far learned.
func testUnlearnedTurns(t *testing.T, s Record) {
	ctx := t.Context()
	c := must(s.CreateConversation(ctx, store.NewConversation{UserID: "alice"}))(t)
	r1 := must(s.StartRun(ctx, store.NewRun{UserID: "alice", ConversationID: c.ID, UserMessage: "one", RequestID: "q1"}))(t)
	must(s.AddMessage(ctx, store.NewMessage{RunID: r1.ID, Role: store.RoleAssistant, Content: "first", Meta: []byte(`{"outcome":"answered"}`)}))(t)
	must(s.FinishRun(ctx, r1.ID, store.RunEnd{Status: store.RunCompleted}))(t)
	must(s.StartRun(ctx, store.NewRun{UserID: "alice", ConversationID: c.ID, UserMessage: "two", RequestID: "q2"}))(t)

	got := must(s.UnlearnedTurns(ctx, "alice", c.ID, 0))(t)
	if len(got) != 2 || got[0].Num != 1 || got[0].Query != "one" || got[0].RequestID != "q1" || !got[0].Answered ||
		got[0].Answer != "first" || string(got[0].Meta) != `{"outcome":"answered"}` || got[0].Status != store.RunCompleted ||
		got[1].Num != 2 || got[1].Answered || got[1].Status != store.RunRunning || got[1].Meta != nil {
		t.Fatalf("unlearned = %+v", got)
	}
	if one := must(s.UnlearnedTurns(ctx, "alice", c.ID, 1))(t); len(one) != 1 || one[0].Num != 1 {
		t.Errorf("limit 1 = %+v", one)
	}
	if err := s.MarkLearned(ctx, "alice", c.ID, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkLearned(ctx, "alice", c.ID, 0); err != nil { // never back
		t.Fatal(err)
	}
	if got := must(s.UnlearnedTurns(ctx, "alice", c.ID, 0))(t); len(got) != 1 || got[0].Num != 2 {
		t.Errorf("after MarkLearned(1) = %+v", got)
	}
	if _, err := s.UnlearnedTurns(ctx, "bob", c.ID, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob reads alice's turns: %v", err)
	}
	if err := s.MarkLearned(ctx, "bob", c.ID, 5); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob marks alice's turns: %v", err)
	}
	if _, err := s.UnlearnedTurns(ctx, "alice", "", 0); !errors.Is(err, store.ErrInvalid) && !errors.Is(err, store.ErrNotFound) {
		t.Errorf("no conversation: %v", err)
	}
	if _, err := s.DeleteMemories(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if got := must(s.UnlearnedTurns(ctx, "alice", c.ID, 0))(t); len(got) != 0 {
		t.Errorf("after forgetting everything = %+v", got)
	}
}
