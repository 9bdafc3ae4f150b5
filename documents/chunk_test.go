package documents_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/documents"
)

// checkChunking asserts every rule Chunk promises, for any text.
func checkChunking(t *testing.T, text documents.Text, cfg documents.ChunkConfig, c documents.Chunking) {
	t.Helper()
	runes := []rune(text.Text)
	if c.Total != len(runes) {
		t.Fatalf("Total %d, text has %d characters", c.Total, len(runes))
	}
	if len(runes) == 0 {
		if len(c.Chunks) != 0 {
			t.Fatalf("chunks of empty text: %v", c.Chunks)
		}
		return
	}
	if len(c.Chunks) == 0 || len(c.Chunks) > cfg.MaxChunks {
		t.Fatalf("%d chunks, max %d", len(c.Chunks), cfg.MaxChunks)
	}
	if c.Chunks[0].Start != 0 {
		t.Fatalf("first chunk starts at %d", c.Chunks[0].Start)
	}
	last := c.Chunks[len(c.Chunks)-1]
	if c.Omitted != len(runes)-last.End {
		t.Fatalf("Omitted %d, but the last chunk ends at %d of %d", c.Omitted, last.End, len(runes))
	}
	if c.Omitted > 0 && len(c.Chunks) != cfg.MaxChunks {
		t.Fatalf("%d characters omitted with only %d chunks", c.Omitted, len(c.Chunks))
	}
	for i, ch := range c.Chunks {
		if ch.Index != i {
			t.Fatalf("chunk %d has index %d", i, ch.Index)
		}
		if ch.Start < 0 || ch.End > len(runes) || ch.Start >= ch.End {
			t.Fatalf("chunk %d: [%d, %d) of %d", i, ch.Start, ch.End, len(runes))
		}
		if ch.Text != string(runes[ch.Start:ch.End]) {
			t.Fatalf("chunk %d: text is not characters [%d, %d)", i, ch.Start, ch.End)
		}
		n := ch.End - ch.Start
		if n > cfg.Size {
			t.Fatalf("chunk %d holds %d characters, more than %d", i, n, cfg.Size)
		}
		if i < len(c.Chunks)-1 && n < cfg.MinSize {
			t.Fatalf("chunk %d (not the last) holds %d characters, fewer than %d", i, n, cfg.MinSize)
		}
		if i > 0 {
			prev := c.Chunks[i-1]
			if ch.Start <= prev.Start || ch.Start > prev.End {
				t.Fatalf("chunk %d starts at %d; the one before is [%d, %d)", i, ch.Start, prev.Start, prev.End)
			}
			if prev.End-ch.Start > cfg.Overlap {
				t.Fatalf("chunks %d and %d overlap by %d, more than %d", i-1, i, prev.End-ch.Start, cfg.Overlap)
			}
		}
		if text.Pages != nil && (ch.Page != text.PageAt(ch.Start) || ch.LastPage != text.PageAt(ch.End-1)) {
			t.Fatalf("chunk %d: pages %d-%d", i, ch.Page, ch.LastPage)
		}
	}
}

func para(n int, word string) string {
	return strings.TrimSpace(strings.Repeat(word+" ", n))
}

func TestChunkRules(t *testing.T) {
	cfg := documents.ChunkConfig{Size: 4000, Overlap: 500, MinSize: 500, MaxChunks: 50}
	// Sections of ~2,600 characters of paragraphs of ~650.
	var sections []string
	for s := range 6 {
		var ps []string
		for p := range 4 {
			ps = append(ps, fmt.Sprintf("Section %d paragraph %d. ", s, p)+para(120, "word"))
		}
		sections = append(sections, "# Section "+fmt.Sprint(s)+"\n\n"+strings.Join(ps, "\n\n"))
	}
	text := strings.Join(sections, "\n\n\n")
	c, err := documents.ChunkText(text, documents.ChunkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	checkChunking(t, documents.Text{Text: text}, cfg, c)
	// Every chunk but the last ends at a section break: the strongest
	// boundary past the minimum.
	for _, ch := range c.Chunks[:len(c.Chunks)-1] {
		if !strings.HasSuffix(ch.Text, "\n\n\n") {
			t.Errorf("chunk %d ends with %q, not a section break", ch.Index, ch.Text[len(ch.Text)-20:])
		}
	}
	// With no section breaks, at a paragraph.
	flat := strings.ReplaceAll(text, "\n\n\n", "\n\n")
	c, _ = documents.ChunkText(flat, documents.ChunkConfig{})
	checkChunking(t, documents.Text{Text: flat}, cfg, c)
	for _, ch := range c.Chunks[:len(c.Chunks)-1] {
		if !strings.HasSuffix(ch.Text, "\n\n") {
			t.Errorf("chunk %d does not end at a paragraph", ch.Index)
		}
	}
	// One long line of sentences: at a sentence.
	line := strings.Repeat("This is one sentence of the text. ", 400)
	c, _ = documents.ChunkText(line, documents.ChunkConfig{})
	checkChunking(t, documents.Text{Text: line}, cfg, c)
	for _, ch := range c.Chunks[:len(c.Chunks)-1] {
		if !strings.HasSuffix(ch.Text, ". ") {
			t.Errorf("chunk %d does not end at a sentence: %q", ch.Index, ch.Text[len(ch.Text)-10:])
		}
	}
	// No separator at all: cut at Size.
	blob := strings.Repeat("é", 9000)
	c, _ = documents.ChunkText(blob, documents.ChunkConfig{})
	checkChunking(t, documents.Text{Text: blob}, cfg, c)
	if c.Chunks[0].End != 4000 {
		t.Errorf("a text without separators: first chunk ends at %d", c.Chunks[0].End)
	}
}

func TestChunkShortAndMax(t *testing.T) {
	c, _ := documents.ChunkText("short text", documents.ChunkConfig{})
	if len(c.Chunks) != 1 || c.Chunks[0].Text != "short text" || c.Omitted != 0 {
		t.Fatalf("short text: %+v", c)
	}
	// 50 chunks of a text far longer: the rest is omitted and counted.
	long := strings.Repeat(para(100, "lorem")+"\n\n", 600)
	c, _ = documents.ChunkText(long, documents.ChunkConfig{})
	cfg := documents.ChunkConfig{Size: 4000, Overlap: 500, MinSize: 500, MaxChunks: 50}
	checkChunking(t, documents.Text{Text: long}, cfg, c)
	if len(c.Chunks) != 50 || c.Omitted == 0 || c.Omitted != utf8.RuneCountInString(long)-c.Chunks[49].End {
		t.Fatalf("%d chunks, %d omitted", len(c.Chunks), c.Omitted)
	}
	none, _ := documents.ChunkText(long, documents.ChunkConfig{Overlap: -1})
	for i := 1; i < len(none.Chunks); i++ {
		if none.Chunks[i].Start != none.Chunks[i-1].End {
			t.Fatalf("with no overlap, chunk %d starts at %d, the one before ends at %d", i, none.Chunks[i].Start, none.Chunks[i-1].End)
		}
	}
	if _, err := documents.ChunkText("x", documents.ChunkConfig{Size: 100, MinSize: 50, Overlap: 60}); err == nil {
		t.Fatal("an overlap above the minimum size was accepted")
	}
}

func TestChunkPages(t *testing.T) {
	pages := []string{para(500, "alpha"), para(500, "beta"), para(500, "gamma")}
	var text string
	var starts []int
	for i, p := range pages {
		if i > 0 {
			text += "\n\n\n"
		}
		starts = append(starts, utf8.RuneCountInString(text))
		text += p
	}
	doc := documents.Text{Type: documents.TypePDF, Text: text, Pages: starts}
	c, err := doc.Chunk(documents.ChunkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	checkChunking(t, doc, documents.ChunkConfig{Size: 4000, Overlap: 500, MinSize: 500, MaxChunks: 50}, c)
	if c.Chunks[0].Page != 1 || c.Chunks[len(c.Chunks)-1].LastPage != 3 {
		t.Fatalf("pages: first %d, last %d", c.Chunks[0].Page, c.Chunks[len(c.Chunks)-1].LastPage)
	}
}

func FuzzChunk(f *testing.F) {
	f.Add("# Title\n\nSome text. More text.\n\n\nNext section", 40, 10, 20, 5)
	f.Add(strings.Repeat("word ", 300), 100, 20, 30, 50)
	f.Add(strings.Repeat("日本語のテキスト。", 100), 64, 8, 16, 3)
	f.Add("a\n\n\n\n\nb", 1, 0, 1, 1)
	f.Fuzz(func(t *testing.T, text string, size, overlap, minSize, maxChunks int) {
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
		cfg := documents.ChunkConfig{Size: size%5000 + 1, Overlap: overlap%5000 + 1, MinSize: minSize%5000 + 1, MaxChunks: maxChunks%60 + 1}
		if cfg.Overlap < 1 || cfg.MinSize < 1 || cfg.Size < 1 || cfg.MaxChunks < 1 {
			return
		}
		c, err := documents.ChunkText(text, cfg)
		if cfg.Overlap > cfg.MinSize || cfg.MinSize > cfg.Size {
			if err == nil {
				t.Fatalf("config %+v accepted", cfg)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkChunking(t, documents.Text{Text: text}, cfg, c)
	})
}
