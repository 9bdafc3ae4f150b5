package documents_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/internal/pdfmake"
)

// cidFont is a Type0 font with Identity-H, as office software writes them:
// glyph ids for codes, a ToUnicode CMap to read them by. Printable ASCII
// is one bfrange (codes 0x0120..0x017e for U+0020..U+007E), the ligature
// "ﬁ" is one code that reads as "fi", and é ß 中 are an array bfrange.
func cidFont(toUnicode string) *pdfmake.Font {
	codes := map[string]int{"\ufb01": 0x0300, "é": 0x0400, "ß": 0x0401, "中": 0x0402, "\U0001F600": 0x0500}
	for r := rune(0x20); r <= 0x7e; r++ {
		codes[string(r)] = int(r) + 0x100
	}
	return &pdfmake.Font{Composite: true, Codes: codes, ToUnicode: toUnicode}
}

var cidCMap = pdfmake.CMap(2,
	map[int]string{0x0300: "fi", 0x0500: "\U0001F600"},
	[]pdfmake.BFRange{
		{Lo: 0x0120, Hi: 0x017e, Dst: " "},
		{Lo: 0x0400, Hi: 0x0402, Dsts: []string{"é", "ß", "中"}},
	})

func TestExtractPDFToUnicode(t *testing.T) {
	pages := []pdfmake.Page{
		{"The \ufb01rst \ufb01eld report", "caf\u00e9 Stra\u00dfe \u4e2d \U0001F600"},
		{"Page two: ok."},
	}
	for _, flate := range []bool{false, true} {
		data := pdfmake.Make(pages, pdfmake.Options{Flate: flate, Font: cidFont(cidCMap)})
		got, err := documents.Extract(t.Context(), data, "x.pdf", documents.Limits{})
		if err != nil {
			t.Fatalf("flate %v: %v", flate, err)
		}
		want := "The first field report\ncafé Straße 中 \U0001F600\n\n\nPage two: ok."
		if got.Text != want {
			t.Fatalf("flate %v: text\n%q\nwant\n%q", flate, got.Text, want)
		}
		two := strings.Index(got.Text, "Page two")
		if len(got.Pages) != 2 || got.PageAt(0) != 1 || got.PageAt(len([]rune(got.Text[:two]))) != 2 {
			t.Fatalf("flate %v: pages %v", flate, got.Pages)
		}
	}
}

// A simple font with a ToUnicode reads through it, not through its
// encoding; a code the map lacks reads as the encoding would.
func TestExtractPDFSimpleFontToUnicode(t *testing.T) {
	codes := map[string]int{"x": 'x'}
	for r := 'a'; r <= 'w'; r++ {
		codes[string(r)] = int(r - 'a' + 1) // a..w at 1..23: control codes in WinAnsi
	}
	codes[" "] = ' '
	cm := pdfmake.CMap(1, map[int]string{' ': " "}, []pdfmake.BFRange{{Lo: 1, Hi: 23, Dst: "a"}})
	data := pdfmake.Make([]pdfmake.Page{{"hello world x"}}, pdfmake.Options{Font: &pdfmake.Font{Codes: codes, ToUnicode: cm}})
	got, err := documents.Extract(t.Context(), data, "x.pdf", documents.Limits{})
	if err != nil || got.Text != "hello world x" {
		t.Fatalf("%q, %v", got.Text, err)
	}
}

// A composite font whose ToUnicode cannot be read shows no text, rather
// than its codes read as WinAnsi: a page of only that font is empty, and
// the other pages read. A simple font's broken ToUnicode leaves it read
// through its encoding.
func TestExtractPDFBadToUnicode(t *testing.T) {
	for name, cmap := range map[string]string{
		"garbage":        "\x00\xff(((<<[[ beginbfrange <01>",
		"no mappings":    "1 begincodespacerange <0000> <FFFF> endcodespacerange",
		"range backward": "1 beginbfrange <0200> <0100> <0041> endbfrange",
	} {
		t.Run(name, func(t *testing.T) {
			data := pdfmake.Make([]pdfmake.Page{{"hidden text"}}, pdfmake.Options{Font: cidFont(cmap)})
			_, err := documents.Extract(t.Context(), data, "x.pdf", documents.Limits{})
			if !errors.Is(err, documents.ErrEmpty) {
				t.Fatalf("Extract: %v, want ErrEmpty", err)
			}
			codes := map[string]int{}
			for r := rune(0x20); r <= 0x7e; r++ {
				codes[string(r)] = int(r)
			}
			data = pdfmake.Make([]pdfmake.Page{{"plain text"}}, pdfmake.Options{Font: &pdfmake.Font{Codes: codes, ToUnicode: cmap}})
			got, err := documents.Extract(t.Context(), data, "x.pdf", documents.Limits{})
			if err != nil || got.Text != "plain text" {
				t.Fatalf("simple font: %q, %v", got.Text, err)
			}
		})
	}
}

// A ToUnicode stream counts against the decode budget like any other.
func TestExtractPDFToUnicodeBomb(t *testing.T) {
	bomb := cidCMap + strings.Repeat(" ", 20<<20)
	data := pdfmake.Make([]pdfmake.Page{{"x"}}, pdfmake.Options{Flate: true, Font: cidFont(bomb)})
	if len(data) > 1<<20 {
		t.Fatalf("%d bytes on the wire", len(data))
	}
	_, err := documents.Extract(t.Context(), data, "x.pdf", documents.Limits{MaxDecodedBytes: 8 << 20})
	if !errors.Is(err, documents.ErrUnreadable) {
		t.Fatalf("Extract: %v, want ErrUnreadable", err)
	}
}
