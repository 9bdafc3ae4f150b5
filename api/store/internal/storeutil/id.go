package storeutil

import (
	"time"

	"github.com/google/uuid"
)

// NewID returns a fresh id: a UUIDv7, unique across processes without
// coordination and, within a process, increasing, so ids made in one
// microsecond still sort in creation order.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// Now is the current time as the stores keep it: UTC, to the microsecond,
// which PostgreSQL stores exactly, so every backend returns what it was
// given.
func Now() time.Time {
	return time.Now().UTC().Truncate(time.Microsecond)
}
