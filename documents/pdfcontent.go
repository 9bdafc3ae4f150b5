package documents

import (
	"strconv"
	"strings"
	"unicode/utf16"
)

// pdfContentText reads the text a page's content stream shows: the strings
// of Tj, TJ, ' and ", with a newline where the text moves to another line
// (T*, Td/TD with a vertical move, Tm to another y, ET) and a space where
// the text moves right by a word's gap (see textState.gap). Each string is
// read through the font Tf last selected (fonts, by resource name; q and Q
// save and restore it): through its ToUnicode CMap when it has one,
// composite fonts with Identity-H included (see pdfFont.text). A string in
// a font without one is decoded as UTF-16 when it carries its byte order
// mark and as WinAnsi otherwise: right for the standard fonts and most
// simple fonts.
func pdfContentText(content []byte, fonts map[string]*pdfFont) string {
	p := contentParser{src: content}
	var ts textState
	var saved []textState // q's stack
	var b strings.Builder
	var operands []operand
	lastY, lastX, lastA, haveY := 0.0, 0.0, 0.0, false
	nl := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		ts.lineStart()
	}
	space := func() {
		if s := b.String(); s != "" && !strings.HasSuffix(s, " ") && !strings.HasSuffix(s, "\n") {
			b.WriteByte(' ')
		}
	}
	show := func(s string) {
		b.WriteString(ts.font.text(s))
		ts.show(s)
	}
	num := func(i int) (float64, bool) {
		if i < 0 || i >= len(operands) || operands[i].kind != numKind {
			return 0, false
		}
		v, err := strconv.ParseFloat(operands[i].text, 64)
		return v, err == nil
	}
	for {
		tok, ok := p.next()
		if !ok {
			break
		}
		if tok.kind != opKind {
			operands = append(operands, tok)
			if len(operands) > 64 { // no operator takes more; a malformed stream
				operands = operands[len(operands)-64:]
			}
			continue
		}
		n := len(operands)
		switch tok.text {
		case "Tj":
			if s, ok := last(operands, strKind); ok {
				show(s.text)
			}
		case "'", "\"":
			nl()
			if s, ok := last(operands, strKind); ok {
				show(s.text)
			}
		case "TJ":
			if a, ok := last(operands, arrKind); ok {
				for _, el := range a.items {
					switch el.kind {
					case strKind:
						show(el.text)
					case numKind:
						// A number moves the next glyph left by
						// thousandths of the font size: a negative one
						// as wide as a word's gap parts words; a kern
						// inside a word is much smaller.
						if v, err := strconv.ParseFloat(el.text, 64); err == nil {
							if -v/1000 > wordGap {
								space()
							}
							ts.x -= v / 1000 * ts.size * ts.scale
						}
					}
				}
			}
		case "Tf":
			if n >= 2 && operands[n-2].kind == nameKind {
				ts.font = fonts[operands[n-2].text[1:]]
				ts.size, _ = num(n - 1)
			}
		case "Tc":
			ts.charSpace, _ = num(n - 1)
		case "Tw":
			ts.wordSpace, _ = num(n - 1)
		case "Tz":
			if v, ok := num(n - 1); ok {
				ts.scale = v / 100
			}
		case "q":
			if len(saved) < 64 {
				saved = append(saved, ts)
			}
		case "Q":
			if len(saved) > 0 {
				x, measured := ts.x, ts.measured
				ts, saved = saved[len(saved)-1], saved[:len(saved)-1]
				// Q restores the graphics state, not the text position.
				ts.x, ts.measured = x, measured
			}
		case "T*":
			nl()
		case "Td", "TD":
			tx, okx := num(n - 2)
			ty, oky := num(n - 1)
			switch {
			case oky && ty != 0:
				nl()
			case okx:
				if ts.gap(tx) {
					space()
				}
				ts.lineStart()
			}
		case "Tm":
			if n >= 6 {
				a, _ := num(n - 6)
				x, _ := num(n - 2)
				if y, ok := num(n - 1); ok {
					switch {
					case haveY && y != lastY:
						nl()
					case haveY && a == lastA && a != 0:
						// The same line, moved along in the same
						// text space: measured as Td's move is.
						if ts.gap((x - lastX) / a) {
							space()
						}
						ts.lineStart()
					case haveY:
						space()
						ts.lineStart()
					default:
						ts.lineStart()
					}
					lastY, lastX, lastA, haveY = y, x, a, true
				}
			}
		case "BT":
			haveY = false
			ts.lineStart()
		case "ET":
			nl()
		}
		operands = operands[:0]
	}
	return b.String()
}

// wordGap is the smallest move, as a fraction of the font size, that
// reads as a space between words. A space is a quarter of the size in
// most fonts (0.25 in Times, 0.28 in Helvetica); kerning and the rounding
// of glyph positions that printers such as Chromium's emit between the
// pieces of one word are a few hundredths.
const wordGap = 0.2

// textState is what the reader keeps of the text state: the font and
// its size, spacing and scale (Tf, Tc, Tw, Tz), and how far the text
// shown since the line's start moved (x, in unscaled text space units),
// measured while every string since then was in a font with widths.
type textState struct {
	font                       *pdfFont
	size, charSpace, wordSpace float64
	scale                      float64 // Tz / 100; 0 reads as 1
	x                          float64
	measured                   bool
}

// lineStart begins a line: Td, TD, T*, Tm and BT set the line's start
// where the text goes next.
func (t *textState) lineStart() {
	t.x, t.measured = 0, true
	if t.scale == 0 {
		t.scale = 1
	}
}

// show advances x past s, or marks the line unmeasured when the font
// does not say its widths.
func (t *textState) show(s string) {
	w, codes, spaces, ok := t.font.advance(s)
	if !ok {
		t.measured = false
		return
	}
	t.x += (w/1000*t.size + float64(codes)*t.charSpace + float64(spaces)*t.wordSpace) * t.scale
}

// gap reports whether a move of tx from the line's start to the next
// text leaves a word's gap after what the line showed: more than
// wordGap of the font size past its end. Unmeasured, any move right
// does, as it did before widths were read.
func (t *textState) gap(tx float64) bool {
	if !t.measured || t.size == 0 {
		return tx > 0
	}
	return tx-t.x > wordGap*t.size*t.scale
}

func last(ops []operand, kind tokKind) (operand, bool) {
	if len(ops) == 0 || ops[len(ops)-1].kind != kind {
		return operand{}, false
	}
	return ops[len(ops)-1], true
}

type tokKind int

const (
	opKind tokKind = iota
	numKind
	strKind
	nameKind
	arrKind
	otherKind
)

// operand is a token of a content stream: an operator, or an operand (a
// string's raw bytes in text, an array's elements in items).
type operand struct {
	kind  tokKind
	text  string
	items []operand
}

// contentParser tokenises a content stream. It never fails: what it cannot
// read it skips.
type contentParser struct {
	src []byte
	pos int
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isDelim(c byte) bool { return strings.IndexByte("()<>[]{}/%", c) >= 0 }

func (p *contentParser) next() (operand, bool) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case isSpace(c):
			p.pos++
		case c == '%':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
		case c == '(':
			return operand{kind: strKind, text: p.literal()}, true
		case c == '<' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '<':
			p.pos += 2
			return operand{kind: otherKind, text: "<<"}, true
		case c == '>' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '>':
			p.pos += 2
			return operand{kind: otherKind, text: ">>"}, true
		case c == '<':
			return operand{kind: strKind, text: p.hex()}, true
		case c == '[':
			p.pos++
			return p.array(0), true
		case c == '/':
			start := p.pos
			p.pos++
			for p.pos < len(p.src) && !isSpace(p.src[p.pos]) && !isDelim(p.src[p.pos]) {
				p.pos++
			}
			return operand{kind: nameKind, text: string(p.src[start:p.pos])}, true
		case isDelim(c): // a stray ), >, ], { or }
			p.pos++
		default:
			start := p.pos
			for p.pos < len(p.src) && !isSpace(p.src[p.pos]) && !isDelim(p.src[p.pos]) {
				p.pos++
			}
			word := string(p.src[start:p.pos])
			if c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9') {
				return operand{kind: numKind, text: word}, true
			}
			if word == "ID" {
				p.skipInlineImage()
				continue
			}
			return operand{kind: opKind, text: word}, true
		}
	}
	return operand{}, false
}

// array reads an array's elements up to its ]; nesting is bounded.
func (p *contentParser) array(depth int) operand {
	a := operand{kind: arrKind}
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if isSpace(c) {
			p.pos++
			continue
		}
		if c == ']' {
			p.pos++
			return a
		}
		if c == '[' {
			p.pos++
			if depth < 8 {
				a.items = append(a.items, p.array(depth+1))
			}
			continue
		}
		tok, ok := p.next()
		if !ok {
			break
		}
		if tok.kind == opKind { // an operator inside an array: malformed; stop here
			return a
		}
		if len(a.items) < 4096 {
			a.items = append(a.items, tok)
		}
	}
	return a
}

// literal reads a (string) with its escapes and balanced parentheses.
func (p *contentParser) literal() string {
	p.pos++ // (
	var b []byte
	depth := 1
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		p.pos++
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return string(b)
			}
		case '\\':
			if p.pos >= len(p.src) {
				return string(b)
			}
			e := p.src[p.pos]
			p.pos++
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if p.pos < len(p.src) && p.src[p.pos] == '\n' {
					p.pos++
				}
				continue
			case '\n':
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '7'; k++ {
						v = v*8 + int(p.src[p.pos]-'0')
						p.pos++
					}
					c = byte(v)
				} else {
					c = e
				}
			}
		}
		b = append(b, c)
	}
	return string(b)
}

// hex reads a <hex string>; an odd last digit counts as followed by 0.
func (p *contentParser) hex() string {
	p.pos++ // <
	var b []byte
	var hi byte
	half := false
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		p.pos++
		var v byte
		switch {
		case c == '>':
			if half {
				b = append(b, hi<<4)
			}
			return string(b)
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			continue
		}
		if half {
			b = append(b, hi<<4|v)
		} else {
			hi = v
		}
		half = !half
	}
	return string(b)
}

// skipInlineImage skips an inline image's data, after ID, to its EI.
func (p *contentParser) skipInlineImage() {
	for p.pos+2 < len(p.src) {
		if isSpace(p.src[p.pos]) && p.src[p.pos+1] == 'E' && p.src[p.pos+2] == 'I' &&
			(p.pos+3 == len(p.src) || isSpace(p.src[p.pos+3])) {
			p.pos += 3
			return
		}
		p.pos++
	}
	p.pos = len(p.src)
}

// winAnsiHigh maps WinAnsiEncoding's 0x80–0x9f to Unicode; the rest of
// its upper half is Latin-1.
var winAnsiHigh = [32]rune{
	0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0,
	0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
}

// decodePDFString turns a string's bytes into text: UTF-16BE after its
// byte order mark, WinAnsi otherwise.
func decodePDFString(s string) string {
	if len(s) >= 2 && s[0] == 0xfe && s[1] == 0xff {
		u := make([]uint16, 0, (len(s)-2)/2)
		for i := 2; i+1 < len(s); i += 2 {
			u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
		}
		return string(utf16.Decode(u))
	}
	return decodeWinAnsi(s)
}

// decodeWinAnsi reads a string's bytes as WinAnsiEncoding.
func decodeWinAnsi(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x80:
			b.WriteByte(c)
		case c < 0xa0:
			if r := winAnsiHigh[c-0x80]; r != 0 {
				b.WriteRune(r)
			}
		default:
			b.WriteRune(rune(c))
		}
	}
	return b.String()
}
