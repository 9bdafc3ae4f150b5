package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
)

// markdown is about n bytes of Markdown: headed sections of paragraphs.
func markdown(n int) []byte {
	var b strings.Builder
	for s := 0; b.Len() < n; s++ {
		fmt.Fprintf(&b, "## Section %d\n\n", s)
		for p := range 5 {
			for k := range 8 {
				fmt.Fprintf(&b, "Sentence %d of paragraph %d discusses item %d in some detail, with numbers like %d. ", k, p, s, s*p+k)
			}
			b.WriteString("\n\n")
		}
	}
	return []byte(b.String()[:n])
}

// BenchmarkIngest is the offline pipeline of one 1 MiB Markdown document
// through the real record: extract, chunk (no cap, so every byte is
// chunked), store the chunks with their full-text index rows, summarise
// every chunk extractively and store each summary, then the document's.
// Its MB/s is the ingest figure (target ≥ 10 MB/s). Writing the
// upload's file is the upload's work, done outside the timer.
func BenchmarkIngest(b *testing.B) {
	data := markdown(1 << 20)
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			ctx := context.Background()
			var st interface {
				Record
				CreateConversation(context.Context, store.NewConversation) (store.Conversation, error)
			}
			switch backend {
			case "sqlite":
				s, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "trellis.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				st = s
			case "postgres":
				s, err := pgstore.New(ctx, pgtest.New(b))
				if err != nil {
					b.Fatal(err)
				}
				st = s
			}
			files, err := documents.NewFileStorage(filepath.Join(b.TempDir(), "files"))
			if err != nil {
				b.Fatal(err)
			}
			svc, err := New(Config{Store: st, Files: files, MaxBytes: 2 << 20, MaxPerConversation: 1 << 20,
				Chunks: documents.ChunkConfig{MaxChunks: 1 << 30}})
			if err != nil {
				b.Fatal(err)
			}
			c, err := st.CreateConversation(ctx, store.NewConversation{UserID: "u"})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				d, err := st.CreateDocument(ctx, store.NewDocument{UserID: "u", ConversationID: c.ID, Filename: "bench.md", ContentType: "text/markdown", SizeBytes: int64(len(data))})
				if err != nil {
					b.Fatal(err)
				}
				key := documents.Key{User: "u", Conversation: c.ID, Document: d.ID, Name: documents.Original}.String()
				b.StopTimer()
				if err := files.Put(ctx, key, data); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := svc.processDocument(ctx, d.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
