package sqlitestore

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// putDocuments stores docs documents of 20 chunks each in one new
// conversation of "local", each chunk about 1,500 characters of a small
// vocabulary, and returns the conversation's id.
func putDocuments(tb testing.TB, s *Store, docs int) string {
	tb.Helper()
	ctx := tb.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields("launch plan budget review harbor ember tundra violet cobalt meadow quarterly revenue hiring roadmap design latency storage")
	c, err := s.CreateConversation(ctx, store.NewConversation{UserID: "local"})
	if err != nil {
		tb.Fatal(err)
	}
	for d := range docs {
		doc, err := s.CreateDocument(ctx, store.NewDocument{UserID: "local", ConversationID: c.ID, Filename: fmt.Sprintf("d%d.md", d), ContentType: "text/markdown"})
		if err != nil {
			tb.Fatal(err)
		}
		chunks := make([]store.NewChunk, 20)
		for i := range chunks {
			var sb strings.Builder
			for sb.Len() < 1500 {
				fmt.Fprintf(&sb, "%s%d ", vocab[rng.IntN(len(vocab))], rng.IntN(300))
			}
			chunks[i] = store.NewChunk{Index: i, Start: i * 1500, End: (i + 1) * 1500, Text: sb.String()}
		}
		if err := s.PutChunks(ctx, doc.ID, chunks, 0); err != nil {
			tb.Fatal(err)
		}
	}
	return c.ID
}

// The chunks' index gets a segment for each document's chunks; while it
// is small, PutChunks merges it into one (optimizeWhileSmall).
func TestChunkIndexStaysMerged(t *testing.T) {
	s := openFile(t)
	conv := putDocuments(t, s, 5)
	var n int
	if err := s.db.db.QueryRowContext(t.Context(), "SELECT count(DISTINCT segid) FROM chunks_fts_idx").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("after five documents the chunks' index has %d segments", n)
	}
	hits, err := s.SearchChunks(t.Context(), store.ChunkQuery{UserID: "local", ConversationID: conv, Query: "launch7 budget"})
	if err != nil || len(hits) == 0 {
		t.Fatalf("search: %d hits, %v", len(hits), err)
	}
}

// BenchmarkFewDocuments measures putting a document's chunk beside docs
// documents of 20 chunks, and a search of them, with the chunks' index
// upkeep and, as the baseline in the same run, without it.
func BenchmarkFewDocuments(b *testing.B) {
	upkeep := chunkSearch.Upkeep
	b.Cleanup(func() { chunkSearch.Upkeep = upkeep })
	for _, docs := range []int{3, 10, 24} {
		for _, on := range []bool{false, true} {
			chunkSearch.Upkeep = nil
			if on {
				chunkSearch.Upkeep = upkeep
			}
			b.Run(fmt.Sprintf("documents=%d/upkeep=%t/put", docs, on), func(b *testing.B) {
				s := openFile(b)
				putDocuments(b, s, docs)
				// The same document's chunks again each time, so the
				// index stays the size the case names.
				doc, err := s.CreateDocument(b.Context(), store.NewDocument{UserID: "local", Filename: "more.md", ContentType: "text/markdown"})
				if err != nil {
					b.Fatal(err)
				}
				chunks := []store.NewChunk{{Text: strings.Repeat("launch plan budget ", 80)}}
				for b.Loop() {
					if err := s.PutChunks(b.Context(), doc.ID, chunks, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("documents=%d/upkeep=%t/search", docs, on), func(b *testing.B) {
				s := openFile(b)
				conv := putDocuments(b, s, docs)
				for b.Loop() {
					if _, err := s.SearchChunks(b.Context(), store.ChunkQuery{UserID: "local", ConversationID: conv, Query: "what is the launch plan and the budget review?"}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
