package documents_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/documents"
)

func TestExtractiveSummary(t *testing.T) {
	text := "# Staff handbook\n\nOpening hours are nine to five. Visitors sign in at the desk. Parking is behind the building.\n\n## Facilities\n\nThe office plant is named Gerald."
	got := documents.ExtractiveSummary(text, 120, 5)
	want := "Sections: Staff handbook · Facilities. Opening hours are nine to five. Visitors sign in at the desk."
	if got != want {
		t.Fatalf("summary\n%q\nwant\n%q", got, want)
	}
	// A first sentence longer than the room is cut at a word.
	long := strings.Repeat("lengthy ", 100)
	got = documents.ExtractiveSummary(long, 50, 3)
	if n := utf8.RuneCountInString(got); n > 50 || !strings.HasSuffix(got, "…") || strings.Contains(got, "lengt…") {
		t.Fatalf("clipped summary %q (%d characters)", got, n)
	}
	if got := documents.ExtractiveSummary("", 100, 3); got != "" {
		t.Fatalf("summary of nothing: %q", got)
	}
	s, err := documents.Extractive{}.SummarizeDocument(t.Context(), "x.md", text, nil)
	if err != nil || !strings.HasPrefix(s, "Sections: Staff handbook") {
		t.Fatalf("SummarizeDocument = %q, %v", s, err)
	}
}

func FuzzExtractiveSummary(f *testing.F) {
	f.Add("# a\n\nb. c! d? e", 10, 2)
	f.Fuzz(func(t *testing.T, text string, n, h int) {
		n, h = n%2000, h%20
		if n < 0 || h < 0 {
			return
		}
		got := documents.ExtractiveSummary(text, n, h)
		if c := utf8.RuneCountInString(got); c > max(n, 0) {
			t.Fatalf("summary of %d characters, max %d: %q", c, n, got)
		}
	})
}
