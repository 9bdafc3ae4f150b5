package documents

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Storage keeps the bytes of uploaded files under string keys (see Key).
// Implementations are safe for concurrent use and pass
// storagetest.Run. Objects are small (the upload limit, 1 MB by default),
// so they travel whole as byte slices.
type Storage interface {
	// Put stores data under key, replacing what was there. A reader sees
	// either the old object or the new one, never a part. data must not
	// be empty (ErrEmptyObject): an empty upload is refused before it is
	// stored, and S3-compatible servers differ on empty bodies.
	Put(ctx context.Context, key string, data []byte) error

	// Get returns the object stored under key. Returns an error matching
	// ErrNotExist when there is none.
	Get(ctx context.Context, key string) ([]byte, error)

	// Delete removes the object under key; deleting a missing object is
	// not an error.
	Delete(ctx context.Context, key string) error

	// List returns the keys that begin with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Sentinel errors of storage; match them with errors.Is.
var (
	// ErrNotExist: no object is stored under the key.
	ErrNotExist = errors.New("documents: no such object")
	// ErrDecrypt: an encrypted object could not be opened: the key is
	// not the one it was sealed with, or the object was changed since.
	ErrDecrypt = errors.New("documents: cannot decrypt the object: wrong key or tampered data")
	// ErrBadKey: a key or key part that Storage cannot hold.
	ErrBadKey = errors.New("documents: invalid object key")
	// ErrEmptyObject: Put was given no bytes.
	ErrEmptyObject = errors.New("documents: empty object")
)

// Key names one object of a document: the user's, in the conversation,
// of the document, with a name ("original" for the uploaded bytes). Its
// String is the object key: user/{user}/conversation/{conversation}/
// document/{document}/{name}, each part path-escaped.
type Key struct {
	User, Conversation, Document, Name string
}

// Original is the Name of a document's uploaded bytes.
const Original = "original"

// String returns the object key, or "" when a part is empty or is "." or
// ".." (which no id is; Storage refuses "" with ErrBadKey).
func (k Key) String() string {
	parts := []string{k.User, k.Conversation, k.Document, k.Name}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return ""
		}
	}
	return "user/" + url.PathEscape(k.User) + "/conversation/" + url.PathEscape(k.Conversation) +
		"/document/" + url.PathEscape(k.Document) + "/" + url.PathEscape(k.Name)
}

// UserPrefix is the prefix of every object of the user's, for erasing
// the user.
func UserPrefix(user string) (string, error) {
	if user == "" || user == "." || user == ".." {
		return "", fmt.Errorf("%w: empty or dot user", ErrBadKey)
	}
	return "user/" + url.PathEscape(user) + "/", nil
}

// ConversationPrefix is the prefix of every object of the user's
// conversation, for List and for deleting a conversation's files.
func ConversationPrefix(user, conversation string) (string, error) {
	p, err := UserPrefix(user)
	if err != nil {
		return "", err
	}
	if conversation == "" || conversation == "." || conversation == ".." {
		return "", fmt.Errorf("%w: empty or dot conversation", ErrBadKey)
	}
	return p + "conversation/" + url.PathEscape(conversation) + "/", nil
}

// DocumentPrefix is the prefix of every object of one document.
func DocumentPrefix(user, conversation, document string) (string, error) {
	p, err := ConversationPrefix(user, conversation)
	if err != nil {
		return "", err
	}
	if document == "" || document == "." || document == ".." {
		return "", fmt.Errorf("%w: empty or dot document id", ErrBadKey)
	}
	return p + "document/" + url.PathEscape(document) + "/", nil
}

// DeletePrefix deletes every object whose key begins with prefix, as
// deleting a document or a conversation does.
func DeletePrefix(ctx context.Context, s Storage, prefix string) error {
	keys, err := s.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := s.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// checkKey refuses keys no backend should hold: empty, absolute, with
// empty, "." or ".." segments, or with a NUL or backslash.
func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsAny(key, "\x00\\") {
		return fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q", ErrBadKey, key)
		}
	}
	return nil
}

// CheckKey reports whether key is one a Storage may hold (for backends
// outside this package): non-empty segments, none "." or "..", not
// absolute, no NUL or backslash. The error matches ErrBadKey.
func CheckKey(key string) error { return checkKey(key) }

// checkPrefix refuses a prefix that could climb out of the root.
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return checkKey(strings.TrimSuffix(prefix, "/") + "/x")
}

// CheckPrefix is checkPrefix for backends outside this package: "" (every
// key) or a prefix that CheckKey would accept with something after it.
func CheckPrefix(prefix string) error { return checkPrefix(prefix) }
