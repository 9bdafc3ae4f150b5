package documents

import (
	"strconv"
	"strings"
	"unicode/utf16"
)

// pdfContentText reads the text a page's content stream shows: the strings
// of Tj, TJ, ' and ", with a newline where the text moves to another line
// (T*, Td/TD with a vertical move, Tm to another y, ET) and a space where
// TJ kerns a word apart. Each string is read through the font Tf last
// selected (fonts, by resource name; q and Q save and restore it): through
// its ToUnicode CMap when it has one, composite fonts with Identity-H
// included (see pdfFont.text). A string in a font without one is decoded
// as UTF-16 when it carries its byte order mark and as WinAnsi otherwise:
// right for the standard fonts and most simple fonts.
func pdfContentText(content []byte, fonts map[string]*pdfFont) string {
	p := contentParser{src: content}
	var font *pdfFont
	var saved []*pdfFont // q's stack of fonts
	var b strings.Builder
	var operands []operand
	lastY, haveY := 0.0, false
	nl := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
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
		switch tok.text {
		case "Tj":
			if s, ok := last(operands, strKind); ok {
				b.WriteString(font.text(s.text))
			}
		case "'":
			nl()
			if s, ok := last(operands, strKind); ok {
				b.WriteString(font.text(s.text))
			}
		case "\"":
			nl()
			if s, ok := last(operands, strKind); ok {
				b.WriteString(font.text(s.text))
			}
		case "TJ":
			if a, ok := last(operands, arrKind); ok {
				for _, el := range a.items {
					switch el.kind {
					case strKind:
						b.WriteString(font.text(el.text))
					case numKind:
						if v, err := strconv.ParseFloat(el.text, 64); err == nil && v < -200 {
							b.WriteByte(' ')
						}
					}
				}
			}
		case "Tf":
			if len(operands) >= 2 && operands[len(operands)-2].kind == nameKind {
				font = fonts[operands[len(operands)-2].text[1:]]
			}
		case "q":
			if len(saved) < 64 {
				saved = append(saved, font)
			}
		case "Q":
			if len(saved) > 0 {
				font, saved = saved[len(saved)-1], saved[:len(saved)-1]
			}
		case "T*":
			nl()
		case "Td", "TD":
			if len(operands) >= 2 {
				if ty, err := strconv.ParseFloat(operands[len(operands)-1].text, 64); err == nil && ty != 0 {
					nl()
				} else if tx, err := strconv.ParseFloat(operands[len(operands)-2].text, 64); err == nil && tx > 0 {
					b.WriteByte(' ')
				}
			}
		case "Tm":
			if len(operands) >= 6 {
				if y, err := strconv.ParseFloat(operands[len(operands)-1].text, 64); err == nil {
					if haveY && y != lastY {
						nl()
					} else if haveY {
						b.WriteByte(' ')
					}
					lastY, haveY = y, true
				}
			}
		case "BT":
			haveY = false
		case "ET":
			nl()
		}
		operands = operands[:0]
	}
	return b.String()
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
