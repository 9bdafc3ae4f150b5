package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Conversation is a thread of runs belonging to one user. Its JSON is the
// item of GET /conversations.
type Conversation struct {
	ID        string    `json:"id"`
	UserID    string    `json:"-"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt moves when a run starts, ends or resumes.
	UpdatedAt time.Time `json:"updated_at"`
	// Status is the status of the conversation's latest run, or
	// StatusIdle when it has none.
	Status RunStatus `json:"status"`
	// TitleByUser: the user named the conversation (RenameConversation);
	// a generated title no longer replaces theirs.
	TitleByUser bool `json:"-"`
	// Metadata is a JSON object a client keeps with the conversation
	// (the LangGraph adapter's thread metadata); {} when none was set.
	// The native API does not show it.
	Metadata json.RawMessage `json:"-"`
	// Deleting: a delete of the conversation has begun (BeginDelete);
	// it takes nothing new.
	Deleting bool `json:"-"`
}

// StatusIdle is the Status of a conversation without runs.
const StatusIdle RunStatus = "idle"

// NewConversation is what CreateConversation needs.
type NewConversation struct {
	UserID string // required
	Title  string
	// ID, when set, is the new conversation's id instead of a minted
	// one: for clients that name their threads themselves (the client
	// protocols). CreateConversation returns ErrConflict when a
	// conversation of any user has it already. StartRun ignores it.
	ID string
	// Metadata is a JSON object, or empty for {}.
	Metadata json.RawMessage
}

// Validate reports an ErrInvalid error for a conversation that cannot be
// stored.
func (c NewConversation) Validate() error {
	if c.UserID == "" {
		return fmt.Errorf("%w: user id is required", ErrInvalid)
	}
	if err := CheckMetadata(c.Metadata); err != nil {
		return err
	}
	if len(c.ID) > MaxIDBytes {
		return fmt.Errorf("%w: id is longer than %d bytes", ErrInvalid, MaxIDBytes)
	}
	return checkText("user id", c.UserID, "title", c.Title, "id", c.ID)
}

// MaxIDBytes bounds an id that Trellis does not mint: a conversation's
// that a client chooses (the client protocols' threads and contexts),
// the user a key is issued to (NewKey) and the user a session signs in
// (NewSession, from an OpenID Connect claim). The ids Trellis mints are
// 36 bytes; PostgreSQL cannot index a key of a few kilobytes that does
// not compress, where SQLite would take it, so a longer id is refused on
// every backend alike.
const MaxIDBytes = 256

// MaxTitleRunes bounds a conversation's title, in characters.
const MaxTitleRunes = 200

// CheckTitle reports an ErrInvalid error for a title a user may not
// give a conversation: empty or only spaces, longer than MaxTitleRunes,
// not valid UTF-8 or holding a NUL or another control character.
func CheckTitle(title string) error {
	switch {
	case !ValidText(title):
		return fmt.Errorf("%w: the title is not valid UTF-8 or holds a NUL character", ErrInvalid)
	case strings.TrimSpace(title) == "":
		return fmt.Errorf("%w: the title is empty", ErrInvalid)
	case utf8.RuneCountInString(title) > MaxTitleRunes:
		return fmt.Errorf("%w: the title is longer than %d characters", ErrInvalid, MaxTitleRunes)
	case strings.ContainsFunc(title, unicode.IsControl):
		return fmt.Errorf("%w: the title holds a control character (a line break, a tab)", ErrInvalid)
	}
	return nil
}

// CheckMetadata reports an ErrInvalid error for conversation metadata
// that is neither empty nor a JSON object.
func CheckMetadata(m json.RawMessage) error {
	if len(m) == 0 {
		return nil
	}
	if !validJSON(m) || bytes.TrimSpace(m)[0] != '{' {
		return fmt.Errorf("%w: metadata must be a JSON object", ErrInvalid)
	}
	return nil
}

// Page selects a page of a list.
type Page struct {
	// Limit is the most items returned; 0 means DefaultLimit, and more
	// than MaxLimit means MaxLimit. Negative is ErrInvalid.
	Limit int
	// Cursor is the NextCursor of the previous page; "" starts at the
	// beginning.
	Cursor string
}

// Limits of Page.Limit.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// PageBytes bounds every page a list or read returns by the size of the
// text and JSON it holds, as its limit bounds it by count: a page stops
// early, with the usual next cursor, once its items reach PageBytes; it
// always holds at least one item, however large. So a reader holds at
// most PageBytes plus one item in memory, whatever the rows it pages
// through.
const PageBytes = 1 << 20

// Budget is what a page being filled has left of PageBytes: the one
// place that decides whether an item still goes in. The zero Budget is
// an empty page.
type Budget struct {
	used, items int
}

// Take counts an item of size bytes into the page and reports true, or
// reports false and counts nothing when the item would take the page
// past PageBytes. The first item always goes in, however large, so that
// a reader paging on always makes progress.
func (b *Budget) Take(size int) bool {
	if b.items > 0 && b.used+size > PageBytes {
		return false
	}
	b.used += size
	b.items++
	return true
}

// Size returns the number of items the page holds at most, or an
// ErrInvalid error.
func (p Page) Size() (int, error) { return size(p.Limit, DefaultLimit, MaxLimit) }

// size returns limit, def for 0, at most most; a negative limit is an
// ErrInvalid error.
func size(limit, def, most int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("%w: limit %d is negative", ErrInvalid, limit)
	case limit == 0:
		return def, nil
	case limit > most:
		return most, nil
	}
	return limit, nil
}

// ConversationPage is one page of ListConversations.
type ConversationPage struct {
	Conversations []Conversation `json:"conversations"`
	// NextCursor fetches the next page; "" when this page is the last.
	NextCursor string `json:"next_cursor,omitempty"`
}
