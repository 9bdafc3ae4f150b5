package documents

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// ChunkConfig shapes chunks; the zero value is the defaults, which are
// seed 002's. Sizes count characters (Unicode code points).
type ChunkConfig struct {
	// Size is the most characters a chunk holds. Default 4000.
	Size int
	// Overlap is how many characters of the end of a chunk the next one
	// repeats, so a passage cut at a boundary is whole in one of them.
	// Default 500; negative for none. It must be at most MinSize.
	Overlap int
	// MinSize is the fewest characters a chunk holds, unless it is the
	// last. Default 500; at most Size.
	MinSize int
	// MaxChunks caps the chunks of a document; the text after the last
	// is not chunked (Chunking.Omitted says how much). Default 50.
	MaxChunks int
}

// Separators are the boundaries a chunk ends at, strongest first: section
// breaks, paragraphs, lines, sentences, words. A chunk ends after the
// strongest one found between MinSize and Size characters from its start;
// with none, it is cut at Size.
var Separators = []string{"\n\n\n", "\n\n", "\n", ". ", " "}

func (c ChunkConfig) withDefaults() (ChunkConfig, error) {
	if c.Size == 0 {
		c.Size = 4000
	}
	switch {
	case c.Overlap == 0:
		c.Overlap = 500
	case c.Overlap < 0:
		c.Overlap = 0
	}
	if c.MinSize == 0 {
		c.MinSize = min(500, c.Size)
	}
	if c.MaxChunks == 0 {
		c.MaxChunks = 50
	}
	if c.Size < 1 || c.MinSize < 1 || c.MinSize > c.Size || c.Overlap > c.MinSize || c.MaxChunks < 1 {
		return c, errors.New("documents: chunk config needs Overlap <= MinSize <= Size and MaxChunks >= 1")
	}
	return c, nil
}

// Chunk is one piece of a document's text. Start and End are character
// (code point) offsets into the text Chunk was given: Text is its
// characters [Start, End).
type Chunk struct {
	Index int    `json:"index"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Text  string `json:"text"`
	// Page and LastPage are the pages (from 1) the chunk begins and ends
	// on, for a PDF; 0 otherwise.
	Page     int `json:"page,omitempty"`
	LastPage int `json:"last_page,omitempty"`
}

// Chunking is a document cut into chunks.
type Chunking struct {
	Chunks []Chunk
	// Omitted is how many characters at the end of the text no chunk
	// holds, because the document reached MaxChunks; 0 when all of it is
	// chunked. The omitted text begins at the last chunk's End.
	Omitted int
	// Total is the text's length in characters.
	Total int
}

// Chunk cuts t's text into overlapping chunks (see ChunkConfig and
// Separators), with their offsets and, for a PDF, their pages. Every chunk
// but the last holds MinSize to Size characters; the last holds at most
// Size. Each chunk after the first begins within the one before it (by
// about Overlap characters, moved forward to the start of a word), so no
// text between the first chunk's start and the last chunk's end is left
// out. It fails only for a config that cannot work.
func (t Text) Chunk(cfg ChunkConfig) (Chunking, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Chunking{}, err
	}
	text := t.Text
	out := Chunking{Total: utf8.RuneCountInString(text)}
	start, startRune := 0, 0 // byte and character offsets of the next chunk
	for start < len(text) && len(out.Chunks) < cfg.MaxChunks {
		end := advance(text, start, cfg.Size)
		if end < len(text) {
			end = cut(text, start, end, advance(text, start, cfg.MinSize))
		}
		c := Chunk{Index: len(out.Chunks), Start: startRune, Text: text[start:end]}
		c.End = c.Start + utf8.RuneCountInString(c.Text)
		if t.Pages != nil {
			c.Page, c.LastPage = t.PageAt(c.Start), t.PageAt(max(c.Start, c.End-1))
		}
		out.Chunks = append(out.Chunks, c)
		if end == len(text) {
			break
		}
		next := overlapStart(text, start, end, cfg.Overlap)
		startRune += utf8.RuneCountInString(text[start:next])
		start = next
	}
	if n := len(out.Chunks); n > 0 {
		out.Omitted = out.Total - out.Chunks[n-1].End
	}
	return out, nil
}

// Chunk is Text{Text: text}.Chunk(cfg): plain text, no pages.
func ChunkText(text string, cfg ChunkConfig) (Chunking, error) { return Text{Text: text}.Chunk(cfg) }

// advance returns the byte offset n characters after byte offset i, or
// len(s).
func advance(s string, i, n int) int {
	for ; n > 0 && i < len(s); n-- {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// cut returns where a chunk from start should end, at most at limit: after
// the last occurrence of the strongest separator that ends at or after lo
// (MinSize characters in), or limit when there is none.
func cut(s string, start, limit, lo int) int {
	for _, sep := range Separators {
		// A separator counts if the chunk ending after it holds at
		// least MinSize characters: it must end at lo or later.
		from := max(start, lo-len(sep))
		if i := strings.LastIndex(s[from:limit], sep); i >= 0 {
			return from + i + len(sep)
		}
	}
	return limit
}

// overlapStart returns where the chunk after [start, end) begins: overlap
// characters before end, moved forward past the next space or newline
// within the overlap so it begins at a word; always after start.
func overlapStart(s string, start, end, overlap int) int {
	if overlap == 0 {
		return end
	}
	// Step back overlap characters from end.
	i := end
	for n := 0; n < overlap && i > start; n++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	if i <= start {
		return end // the chunk is no longer than the overlap: no progress otherwise
	}
	if j := strings.IndexAny(s[i:end], " \n"); j >= 0 && i+j+1 < end {
		i += j + 1
	}
	return i
}
