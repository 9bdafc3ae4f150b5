package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
)

// Kind is the kind of a workspace scope.
type Kind string

// The scopes.
const (
	// KindConversation is a conversation's own files: the default.
	KindConversation Kind = "conversation"
	// KindUser is a user's files, across all their conversations.
	KindUser Kind = "user"
	// KindProject is a project's files, shared by its members.
	KindProject Kind = "project"
)

// ParseKind reads a scope kind as the API and the tools take it.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case KindConversation, KindUser, KindProject:
		return k, nil
	}
	return "", fmt.Errorf("%w: scope %q is not conversation, user or project", ErrBadScope, s)
}

// Scope names one workspace: a conversation's (ID the conversation id),
// a user's (ID the user id, which must be the caller's) or a project's
// (ID the project id).
type Scope struct {
	Kind Kind
	ID   string
}

// File is the current version of a file.
type File struct {
	// Path is validated, slash-separated, with no leading slash.
	Path string
	Size int64
	// Version is the current version, from 1, one more at each write,
	// edit or restore.
	Version int
	// SHA256 is the hex SHA-256 of the current bytes.
	SHA256    string
	UpdatedAt time.Time
}

// Version is one version of a file, as it was made.
type Version struct {
	Version   int
	Size      int64
	SHA256    string
	CreatedAt time.Time
	// Op is how it was made: write, edit or restore.
	Op string
}

// Match is a line that Grep found.
type Match struct {
	Path string
	// Line is the line's number, from 1.
	Line int
	Text string
}

// Project is a workspace its members share; the owner is a member.
type Project struct {
	ID, Name, Owner string
	Members         []string
	CreatedAt       time.Time
}

// Change is a change of a file, as OnChange reports it.
type Change struct {
	Scope   Scope
	Path    string
	Version int // the new version; 0 for a delete
	// Op is write, edit, restore or delete.
	Op string
	// Conversation is the conversation the change was made from; "" when
	// none (the API, say).
	Conversation string
}

// OpDelete is Change.Op of a deleted file.
const OpDelete = "delete"

// Sentinel errors; match them with errors.Is.
var (
	// ErrNotFound: no such file, version or project, or one that is not
	// the caller's to see: the two are not told apart.
	ErrNotFound = errors.New("workspace: not found")
	// ErrBadPath: the path fails validation (see CheckPath).
	ErrBadPath = errors.New("workspace: invalid path")
	// ErrBadScope: an unknown scope kind, or a scope that cannot be used
	// (a project scope from a conversation with no project).
	ErrBadScope = errors.New("workspace: invalid scope")
	// ErrQuota: the scope would hold more bytes or files than its quota.
	ErrQuota = errors.New("workspace: the scope's quota is exceeded")
	// ErrTooLarge: one file over the per-file limit.
	ErrTooLarge = errors.New("workspace: the file is too large")
	// ErrNoMatch: Edit's old string is not in the file.
	ErrNoMatch = errors.New("workspace: the text to replace is not in the file")
	// ErrNotUnique: Edit's old string is in the file more than once, and
	// all was not asked.
	ErrNotUnique = errors.New("workspace: the text to replace occurs more than once")
	// ErrConflict: the file changed meanwhile (a write that expected
	// another version).
	ErrConflict = errors.New("workspace: the file changed meanwhile")
	// ErrNotText: Edit or Grep met bytes that are not UTF-8 text.
	ErrNotText = errors.New("workspace: the file is not UTF-8 text")
	// ErrInvalid: another argument cannot be used (an empty project
	// name, a bad pattern).
	ErrInvalid = errors.New("workspace: invalid argument")
)

// Record is what the workspace keeps in the record: its own rows, and
// the conversations whose owners it checks.
type Record interface {
	store.Workspaces
	GetConversation(ctx context.Context, userID, id string) (store.Conversation, error)
}

// Limits bound a workspace. The zero value is the defaults.
type Limits struct {
	// FileBytes is the largest file. Default 4 MiB.
	FileBytes int64
	// ScopeBytes is the most bytes one scope holds, every version of
	// every file counted. Default 256 MiB.
	ScopeBytes int64
	// ScopeFiles is the most files one scope holds. Default 10,000.
	ScopeFiles int64
}

// Defaults of Limits.
const (
	DefaultFileBytes  = 4 << 20
	DefaultScopeBytes = 256 << 20
	DefaultScopeFiles = 10_000
)

func (l Limits) withDefaults() Limits {
	if l.FileBytes <= 0 {
		l.FileBytes = DefaultFileBytes
	}
	if l.ScopeBytes <= 0 {
		l.ScopeBytes = DefaultScopeBytes
	}
	if l.ScopeFiles <= 0 {
		l.ScopeFiles = DefaultScopeFiles
	}
	return l
}

// Workspaces is the agent's files: every method takes the acting user
// and checks access first — a conversation scope is its owner's, a user
// scope its user's, a project scope its members' — and answers
// ErrNotFound to anyone else, as for a file that does not exist. Safe
// for concurrent use.
type Workspaces struct {
	rec    Record
	files  documents.Storage
	limits Limits

	mu       sync.RWMutex
	onChange []func(ctx context.Context, c Change)
}

// New returns the workspaces kept in rec, with their bytes in files
// (the documents' file store, encrypted when it is).
func New(rec Record, files documents.Storage, limits Limits) *Workspaces {
	return &Workspaces{rec: rec, files: files, limits: limits.withDefaults()}
}

// Limits returns the limits in force, defaults applied.
func (w *Workspaces) Limits() Limits { return w.limits }

// OnChange registers fn, called after every successful write, edit,
// restore and delete, in the caller's goroutine, with the conversation
// the change was made from (see WithConversation).
func (w *Workspaces) OnChange(fn func(ctx context.Context, c Change)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onChange = append(w.onChange, fn)
}

func (w *Workspaces) changed(ctx context.Context, c Change) {
	c.Conversation = conversationFrom(ctx)
	w.mu.RLock()
	fns := w.onChange
	w.mu.RUnlock()
	for _, fn := range fns {
		fn(ctx, c)
	}
}

type conversationKey struct{}

// WithConversation returns ctx saying that changes made with it are
// made from the conversation (Change.Conversation).
func WithConversation(ctx context.Context, conversation string) context.Context {
	return context.WithValue(ctx, conversationKey{}, conversation)
}

func conversationFrom(ctx context.Context) string {
	c, _ := ctx.Value(conversationKey{}).(string)
	return c
}

// scope is a checked scope: the record's name of it, and the prefix of
// its objects' keys.
type scope struct {
	Scope
	rec    store.FileScope
	prefix string
}

// access checks that user may use s, and returns it checked.
func (w *Workspaces) access(ctx context.Context, user string, s Scope) (scope, error) {
	if user == "" {
		return scope{}, fmt.Errorf("%w: no user", ErrNotFound)
	}
	if _, err := ParseKind(string(s.Kind)); err != nil {
		return scope{}, err
	}
	if s.ID == "" || !store.ValidText(s.ID) {
		return scope{}, fmt.Errorf("%w: %s scope %q", ErrNotFound, s.Kind, s.ID)
	}
	out := scope{Scope: s, rec: store.FileScope{Kind: string(s.Kind), ID: s.ID}}
	var err error
	switch s.Kind {
	case KindConversation:
		if _, err = w.rec.GetConversation(ctx, user, s.ID); err != nil {
			return scope{}, w.fail(err)
		}
		out.rec.UserID = user
		if out.prefix, err = documents.ConversationPrefix(user, s.ID); err != nil {
			return scope{}, fmt.Errorf("%w: %w", ErrNotFound, err)
		}
	case KindUser:
		if s.ID != user {
			return scope{}, fmt.Errorf("%w: another user's files", ErrNotFound)
		}
		out.rec.UserID = user
		if out.prefix, err = documents.UserPrefix(user); err != nil {
			return scope{}, fmt.Errorf("%w: %w", ErrNotFound, err)
		}
	case KindProject:
		if _, err := w.member(ctx, user, s.ID); err != nil {
			return scope{}, err
		}
		out.prefix, err = ProjectPrefix(s.ID)
		if err != nil {
			return scope{}, fmt.Errorf("%w: %w", ErrNotFound, err)
		}
	}
	out.prefix += "workspace/"
	return out, nil
}

// ProjectPrefix is the prefix of every object of the project's files.
func ProjectPrefix(project string) (string, error) {
	if project == "" || project == "." || project == ".." {
		return "", fmt.Errorf("%w: empty or dot project", documents.ErrBadKey)
	}
	return "project/" + url.PathEscape(project) + "/", nil
}

// fail turns the record's errors into the package's.
func (w *Workspaces) fail(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, store.ErrQuota):
		return fmt.Errorf("%w: %w", ErrQuota, err)
	case errors.Is(err, store.ErrConflict):
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case errors.Is(err, store.ErrInvalid):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return fmt.Errorf("workspace: %w", err)
}

// put stores data as the next version of the file at path, made by op,
// expecting expect (see store.NewFileVersion.Expect). The object is
// stored first and the record names it after: a crash in between
// leaves an object under the scope's prefix that no record names, which
// deleting the conversation, the project or the user removes.
func (w *Workspaces) put(ctx context.Context, s scope, path string, data []byte, op string, expect int) (File, error) {
	if int64(len(data)) > w.limits.FileBytes {
		return File{}, fmt.Errorf("%w: %d bytes, over %d", ErrTooLarge, len(data), w.limits.FileBytes)
	}
	sum := sha256.Sum256(data)
	v := store.NewFileVersion{Scope: s.rec, Path: path, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Op: op,
		Expect: expect, MaxBytes: w.limits.ScopeBytes, MaxFiles: w.limits.ScopeFiles}
	if len(data) > 0 {
		v.ObjectKey = s.prefix + ids.New()
		if err := w.files.Put(ctx, v.ObjectKey, data); err != nil {
			return File{}, fmt.Errorf("workspace: store %s: %w", path, err)
		}
	}
	f, err := w.rec.PutFile(ctx, v)
	if err != nil {
		if v.ObjectKey != "" {
			_ = w.files.Delete(context.WithoutCancel(ctx), v.ObjectKey) // no record names it
		}
		return File{}, w.fail(err)
	}
	out := fileOf(f)
	w.changed(ctx, Change{Scope: s.Scope, Path: path, Version: out.Version, Op: op})
	return out, nil
}

func fileOf(f store.WorkspaceFile) File {
	return File{Path: f.Path, Size: f.Size, Version: f.Version, SHA256: f.SHA256, UpdatedAt: f.UpdatedAt}
}

func versionOf(v store.FileVersion) Version {
	return Version{Version: v.Version, Size: v.Size, SHA256: v.SHA256, CreatedAt: v.CreatedAt, Op: v.Op}
}

// object reads the bytes an object key names; "" is the empty file.
func (w *Workspaces) object(ctx context.Context, key string) ([]byte, error) {
	if key == "" {
		return []byte{}, nil
	}
	b, err := w.files.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w", key, err)
	}
	return b, nil
}
