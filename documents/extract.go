package documents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// Type is a content type Trellis can read, as sniffed from a file's bytes.
type Type string

// The types Extract reads.
const (
	TypeText     Type = "text/plain"
	TypeMarkdown Type = "text/markdown"
	TypeHTML     Type = "text/html"
	TypePDF      Type = "application/pdf"
)

// Supported lists the types Extract reads, in the order messages name them.
var Supported = []Type{TypeText, TypeMarkdown, TypeHTML, TypePDF}

// Sentinel errors of extraction; match them with errors.Is.
var (
	// ErrUnsupported: the file is of a type Trellis cannot read. Its
	// message lists the supported types. HTTP 415.
	ErrUnsupported = errors.New("documents: unsupported file type; supported: text/plain, text/markdown (.md), text/html, application/pdf")
	// ErrUnreadable: the file is of a supported type but cannot be read:
	// a PDF that does not parse or decodes to more than the limit, a file
	// named .pdf that is not a PDF, text that is not UTF-8. HTTP 400.
	ErrUnreadable = errors.New("documents: the file cannot be read")
	// ErrEmpty: the file is empty, or has no text. HTTP 400.
	ErrEmpty = errors.New("documents: the file has no text")
)

// Limits bound what extraction may cost; the zero value is the defaults.
type Limits struct {
	// MaxDecodedBytes bounds what a PDF's compressed streams may decode
	// to, per stream and in total over its pages, against files that
	// are small on the wire and huge inside. Default 16 MiB.
	MaxDecodedBytes int64
	// MaxPages bounds a PDF's pages. Default 2000.
	MaxPages int
}

func (l Limits) decoded() int64 {
	if l.MaxDecodedBytes <= 0 {
		return 16 << 20
	}
	return l.MaxDecodedBytes
}

func (l Limits) pages() int {
	if l.MaxPages <= 0 {
		return 2000
	}
	return l.MaxPages
}

// Text is a file's text as Extract read it: normalised to UTF-8 without
// NULs or carriage returns, section breaks kept as two blank lines.
type Text struct {
	Type Type
	Text string
	// Pages holds, for a PDF, the character (rune) offset in Text where
	// each page begins: Pages[0] is 0, page n (from 1) begins at
	// Pages[n-1]. Nil for other types.
	Pages []int
}

// PageAt returns the page (from 1) holding the character at offset off,
// or 0 when the text has no pages.
func (t Text) PageAt(off int) int {
	n := 0
	for i, start := range t.Pages {
		if start > off {
			break
		}
		n = i + 1
	}
	return n
}

// Sniff tells the type of data from its bytes; filename only tells
// Markdown from plain text (a .md or .markdown name), since their bytes
// are alike, and a file named .pdf whose bytes are not a PDF is refused
// (ErrUnreadable): it is broken or not what it claims. A type that cannot
// be read is ErrUnsupported.
func Sniff(data []byte, filename string) (Type, error) {
	if len(data) == 0 {
		return "", ErrEmpty
	}
	// A PDF header may follow some junk within the first kilobyte.
	if i := bytes.Index(data[:min(len(data), 1024)], []byte("%PDF-")); i >= 0 {
		return TypePDF, nil
	}
	if strings.EqualFold(path.Ext(filename), ".pdf") {
		return "", fmt.Errorf("%w: the file is named %s but is not a PDF", ErrUnreadable, path.Base(filename))
	}
	sniffed, _, _ := strings.Cut(http.DetectContentType(data), ";")
	switch sniffed {
	case "text/html":
		return TypeHTML, nil
	case "text/plain":
		if !bytes.HasPrefix(data, []byte{0xef, 0xbb, 0xbf}) && hasBOM16(data) {
			return "", fmt.Errorf("%w (this file is UTF-16 text; save it as UTF-8)", ErrUnsupported)
		}
		switch strings.ToLower(path.Ext(filename)) {
		case ".md", ".markdown", ".mdown", ".mkd":
			return TypeMarkdown, nil
		}
		return TypeText, nil
	}
	return "", fmt.Errorf("%w (this file is %s)", ErrUnsupported, sniffed)
}

func hasBOM16(data []byte) bool {
	return bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe})
}

// Extract sniffs data's type (see Sniff) and reads its text. Errors match
// ErrUnsupported, ErrUnreadable or ErrEmpty, or are ctx's.
func Extract(ctx context.Context, data []byte, filename string, lim Limits) (Text, error) {
	typ, err := Sniff(data, filename)
	if err != nil {
		return Text{}, err
	}
	out := Text{Type: typ}
	switch typ {
	case TypeText, TypeMarkdown, TypeHTML:
		if !utf8.Valid(data) {
			return Text{}, fmt.Errorf("%w: the text is not UTF-8", ErrUnreadable)
		}
		s := string(bytes.TrimPrefix(data, []byte{0xef, 0xbb, 0xbf}))
		if typ == TypeHTML {
			s = htmlText(s)
		}
		out.Text = normalize(s)
	case TypePDF:
		pages, err := pdfText(ctx, data, lim)
		if err != nil {
			return Text{}, err
		}
		out.Text, out.Pages = joinPages(pages)
	}
	if strings.TrimSpace(out.Text) == "" {
		return Text{}, ErrEmpty
	}
	return out, nil
}

// joinPages joins the pages' normalised text with section breaks and
// notes where each begins.
func joinPages(pages []string) (string, []int) {
	var b strings.Builder
	starts := make([]int, 0, len(pages))
	runes := 0
	for i, p := range pages {
		if i > 0 {
			b.WriteString(sectionBreak)
			runes += len(sectionBreak)
		}
		starts = append(starts, runes)
		p = normalize(p)
		b.WriteString(p)
		runes += utf8.RuneCountInString(p)
	}
	return b.String(), starts
}

// sectionBreak is the strongest boundary Chunk splits at.
const sectionBreak = "\n\n\n"

// normalize makes text what Trellis keeps: \r\n and \r become \n, NULs and
// other control characters but tab and newline go, a run of more than
// three newlines (with only spaces between) becomes a section break,
// trailing spaces of lines go, and the ends are trimmed.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	newlines := 0
	// spaces holds the spaces and tabs not yet written (dropped before a
	// newline); truncated, not reset, so a run of them allocates nothing.
	spaces := make([]byte, 0, 64)
	// pending writes what comes before the next character kept: the
	// newlines and spaces seen since the last one, but none at the start.
	pending := func() {
		if newlines > 0 {
			if b.Len() > 0 {
				b.WriteString("\n\n\n"[:min(newlines, 3)])
			}
			newlines = 0
		}
		if len(spaces) > 0 && b.Len() > 0 {
			b.Write(spaces)
		}
		spaces = spaces[:0]
	}
	for i := 0; i < len(s); {
		// A run of printable ASCII but the space is kept as it is, and
		// written whole: most text is made of such runs.
		if j := i; s[j] > ' ' && s[j] < 0x7f {
			for j++; j < len(s) && s[j] > ' ' && s[j] < 0x7f; j++ {
			}
			pending()
			b.WriteString(s[i:j])
			i = j
			continue
		}
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		switch {
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				continue // the \n that follows counts
			}
			r = '\n'
		case r == utf8.RuneError && size == 1:
			r = '\uFFFD'
		}
		switch {
		case r == '\n':
			spaces = spaces[:0]
			newlines++
			continue
		case r == ' ' || r == '\t':
			spaces = append(spaces, byte(r))
			continue
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			continue
		}
		pending()
		b.WriteRune(r)
	}
	return b.String()
}
