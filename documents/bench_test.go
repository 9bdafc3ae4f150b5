package documents_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/documents"
)

// markdownCorpus is n bytes (about) of Markdown: sections of headed
// paragraphs of varied sentences.
func markdownCorpus(n int) string {
	var b strings.Builder
	for s := 0; b.Len() < n; s++ {
		fmt.Fprintf(&b, "## Section %d\n\n", s)
		for p := range 5 {
			for k := range 8 {
				fmt.Fprintf(&b, "Sentence %d of paragraph %d discusses item %d in some detail, with numbers like %d. ", k, p, s, s*p+k)
			}
			b.WriteString("\n\n")
		}
		b.WriteString("\n")
	}
	return b.String()[:n]
}

// BenchmarkIngestOffline is the offline ingest path of one document
// without the record: extract (sniff, UTF-8 check, normalise), chunk with
// no chunk cap, and summarise every chunk and the document extractively.
// Its MB/s is the figure the issue asks for (≥ 10 MB/s); indexing is
// measured with the store.
func BenchmarkIngestOffline(b *testing.B) {
	for _, size := range []int{1 << 20, 8 << 20} {
		data := []byte(markdownCorpus(size))
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			ctx := context.Background()
			sum := documents.Extractive{}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				text, err := documents.Extract(ctx, data, "corpus.md", documents.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				c, err := text.Chunk(documents.ChunkConfig{MaxChunks: 1 << 30})
				if err != nil {
					b.Fatal(err)
				}
				for _, ch := range c.Chunks {
					if _, err := sum.SummarizeChunk(ctx, ch.Text); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := sum.SummarizeDocument(ctx, "corpus.md", text.Text, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
