package pdfmake

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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
	// Font, when not nil, is the font the lines are shown in, in place
	// of Helvetica.
	Font *Font
	// ObjectStreams, when above 0, adds that many fonts to every page's
	// resources (F2, F3 …), each packed in an object stream of its own
	// that ObjectStreamPadding spaces lengthen once decoded (with Flate,
	// many small bombs); the cross-reference is then a stream (PDF 1.5),
	// as packed objects need.
	ObjectStreams, ObjectStreamPadding int
}

// Font is a font with codes of its own, for reading text through a
// ToUnicode CMap.
type Font struct {
	// Composite makes a Type0 font with Identity-H encoding over a
	// CIDFontType2 descendant: two-byte codes. Otherwise the font is a
	// simple Type1 (Helvetica, WinAnsi) with one-byte codes.
	Composite bool
	// Codes gives each piece of text its code: lines are cut into the
	// longest pieces Codes has, and shown as hex strings of their codes;
	// a character with no code is code 0.
	Codes map[string]int
	// ToUnicode is the text of the font's ToUnicode CMap stream, written
	// as it is (malformed, if a test wants); empty for none. CMap builds
	// one.
	ToUnicode string
}

// BFRange is a bfrange of a CMap: codes Lo..Hi map either to Dst with its
// last character advanced by the code's distance from Lo, or, when Dsts
// is not nil (the array form), code Lo+i to Dsts[i].
type BFRange struct {
	Lo, Hi int
	Dst    string
	Dsts   []string
}

// CMap returns a ToUnicode CMap of codes of width bytes (1 or 2): its
// codespace range, then chars as bfchar entries (in order of code) and
// ranges as bfrange entries. Destinations are written in UTF-16BE, so
// characters past U+FFFF become surrogate pairs.
func CMap(width int, chars map[int]string, ranges []BFRange) string {
	code := func(c int) string { return fmt.Sprintf("<%0*X>", 2*width, c) }
	var b strings.Builder
	b.WriteString("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n")
	b.WriteString("/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n")
	b.WriteString("/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n")
	fmt.Fprintf(&b, "1 begincodespacerange\n%s %s\nendcodespacerange\n", code(0), code(1<<(8*width)-1))
	if len(chars) > 0 {
		keys := make([]int, 0, len(chars))
		for k := range chars {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		fmt.Fprintf(&b, "%d beginbfchar\n", len(keys))
		for _, k := range keys {
			fmt.Fprintf(&b, "%s %s\n", code(k), utf16Hex(chars[k]))
		}
		b.WriteString("endbfchar\n")
	}
	if len(ranges) > 0 {
		fmt.Fprintf(&b, "%d beginbfrange\n", len(ranges))
		for _, r := range ranges {
			if r.Dsts != nil {
				hex := make([]string, len(r.Dsts))
				for i, d := range r.Dsts {
					hex[i] = utf16Hex(d)
				}
				fmt.Fprintf(&b, "%s %s [%s]\n", code(r.Lo), code(r.Hi), strings.Join(hex, " "))
			} else {
				fmt.Fprintf(&b, "%s %s %s\n", code(r.Lo), code(r.Hi), utf16Hex(r.Dst))
			}
		}
		b.WriteString("endbfrange\n")
	}
	b.WriteString("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n")
	return b.String()
}

// utf16Hex writes s as a hex string of its UTF-16BE code units.
func utf16Hex(s string) string {
	var b strings.Builder
	b.WriteByte('<')
	for _, u := range utf16.Encode([]rune(s)) {
		fmt.Fprintf(&b, "%04X", u)
	}
	b.WriteByte('>')
	return b.String()
}

// show writes line as a hex string of its codes in f.
func (f *Font) show(line string) string {
	width := 1
	if f.Composite {
		width = 2
	}
	longest := 0
	for k := range f.Codes {
		longest = max(longest, len(k))
	}
	var b strings.Builder
	b.WriteByte('<')
	for len(line) > 0 {
		n, c := 0, 0
		for l := min(longest, len(line)); l > 0; l-- {
			if v, ok := f.Codes[line[:l]]; ok {
				n, c = l, v
				break
			}
		}
		if n == 0 { // no code: one character as code 0
			_, n = utf8.DecodeRuneInString(line)
		}
		fmt.Fprintf(&b, "%0*X", 2*width, c)
		line = line[n:]
	}
	b.WriteByte('>')
	return b.String()
}

// Make returns a PDF of the pages.
func Make(pages []Page, opt Options) []byte {
	var objs []string // objs[i] is object i+1
	add := func(s string) int { objs = append(objs, s); return len(objs) }
	add("") // 1: catalog, filled below
	add("") // 2: pages, filled below
	compress := func(stream []byte) ([]byte, string) {
		if !opt.Flate {
			return stream, ""
		}
		var z bytes.Buffer
		w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
		w.Write(stream)
		w.Close()
		return z.Bytes(), " /Filter /FlateDecode"
	}
	font := 0
	if f := opt.Font; f != nil {
		tu := ""
		if f.ToUnicode != "" {
			stream, dict := compress([]byte(f.ToUnicode))
			tu = fmt.Sprintf(" /ToUnicode %d 0 R", add(fmt.Sprintf("<< /Length %d%s >>\nstream\n%s\nendstream", len(stream), dict, stream)))
		}
		if f.Composite {
			desc := add("<< /Type /FontDescriptor /FontName /TestCID /Flags 4 /FontBBox [0 -200 1000 800] /ItalicAngle 0 /Ascent 800 /Descent -200 /CapHeight 700 /StemV 80 >>")
			cid := add(fmt.Sprintf("<< /Type /Font /Subtype /CIDFontType2 /BaseFont /TestCID /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor %d 0 R /DW 500 /CIDToGIDMap /Identity >>", desc))
			font = add(fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /TestCID /Encoding /Identity-H /DescendantFonts [%d 0 R]%s >>", cid, tu))
		} else {
			font = add(fmt.Sprintf("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding%s >>", tu))
		}
	} else {
		font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	}
	packed := map[int]int{} // object number → the object stream holding it
	var extraFonts strings.Builder
	for i := range opt.ObjectStreams {
		f := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
		prolog := fmt.Sprintf("%d 0\n", f)
		stream, dict := compress([]byte(prolog + objs[f-1] + "\n" + strings.Repeat(" ", opt.ObjectStreamPadding)))
		packed[f] = add(fmt.Sprintf("<< /Type /ObjStm /N 1 /First %d /Length %d%s >>\nstream\n%s\nendstream", len(prolog), len(stream), dict, stream))
		fmt.Fprintf(&extraFonts, " /F%d %d 0 R", i+2, f)
	}
	var kids []string
	for _, p := range pages {
		var c strings.Builder
		c.WriteString("BT\n/F1 12 Tf\n14 TL\n72 740 Td\n")
		for i, line := range p {
			if i > 0 {
				c.WriteString("T*\n")
			}
			if opt.Font != nil {
				fmt.Fprintf(&c, "%s Tj\n", opt.Font.show(line))
			} else {
				fmt.Fprintf(&c, "(%s) Tj\n", escape(line))
			}
		}
		c.WriteString("ET\n")
		if opt.Padding > 0 {
			c.WriteString(strings.Repeat(" ", opt.Padding))
		}
		stream, dict := compress([]byte(c.String()))
		content := add(fmt.Sprintf("<< /Length %d%s >>\nstream\n%s\nendstream", len(stream), dict, stream))
		page := add(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R%s >> >> /Contents %d 0 R >>", font, extraFonts.String(), content))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	objs[0] = "<< /Type /Catalog /Pages 2 0 R >>"
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids))

	var b bytes.Buffer
	if len(packed) > 0 {
		b.WriteString("%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
	} else {
		b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	}
	offsets := make([]int, len(objs))
	for i, o := range objs {
		if _, ok := packed[i+1]; ok {
			continue
		}
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	if len(packed) > 0 {
		// A cross-reference stream: entries of a type byte, a 4-byte
		// offset or object stream number, and a 2-byte generation or
		// index; the stream itself is the last object.
		var x bytes.Buffer
		entry := func(typ byte, field, index int) {
			x.Write([]byte{typ, byte(field >> 24), byte(field >> 16), byte(field >> 8), byte(field), byte(index >> 8), byte(index)})
		}
		entry(0, 0, 65535)
		for i := range objs {
			if os, ok := packed[i+1]; ok {
				entry(2, os, 0)
			} else {
				entry(1, offsets[i], 0)
			}
		}
		entry(1, xref, 0)
		fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XRef /Size %d /Root 1 0 R /W [1 4 2] /Length %d >>\nstream\n", len(objs)+1, len(objs)+2, x.Len())
		b.Write(x.Bytes())
		fmt.Fprintf(&b, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", xref)
		return b.Bytes()
	}
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
