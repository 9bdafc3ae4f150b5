package storetest

import (
	"cmp"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

func testConversationRoundTrip(t *testing.T, s Record) {
	ctx := t.Context()
	before := time.Now().Add(-time.Second)
	c := must(s.CreateConversation(ctx, store.NewConversation{UserID: alice, Title: "Ünïcode ✓ 'quotes' \"and\" more"}))(t)
	if c.ID == "" || c.UserID != alice || c.Status != store.StatusIdle || !c.CreatedAt.Equal(c.UpdatedAt) {
		t.Errorf("CreateConversation = %+v: want an id, user alice, status idle, updated = created", c)
	}
	utc(t, "created conversation", c.CreatedAt, c.UpdatedAt)
	if c.CreatedAt.Before(before) || c.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("CreatedAt %v is not now", c.CreatedAt)
	}
	got := must(s.GetConversation(ctx, alice, c.ID))(t)
	if !reflect.DeepEqual(got, c) {
		t.Errorf("GetConversation = %+v\nwant what CreateConversation returned: %+v", got, c)
	}

	r := startRun(t, s, c, "hi")
	got = must(s.GetConversation(ctx, alice, c.ID))(t)
	if got.Status != store.RunRunning || got.UpdatedAt.Before(c.UpdatedAt) || !got.CreatedAt.Equal(c.CreatedAt) {
		t.Errorf("after StartRun: %+v; want status running and UpdatedAt moved on", got)
	}
	finish(t, s, r.ID, store.RunCompleted, "")
	if got := must(s.GetConversation(ctx, alice, c.ID))(t); got.Status != store.RunCompleted {
		t.Errorf("after FinishRun: status %q, want completed", got.Status)
	}

	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "title", "created_at", "updated_at", "status"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("conversation JSON %s lacks %q (API.md)", data, k)
		}
	}
	if strings.Contains(string(data), alice) {
		t.Errorf("conversation JSON %s shows the user id", data)
	}
}

// order sorts conversations as ListConversations does: newest first.
func order(cs []store.Conversation) {
	slices.SortFunc(cs, func(a, b store.Conversation) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
}

func ids(cs []store.Conversation) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// listAll pages through the user's conversations limit at a time.
func listAll(t *testing.T, s store.Store, user string, limit int) (all []store.Conversation, pages int) {
	t.Helper()
	cursor := ""
	for {
		p := must(s.ListConversations(t.Context(), user, store.Page{Limit: limit, Cursor: cursor}))(t)
		if p.Conversations == nil {
			t.Fatal("ListConversations returned nil conversations; want a slice, [] in JSON")
		}
		if len(p.Conversations) > limit {
			t.Fatalf("page of %d for limit %d", len(p.Conversations), limit)
		}
		all = append(all, p.Conversations...)
		pages++
		if p.NextCursor == "" {
			return all, pages
		}
		if len(p.Conversations) != limit {
			t.Fatalf("short page of %d with a next cursor", len(p.Conversations))
		}
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
		cursor = p.NextCursor
	}
}

func testPagination(t *testing.T, s Record) {
	ctx := t.Context()
	var want []store.Conversation
	for range 25 {
		want = append(want, newConversation(t, s, alice))
		newConversation(t, s, bob)
	}
	order(want)

	for _, limit := range []int{1, 5, 7, 25, 26} {
		got, pages := listAll(t, s, alice, limit)
		if !slices.Equal(ids(got), ids(want)) {
			t.Errorf("limit %d: listed %v\nwant %v (all of alice's, newest first, each once)", limit, ids(got), ids(want))
		}
		if wantPages := max(1, (25+limit-1)/limit); pages != wantPages {
			t.Errorf("limit %d: %d pages, want %d (no empty last page)", limit, pages, wantPages)
		}
	}
	p := must(s.ListConversations(ctx, alice, store.Page{}))(t)
	if len(p.Conversations) != 25 || p.NextCursor != "" {
		t.Errorf("limit 0 (the default, %d): %d conversations, cursor %q", store.DefaultLimit, len(p.Conversations), p.NextCursor)
	}
	if !reflect.DeepEqual(p.Conversations[0], want[0]) {
		t.Errorf("listed %+v, want %+v as created", p.Conversations[0], want[0])
	}
	empty := must(s.ListConversations(ctx, "carol", store.Page{}))(t)
	if empty.Conversations == nil || len(empty.Conversations) != 0 || empty.NextCursor != "" {
		t.Errorf("a user without conversations: %+v, want an empty, non-nil list", empty)
	}
	// Bob's cursor is only a position; it cannot reveal alice's rows.
	bobPage := must(s.ListConversations(ctx, bob, store.Page{Limit: 1}))(t)
	for _, c := range must(s.ListConversations(ctx, bob, store.Page{Cursor: bobPage.NextCursor}))(t).Conversations {
		if c.UserID != bob {
			t.Errorf("bob's listing shows %s's conversation %s", c.UserID, c.ID)
		}
	}
}

func testPaginationStable(t *testing.T, s Record) {
	ctx := t.Context()
	var want []store.Conversation
	for range 12 {
		want = append(want, newConversation(t, s, alice))
	}
	order(want)
	first := must(s.ListConversations(ctx, alice, store.Page{Limit: 4}))(t)
	// New conversations, and deleting the row the cursor names, must not
	// shift the pages still to read.
	newConversation(t, s, alice)
	newConversation(t, s, alice)
	if err := s.DeleteConversation(ctx, alice, first.Conversations[3].ID); err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(first.Conversations)
	cursor := first.NextCursor
	for cursor != "" {
		p := must(s.ListConversations(ctx, alice, store.Page{Limit: 4, Cursor: cursor}))(t)
		got, cursor = append(got, p.Conversations...), p.NextCursor
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Errorf("paging while writing listed %v\nwant %v", ids(got), ids(want))
	}
}

func testDeleteCascades(t *testing.T, s Record) {
	ctx := t.Context()
	gone, run, ap, el := busy(t, s, alice)
	kept, keptRun, keptAp, _ := busy(t, s, alice)
	before := take(t, s, alice, kept.ID)

	if err := s.DeleteConversation(ctx, alice, gone.ID); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	wantErr(t, "second DeleteConversation", s.DeleteConversation(ctx, alice, gone.ID), store.ErrNotFound)
	wantErrs(t, " after delete", map[string]error{
		"GetConversation":     second(s.GetConversation(ctx, alice, gone.ID)),
		"GetRun":              second(s.GetRun(ctx, alice, run.ID)),
		"LatestRun":           second(s.LatestRun(ctx, alice, gone.ID)),
		"ListRuns":            second(s.ListRuns(ctx, alice, gone.ID, store.RunQuery{})),
		"RunMessages":         second(s.RunMessages(ctx, alice, run.ID)),
		"EventsAfter":         second(s.EventsAfter(ctx, alice, run.ID, 0, 0)),
		"GetApproval":         second(s.GetHumanRequest(ctx, events.PendingApproval, alice, ap.ID)),
		"GetElicitation":      second(s.GetHumanRequest(ctx, events.PendingElicitation, alice, el.ID)),
		"AppendEvent":         second(s.AppendEvent(ctx, store.NewEvent{RunID: run.ID, Type: "x", Data: json.RawMessage(`{}`)})),
		"ResumeRun":           second(s.ResumeRun(ctx, run.ID, "p")),
		"AddMessage":          second(s.AddMessage(ctx, store.NewMessage{RunID: run.ID, Role: store.RoleAssistant})),
		"ResolveApproval":     second(s.ResolveHumanRequest(ctx, alice, ap.ID, store.ApprovalAnswer{Decision: events.DecisionApprove})),
		"PendingApprovals":    second(s.PendingHumanRequests(ctx, events.PendingApproval, alice, gone.ID, store.Page{})),
		"PendingElicitations": second(s.PendingHumanRequests(ctx, events.PendingElicitation, alice, gone.ID, store.Page{})),
	}, store.ErrNotFound)
	pending := allPending(t, s, events.PendingApproval, alice, "")
	if len(pending) != 1 || pending[0].ID != keptAp.ID {
		t.Errorf("pending approvals after delete = %+v, want only %s", pending, keptAp.ID)
	}
	list := must(s.ListConversations(ctx, alice, store.Page{}))(t)
	if len(list.Conversations) != 1 || list.Conversations[0].ID != kept.ID {
		t.Errorf("listing after delete = %v, want only %s", ids(list.Conversations), kept.ID)
	}
	sameSnapshot(t, "deleting another conversation", before, take(t, s, alice, kept.ID))
	if _, err := s.ResumeRun(ctx, keptRun.ID, "p"); err != nil {
		t.Errorf("ResumeRun of the kept conversation's run: %v", err)
	}
}

// A conversation being deleted takes nothing new, from any caller: no
// run starts on it (a new one, an edit's, a queued one) or resumes (one
// waiting for an approval), no message queues on it. It reads as before until it is deleted; other
// conversations are untouched.
func testBeginDelete(t *testing.T, s Record) {
	ctx := t.Context()
	c, other := newConversation(t, s, alice), newConversation(t, s, alice)
	r := startRun(t, s, c, "first")
	must(s.EnqueueRun(ctx, store.NewQueuedRun{UserID: alice, ConversationID: c.ID, UserMessage: "queued"}))(t)
	finish(t, s, r.ID, store.RunInterrupted, events.PendingApproval)

	wantErrs(t, " of another user or none", map[string]error{
		"BeginDelete of bob's":  s.BeginDelete(ctx, bob, c.ID),
		"BeginDelete of none":   s.BeginDelete(ctx, alice, "01a00000-0000-7000-8000-000000000000"),
		"BeginDelete of bad id": s.BeginDelete(ctx, alice, "x"),
	}, store.ErrNotFound)
	if err := s.BeginDelete(ctx, alice, c.ID); err != nil {
		t.Fatalf("BeginDelete: %v", err)
	}
	if err := s.BeginDelete(ctx, alice, c.ID); err != nil {
		t.Errorf("BeginDelete again: %v", err)
	}
	wantErrs(t, " while deleting", map[string]error{
		"StartRun":       second(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "late"})),
		"StartRun edit":  second(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "edited", Supersedes: r.ID})),
		"StartQueuedRun": second(s.StartQueuedRun(ctx, c.ID, "proc-1")),
		"EnqueueRun":     second(s.EnqueueRun(ctx, store.NewQueuedRun{UserID: alice, ConversationID: c.ID, UserMessage: "late"})),
		"ResumeRun":      second(s.ResumeRun(ctx, r.ID, "proc-1")),
	}, store.ErrNotFound)
	if got := must(s.GetConversation(ctx, alice, c.ID))(t); got.ID != c.ID || !got.Deleting {
		t.Errorf("GetConversation while deleting = %+v", got)
	}
	if got := must(s.GetConversation(ctx, alice, other.ID))(t); got.Deleting {
		t.Errorf("another conversation reads as being deleted: %+v", got)
	}
	if runs := must(s.ListRuns(ctx, alice, c.ID, store.RunQuery{}))(t); len(runs.Runs) != 1 {
		t.Errorf("runs while deleting: %+v, want the one before", runs.Runs)
	}
	startRun(t, s, other, "elsewhere")
	if err := s.DropQueuedRuns(ctx, alice, c.ID); err != nil {
		t.Errorf("DropQueuedRuns while deleting: %v", err)
	}
	if err := s.DeleteConversation(ctx, alice, c.ID); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
}

// A resume or an enqueue racing a delete's mark either lands before it,
// and the deleter then sees it (the run running, to stop; the message
// queued, to drop), or is refused: neither slips past the mark unseen.
// On PostgreSQL that holds only if each locks the conversation's row.
func testBeginDeleteRaces(t *testing.T, s Record) {
	ctx := t.Context()
	const rounds = 40
	for i := range rounds {
		c, r := parkedRun(t, s, events.PendingApproval)
		var (
			resumeErr, enqueueErr error
			seen                  store.Run
		)
		together(func() {
			_, resumeErr = s.ResumeRun(ctx, r.ID, "proc-1")
		}, func() {
			_, enqueueErr = s.EnqueueRun(ctx, store.NewQueuedRun{UserID: alice, ConversationID: c.ID, UserMessage: "late"})
		}, func() {
			if err := s.BeginDelete(ctx, alice, c.ID); err != nil {
				t.Errorf("round %d: BeginDelete: %v", i, err)
				return
			}
			if err := s.DropQueuedRuns(ctx, alice, c.ID); err != nil {
				t.Errorf("round %d: DropQueuedRuns: %v", i, err)
			}
			var err error
			if seen, err = s.LatestRun(ctx, alice, c.ID); err != nil {
				t.Errorf("round %d: LatestRun: %v", i, err) // not Fatal: this is not the test's goroutine
			}
		})
		if resumeErr != nil && !errors.Is(resumeErr, store.ErrNotFound) {
			t.Fatalf("round %d: ResumeRun: %v, want success or ErrNotFound", i, resumeErr)
		}
		if enqueueErr != nil && !errors.Is(enqueueErr, store.ErrNotFound) {
			t.Fatalf("round %d: EnqueueRun: %v, want success or ErrNotFound", i, enqueueErr)
		}
		if resumeErr == nil && seen.Status != store.RunRunning {
			t.Fatalf("round %d: the run resumed, but the deleter read it %s after its mark", i, seen.Status)
		}
		if enqueueErr == nil {
			if q := must(s.QueuedRuns(ctx, alice, c.ID))(t); len(q) != 0 {
				t.Fatalf("round %d: a message queued after the deleter dropped the queue: %+v", i, q)
			}
		}
	}
}

// second returns the error of a two-result call.
func second[T any](_ T, err error) error { return err }

func testMessages(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r1 := startRun(t, s, c, "question one")
	citations := json.RawMessage(`[{"n":1,"source":"doc.pdf","chunk":"…"}]`)
	m := must(s.AddMessage(ctx, store.NewMessage{RunID: r1.ID, Role: store.RoleAssistant, Content: "answer [1]",
		Citations: citations, Meta: json.RawMessage(`{"model":"fast"}`)}))(t)
	if m.ConversationID != c.ID || m.ID == "" || m.Superseded {
		t.Errorf("AddMessage = %+v", m)
	}
	utc(t, "message", m.CreatedAt)
	finish(t, s, r1.ID, store.RunCompleted, "")
	r2 := startRun(t, s, c, "question two")

	got := allMessages(t, s, alice, c.ID)
	type short struct {
		Run     string
		Role    store.Role
		Content string
	}
	var shorts []short
	for _, g := range got {
		shorts = append(shorts, short{g.RunID, g.Role, g.Content})
	}
	want := []short{{r1.ID, store.RoleUser, "question one"}, {r1.ID, store.RoleAssistant, "answer [1]"}, {r2.ID, store.RoleUser, "question two"}}
	if !slices.Equal(shorts, want) {
		t.Errorf("RunMessages = %+v\nwant %+v (StartRun stores the user's message)", shorts, want)
	}
	if len(got) == 3 && !reflect.DeepEqual(got[1], m) {
		t.Errorf("listed %+v\nwant %+v as added", got[1], m)
	}
	if len(got) == 3 && (string(got[1].Citations) != string(citations) || got[0].Citations != nil) {
		t.Errorf("citations %s / %s, want %s verbatim and none", got[1].Citations, got[0].Citations, citations)
	}
	if empty := allMessages(t, s, alice, newConversation(t, s, alice).ID); len(empty) != 0 {
		t.Errorf("messages of a new conversation = %#v, want empty and non-nil", empty)
	}
	if _, err := s.AddMessage(ctx, store.NewMessage{RunID: r2.ID, Role: "system"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("AddMessage with role system: %v, want ErrInvalid", err)
	}
}

// testConversationGivenID: a conversation may take the id its client
// named it by; an id taken, by the same user or another, is a conflict
// and changes nothing.
func testConversationGivenID(t *testing.T, s Record) {
	ctx := t.Context()
	const id = "thread-0f1e2d"
	c := must(s.CreateConversation(ctx, store.NewConversation{UserID: alice, Title: "named", ID: id}))(t)
	if c.ID != id {
		t.Fatalf("CreateConversation with ID %q made %q", id, c.ID)
	}
	if got := must(s.GetConversation(ctx, alice, id))(t); got.Title != "named" {
		t.Errorf("GetConversation = %+v", got)
	}
	for _, user := range []string{alice, bob} {
		if _, err := s.CreateConversation(ctx, store.NewConversation{UserID: user, Title: "again", ID: id}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a second conversation %q of %s: %v, want ErrConflict", id, user, err)
		}
	}
	if _, err := s.GetConversation(ctx, bob, id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob reads alice's conversation: %v, want ErrNotFound", err)
	}
	if got := must(s.GetConversation(ctx, alice, id))(t); got.Title != "named" {
		t.Errorf("after the conflicts: %+v", got)
	}
	r := startRun(t, s, c, "hi")
	if r.ConversationID != id {
		t.Errorf("run in conversation %q", r.ConversationID)
	}
	// The longest id a client may choose is kept; a longer one, which
	// PostgreSQL could not index, is refused on every backend.
	long := strings.Repeat("0f1e2d3c", store.MaxIDBytes/8)
	if got := must(s.CreateConversation(ctx, store.NewConversation{UserID: alice, ID: long}))(t); got.ID != long {
		t.Errorf("CreateConversation with a %d-byte id made %q", len(long), got.ID)
	}
	if _, err := s.CreateConversation(ctx, store.NewConversation{UserID: alice, ID: long + "x"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a %d-byte id: %v, want ErrInvalid", len(long)+1, err)
	}
}

// A conversation keeps a JSON object of metadata: {} by default, as
// given at creation (also with its first run), replaced whole by
// SetConversationMetadata, only by its user, and never anything but an
// object.
func testConversationMetadata(t *testing.T, s Record) {
	ctx := t.Context()
	plain := newConversation(t, s, alice)
	if string(plain.Metadata) != "{}" {
		t.Errorf("metadata of a conversation created without: %s, want {}", plain.Metadata)
	}
	c := must(s.CreateConversation(ctx, store.NewConversation{UserID: alice, Metadata: json.RawMessage(`{"graph_id": "agent", "n": 1}`)}))(t)
	if got := must(s.GetConversation(ctx, alice, c.ID))(t); string(got.Metadata) != `{"graph_id":"agent","n":1}` {
		t.Errorf("metadata read back: %s", got.Metadata)
	}
	got := must(s.SetConversationMetadata(ctx, alice, c.ID, json.RawMessage(`{"graph_id":"agent","assistant_id":"a1"}`)))(t)
	if string(got.Metadata) != `{"graph_id":"agent","assistant_id":"a1"}` || got.ID != c.ID {
		t.Errorf("SetConversationMetadata = %+v", got)
	}
	page := must(s.ListConversations(ctx, alice, store.Page{}))(t)
	for _, l := range page.Conversations {
		if l.ID == c.ID && string(l.Metadata) != string(got.Metadata) {
			t.Errorf("listed metadata %s, want %s", l.Metadata, got.Metadata)
		}
	}
	r := must(s.StartRun(ctx, store.NewRun{UserID: alice, UserMessage: "hi",
		NewConversation: &store.NewConversation{UserID: alice, Metadata: json.RawMessage(`{"k":"v"}`)}}))(t)
	if got := must(s.GetConversation(ctx, alice, r.ConversationID))(t); string(got.Metadata) != `{"k":"v"}` {
		t.Errorf("metadata of a conversation its first run created: %s", got.Metadata)
	}

	if _, err := s.SetConversationMetadata(ctx, bob, c.ID, json.RawMessage(`{}`)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob sets alice's metadata: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{`[1]`, `"x"`, `{`, "{\"a\":\"\xff\"}"} {
		if _, err := s.SetConversationMetadata(ctx, alice, c.ID, json.RawMessage(bad)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("metadata %q: %v, want ErrInvalid", bad, err)
		}
		if _, err := s.CreateConversation(ctx, store.NewConversation{UserID: alice, Metadata: json.RawMessage(bad)}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("new conversation with metadata %q: %v, want ErrInvalid", bad, err)
		}
	}
	if got := must(s.GetConversation(ctx, alice, c.ID))(t); string(got.Metadata) != `{"graph_id":"agent","assistant_id":"a1"}` {
		t.Errorf("refused changes changed the metadata: %s", got.Metadata)
	}
}

// A conversation's title is replaced by a generated one until its user
// renames it; then only the user changes it. Only its user renames it,
// and only to a title CheckTitle takes.
func testConversationTitles(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	if c.TitleByUser || must(s.GetConversation(ctx, alice, c.ID))(t).TitleByUser {
		t.Error("a new conversation's title is the user's")
	}
	if set := must(s.SetGeneratedTitle(ctx, alice, c.ID, "Harbour fees"))(t); !set {
		t.Error("a generated title did not replace the first one")
	}
	if got := must(s.GetConversation(ctx, alice, c.ID))(t); got.Title != "Harbour fees" || got.TitleByUser {
		t.Errorf("after a generated title: %q by user %v", got.Title, got.TitleByUser)
	}
	got := must(s.RenameConversation(ctx, alice, c.ID, "My boat's papers ⚓"))(t)
	if got.ID != c.ID || got.Title != "My boat's papers ⚓" || !got.TitleByUser {
		t.Errorf("RenameConversation = %+v", got)
	}
	if set := must(s.SetGeneratedTitle(ctx, alice, c.ID, "Something else"))(t); set {
		t.Error("a generated title replaced the user's")
	}
	page := must(s.ListConversations(ctx, alice, store.Page{}))(t)
	for _, l := range page.Conversations {
		if l.ID == c.ID && l.Title != "My boat's papers ⚓" {
			t.Errorf("listed title %q after a generated one came", l.Title)
		}
	}
	if got := must(s.RenameConversation(ctx, alice, c.ID, "Papers"))(t); got.Title != "Papers" {
		t.Errorf("renamed again: %q", got.Title)
	}

	if _, err := s.RenameConversation(ctx, bob, c.ID, "mine now"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob renames alice's: %v, want ErrNotFound", err)
	}
	if _, err := s.SetGeneratedTitle(ctx, bob, c.ID, "mine now"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a generated title of alice's, as bob: %v, want ErrNotFound", err)
	}
	if _, err := s.SetGeneratedTitle(ctx, alice, "no-such-conversation", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a generated title of no conversation: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", "   ", "a\x00b", "caf\xe9", "two\nlines", strings.Repeat("é", store.MaxTitleRunes+1)} {
		if _, err := s.RenameConversation(ctx, alice, c.ID, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("title %q: %v, want ErrInvalid", bad, err)
		}
		if _, err := s.SetGeneratedTitle(ctx, alice, c.ID, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("generated title %q: %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := s.RenameConversation(ctx, alice, c.ID, strings.Repeat("é", store.MaxTitleRunes)); err != nil {
		t.Errorf("a title at the limit: %v", err)
	}
}

func testIdleConversations(t *testing.T, s Record) {
	ctx := t.Context()
	var old []store.Conversation
	for _, user := range []string{alice, bob, alice} {
		old = append(old, newConversation(t, s, user))
	}
	cut := time.Now()
	time.Sleep(2 * time.Millisecond) // the stores keep microseconds
	recent := newConversation(t, s, alice)
	touched := old[1]
	startRun(t, s, touched, "later") // a run updates its conversation
	var got []store.Conversation
	for page := (store.Page{Limit: 1}); ; {
		p := must(s.IdleConversations(ctx, cut, page))(t)
		got = append(got, p.Conversations...)
		if page.Cursor = p.NextCursor; page.Cursor == "" {
			break
		}
	}
	if want := []string{old[0].ID, old[2].ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("idle before the cut: %v, want %v (oldest first; not %s, touched since, nor %s, made after)", ids(got), want, touched.ID, recent.ID)
	}
	if got[0].UserID != alice || got[0].Status != store.StatusIdle {
		t.Errorf("idle conversation %+v", got[0])
	}
	if p := must(s.IdleConversations(ctx, old[0].CreatedAt, store.Page{}))(t); len(p.Conversations) != 0 || p.Conversations == nil {
		t.Errorf("nothing idle before the first: %+v", p)
	}
	if _, err := s.IdleConversations(ctx, cut, store.Page{Limit: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("negative limit: %v", err)
	}
}
