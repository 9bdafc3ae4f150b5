package storeutil

import (
	"fmt"
	"time"

	"github.com/trellis-ai/trellis/store"
)

// CheckIDs returns an error matching store.ErrNotFound when one of ids is
// not store.ValidText. No record has such an id, and PostgreSQL would
// refuse to look for it rather than find nothing, so every backend
// answers without asking its database.
func CheckIDs(ids ...string) error {
	for _, id := range ids {
		if !store.ValidText(id) {
			return fmt.Errorf("id %q is not valid UTF-8 or holds a NUL character: %w", id, store.ErrNotFound)
		}
	}
	return nil
}

// Now is the current time as the stores keep it: UTC, to the microsecond,
// which PostgreSQL stores exactly, so every backend returns what it was
// given.
func Now() time.Time {
	return time.Now().UTC().Truncate(time.Microsecond)
}
