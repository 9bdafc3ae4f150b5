package ids

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"

	"github.com/google/uuid"
)

// New returns a fresh record id: a UUIDv7, unique across processes
// without coordination and, within a process, increasing, so ids made in
// one microsecond still sort in creation order.
func New() string {
	return uuid.Must(uuid.NewV7()).String()
}

// Random returns prefix followed by n random bytes in hex (2n digits),
// from crypto/rand: unguessable, fit to be all that identifies something.
func Random(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b)
}

// sortable is the state of Sortable: the last nanosecond handed out and
// this process's suffix, so that ids made by two processes in the same
// nanosecond still differ.
var sortable = struct {
	mu     sync.Mutex
	last   uint64
	suffix [8]byte
}{suffix: func() (s [8]byte) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	hex.Encode(s[:], b[:])
	return s
}()}

// Sortable returns an id for something made at t that sorts as a string
// after every id Sortable returned before in this process: 16 hex digits
// of t's Unix nanoseconds (moved on by one when t is not after the last
// id's), "-", and 8 hex digits fixed per process.
func Sortable(t time.Time) string {
	now := uint64(t.UnixNano())
	sortable.mu.Lock()
	if now <= sortable.last {
		now = sortable.last + 1
	}
	sortable.last = now
	sortable.mu.Unlock()
	var buf [25]byte
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], now)
	hex.Encode(buf[:16], n[:])
	buf[16] = '-'
	copy(buf[17:], sortable.suffix[:])
	return string(buf[:])
}
