package storeutil

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/store"
)

// Cursor is a position in a list ordered by (CreatedAt, ID) descending:
// the last row a page returned.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// cursorVersion prefixes every cursor, so the format can change and old
// cursors still be told apart.
const cursorVersion = "v1"

// Encode returns the cursor as an opaque, URL-safe string.
func (c Cursor) Encode() string {
	s := cursorVersion + "." + strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + "." + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// DecodeCursor parses what Encode made; "" gives ok false. Anything else
// is an error matching store.ErrInvalid.
func DecodeCursor(s string) (c Cursor, ok bool, err error) {
	if s == "" {
		return Cursor{}, false, nil
	}
	bad := fmt.Errorf("%w: cursor %q was not returned by a list", store.ErrInvalid, s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || !store.ValidText(string(raw)) {
		return Cursor{}, false, bad
	}
	parts := strings.SplitN(string(raw), ".", 3)
	if len(parts) != 3 || parts[0] != cursorVersion || parts[2] == "" {
		return Cursor{}, false, bad
	}
	micros, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return Cursor{}, false, bad
	}
	return Cursor{CreatedAt: time.UnixMicro(micros).UTC(), ID: parts[2]}, true, nil
}

// runCursorVersion prefixes every cursor of ListRuns, so that one of
// ListConversations is told apart.
const runCursorVersion = "r1"

// EncodeRunCursor returns the cursor after the run numbered num in its
// conversation (runs.num), as an opaque, URL-safe string. Runs are only
// ever added after the last, so the pages still to read do not shift.
func EncodeRunCursor(num int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(runCursorVersion + "." + strconv.FormatInt(num, 10)))
}

// DecodeRunCursor parses what EncodeRunCursor made; "" is 0, before the
// first run. Anything else is an error matching store.ErrInvalid.
func DecodeRunCursor(s string) (num int64, err error) {
	if s == "" {
		return 0, nil
	}
	bad := fmt.Errorf("%w: cursor %q was not returned by a list of runs", store.ErrInvalid, s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, bad
	}
	v, n, ok := strings.Cut(string(raw), ".")
	if !ok || v != runCursorVersion {
		return 0, bad
	}
	num, err = strconv.ParseInt(n, 10, 64)
	if err != nil || num < 1 {
		return 0, bad
	}
	return num, nil
}
