package pdfmake

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
)

// Page is one page: its lines of text, top to bottom.
type Page []string

// Options shape the file.
type Options struct {
	// Flate compresses the content streams.
	Flate bool
	// Padding adds that many bytes of spaces to every page's content
	// stream before compressing (with Flate, a bomb).
	Padding int
}

// Make returns a PDF of the pages.
func Make(pages []Page, opt Options) []byte {
	var objs []string // objs[i] is object i+1
	add := func(s string) int { objs = append(objs, s); return len(objs) }
	add("") // 1: catalog, filled below
	add("") // 2: pages, filled below
	font := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	var kids []string
	for _, p := range pages {
		var c strings.Builder
		c.WriteString("BT\n/F1 12 Tf\n14 TL\n72 740 Td\n")
		for i, line := range p {
			if i > 0 {
				c.WriteString("T*\n")
			}
			fmt.Fprintf(&c, "(%s) Tj\n", escape(line))
		}
		c.WriteString("ET\n")
		if opt.Padding > 0 {
			c.WriteString(strings.Repeat(" ", opt.Padding))
		}
		stream, dict := []byte(c.String()), ""
		if opt.Flate {
			var z bytes.Buffer
			w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
			w.Write(stream)
			w.Close()
			stream, dict = z.Bytes(), " /Filter /FlateDecode"
		}
		content := add(fmt.Sprintf("<< /Length %d%s >>\nstream\n%s\nendstream", len(stream), dict, stream))
		page := add(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>", font, content))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	objs[0] = "<< /Type /Catalog /Pages 2 0 R >>"
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids))

	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// escape writes s as the inside of a PDF literal string, in WinAnsi
// (Latin-1 for what it shares with Unicode; other runes become '?').
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		case r < 0x80:
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, "\\%03o", r)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}
