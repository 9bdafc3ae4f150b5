package sqlstore

import (
	"errors"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// FuzzDecodeUsageCursor feeds the cursors of UsageDays, which clients
// send back as they like: a cursor is refused with ErrInvalid or holds
// only text both databases take, and its key encodes to a cursor that
// decodes the same.
func FuzzDecodeUsageCursor(f *testing.F) {
	f.Add(usageKey{Day: "2026-11-30", UserID: "bob", Model: "fast-1"}.encode())
	f.Add("")
	f.Add("WyJ1MSIsIjIwMjYtMTEtMzAiLCJib2JcdTAwMDAiLCJtIl0") // ["u1","2026-11-30","bob\u0000","m"]
	f.Fuzz(func(t *testing.T, s string) {
		k, err := decodeUsageCursor(s)
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("decodeUsageCursor(%q) = %v, want ErrInvalid", s, err)
			}
			return
		}
		if !store.ValidText(k.Day) || !store.ValidText(k.UserID) || !store.ValidText(k.Model) {
			t.Fatalf("decodeUsageCursor(%q) holds %+v", s, k)
		}
		if again, err := decodeUsageCursor(k.encode()); err != nil || again != k {
			t.Fatalf("decodeUsageCursor(%q) = %+v, again %+v, %v", s, k, again, err)
		}
	})
}
