package documents

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Bounds of a ToUnicode CMap, beyond the decode budget its stream is read
// under: how many entries it may hold (bfchar pairs, bfranges, elements of
// bfranges' arrays, codespace ranges, all together), and how long one
// destination may be (the PDF reference allows 512 bytes: 256 UTF-16 code
// units, room for any ligature), and how many codespace ranges it may
// have (every code is checked against them; real CMaps have a handful).
const (
	maxCMapEntries = 1 << 17
	maxCMapDst     = 512
	maxCodespaces  = 256
)

// errCMap is what parseToUnicode answers for a CMap it cannot use.
var errCMap = errors.New("malformed ToUnicode CMap")

// toUnicode is a parsed ToUnicode CMap: how a string's bytes cut into codes
// (codespace ranges), and what text each code stands for (bfchar entries in
// a map, bfranges kept as ranges and mapped arithmetically, so a range of
// millions of codes costs what a range of two does).
type toUnicode struct {
	spaces []codespace
	chars  map[uint64]string // codeKey → text
	ranges []cmapRange       // sorted by lo
	maxHi  []uint64          // maxHi[i]: the greatest hi of ranges[:i+1]
}

// codespace is a codespacerange: codes of n bytes whose every byte lies
// between lo's and hi's.
type codespace struct {
	n      int
	lo, hi [4]byte
}

// cmapRange is a bfrange over codeKeys lo..hi: either every code maps to
// base with its last character advanced by the code's distance from lo,
// or (the array form) code lo+i maps to dsts[i].
type cmapRange struct {
	lo, hi uint64
	base   []rune
	dsts   []string
}

// codeKey folds a code and its length in bytes into one key, so that <41>
// and <0041> are different codes.
func codeKey(code uint32, n int) uint64 { return uint64(n)<<32 | uint64(code) }

// parseToUnicode reads a ToUnicode CMap: its codespacerange, bfchar and
// bfrange sections; everything else in it (the PostScript around them,
// usecmap) is skipped. Destinations are UTF-16BE hex strings, surrogate
// pairs and several characters (ligatures) included. A CMap that maps no
// code, holds more than maxCMapEntries entries or whose sections do not
// read as such is errCMap: the caller does not use it.
func parseToUnicode(data []byte) (*toUnicode, error) {
	p := contentParser{src: data}
	cm := &toUnicode{chars: map[uint64]string{}}
	entries := 0
	var lens [5]bool // the lengths of the codes mapped
	count := func(n int) error {
		if entries += n; entries > maxCMapEntries {
			return fmt.Errorf("%w: more than %d entries", errCMap, maxCMapEntries)
		}
		return nil
	}
	for {
		tok, ok := p.next()
		if !ok {
			break
		}
		if tok.kind != opKind {
			continue
		}
		switch tok.text {
		case "begincodespacerange":
			for {
				lo, ok := cmapCode(&p)
				if !ok {
					break
				}
				hi, ok2 := cmapCode(&p)
				if !ok2 || len(lo) != len(hi) || len(lo) == 0 || len(lo) > 4 {
					return nil, fmt.Errorf("%w: a codespace range of %q and %q", errCMap, lo, hi)
				}
				if err := count(1); err != nil {
					return nil, err
				}
				if len(cm.spaces) == maxCodespaces {
					return nil, fmt.Errorf("%w: more than %d codespace ranges", errCMap, maxCodespaces)
				}
				cs := codespace{n: len(lo)}
				copy(cs.lo[:], lo)
				copy(cs.hi[:], hi)
				cm.spaces = append(cm.spaces, cs)
			}
		case "beginbfchar":
			for {
				src, ok := cmapCode(&p)
				if !ok {
					break
				}
				dst, ok := p.next()
				if !ok || (dst.kind != strKind && dst.kind != nameKind) {
					return nil, fmt.Errorf("%w: bfchar without a destination", errCMap)
				}
				if len(src) == 0 || len(src) > 4 || len(dst.text) > maxCMapDst {
					return nil, fmt.Errorf("%w: bfchar %q", errCMap, src)
				}
				if err := count(1); err != nil {
					return nil, err
				}
				lens[len(src)] = true
				if dst.kind == nameKind {
					continue // a glyph name, not text: the code stays unmapped
				}
				code, n := codeOf(src)
				cm.chars[codeKey(code, n)] = utf16BE(dst.text)
			}
		case "beginbfrange":
			for {
				lo, ok := cmapCode(&p)
				if !ok {
					break
				}
				hi, ok2 := cmapCode(&p)
				dst, ok3 := p.next()
				if !ok2 || !ok3 || len(lo) == 0 || len(lo) > 4 || len(lo) != len(hi) {
					return nil, fmt.Errorf("%w: bfrange %q %q", errCMap, lo, hi)
				}
				clo, n := codeOf(lo)
				chi, _ := codeOf(hi)
				if chi < clo {
					return nil, fmt.Errorf("%w: bfrange %q %q runs backwards", errCMap, lo, hi)
				}
				if err := count(1); err != nil {
					return nil, err
				}
				lens[n] = true
				r := cmapRange{lo: codeKey(clo, n), hi: codeKey(chi, n)}
				switch dst.kind {
				case strKind:
					if len(dst.text) == 0 || len(dst.text) > maxCMapDst {
						return nil, fmt.Errorf("%w: bfrange %q %q to %q", errCMap, lo, hi, dst.text)
					}
					r.base = []rune(utf16BE(dst.text))
					if len(r.base) == 0 {
						return nil, fmt.Errorf("%w: bfrange %q %q to %q", errCMap, lo, hi, dst.text)
					}
				case arrKind:
					// One destination per code; codes past the array's end
					// are not mapped, elements past the range's are dropped.
					items := dst.items
					if span := uint64(chi) - uint64(clo) + 1; uint64(len(items)) > span {
						items = items[:span]
					}
					if err := count(len(items)); err != nil {
						return nil, err
					}
					for _, it := range items {
						if it.kind != strKind || len(it.text) > maxCMapDst {
							return nil, fmt.Errorf("%w: bfrange %q %q: an element that is not a string", errCMap, lo, hi)
						}
						r.dsts = append(r.dsts, utf16BE(it.text))
					}
					if len(r.dsts) == 0 {
						continue
					}
					r.hi = r.lo + uint64(len(r.dsts)) - 1
				default:
					return nil, fmt.Errorf("%w: bfrange %q %q without a destination", errCMap, lo, hi)
				}
				cm.ranges = append(cm.ranges, r)
			}
		}
	}
	if len(cm.chars) == 0 && len(cm.ranges) == 0 {
		return nil, fmt.Errorf("%w: it maps no code", errCMap)
	}
	if len(cm.spaces) == 0 {
		// No codespacerange: the codes are as long as those mapped.
		for n := 1; n <= 4; n++ {
			if lens[n] {
				cm.spaces = append(cm.spaces, codespace{n: n, hi: [4]byte{0xff, 0xff, 0xff, 0xff}})
			}
		}
	}
	sort.SliceStable(cm.ranges, func(i, j int) bool { return cm.ranges[i].lo < cm.ranges[j].lo })
	cm.maxHi = make([]uint64, len(cm.ranges))
	for i, r := range cm.ranges {
		cm.maxHi[i] = r.hi
		if i > 0 && cm.maxHi[i-1] > r.hi {
			cm.maxHi[i] = cm.maxHi[i-1]
		}
	}
	return cm, nil
}

// cmapCode reads the next <hex> code of a section; it answers false at the
// section's end operator, the stream's end, or anything else that is not
// a string, which ends the section as well.
func cmapCode(p *contentParser) (string, bool) {
	tok, ok := p.next()
	if !ok || tok.kind != strKind {
		return "", false
	}
	return tok.text, true
}

// codeOf reads 1 to 4 bytes as a big-endian code.
func codeOf(s string) (uint32, int) {
	var c uint32
	for i := 0; i < len(s); i++ {
		c = c<<8 | uint32(s[i])
	}
	return c, len(s)
}

// utf16BE decodes a destination: UTF-16BE, surrogate pairs joined; an odd
// last byte and unpaired surrogates become U+FFFD.
func utf16BE(s string) string {
	u := make([]uint16, 0, len(s)/2)
	for i := 0; i+1 < len(s); i += 2 {
		u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
	}
	out := string(utf16.Decode(u))
	if len(s)%2 == 1 {
		out += "\uFFFD"
	}
	return out
}

// codeLen answers how many bytes of s the next code takes: the length of
// the first codespace range (shortest first) its first bytes fall in;
// when none does, the shortest range's length (or fixed, if the font
// says), and false: the code is not a code of this CMap.
func (cm *toUnicode) codeLen(s string) (int, bool) {
	short := 0
	for n := 1; n <= 4 && n <= len(s); n++ {
		for _, cs := range cm.spaces {
			if cs.n != n {
				continue
			}
			if short == 0 || n < short {
				short = n
			}
			in := true
			for i := 0; i < n; i++ {
				if s[i] < cs.lo[i] || s[i] > cs.hi[i] {
					in = false
					break
				}
			}
			if in {
				return n, true
			}
		}
	}
	if short == 0 {
		for _, cs := range cm.spaces {
			if short == 0 || cs.n < short {
				short = cs.n
			}
		}
	}
	if short == 0 {
		short = 1
	}
	return min(short, len(s)), false
}

// lookup answers what code (of n bytes) stands for, and whether the CMap
// maps it: its bfchar entry, else the bfrange with the greatest start
// that holds it.
func (cm *toUnicode) lookup(code uint32, n int) (string, bool) {
	k := codeKey(code, n)
	if s, ok := cm.chars[k]; ok {
		return s, true
	}
	i := sort.Search(len(cm.ranges), func(i int) bool { return cm.ranges[i].lo > k }) - 1
	// Walk back over ranges that may still hold k; overlapping ranges
	// are rare, and the walk is bounded so a hostile CMap cannot make
	// every code cost its whole length.
	for steps := 0; i >= 0 && cm.maxHi[i] >= k && steps < 64; i, steps = i-1, steps+1 {
		r := cm.ranges[i]
		if k > r.hi {
			continue
		}
		off := k - r.lo
		if r.dsts != nil {
			return r.dsts[off], true
		}
		last := uint64(r.base[len(r.base)-1]) + off
		if last > utf8.MaxRune || (last >= 0xd800 && last <= 0xdfff) {
			return "", false
		}
		var b strings.Builder
		for _, c := range r.base[:len(r.base)-1] {
			b.WriteRune(c)
		}
		b.WriteRune(rune(last))
		return b.String(), true
	}
	return "", false
}

// decode turns a shown string's bytes into text, code by code. fixed, when
// not zero, is the code length the font's encoding fixes (2 for
// Identity-H); otherwise the codespace ranges tell. A code the CMap does
// not map is dropped (through notMapped, when not nil, as the font's own
// encoding would read it): it stands for a glyph with no text known, and
// guessing would present garbage as text.
func (cm *toUnicode) decode(s string, fixed int, notMapped func(string) string) string {
	var b strings.Builder
	for len(s) > 0 {
		n, ok := fixed, true
		if n == 0 {
			n, ok = cm.codeLen(s)
		}
		n = min(n, len(s))
		code, _ := codeOf(s[:n])
		if ok {
			if t, found := cm.lookup(code, n); found {
				b.WriteString(t)
				s = s[n:]
				continue
			}
		}
		if notMapped != nil {
			b.WriteString(notMapped(s[:n]))
		}
		s = s[n:]
	}
	return b.String()
}
