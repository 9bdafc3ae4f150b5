package sqlitestore

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// A user who is the only one with memories is searched without the
// owner's token (memorySearch.Match); the hits and their scores are those
// of the search narrowed to the user's rows, the owner's token included.
func TestMemorySearchAlone(t *testing.T) {
	ctx := t.Context()
	s := openFile(t)
	const user = "local"
	for _, nm := range []store.NewMemory{
		{Summary: "asked how to tune PostgreSQL indexes", Topics: []string{"postgresql", "indexes"}},
		{Summary: "compared PostgreSQL and SQLite full-text search, at length, with PostgreSQL ahead", Topics: []string{"postgresql", "sqlite"}},
		{Summary: "embedded SQLite in a Go program", Topics: []string{"sqlite", "go"}},
		{Summary: "a recipe for green tea", Topics: []string{"tea"}},
		{Summary: "nothing to do with the others"},
	} {
		nm.UserID, nm.Importance = user, 0.5
		if _, err := s.AddMemory(ctx, nm); err != nil {
			t.Fatal(err)
		}
	}
	for u, want := range map[string]bool{user: false, "a-user-before": true, "z-user-after": true} {
		var others bool
		if err := s.db.db.QueryRowContext(ctx, "SELECT "+othersRemembered, "", u).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others != want {
			t.Errorf("others than %s remembered = %t, want %t", u, others, want)
		}
	}
	queries := []string{"postgresql indexes tea", "What do you remember about sqlite?", "go",
		// The user's own owner token, as a word: it matches every row of
		// theirs, in a column that weighs nothing.
		"u" + hex.EncodeToString([]byte(user))}
	search := func() [][]store.MemoryHit {
		var out [][]store.MemoryHit
		for _, q := range queries {
			hs, err := s.SearchMemories(ctx, store.MemoryQuery{UserID: user, Query: q})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, hs)
		}
		return out
	}
	alone := search()
	// The package's other tests do not run beside this one (none is
	// parallel at the top level), so it may change what the store asks.
	was := memorySearch.Match
	defer func() { memorySearch.Match = was }()
	memorySearch.Match = "memories_fts MATCH " + ownerMatch
	narrowed := search()
	for i, q := range queries {
		if len(alone[i]) == 0 {
			t.Errorf("%q: no hits", q)
		}
		same := slices.EqualFunc(alone[i], narrowed[i], func(a, b store.MemoryHit) bool { return a.ID == b.ID && a.Score == b.Score })
		if !same {
			t.Errorf("%q: alone %s, narrowed %s", q, hitsString(alone[i]), hitsString(narrowed[i]))
		}
	}
}

// openFile opens a store in a file of the test's own, closed at cleanup.
func openFile(t *testing.T) *Store {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func hitsString(hs []store.MemoryHit) string {
	var sb strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&sb, "%q=%g ", h.Summary, h.Score)
	}
	return sb.String()
}

// Learning rewrites a user's memory a transaction at a time, and FTS5
// writes a segment for each; the index merges them as they come
// (migration 0027), so a search looks each word up in one or two segments
// rather than in up to sixteen.
func TestMemoryIndexStaysMerged(t *testing.T) {
	ctx := t.Context()
	s := openFile(t)
	m, err := s.AddMemory(ctx, store.NewMemory{UserID: "local", Summary: "my name is Ada", Topics: []string{"name", "ada"}, Importance: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for i := range 100 {
		nm := store.NewMemory{Summary: fmt.Sprintf("my name is Ada, and I like tea (%d)", i), Topics: []string{"name", "ada", "tea"}, Importance: 0.9}
		if _, err := s.UpdateMemory(ctx, "local", m.ID, nm); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := s.db.db.QueryRowContext(ctx, "SELECT count(DISTINCT segid) FROM memories_fts_idx").Scan(&n); err != nil {
			t.Fatal(err)
		}
		most = max(most, n)
	}
	if most > 2 {
		t.Errorf("the memories' index had up to %d segments", most)
	}
}
