package documents

import (
	"context"
	"strings"
	"unicode/utf8"
)

// Summarizer summarises a document's chunks and the document. The service
// uses a model through the resilience policy when one is configured, and
// Extractive otherwise, so documents work with no key.
type Summarizer interface {
	// SummarizeChunk summarises one chunk's text.
	SummarizeChunk(ctx context.Context, text string) (string, error)
	// SummarizeDocument summarises the document from its text and its
	// chunks' summaries (in chunk order).
	SummarizeDocument(ctx context.Context, filename, text string, chunkSummaries []string) (string, error)
}

// Extractive is the Summarizer that needs no model: a summary made of the
// text's own words, its headings and its leading sentences, and says so by
// being nothing else. The zero value is ready: chunk summaries of at most
// 300 characters, document summaries of at most 800.
type Extractive struct {
	// ChunkChars and DocumentChars cap the summaries' lengths.
	ChunkChars, DocumentChars int
}

var _ Summarizer = Extractive{}

// SummarizeChunk implements Summarizer.
func (e Extractive) SummarizeChunk(_ context.Context, text string) (string, error) {
	n := e.ChunkChars
	if n <= 0 {
		n = 300
	}
	return ExtractiveSummary(text, n, 3), nil
}

// SummarizeDocument implements Summarizer: the headings of the whole text
// and its leading sentences; the chunk summaries are not needed.
func (e Extractive) SummarizeDocument(_ context.Context, _, text string, _ []string) (string, error) {
	n := e.DocumentChars
	if n <= 0 {
		n = 800
	}
	return ExtractiveSummary(text, n, 12), nil
}

// ExtractiveSummary returns at most maxChars characters of text's own
// words: "Sections: " and up to maxHeadings of its Markdown headings,
// then its leading sentences (headings skipped), whole, as many as fit;
// a first sentence longer than the room left is cut at a word, with "…".
func ExtractiveSummary(text string, maxChars, maxHeadings int) string {
	var headings []string
	var body strings.Builder // the leading non-heading lines, enough to fill the summary
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if h, ok := heading(line); ok {
			if len(headings) < maxHeadings {
				headings = append(headings, h)
			}
			continue
		}
		if line == "" || body.Len() > 4*maxChars {
			if len(headings) >= maxHeadings && body.Len() > 4*maxChars {
				break
			}
			continue
		}
		if body.Len() > 0 {
			body.WriteByte(' ')
		}
		body.WriteString(line)
	}

	var b strings.Builder
	room := maxChars
	if len(headings) > 0 {
		h := "Sections: " + strings.Join(headings, " · ") + "."
		if utf8.RuneCountInString(h) > maxChars/2 {
			h = clip(h, maxChars/2)
		}
		b.WriteString(h)
		room -= utf8.RuneCountInString(h)
	}
	rest := body.String()
	for sentences := 0; rest != "" && room > 1; sentences++ {
		s := nextSentence(rest)
		rest = strings.TrimLeft(rest[len(s):], " ")
		s = strings.TrimSpace(s)
		sep := 0
		if b.Len() > 0 {
			sep = 1
		}
		need := utf8.RuneCountInString(s) + sep
		if need > room {
			if sentences == 0 && room-sep > 1 { // a summary has at least a part of a sentence
				b.WriteString(" "[:sep] + clip(s, room-sep))
			}
			break
		}
		b.WriteString(" "[:sep] + s)
		room -= need
	}
	return b.String()
}

// heading returns a Markdown ATX heading's text.
func heading(line string) (string, bool) {
	if !strings.HasPrefix(line, "#") {
		return "", false
	}
	h := strings.TrimLeft(line, "#")
	if len(line)-len(h) > 6 || (h != "" && h[0] != ' ' && h[0] != '\t') {
		return "", false
	}
	h = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(h), "#"))
	return h, h != ""
}

// nextSentence returns s up to and including the end of its first
// sentence (". ", "! ", "? " or the end of s).
func nextSentence(s string) string {
	for i := 0; i+1 < len(s); i++ {
		switch s[i] {
		case '.', '!', '?':
			if s[i+1] == ' ' {
				return s[:i+1]
			}
		}
	}
	return s
}

// clip cuts s to at most n characters, at a word where it can, ending
// with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return ""
	}
	cut := advance(s, 0, n-1)
	if i := strings.LastIndexByte(s[:cut], ' '); i > cut/2 {
		cut = i
	}
	return strings.TrimRight(s[:cut], " ,;:") + "…"
}
