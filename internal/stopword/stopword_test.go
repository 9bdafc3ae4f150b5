package stopword_test

import (
	"testing"

	"github.com/trellis-ai/trellis/internal/stopword"
)

func TestIs(t *testing.T) {
	for _, tc := range []struct {
		word string
		want bool
	}{
		{"the", true},
		{"what", true},
		{"yourselves", true},
		{"postgres", false},
		{"The", false}, // callers lower-case first
		{"", false},
	} {
		if got := stopword.Is(tc.word); got != tc.want {
			t.Errorf("Is(%q) = %v, want %v", tc.word, got, tc.want)
		}
	}
}
