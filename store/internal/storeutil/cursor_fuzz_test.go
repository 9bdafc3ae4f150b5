package storeutil

import (
	"errors"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/store"
)

// FuzzDecodeCursor feeds the cursors of lists, which clients send back
// as they like: a cursor is refused with ErrInvalid or holds only text
// both databases take, and what it holds encodes to a cursor that
// decodes the same.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(Cursor{CreatedAt: time.Date(2026, 11, 3, 14, 5, 6, 123456000, time.UTC), ID: "0190a.b-c"}.Encode())
	f.Add(EncodeRunCursor(7))
	f.Add("")
	f.Add("djEuMS4A") // v1.1.NUL
	f.Fuzz(func(t *testing.T, s string) {
		c, ok, err := DecodeCursor(s)
		switch {
		case err != nil:
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("DecodeCursor(%q) = %v, want ErrInvalid", s, err)
			}
		case ok:
			if !store.ValidText(c.ID) {
				t.Fatalf("DecodeCursor(%q) holds id %q", s, c.ID)
			}
			again, ok, err := DecodeCursor(c.Encode())
			if err != nil || !ok || again != c {
				t.Fatalf("DecodeCursor(%q) = %+v, again %+v, %v, %v", s, c, again, ok, err)
			}
		}
		num, err := DecodeRunCursor(s)
		switch {
		case err != nil:
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("DecodeRunCursor(%q) = %v, want ErrInvalid", s, err)
			}
		case num < 0 || (num == 0) != (s == ""):
			t.Fatalf("DecodeRunCursor(%q) = %d", s, num)
		case num > 0:
			if again, err := DecodeRunCursor(EncodeRunCursor(num)); err != nil || again != num {
				t.Fatalf("DecodeRunCursor(%q) = %d, again %d, %v", s, num, again, err)
			}
		}
	})
}
