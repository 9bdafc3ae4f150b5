package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/store"
)

func addMemory(t *testing.T, s Record, user, summary string, importance float64, topics ...string) store.Memory {
	t.Helper()
	return must(s.AddMemory(t.Context(), store.NewMemory{UserID: user, ConversationID: "c-1", Summary: summary,
		Outcome: "success", Topics: topics, Importance: importance}))(t)
}

func memoryIDs(ms []store.Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func hitIDs(hs []store.MemoryHit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

func testMemoryLifecycle(t *testing.T, s Record) {
	ctx := t.Context()
	m := addMemory(t, s, alice, "prefers short answers", 0.8, "style", "answers")
	if m.ID == "" || m.AccessCount != 0 || !m.CreatedAt.Equal(m.LastAccessed) {
		t.Fatalf("added %+v", m)
	}
	page := must(s.ListMemories(ctx, alice, store.Page{}))(t)
	if len(page.Memories) != 1 || page.NextCursor != "" {
		t.Fatalf("list = %+v", page)
	}
	got := page.Memories[0]
	if got.Summary != m.Summary || !slices.Equal(got.Topics, []string{"style", "answers"}) || got.Importance != 0.8 ||
		got.Outcome != "success" || got.ConversationID != "c-1" || !got.CreatedAt.Equal(m.CreatedAt) {
		t.Errorf("listed %+v, added %+v", got, m)
	}
	up := must(s.UpdateMemory(ctx, alice, m.ID, store.NewMemory{Summary: "prefers answers in bullet points", Topics: []string{"style", "bullets"},
		Importance: 0.9, Outcome: "partial"}))(t)
	if up.Summary != "prefers answers in bullet points" || !slices.Equal(up.Topics, []string{"style", "bullets"}) || up.Importance != 0.9 ||
		up.ConversationID != "c-1" || up.Outcome != "partial" {
		t.Errorf("updated %+v", up)
	}
	// The index follows the update: the old words no longer match.
	if hs := must(s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Query: "short"}))(t); len(hs) != 0 {
		t.Errorf("search for the old words = %v", hitIDs(hs))
	}
	if hs := must(s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Query: "bullet"}))(t); len(hs) != 1 {
		t.Errorf("search for the new words = %v", hitIDs(hs))
	}
	if err := s.DeleteMemory(ctx, alice, m.ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "delete again", s.DeleteMemory(ctx, alice, m.ID), store.ErrNotFound)
	if hs := must(s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Query: "bullet"}))(t); len(hs) != 0 {
		t.Errorf("search after delete = %v", hitIDs(hs))
	}

	addMemory(t, s, alice, "one", 0.5)
	addMemory(t, s, alice, "two", 0.5)
	must(s.UpdateProfile(ctx, alice, func(p *store.Profile) error { p.Style = "concise"; return nil }))(t)
	if n := must(s.DeleteMemories(ctx, alice))(t); n != 2 {
		t.Errorf("DeleteMemories = %d, want 2", n)
	}
	if page := must(s.ListMemories(ctx, alice, store.Page{}))(t); len(page.Memories) != 0 {
		t.Errorf("after DeleteMemories: %v", memoryIDs(page.Memories))
	}
	if p := must(s.GetProfile(ctx, alice))(t); p.Style != "" {
		t.Errorf("profile after DeleteMemories: %+v", p)
	}
}

func testMemoryPages(t *testing.T, s Record) {
	ctx := t.Context()
	var want []string
	for i := range 7 {
		want = append(want, addMemory(t, s, alice, fmt.Sprintf("memory %d", i), 0.5).ID)
	}
	slices.Reverse(want) // newest first
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 4 {
			t.Fatal("too many pages")
		}
		p := must(s.ListMemories(ctx, alice, store.Page{Limit: 3, Cursor: cursor}))(t)
		if len(p.Memories) > 3 {
			t.Fatalf("page of %d", len(p.Memories))
		}
		got = append(got, memoryIDs(p.Memories)...)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
	_, err := s.ListMemories(ctx, alice, store.Page{Cursor: "garbage"})
	wantErr(t, "bad cursor", err, store.ErrInvalid)
	_, err = s.ListMemories(ctx, alice, store.Page{Limit: -1})
	wantErr(t, "negative limit", err, store.ErrInvalid)
}

func testMemoryOtherUsers(t *testing.T, s Record) {
	ctx := t.Context()
	m := addMemory(t, s, alice, "alice likes rust", 0.7, "rust")
	_, err := s.UpdateMemory(ctx, bob, m.ID, store.NewMemory{Summary: "bob was here", Importance: 0.1})
	wantErr(t, "bob updates alice's", err, store.ErrNotFound)
	wantErr(t, "bob deletes alice's", s.DeleteMemory(ctx, bob, m.ID), store.ErrNotFound)
	if n := must(s.DeleteMemories(ctx, bob))(t); n != 0 {
		t.Errorf("bob's DeleteMemories deleted %d", n)
	}
	if err := s.TouchMemories(ctx, []store.Recall{{UserID: bob, MemoryIDs: []string{m.ID}, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if p := must(s.ListMemories(ctx, bob, store.Page{}))(t); len(p.Memories) != 0 {
		t.Errorf("bob lists %v", memoryIDs(p.Memories))
	}
	for _, q := range []string{"rust", ""} {
		if hs := must(s.SearchMemories(ctx, store.MemoryQuery{UserID: bob, Query: q}))(t); len(hs) != 0 {
			t.Errorf("bob searching %q finds %v", q, hitIDs(hs))
		}
	}
	p := must(s.ListMemories(ctx, alice, store.Page{}))(t)
	if len(p.Memories) != 1 || p.Memories[0].Summary != "alice likes rust" || p.Memories[0].AccessCount != 0 {
		t.Errorf("alice's memory after bob: %+v", p.Memories)
	}
	wantErr(t, "unknown id", s.DeleteMemory(ctx, alice, "no-such-memory"), store.ErrNotFound)
	wantErr(t, "unstorable id", s.DeleteMemory(ctx, alice, "bad\x00id"), store.ErrNotFound)
}

func testMemorySearch(t *testing.T, s Record) {
	ctx := t.Context()
	pg := addMemory(t, s, alice, "asked how to tune PostgreSQL indexes", 0.4, "postgresql", "indexes")
	both := addMemory(t, s, alice, "compared PostgreSQL and SQLite full-text search", 0.6, "postgresql", "sqlite", "search")
	sq := addMemory(t, s, alice, "embedded SQLite in a Go program", 0.9, "sqlite", "go")
	addMemory(t, s, bob, "bob also asks about PostgreSQL", 0.9, "postgresql")

	hs := must(s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Query: "postgresql sqlite"}))(t)
	if len(hs) != 3 || hs[0].ID != both.ID {
		t.Fatalf("search = %v, want %s (matches both words) first of 3", hitIDs(hs), both.ID)
	}
	for i := 1; i < len(hs); i++ {
		if hs[i].Score > hs[i-1].Score {
			t.Errorf("hit %d scores above the one before", i)
		}
	}
	// Topics are searched as summaries are; stems match.
	if hs := must(s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Query: "index"}))(t); !slices.Equal(hitIDs(hs), []string{pg.ID}) {
		t.Errorf("search index = %v, want %s", hitIDs(hs), pg.ID)
	}
	// A question's stop words are not searched for: "about" in bob's
	// memory makes no match, and the words that are left rank alike on
	// both backends.
	hs = must(s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Query: "What do you remember about my indexes?"}))(t)
	if !slices.Equal(hitIDs(hs), []string{pg.ID}) {
		t.Errorf("question = %v, want %s", hitIDs(hs), pg.ID)
	}
	// No word to search for: the most important first.
	for _, q := range []string{"? !", "what was it about?"} {
		hs = must(s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Query: q, Limit: 2}))(t)
		if !slices.Equal(hitIDs(hs), []string{sq.ID, both.ID}) {
			t.Errorf("no words in %q = %v, want %s %s", q, hitIDs(hs), sq.ID, both.ID)
		}
	}
	// Important adds the most important memories after the matches,
	// each memory once, scored 0; never another user's.
	for _, c := range []struct {
		q         store.MemoryQuery
		want      []string
		unmatched int // the hits past the matches
	}{
		{store.MemoryQuery{UserID: alice, Query: "index", Important: 2}, []string{pg.ID, sq.ID, both.ID}, 2},
		{store.MemoryQuery{UserID: alice, Query: "embedded", Important: 2}, []string{sq.ID, both.ID}, 1},
		{store.MemoryQuery{UserID: alice, Query: "index", Limit: 1, Important: 1}, []string{pg.ID, sq.ID}, 1},
		{store.MemoryQuery{UserID: alice, Query: "nothing matches this", Important: 1}, []string{sq.ID}, 1},
		{store.MemoryQuery{UserID: alice, Limit: 1, Important: 3}, []string{sq.ID, both.ID, pg.ID}, 3},
	} {
		hs := must(s.SearchMemories(ctx, c.q))(t)
		if !slices.Equal(hitIDs(hs), c.want) {
			t.Errorf("%+v = %v, want %v", c.q, hitIDs(hs), c.want)
			continue
		}
		for i, h := range hs {
			if matched := i < len(hs)-c.unmatched; matched != (h.Score > 0) {
				t.Errorf("%+v: hit %d scores %v", c.q, i, h.Score)
			}
		}
	}
	_, err := s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Query: "index", Important: -1})
	wantErr(t, "negative important", err, store.ErrInvalid)
	// FTS syntax in a query is words, not syntax.
	if _, err := s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Query: `"postgresql" OR (NEAR sqlite* -go) & | !`}); err != nil {
		t.Errorf("query with syntax: %v", err)
	}
	_, err = s.SearchMemories(ctx, store.MemoryQuery{UserID: alice, Limit: -1})
	wantErr(t, "negative limit", err, store.ErrInvalid)
	_, err = s.SearchMemories(ctx, store.MemoryQuery{Query: "x"})
	wantErr(t, "no user", err, store.ErrInvalid)
}

func testMemoryTouch(t *testing.T, s Record) {
	ctx := t.Context()
	m := addMemory(t, s, alice, "a", 0.5)
	other := addMemory(t, s, alice, "b", 0.5)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	// Two recalls of m in one batch count twice; the other user's,
	// the unknown and the invalid ids change nothing.
	recall := store.Recall{UserID: alice, MemoryIDs: []string{m.ID, "unknown", "bad\x00"}, At: at}
	if err := s.TouchMemories(ctx, []store.Recall{recall, {UserID: bob, MemoryIDs: []string{other.ID}, At: at},
		{UserID: "bad\x00", MemoryIDs: []string{other.ID}, At: at}, recall}); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchMemories(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, got := range must(s.ListMemories(ctx, alice, store.Page{}))(t).Memories {
		switch got.ID {
		case m.ID:
			if got.AccessCount != 2 || !got.LastAccessed.Equal(at) {
				t.Errorf("touched: count %d, last %v, want 2, %v", got.AccessCount, got.LastAccessed, at)
			}
		case other.ID:
			if got.AccessCount != 0 || !got.LastAccessed.Equal(other.LastAccessed) {
				t.Errorf("untouched changed: %+v", got)
			}
		}
	}
}

func testMemoryPrune(t *testing.T, s Record) {
	ctx := t.Context()
	old := addMemory(t, s, alice, "old", 0.9)
	// Importance ranks: with at most 2 each, alice keeps her two most
	// important, bob (under the limit) all of his.
	low := addMemory(t, s, alice, "low", 0.1)
	mid := addMemory(t, s, alice, "mid", 0.5)
	high := addMemory(t, s, alice, "high", 0.8)
	tie := addMemory(t, s, alice, "newer of equals", 0.5)
	b1 := addMemory(t, s, bob, "bob", 0.1)
	// old was last used long ago.
	cutoff := time.Now().UTC().Add(time.Minute)
	for _, m := range []store.Memory{low, mid, high, tie, b1} {
		if err := s.TouchMemories(ctx, []store.Recall{{UserID: m.UserID, MemoryIDs: []string{m.ID}, At: cutoff.Add(time.Hour)}}); err != nil {
			t.Fatal(err)
		}
	}
	n := must(s.PruneMemories(ctx, store.PruneRule{UsedBefore: cutoff, MaxPerUser: 2}))(t)
	if n != 3 { // old by age; low and mid by rank (tie is newer than mid)
		t.Errorf("pruned %d, want 3", n)
	}
	got := memoryIDs(must(s.ListMemories(ctx, alice, store.Page{}))(t).Memories)
	if want := []string{tie.ID, high.ID}; !slices.Equal(got, want) {
		t.Errorf("alice keeps %v, want %v (old was %s)", got, want, old.ID)
	}
	if got := memoryIDs(must(s.ListMemories(ctx, bob, store.Page{}))(t).Memories); !slices.Equal(got, []string{b1.ID}) {
		t.Errorf("bob keeps %v", got)
	}
	if n := must(s.PruneMemories(ctx, store.PruneRule{}))(t); n != 0 {
		t.Errorf("the empty rule pruned %d", n)
	}
	_, err := s.PruneMemories(ctx, store.PruneRule{MaxPerUser: -1})
	wantErr(t, "negative limit", err, store.ErrInvalid)
}

func testProfile(t *testing.T, s Record) {
	ctx := t.Context()
	p := must(s.GetProfile(ctx, alice))(t)
	if p.UserID != alice || p.Expertise != "" || p.Interests == nil || p.Patterns == nil || p.Preferences == nil {
		t.Fatalf("empty profile = %+v", p)
	}
	up := must(s.UpdateProfile(ctx, alice, func(p *store.Profile) error {
		p.Expertise, p.Style = "expert", "concise"
		p.Interests = []string{"go", "sql"}
		p.Patterns["questions"] = 3
		p.Preferences["length"] = "short answers"
		return nil
	}))(t)
	got := must(s.GetProfile(ctx, alice))(t)
	if got.Expertise != "expert" || got.Style != "concise" || !slices.Equal(got.Interests, []string{"go", "sql"}) ||
		got.Patterns["questions"] != 3 || got.Preferences["length"] != "short answers" || !got.UpdatedAt.Equal(up.UpdatedAt) {
		t.Errorf("stored %+v, got %+v", up, got)
	}
	if b := must(s.GetProfile(ctx, bob))(t); b.Expertise != "" || len(b.Preferences) != 0 {
		t.Errorf("bob's profile = %+v", b)
	}
	boom := errors.New("boom")
	_, err := s.UpdateProfile(ctx, alice, func(p *store.Profile) error { p.Style = "detailed"; return boom })
	wantErr(t, "fn's error", err, boom)
	_, err = s.UpdateProfile(ctx, alice, func(p *store.Profile) error { p.Preferences["x"] = "bad\x00"; return nil })
	wantErr(t, "unstorable text", err, store.ErrInvalid)
	if got := must(s.GetProfile(ctx, alice))(t); got.Style != "concise" || got.Preferences["x"] != "" {
		t.Errorf("a failed update changed the profile: %+v", got)
	}
	_, err = s.UpdateProfile(ctx, "", func(*store.Profile) error { return nil })
	wantErr(t, "no user", err, store.ErrInvalid)
}

func testProfileConcurrent(t *testing.T, s Record) {
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := s.UpdateProfile(t.Context(), alice, func(p *store.Profile) error { p.Patterns["turns"]++; return nil })
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := must(s.GetProfile(t.Context(), alice))(t).Patterns["turns"]; got != n {
		t.Errorf("turns = %d after %d concurrent updates", got, n)
	}
}

func testToolStats(t *testing.T, s Record) {
	ctx := t.Context()
	if err := s.AddToolStats(ctx, alice, []store.ToolStat{{Tool: "search", Calls: 2, Failures: 1}, {Tool: store.AgentTool, Calls: 1, ConfidenceSum: 0.5}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddToolStats(ctx, bob, []store.ToolStat{{Tool: "search", Calls: 1, Rejections: 1, Blocked: 1}, {Tool: store.AgentTool, Calls: 1, ConfidenceSum: 0.25}}); err != nil {
		t.Fatal(err)
	}
	got := must(s.ToolStats(ctx))(t)
	want := []store.ToolStat{{Tool: store.AgentTool, Calls: 2, ConfidenceSum: 0.75}, {Tool: "search", Calls: 3, Failures: 1, Blocked: 1, Rejections: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
	wantErr(t, "no tool", s.AddToolStats(ctx, alice, []store.ToolStat{{Calls: 1}}), store.ErrInvalid)
}

func testMemoryInvalid(t *testing.T, s Record) {
	ctx := t.Context()
	for name, m := range map[string]store.NewMemory{
		"no user":        {Summary: "x", Importance: 0.5},
		"no summary":     {UserID: alice, Importance: 0.5},
		"importance > 1": {UserID: alice, Summary: "x", Importance: 1.5},
		"importance < 0": {UserID: alice, Summary: "x", Importance: -0.1},
		"bad summary":    {UserID: alice, Summary: "a\x00b", Importance: 0.5},
		"bad topic":      {UserID: alice, Summary: "x", Topics: []string{"\xff"}, Importance: 0.5},
	} {
		_, err := s.AddMemory(ctx, m)
		wantErr(t, name, err, store.ErrInvalid)
	}
	if p := must(s.ListMemories(ctx, alice, store.Page{}))(t); len(p.Memories) != 0 {
		t.Errorf("invalid memories stored: %v", memoryIDs(p.Memories))
	}
}

// BenchmarkSearchMemories measures one recall (the cognition's search:
// the words of a message, three times the limit, the limit of the most
// important) in a store of memories of one user and of several.
func BenchmarkSearchMemories(b *testing.B, s Record) {
	ctx := b.Context()
	topics := []string{"tea", "coffee", "harbor", "ember", "tundra", "violet", "cobalt", "meadow"}
	for i := range 200 {
		user := "bench-user"
		if i%4 != 0 {
			user = fmt.Sprintf("other-%d", i%7)
		}
		_, err := s.AddMemory(ctx, store.NewMemory{UserID: user, ConversationID: "c-1",
			Summary: fmt.Sprintf("Asked: my name is Ada and I like %s %d", topics[i%len(topics)], i),
			Outcome: "success", Topics: []string{topics[i%len(topics)], "ada"}, Importance: float64(i%10) / 10})
		if err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := s.SearchMemories(ctx, store.MemoryQuery{UserID: "bench-user", Query: "thanks, and what else about tea?", Limit: 15, Important: 5}); err != nil {
			b.Fatal(err)
		}
	}
}

// Batches of recalls touching the same memories in different orders, as
// two processes' recorders send them, all commit and all count: on
// PostgreSQL they took the rows' locks in their own orders and
// deadlocked.
func testMemoryTouchConcurrent(t *testing.T, s Record) {
	ctx := t.Context()
	ms := make([]store.Memory, 6)
	for i := range ms {
		ms[i] = addMemory(t, s, alice, fmt.Sprintf("memory %d", i), 0.5)
	}
	const rounds, batches = 20, 4
	at := time.Now().UTC()
	for range rounds {
		var wg sync.WaitGroup
		errs := make([]error, batches)
		for b := range batches {
			// Each batch recalls every memory, a pair at a time, in an
			// order of its own.
			order := slices.Clone(ms)
			if b%2 == 1 {
				slices.Reverse(order)
			}
			var batch []store.Recall
			for i := 0; i < len(order); i += 2 {
				batch = append(batch, store.Recall{UserID: alice, MemoryIDs: []string{order[i].ID, order[(i+b+1)%len(order)].ID}, At: at})
			}
			wg.Go(func() { errs[b] = s.TouchMemories(ctx, batch) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent TouchMemories: %v", err)
		}
	}
	var total int
	for _, m := range must(s.ListMemories(ctx, alice, store.Page{}))(t).Memories {
		total += m.AccessCount
	}
	if want := rounds * batches * len(ms); total != want {
		t.Errorf("%d recalls counted, want %d", total, want)
	}
}
