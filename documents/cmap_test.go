package documents

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/internal/pdfmake"
)

func TestParseToUnicode(t *testing.T) {
	src := pdfmake.CMap(2, map[int]string{
		0x0003: " ",
		0x0100: "fi",         // a ligature: one code, two characters
		0x0101: "\U0001F600", // a surrogate pair
	}, []pdfmake.BFRange{
		{Lo: 0x0024, Hi: 0x003d, Dst: "A"},
		{Lo: 0x0200, Hi: 0x0202, Dsts: []string{"é", "ß", "中"}},
		{Lo: 0x1000, Hi: 0xffff, Dst: "\u4e00"}, // 61440 codes, mapped arithmetically
	})
	cm, err := parseToUnicode([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"\x00\x24\x00\x25\x00\x03\x00\x3d", "AB Z"},
		{"\x01\x00\x00\x2d\x00\x30\x00\x2d", "fiJMJ"},
		{"\x01\x01", "\U0001F600"},
		{"\x02\x00\x02\x01\x02\x02\x02\x03", "éß中"}, // 0x0203: past the array, not mapped
		{"\x10\x00\x10\x01", "\u4e00\u4e01"},
		{"\x00\x99", ""},      // not mapped: dropped
		{"\x00\x24\x00", "A"}, // an odd byte at the end: dropped
	} {
		if got := cm.decode(tc.in, 2, nil); got != tc.want {
			t.Errorf("decode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A range of every four-byte code costs what a range of two does.
	big, err := parseToUnicode([]byte("1 begincodespacerange <00000000> <FFFFFFFF> endcodespacerange 1 beginbfrange <00000000> <FFFFFFFF> <0041> endbfrange"))
	if err != nil {
		t.Fatal(err)
	}
	if got := big.decode("\x00\x00\x00\x01", 0, nil); got != "B" {
		t.Errorf("four-byte code: %q", got)
	}
	if got := big.decode("\x00\x20\x00\x00", 0, nil); got != "" { // past U+10FFFF: not mapped
		t.Errorf("a code past Unicode: %q", got)
	}
}

// Mixed code lengths: the codespace ranges cut the string.
func TestToUnicodeCodespace(t *testing.T) {
	cm, err := parseToUnicode([]byte(`2 begincodespacerange <00> <80> <8140> <9FFC> endcodespacerange
2 beginbfchar <41> <0061> <8140> <3000> endbfchar`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.decode("A\x81\x40A", 0, nil); got != "a\u3000a" {
		t.Fatalf("decode = %q", got)
	}
	// Without a codespacerange, codes are as long as the ones mapped.
	cm, err = parseToUnicode([]byte(`1 beginbfchar <0041> <0062> endbfchar`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.decode("\x00\x41", 0, nil); got != "b" {
		t.Fatalf("decode = %q", got)
	}
}

func TestParseToUnicodeMalformed(t *testing.T) {
	for name, src := range map[string]string{
		"empty":               "",
		"no mappings":         "1 begincodespacerange <0000> <FFFF> endcodespacerange",
		"bfchar cut short":    "1 beginbfchar <0001> endbfchar",
		"range backwards":     "1 beginbfrange <0010> <0001> <0041> endbfrange",
		"range lengths":       "1 beginbfrange <01> <0010> <0041> endbfrange",
		"range no dst":        "1 beginbfrange <0001> <0010> endbfrange",
		"range array bad":     "1 beginbfrange <0001> <0002> [<0041> 12] endbfrange",
		"range empty dst":     "1 beginbfrange <0001> <0002> <> endbfrange",
		"code too long":       "1 beginbfchar <0102030405> <0041> endbfchar",
		"codespace mismatch":  "1 begincodespacerange <00> <FFFF> endcodespacerange 1 beginbfchar <01> <0041> endbfchar",
		"too many entries":    "beginbfchar " + strings.Repeat("<01> <0041> ", maxCMapEntries+1) + "endbfchar",
		"garbage":             "\x00\xff((<<>>[[[ beginbfrange",
		"too many codespaces": "begincodespacerange " + strings.Repeat("<00> <FF> ", maxCodespaces+1) + "endcodespacerange 1 beginbfchar <01> <0041> endbfchar",
	} {
		if cm, err := parseToUnicode([]byte(src)); !errors.Is(err, errCMap) || cm != nil {
			t.Errorf("%s: %v, %v; want errCMap", name, cm, err)
		}
	}
}

// FuzzToUnicode: whatever the CMap, parsing answers a map or errCMap, and
// decoding through the map answers UTF-8, without panicking.
func FuzzToUnicode(f *testing.F) {
	f.Add([]byte(pdfmake.CMap(2, map[int]string{1: "fi", 2: "\U0001F600"}, []pdfmake.BFRange{{Lo: 3, Hi: 9, Dst: "a"}, {Lo: 16, Hi: 18, Dsts: []string{"x", "y"}}})), []byte("\x00\x01\x00\x05\x00\x11"))
	f.Add([]byte(pdfmake.CMap(1, map[int]string{0x41: "B"}, nil)), []byte("AAB"))
	f.Add([]byte("2 begincodespacerange <00> <80> <8140> <9FFC> endcodespacerange 1 beginbfrange <00000000> <FFFFFFFF> <D800DC00> endbfrange"), []byte("\x81\x40\xff"))
	f.Fuzz(func(t *testing.T, cmap, text []byte) {
		cm, err := parseToUnicode(cmap)
		if err != nil {
			if !errors.Is(err, errCMap) || cm != nil {
				t.Fatalf("%v, %v", cm, err)
			}
			return
		}
		for _, fixed := range []int{0, 2} {
			if got := cm.decode(string(text), fixed, decodeWinAnsi); !utf8.ValidString(got) {
				t.Fatalf("decode: %q", got)
			}
		}
	})
}
