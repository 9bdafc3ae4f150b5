package store_test

import (
	"testing"

	"github.com/trellis-ai/trellis/store"
)

func TestValidText(t *testing.T) {
	for _, tc := range []struct {
		in, repaired string
		valid        bool
	}{
		{"", "", true},
		{"café ✓ 😀 \x01\t", "café ✓ 😀 \x01\t", true},
		{"\ufffd", "\ufffd", true},
		{"a\x00b", "a\ufffdb", false},
		{"\x00\x00", "\ufffd\ufffd", false},
		{"a\xffb", "a\ufffdb", false},
		{"caf\xc3", "caf\ufffd", false},
		{"\xed\xa0\x80", "\ufffd", false}, // a surrogate, encoded
	} {
		if got := store.ValidText(tc.in); got != tc.valid {
			t.Errorf("ValidText(%q) = %v, want %v", tc.in, got, tc.valid)
		}
		if got := store.ToValidText(tc.in); got != tc.repaired || !store.ValidText(got) {
			t.Errorf("ToValidText(%q) = %q, want %q", tc.in, got, tc.repaired)
		}
	}
}
