package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

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

// testLearn: a lesson writes the profile, its memory deletions, rewrites
// and additions (newest last), the tools' stats and the learned mark
// together; one that fails anywhere (a conversation of another user, an
// addition that cannot be stored, the profile's fn) writes nothing; and
// a memory gone meanwhile is passed over.
func testLearn(t *testing.T, s Record) {
	ctx := t.Context()
	c := must(s.CreateConversation(ctx, store.NewConversation{UserID: alice}))(t)
	for _, q := range []string{"one", "two"} {
		r := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: q, RequestID: "q-" + q}))(t)
		must(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted}))(t)
	}
	old := addMemory(t, s, alice, "lives in Porto", 0.5, "porto")
	gone := addMemory(t, s, alice, "likes coffee", 0.5, "coffee")
	kept := addMemory(t, s, alice, "works in Go", 0.5, "go")

	// Failing lessons first: each would change everything.
	failing := func(l store.Lesson) store.Lesson {
		l.Profile = func(p *store.Profile) error { p.Patterns["turns"] += 2; return nil }
		l.Deletes = []string{gone.ID}
		l.Updates = []store.MemoryUpdate{{ID: old.ID, Memory: store.NewMemory{Summary: "lives in Lisbon", Importance: 0.8}}}
		l.Stats = []store.ToolStat{{Tool: store.AgentTool, Calls: 2}}
		if l.Adds == nil {
			l.Adds = []store.NewMemory{{Summary: "drinks tea", Importance: 0.8}}
		}
		return l
	}
	boom := errors.New("boom")
	bobs := must(s.CreateConversation(ctx, store.NewConversation{UserID: bob}))(t)
	wantErr(t, "another user's conversation", s.Learn(ctx, failing(store.Lesson{UserID: alice, ConversationID: bobs.ID, Learned: 2})), store.ErrNotFound)
	wantErr(t, "an addition with no summary", s.Learn(ctx, failing(store.Lesson{UserID: alice, ConversationID: c.ID, Learned: 2,
		Adds: []store.NewMemory{{Summary: "fine", Importance: 0.5}, {Importance: 0.5}}})), store.ErrInvalid)
	wantErr(t, "no user", s.Learn(ctx, failing(store.Lesson{})), store.ErrInvalid)
	l := failing(store.Lesson{UserID: alice, ConversationID: c.ID, Learned: 2})
	l.Profile = func(*store.Profile) error { return boom }
	wantErr(t, "the profile's fn", s.Learn(ctx, l), boom)
	if ms := must(s.ListMemories(ctx, alice, store.Page{}))(t).Memories; !slices.Equal(memoryIDs(ms), []string{kept.ID, gone.ID, old.ID}) ||
		ms[2].Summary != "lives in Porto" {
		t.Errorf("a failed lesson changed the memories: %+v", ms)
	}
	if p := must(s.GetProfile(ctx, alice))(t); p.Patterns["turns"] != 0 {
		t.Errorf("a failed lesson changed the profile: %+v", p)
	}
	if st := must(s.ToolStats(ctx))(t); len(st) != 0 {
		t.Errorf("a failed lesson added stats: %+v", st)
	}
	if got := must(s.UnlearnedTurns(ctx, alice, c.ID, 0))(t); len(got) != 2 {
		t.Errorf("a failed lesson marked turns learned: %+v", got)
	}

	l = failing(store.Lesson{UserID: alice, ConversationID: c.ID, Learned: 2,
		Adds: []store.NewMemory{{Summary: "drinks tea", Importance: 0.8}, {Summary: "reads Pessoa", Importance: 0.6}}})
	l.Updates = append(l.Updates, store.MemoryUpdate{ID: "01a00000-0000-7000-8000-000000000000", Memory: store.NewMemory{Summary: "gone", Importance: 0.1}})
	l.Deletes = append(l.Deletes, "01a00000-0000-7000-8000-000000000001")
	if err := s.Learn(ctx, l); err != nil {
		t.Fatal(err)
	}
	ms := must(s.ListMemories(ctx, alice, store.Page{}))(t).Memories
	var summaries []string
	for _, m := range ms {
		summaries = append(summaries, m.Summary)
	}
	if want := []string{"reads Pessoa", "drinks tea", "works in Go", "lives in Lisbon"}; !slices.Equal(summaries, want) {
		t.Errorf("memories after the lesson: %q, want %q", summaries, want)
	}
	if hits := must(s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Query: "Pessoa", Limit: 5}))(t); len(hits) != 1 || hits[0].Summary != "reads Pessoa" {
		t.Errorf("an added memory is not searchable: %+v", hits)
	}
	if p := must(s.GetProfile(ctx, alice))(t); p.Patterns["turns"] != 2 {
		t.Errorf("profile after the lesson: %+v", p)
	}
	if st := must(s.ToolStats(ctx))(t); len(st) != 1 || st[0].Calls != 2 {
		t.Errorf("stats after the lesson: %+v", st)
	}
	if got := must(s.UnlearnedTurns(ctx, alice, c.ID, 0))(t); len(got) != 0 {
		t.Errorf("turns left after the lesson: %+v", got)
	}
	// A lesson of memories alone (a fact to remember) needs no
	// conversation.
	if err := s.Learn(ctx, store.Lesson{UserID: alice, Adds: []store.NewMemory{{Summary: "has a cat", Importance: 0.9}}}); err != nil {
		t.Fatal(err)
	}
	if ms := must(s.ListMemories(ctx, alice, store.Page{Limit: 1}))(t).Memories; len(ms) != 1 || ms[0].Summary != "has a cat" ||
		ms[0].UserID != alice {
		t.Errorf("newest memory: %+v", ms)
	}
}

// testLearnConcurrent: lessons that rewrite the same memories in
// opposite orders, and recalls that touch them, run at once; each is
// written (none deadlocks with another), and the profile and stats add
// up.
func testLearnConcurrent(t *testing.T, s Record) {
	ctx := t.Context()
	a := addMemory(t, s, alice, "lives in Porto", 0.5, "porto")
	b := addMemory(t, s, alice, "likes coffee", 0.5, "coffee")
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		wg.Go(func() {
			errs <- s.Learn(ctx, store.Lesson{UserID: alice,
				Profile: func(p *store.Profile) error { p.Patterns["turns"]++; return nil },
				Updates: []store.MemoryUpdate{
					{ID: first.ID, Memory: store.NewMemory{Summary: first.Summary, Importance: 0.6}},
					{ID: second.ID, Memory: store.NewMemory{Summary: second.Summary, Importance: 0.6}},
				},
				Stats: []store.ToolStat{{Tool: "search", Calls: 1}, {Tool: store.AgentTool, Calls: 1}}})
		})
		wg.Go(func() {
			errs <- s.TouchMemories(ctx, []store.Recall{{UserID: alice, MemoryIDs: []string{second.ID, first.ID}, At: time.Now()}})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := must(s.GetProfile(ctx, alice))(t).Patterns["turns"]; got != n {
		t.Errorf("turns = %d after %d concurrent lessons", got, n)
	}
	for _, st := range must(s.ToolStats(ctx))(t) {
		if st.Calls != n {
			t.Errorf("stats of %s count %d calls after %d concurrent lessons", st.Tool, st.Calls, n)
		}
	}
}
