package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHeadAndTail(t *testing.T) {
	s := "añ€😀z" // 1, 2, 3, 4 and 1 bytes
	for _, tc := range []struct {
		n          int
		head, tail string
	}{
		{-1, "", ""},
		{0, "", ""},
		{1, "a", "z"},
		{2, "a", "z"},
		{3, "añ", "z"},
		{5, "añ", "😀z"},
		{6, "añ€", "😀z"},
		{8, "añ€", "€😀z"},
		{10, "añ€😀", "ñ€😀z"},
		{11, s, s},
		{99, s, s},
	} {
		if got := Head(s, tc.n); got != tc.head {
			t.Errorf("Head(%d) = %q, want %q", tc.n, got, tc.head)
		}
		if got := Tail(s, tc.n); got != tc.tail {
			t.Errorf("Tail(%d) = %q, want %q", tc.n, got, tc.tail)
		}
	}
}

// FuzzCut: whatever the text and budget, a cut of valid text is valid,
// within the budget, the text's own start or end, and no shorter than
// the budget less one character.
func FuzzCut(f *testing.F) {
	f.Add("añ€😀z", 5)
	f.Add("", 3)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if !utf8.ValidString(s) {
			return
		}
		for name, got := range map[string]string{"Head": Head(s, n), "Tail": Tail(s, n)} {
			if !utf8.ValidString(got) {
				t.Fatalf("%s(%q, %d) = %q: not valid UTF-8", name, s, n, got)
			}
			if len(s) > n && len(got) > max(n, 0) {
				t.Fatalf("%s(%q, %d) = %q: over the budget", name, s, n, got)
			}
			if len(got) < min(len(s), max(n, 0))-utf8.UTFMax+1 {
				t.Fatalf("%s(%q, %d) = %q: cut more than one character short", name, s, n, got)
			}
		}
		if h := Head(s, n); !strings.HasPrefix(s, h) {
			t.Fatalf("Head(%q, %d) = %q: not its start", s, n, h)
		}
		if tl := Tail(s, n); !strings.HasSuffix(s, tl) {
			t.Fatalf("Tail(%q, %d) = %q: not its end", s, n, tl)
		}
	})
}
