package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidText reports whether s is text every backend keeps as it is:
// valid UTF-8 without NUL characters. PostgreSQL's text refuses both,
// where SQLite would keep them, so the store refuses them on every
// backend alike: writing text that is not ValidText is ErrInvalid, and an
// id that is not ValidText names nothing, so a call naming one returns
// ErrNotFound without asking the database.
func ValidText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// ToValidText returns s with each NUL character and each byte sequence
// that is not UTF-8 replaced by U+FFFD, for text the service keeps
// rather than refuses: what a model or a tool wrote.
func ToValidText(s string) string {
	if ValidText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// checkText returns an ErrInvalid error naming the first field whose
// value is not ValidText; fields are name, value pairs.
func checkText(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if !ValidText(fields[i+1]) {
			return fmt.Errorf("%w: %s is not valid UTF-8 or holds a NUL character", ErrInvalid, fields[i])
		}
	}
	return nil
}

// validJSON reports whether b is valid JSON in valid UTF-8, which
// json.Valid does not check and PostgreSQL's json refuses. A NUL can only
// be escaped in valid JSON (\u0000), which json keeps as it is.
func validJSON(b []byte) bool {
	return utf8.Valid(b) && json.Valid(b)
}
