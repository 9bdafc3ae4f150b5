package documents_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/internal/pdfmake"
)

// FuzzExtract: whatever the bytes, Extract answers text or one of its
// sentinels, never panics, and its text is UTF-8 without NULs or carriage
// returns, with pages in order.
func FuzzExtract(f *testing.F) {
	f.Add([]byte("plain text"), "a.txt")
	f.Add([]byte("# md\n\ntext"), "a.md")
	f.Add([]byte("<html><body><h1>x</h1><p>y &amp; z</p><script>no</script></body></html>"), "a.html")
	f.Add(pdfmake.Make([]pdfmake.Page{{"one", "two"}, {"three"}}, pdfmake.Options{}), "a.pdf")
	f.Add(pdfmake.Make([]pdfmake.Page{{"flate (paren) \\ back"}}, pdfmake.Options{Flate: true}), "b.pdf")
	f.Add([]byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj trailer << /Root 1 0 R >>"), "c.pdf")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := documents.Extract(ctx, data, name, documents.Limits{MaxDecodedBytes: 1 << 20, MaxPages: 50})
		if err != nil {
			if !errors.Is(err, documents.ErrUnsupported) && !errors.Is(err, documents.ErrUnreadable) &&
				!errors.Is(err, documents.ErrEmpty) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error outside the sentinels: %v", err)
			}
			return
		}
		if !utf8.ValidString(got.Text) || strings.ContainsAny(got.Text, "\x00\r") || strings.TrimSpace(got.Text) == "" {
			t.Fatalf("text %q", got.Text)
		}
		n := utf8.RuneCountInString(got.Text)
		for i, p := range got.Pages {
			if p < 0 || p > n || (i > 0 && p < got.Pages[i-1]) {
				t.Fatalf("pages %v of a text of %d characters", got.Pages, n)
			}
		}
	})
}

// FuzzPDFContent feeds the content-stream reader arbitrary text through a
// real PDF around it; with a cmap, the text is shown in a font of its own
// (composite with Identity-H, or simple) whose ToUnicode CMap is the
// fuzzed one.
func FuzzPDFContent(f *testing.F) {
	f.Add("BT (Hello) Tj ET", "", false)
	f.Add("BT [(A) -300 (B)] TJ 0 -14 Td (C) ' ET", "", false)
	f.Add("BI /W 1 /H 1 ID \x00\xff EI Q <48656c6c6f> Tj", "", false)
	f.Add("The \ufb01rst caf\u00e9", pdfmake.CMap(2, map[int]string{0x0300: "fi"}, []pdfmake.BFRange{{Lo: 0x0120, Hi: 0x017e, Dst: " "}, {Lo: 0x01e9, Hi: 0x01ea, Dsts: []string{"\u00e9", "\U0001F600"}}}), true)
	f.Add("abc", pdfmake.CMap(1, map[int]string{0x61: "x"}, []pdfmake.BFRange{{Lo: 0x62, Hi: 0xff, Dst: "b"}}), false)
	f.Add("abc", "1 beginbfrange <0000> <FFFF> <D800> endbfrange", true)
	f.Fuzz(func(t *testing.T, line, cmap string, composite bool) {
		opt := pdfmake.Options{}
		if cmap != "" {
			codes := map[string]int{"\ufb01": 0x0300}
			for r := rune(0); r < 0x100; r++ {
				codes[string(r)] = int(r)
				if composite {
					codes[string(r)] += 0x100
				}
			}
			opt.Font = &pdfmake.Font{Composite: composite, Codes: codes, ToUnicode: cmap}
		}
		data := pdfmake.Make([]pdfmake.Page{{line}}, opt)
		got, err := documents.Extract(t.Context(), data, "x.pdf", documents.Limits{})
		if err != nil {
			if !errors.Is(err, documents.ErrUnreadable) && !errors.Is(err, documents.ErrEmpty) {
				t.Fatal(err)
			}
			return
		}
		if !utf8.ValidString(got.Text) || strings.ContainsAny(got.Text, "\x00\r") {
			t.Fatalf("text %q", got.Text)
		}
	})
}
