package documents_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/internal/pdfmake"
)

func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		data       string
		want       documents.Type
		err        error
	}{
		{"text", "a.txt", "hello\nworld", documents.TypeText, nil},
		{"markdown by name", "notes.MD", "# Title\n\ntext", documents.TypeMarkdown, nil},
		{"markdown bytes, text name", "notes.txt", "# Title", documents.TypeText, nil},
		{"html", "page", "<!DOCTYPE html><html><body>x</body></html>", documents.TypeHTML, nil},
		{"html named .txt", "x.txt", "  <p>para</p>", documents.TypeHTML, nil},
		{"pdf", "x.bin", "%PDF-1.7\n...", documents.TypePDF, nil},
		{"claims pdf, is text", "fake.pdf", "just text", "", documents.ErrUnreadable},
		{"claims pdf, is binary", "fake.PDF", "\x00\x01\x02\x03binary", "", documents.ErrUnreadable},
		{"binary", "blob.bin", "\x00\x01\x02\x03binary", "", documents.ErrUnsupported},
		{"zip", "x.md", "PK\x03\x04\x14\x00\x00\x00", "", documents.ErrUnsupported},
		{"png", "x.md", "\x89PNG\r\n\x1a\n\x00\x00", "", documents.ErrUnsupported},
		{"utf-16", "x.txt", "\xff\xfeh\x00i\x00", "", documents.ErrUnsupported},
		{"empty", "x.txt", "", "", documents.ErrEmpty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := documents.Sniff([]byte(tc.data), tc.file)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("Sniff = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
			if errors.Is(err, documents.ErrUnsupported) && !strings.Contains(err.Error(), "application/pdf") {
				t.Fatalf("the error does not list the supported types: %v", err)
			}
		})
	}
}

func TestExtractText(t *testing.T) {
	got, err := documents.Extract(t.Context(), []byte("\xef\xbb\xbf  Title\r\n\r\nline one   \r\nline\x00 two\n\n\n\n\n\nnext\tsection  "), "a.txt", documents.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := "Title\n\nline one\nline two\n\n\nnext\tsection"
	if got.Text != want || got.Type != documents.TypeText || got.Pages != nil {
		t.Fatalf("Extract = %+v\nwant text %q", got, want)
	}
	for _, bad := range []struct {
		data string
		err  error
	}{
		{"abc \xff\xfd not utf-8 \x80", documents.ErrUnreadable},
		{"   \n\n\t ", documents.ErrEmpty},
		{"", documents.ErrEmpty},
	} {
		if _, err := documents.Extract(t.Context(), []byte(bad.data), "a.txt", documents.Limits{}); !errors.Is(err, bad.err) {
			t.Errorf("Extract(%q): %v, want %v", bad.data, err, bad.err)
		}
	}
}

func TestExtractHTML(t *testing.T) {
	src := `<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style></head>
<body><script>var x = "no";</script>
<h1>Main &amp; title</h1><p>First   para
graph with <b>bold</b> text.</p>
<h3>Sub</h3><ul><li>one</li><li>two</li></ul><pre>a  b
  c</pre><p>caf&eacute;</p></body></html>`
	got, err := documents.Extract(t.Context(), []byte(src), "x.html", documents.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := "# Main & title\n\nFirst para graph with bold text.\n\n### Sub\n\n- one\n- two\n\na  b\n  c\n\ncafé"
	if got.Text != want || got.Type != documents.TypeHTML {
		t.Fatalf("Extract =\n%q\nwant\n%q", got.Text, want)
	}
}

func TestExtractPDF(t *testing.T) {
	for _, flate := range []bool{false, true} {
		data := pdfmake.Make([]pdfmake.Page{
			{"Quarterly report (draft)", "Revenue grew by 12 percent."},
			{"Page two: caf\u00e9 \u201cquoted\u201d"},
			{"The secret word is heliotrope."},
		}, pdfmake.Options{Flate: flate})
		got, err := documents.Extract(t.Context(), data, "r.pdf", documents.Limits{})
		if err != nil {
			t.Fatalf("flate %v: %v", flate, err)
		}
		want := "Quarterly report (draft)\nRevenue grew by 12 percent.\n\n\nPage two: caf\u00e9 ?quoted?\n\n\nThe secret word is heliotrope."
		if got.Text != want || got.Type != documents.TypePDF {
			t.Fatalf("flate %v: text\n%q\nwant\n%q", flate, got.Text, want)
		}
		if len(got.Pages) != 3 || got.Pages[0] != 0 {
			t.Fatalf("pages %v", got.Pages)
		}
		third := strings.Index(got.Text, "The secret")
		if p := got.PageAt(third); p != 3 {
			t.Fatalf("PageAt(%d) = %d, want 3", third, p)
		}
		if p := got.PageAt(0); p != 1 {
			t.Fatalf("PageAt(0) = %d", p)
		}
	}
}

// The PDF kept in testdata (made by pdfmake, used by the service's end to
// end tests) reads as its pages say.
func TestExtractTestdataPDF(t *testing.T) {
	data, err := os.ReadFile("testdata/handbook.pdf")
	if err != nil {
		t.Fatal(err)
	}
	got, err := documents.Extract(t.Context(), data, "handbook.pdf", documents.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Text, "The office plant is named Gerald.") || len(got.Pages) != 2 {
		t.Fatalf("text %q, pages %v", got.Text, got.Pages)
	}
}

func TestExtractBadPDF(t *testing.T) {
	bomb := pdfmake.Make([]pdfmake.Page{{"boom"}}, pdfmake.Options{Flate: true, Padding: 100 << 20})
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes on the wire; it should fit an upload", len(bomb))
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"not a pdf after its header", []byte("%PDF-1.4\nthis is not a pdf at all")},
		{"truncated", pdfmake.Make([]pdfmake.Page{{"a"}}, pdfmake.Options{})[:200]},
		{"bomb", bomb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := documents.Extract(t.Context(), tc.data, "x.pdf", documents.Limits{MaxDecodedBytes: 8 << 20})
			if !errors.Is(err, documents.ErrUnreadable) {
				t.Fatalf("Extract: %v, want ErrUnreadable", err)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

// The Markdown kept in testdata reads as Markdown, its headings in the
// extractive summary.
func TestExtractTestdataMarkdown(t *testing.T) {
	data, err := os.ReadFile("testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := documents.Extract(t.Context(), data, "handbook.md", documents.Limits{})
	if err != nil || got.Type != documents.TypeMarkdown {
		t.Fatalf("%v, %v", got.Type, err)
	}
	sum, _ := documents.Extractive{}.SummarizeDocument(t.Context(), "handbook.md", got.Text, nil)
	if !strings.HasPrefix(sum, "Sections: Field guide to the Larkspur office · Getting in · The kitchen · Quiet rooms.") {
		t.Fatalf("summary %q", sum)
	}
}

// Chromium sets a line in pieces placed by Td, a few hundredths of the
// font size apart where its glyph positions round or kern, so "118"
// is shown as "1" then "18". Those moves are not word gaps: the numbers
// and words read whole, and the spaces between words stay.
// testdata/kerning.pdf is testdata/kerning.html printed by Chromium 156
// (chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer
// --print-to-pdf=kerning.pdf kerning.html).
func TestExtractChromiumKerning(t *testing.T) {
	data, err := os.ReadFile("testdata/kerning.pdf")
	if err != nil {
		t.Fatal(err)
	}
	got, err := documents.Extract(t.Context(), data, "kerning.pdf", documents.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := "Timing report\n" +
		"The build took 118 seconds on the slow runner, and 1,024 files were checked in 17.5 minutes.\n" +
		"Version 2.0.11 shipped on 2024-11-28 with 111 fixes."
	if got.Text != want {
		t.Fatalf("Extract read\n%q\nwant\n%q", got.Text, want)
	}
}

// pdfcpu decodes object streams lazily, each under the per-stream
// limit; every one counts in the file's one decode budget as well, so
// many object streams, each well under the limit, cannot add up to
// more than it (here 24 of 1 MiB against 16 MiB), and a few small ones
// read as any file does.
func TestExtractPDFObjectStreamsInBudget(t *testing.T) {
	bombs := pdfmake.Make([]pdfmake.Page{{"boom"}}, pdfmake.Options{Flate: true, ObjectStreams: 24, ObjectStreamPadding: 1 << 20})
	if _, err := documents.Extract(t.Context(), bombs, "bombs.pdf", documents.Limits{}); !errors.Is(err, documents.ErrUnreadable) ||
		!strings.Contains(err.Error(), "decode to more than") {
		t.Fatalf("Extract of 24 MiB of object streams: %v, want ErrUnreadable past the budget", err)
	}
	few := pdfmake.Make([]pdfmake.Page{{"Packed fonts", "read well"}}, pdfmake.Options{Flate: true, ObjectStreams: 3, ObjectStreamPadding: 1 << 10})
	got, err := documents.Extract(t.Context(), few, "few.pdf", documents.Limits{})
	if err != nil || got.Text != "Packed fonts\nread well" {
		t.Fatalf("Extract of a PDF with small object streams: %q, %v", got.Text, err)
	}
}
