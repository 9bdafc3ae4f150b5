package ids_test

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trellis-ai/trellis/internal/ids"
)

func TestNewIsAUUIDv7(t *testing.T) {
	prev := ids.New()
	if u, err := uuid.Parse(prev); err != nil || u.Version() != 7 {
		t.Fatalf("New() = %q: not a UUIDv7 (%v)", prev, err)
	}
	for range 1000 {
		id := ids.New()
		if id <= prev {
			t.Fatalf("New() %s after %s: not increasing", id, prev)
		}
		prev = id
	}
}

func TestRandomFormat(t *testing.T) {
	id := ids.Random("req_", 8)
	if !regexp.MustCompile(`^req_[0-9a-f]{16}$`).MatchString(id) {
		t.Errorf("Random(req_, 8) = %q", id)
	}
	if id == ids.Random("req_", 8) {
		t.Error("two Random ids are equal")
	}
}

func TestSortableSortsInCreationOrder(t *testing.T) {
	format := regexp.MustCompile(`^[0-9a-f]{16}-[0-9a-f]{8}$`)
	at := time.Unix(1_700_000_000, 0)
	var got []string
	for range 100 { // the same instant over and over: still strictly increasing
		got = append(got, ids.Sortable(at))
	}
	got = append(got, ids.Sortable(at.Add(-time.Hour))) // a clock that went back
	for _, id := range got {
		if !format.MatchString(id) {
			t.Fatalf("Sortable id %q: want 16 hex digits, '-', 8 hex digits", id)
		}
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("Sortable ids are not strictly increasing: %v", got)
	}
	if got[0][17:] != got[len(got)-1][17:] {
		t.Error("the per-process suffix changed")
	}
}
