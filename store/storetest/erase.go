package storetest

import (
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// everything gives the user two busy conversations, a document with a
// chunk, a memory, a profile and a share of the tool stats, and returns
// the conversations.
func everything(t *testing.T, s Record, user string) []store.Conversation {
	t.Helper()
	ctx := t.Context()
	c1, _, _, _ := busy(t, s, user)
	c2, _, _, _ := busy(t, s, user)
	putText(t, s, newDocument(t, s, c2, "notes.md"), "the password is marmalade")
	addMemory(t, s, user, "likes marmalade", 0.5, "marmalade")
	must(s.UpdateProfile(ctx, user, func(p *store.Profile) error {
		p.Preferences = map[string]string{"spread": "marmalade"}
		return nil
	}))(t)
	if err := s.AddToolStats(ctx, user, []store.ToolStat{{Tool: "search", Calls: 2}, {Tool: store.AgentTool, Calls: 1}}); err != nil {
		t.Fatal(err)
	}
	return []store.Conversation{c1, c2}
}

func testEraseUser(t *testing.T, s Record) {
	ctx := t.Context()
	gone := everything(t, s, alice)
	kept := everything(t, s, bob)
	before := []snapshot{take(t, s, bob, kept[0].ID), take(t, s, bob, kept[1].ID)}
	bobsMemories := must(s.ListMemories(ctx, bob, store.Page{}))(t)
	bobsProfile := must(s.GetProfile(ctx, bob))(t)

	if n := must(s.EraseUser(ctx, alice))(t); n != len(gone) {
		t.Errorf("EraseUser = %d conversations, want %d", n, len(gone))
	}
	for _, c := range gone {
		wantErr(t, "GetConversation after EraseUser", second(s.GetConversation(ctx, alice, c.ID)), store.ErrNotFound)
	}
	if l := must(s.ListConversations(ctx, alice, store.Page{}))(t); len(l.Conversations) != 0 {
		t.Errorf("conversations after EraseUser: %v", ids(l.Conversations))
	}
	if p := allPending(t, s, events.PendingApproval, alice, ""); len(p) != 0 {
		t.Errorf("pending approvals after EraseUser: %+v", p)
	}
	if h := must(s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: "marmalade"}))(t); len(h) != 0 {
		t.Errorf("chunks after EraseUser: %+v", h)
	}
	if m := must(s.ListMemories(ctx, alice, store.Page{}))(t); len(m.Memories) != 0 {
		t.Errorf("memories after EraseUser: %+v", m.Memories)
	}
	if p := must(s.GetProfile(ctx, alice))(t); len(p.Preferences) != 0 || !p.UpdatedAt.IsZero() {
		t.Errorf("profile after EraseUser: %+v", p)
	}
	// Bob's share of the stats is what is left.
	want := []store.ToolStat{{Tool: store.AgentTool, Calls: 1}, {Tool: "search", Calls: 2}}
	if got := must(s.ToolStats(ctx))(t); !slices.Equal(got, want) {
		t.Errorf("tool stats after EraseUser = %+v, want %+v", got, want)
	}

	// Bob keeps everything.
	for i, c := range kept {
		sameSnapshot(t, "erasing another user", before[i], take(t, s, bob, c.ID))
	}
	if h := must(s.SearchChunks(ctx, store.ChunkQuery{UserID: bob, Query: "marmalade"}))(t); len(h) != 1 {
		t.Errorf("bob's chunks after erasing alice: %+v", h)
	}
	if m := must(s.ListMemories(ctx, bob, store.Page{}))(t); !slices.Equal(memoryIDs(m.Memories), memoryIDs(bobsMemories.Memories)) {
		t.Errorf("bob's memories after erasing alice: %+v", m.Memories)
	}
	if p := must(s.GetProfile(ctx, bob))(t); p.Preferences["spread"] != "marmalade" || !p.UpdatedAt.Equal(bobsProfile.UpdatedAt) {
		t.Errorf("bob's profile after erasing alice: %+v", p)
	}

	// Again: nothing left to erase, which is no error.
	if n := must(s.EraseUser(ctx, alice))(t); n != 0 {
		t.Errorf("second EraseUser = %d", n)
	}
}

func testEraseInvalid(t *testing.T, s Record) {
	c := everything(t, s, alice)
	before := take(t, s, alice, c[0].ID)
	for _, user := range []string{"", "a\x00b", "\xff"} {
		wantErr(t, "EraseUser("+user+")", second(s.EraseUser(t.Context(), user)), store.ErrInvalid)
		wantErr(t, "BeginErasure("+user+")", s.BeginErasure(t.Context(), user), store.ErrInvalid)
	}
	sameSnapshot(t, "an invalid EraseUser", before, take(t, s, alice, c[0].ID))
}

// While a user is being erased, nothing new of theirs is stored, by any
// write that would start something (a conversation, a run, in a new
// conversation or an old one, a document, a memory, a profile): each
// fails with ErrErasing and changes nothing. Reads go on; another user
// writes as before. EraseUser lifts the mark: the user starts afresh,
// with nothing of before.
func testErasingRefusesWrites(t *testing.T, s Record) {
	ctx := t.Context()
	c := everything(t, s, alice)
	everything(t, s, bob)
	before := take(t, s, alice, c[0].ID)
	if err := s.BeginErasure(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginErasure(ctx, alice); err != nil {
		t.Errorf("BeginErasure again: %v", err)
	}
	// The erasure deletes the conversations one by one: one it is
	// deleting refuses a write as the erasure's, not as a gone one.
	if err := s.BeginDelete(ctx, alice, c[1].ID); err != nil {
		t.Fatal(err)
	}
	wantErrs(t, " while erasing", map[string]error{
		"CreateConversation": second(s.CreateConversation(ctx, store.NewConversation{UserID: alice, Title: "late"})),
		"StartRun (new conversation)": second(s.StartRun(ctx, store.NewRun{UserID: alice, UserMessage: "late", RequestID: "req-late",
			NewConversation: &store.NewConversation{UserID: alice, Title: "late"}})),
		"StartRun": second(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c[0].ID, UserMessage: "late",
			RequestID: "req-late"})),
		"CreateDocument (new conversation)": second(s.CreateDocument(ctx, store.NewDocument{UserID: alice, Filename: "late.md",
			ContentType: "text/markdown", SizeBytes: 1})),
		"CreateDocument": second(s.CreateDocument(ctx, store.NewDocument{UserID: alice, ConversationID: c[0].ID, Filename: "late.md",
			ContentType: "text/markdown", SizeBytes: 1})),
		"CreateDocument (being deleted)": second(s.CreateDocument(ctx, store.NewDocument{UserID: alice, ConversationID: c[1].ID, Filename: "late.md",
			ContentType: "text/markdown", SizeBytes: 1})),
		"StartRun (being deleted)": second(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c[1].ID, UserMessage: "late",
			RequestID: "req-late"})),
		"EnqueueRun (being deleted)": second(s.EnqueueRun(ctx, store.NewQueuedRun{UserID: alice, ConversationID: c[1].ID, UserMessage: "late"})),
		"RenameConversation":         second(s.RenameConversation(ctx, alice, c[0].ID, "late")),
		"SetGeneratedTitle":          second(s.SetGeneratedTitle(ctx, alice, c[1].ID, "late")),
		"AddMemory":                  second(s.AddMemory(ctx, store.NewMemory{UserID: alice, Summary: "late", Outcome: "success", Importance: 0.5})),
		"UpdateProfile": second(s.UpdateProfile(ctx, alice, func(p *store.Profile) error {
			p.Style = "late"
			return nil
		})),
		"Learn": s.Learn(ctx, store.Lesson{UserID: alice, Adds: []store.NewMemory{{Summary: "late", Importance: 0.5}}}),
	}, store.ErrErasing)
	sameSnapshot(t, "a refused write", before, take(t, s, alice, c[0].ID))
	if l := must(s.ListConversations(ctx, alice, store.Page{}))(t); len(l.Conversations) != len(c) {
		t.Errorf("alice's conversations while erasing: %v", ids(l.Conversations))
	}
	if m := must(s.ListMemories(ctx, alice, store.Page{}))(t); len(m.Memories) != 1 {
		t.Errorf("alice's memories while erasing: %+v", m.Memories)
	}
	startRun(t, s, newConversation(t, s, bob), "bob goes on")
	addMemory(t, s, bob, "bob goes on", 0.5)

	must(s.EraseUser(ctx, alice))(t)
	fresh := newConversation(t, s, alice)
	startRun(t, s, fresh, "afresh")
	if l := must(s.ListConversations(ctx, alice, store.Page{}))(t); len(l.Conversations) != 1 || l.Conversations[0].ID != fresh.ID {
		t.Errorf("alice's conversations after the erasure: %v", ids(l.Conversations))
	}
	if m := must(s.ListMemories(ctx, alice, store.Page{}))(t); len(m.Memories) != 0 {
		t.Errorf("alice's memories after the erasure: %+v", m.Memories)
	}
}
