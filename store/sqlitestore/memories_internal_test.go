package sqlitestore

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
func openFile(t testing.TB) *Store {
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
// writes a segment for each; while the index is small each write merges
// it into one (optimizeWhileSmall), so a search never binds segment 1 beside
// another and FTS5's lookup is not prepared again. Merging at three
// segments a level alone left several in one write of two.
func TestMemoryIndexStaysMerged(t *testing.T) {
	ctx := t.Context()
	s := openFile(t)
	segments := func() int {
		t.Helper()
		var n int
		if err := s.db.db.QueryRowContext(ctx, "SELECT count(DISTINCT segid) FROM memories_fts_idx").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	m, err := s.AddMemory(ctx, store.NewMemory{UserID: "local", Summary: "my name is Ada", Topics: []string{"name", "ada"}, Importance: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		nm := store.NewMemory{Summary: fmt.Sprintf("my name is Ada, and I like tea (%d)", i), Topics: []string{"name", "ada", "tea"}, Importance: 0.9}
		if _, err := s.UpdateMemory(ctx, "local", m.ID, nm); err != nil {
			t.Fatal(err)
		}
		if n := segments(); n != 1 {
			t.Fatalf("after rewrite %d the memories' index has %d segments", i, n)
		}
	}
	// rank 0: the index against itself. Against the memories FTS5 would
	// read an owner column, which the table makes in its triggers.
	if _, err := s.db.db.ExecContext(ctx, `INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 0)`); err != nil {
		t.Fatalf("the merged index is corrupt: %v", err)
	}
	hits, err := s.SearchMemories(ctx, store.MemoryQuery{UserID: "local", Query: "tea", Limit: 5})
	if err != nil || len(hits) != 1 || hits[0].Summary != "my name is Ada, and I like tea (99)" {
		t.Fatalf("search after the rewrites: %+v, %v", hits, err)
	}

	// Past mergedUpTo memories a write leaves the index to FTS5's own
	// merging: it does not rewrite the whole index.
	for i := range mergedUpTo {
		if _, err := s.AddMemory(ctx, store.NewMemory{UserID: fmt.Sprint("user-", i%7), Summary: fmt.Sprint("memory ", i), Importance: 0.5}); err != nil {
			t.Fatal(err)
		}
	}
	if n := segments(); n == 1 {
		t.Fatalf("with %d memories a write still merged the index into one segment", mergedUpTo+1)
	}
}

// BenchmarkMemoryRewrite measures a rewrite of one memory (as learning
// does it) among n memories of five users, with the index's upkeep and,
// as the baseline in the same run, without it: what keeping a small
// index in one segment costs a write.
func BenchmarkMemoryRewrite(b *testing.B) {
	upkeep := memorySearch.Upkeep
	b.Cleanup(func() { memorySearch.Upkeep = upkeep })
	for _, n := range []int{100, 500, 10_000} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("memories=%d/upkeep=%t", n, on), func(b *testing.B) {
				memorySearch.Upkeep = nil
				ctx := b.Context()
				s := openFile(b)
				var wg sync.WaitGroup
				for w := range 16 {
					wg.Go(func() {
						for i := w; i < n; i += 16 {
							_, err := s.AddMemory(ctx, store.NewMemory{UserID: fmt.Sprint("user-", i%5),
								Summary: fmt.Sprintf("Asked about postgres and tea, %d times", i), Topics: []string{"tea", fmt.Sprint("t", i%97)}, Importance: 0.5})
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				m, err := s.AddMemory(ctx, store.NewMemory{UserID: "user-1", Summary: "Asked about golang", Importance: 0.5})
				if err != nil {
					b.Fatal(err)
				}
				if on {
					memorySearch.Upkeep = upkeep
				}
				i := 0
				for b.Loop() {
					i++
					nm := store.NewMemory{Summary: fmt.Sprintf("Asked about golang and rust (%d)", i), Topics: []string{"go"}, Importance: 0.5}
					if _, err := s.UpdateMemory(ctx, "user-1", m.ID, nm); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
