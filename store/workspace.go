package store

import (
	"context"
	"fmt"
	"time"
)

// Workspaces keeps the rows of the agent's workspace (package
// documents/workspace): projects and their members, the project a
// conversation is attached to, and files with their versions. The bytes
// of a version are an object in the document file store, named by its
// ObjectKey; the store only records it. Access (who may read which
// scope) is the workspace package's to check: these methods take scopes
// as given.
type Workspaces interface {
	// CreateProject stores a project owned by p.Owner, who is its first
	// member. Returns ErrInvalid for a missing owner or name, ErrErasing
	// when the owner is being erased.
	CreateProject(ctx context.Context, p NewProject) (Project, error)
	// GetProject returns the project with its members. Returns
	// ErrNotFound when there is none.
	GetProject(ctx context.Context, id string) (Project, error)
	// UserProjects returns the projects the user is a member of (owner
	// included), oldest first, with their members.
	UserProjects(ctx context.Context, userID string) ([]Project, error)
	// AddProjectMember makes the user a member; adding a member again
	// is not an error. Returns ErrNotFound for an unknown project.
	AddProjectMember(ctx context.Context, projectID, userID string) (Project, error)
	// RemoveProjectMember removes a member; removing a non-member is
	// not an error. Returns ErrNotFound for an unknown project and
	// ErrConflict for the owner, who stays.
	RemoveProjectMember(ctx context.Context, projectID, userID string) (Project, error)
	// DeleteProject deletes the project with its members and its files'
	// rows, and detaches its conversations. The caller deletes the
	// files' objects first. Returns ErrNotFound for an unknown project.
	DeleteProject(ctx context.Context, id string) error
	// SetConversationProject attaches the user's conversation to the
	// project, or detaches it with "". Membership is the caller's to
	// check. Returns ErrNotFound for a conversation unknown or another
	// user's, or an unknown project.
	SetConversationProject(ctx context.Context, userID, conversationID, projectID string) error
	// ConversationProject returns the project the user's conversation
	// is attached to, "" when none. Returns ErrNotFound for a
	// conversation unknown or another user's.
	ConversationProject(ctx context.Context, userID, conversationID string) (string, error)

	// WorkspaceFile returns the scope's file at path. Returns
	// ErrNotFound when there is none.
	WorkspaceFile(ctx context.Context, s FileScope, path string) (WorkspaceFile, error)
	// WorkspaceFiles returns up to limit files of the scope whose path
	// begins with prefix and sorts after after, in path order (bytewise).
	// Returns ErrInvalid for a limit that is not positive.
	WorkspaceFiles(ctx context.Context, s FileScope, prefix, after string, limit int) ([]WorkspaceFile, error)
	// FileVersions returns every version of the scope's file at path,
	// oldest first. Returns ErrNotFound when there is no such file.
	FileVersions(ctx context.Context, s FileScope, path string) ([]FileVersion, error)
	// FileVersion returns one version of the scope's file at path.
	// Returns ErrNotFound when there is no such file or version.
	FileVersion(ctx context.Context, s FileScope, path string, version int) (FileVersion, error)
	// PutFile records a new version of the scope's file at v.Path (its
	// first when there is none), which becomes current, in one
	// transaction; earlier versions stay. Returns ErrConflict when
	// v.Expect is set and is not the current version (0 for none),
	// ErrQuota when the scope would then hold more than v.MaxBytes
	// bytes (every version counted) or v.MaxFiles files, ErrInvalid for
	// a malformed version, ErrErasing when the scope's user is being
	// erased, ErrNotFound when its conversation or project is gone.
	// Nothing is changed on an error.
	PutFile(ctx context.Context, v NewFileVersion) (WorkspaceFile, error)
	// DeleteFile deletes the scope's file at path with all its
	// versions, and returns the object keys they named (each once, ""
	// left out) for the caller to delete. Returns ErrNotFound when there
	// is no such file.
	DeleteFile(ctx context.Context, s FileScope, path string) ([]string, error)
	// ScopeUsage returns how many bytes (every version counted) and
	// files the scope holds.
	ScopeUsage(ctx context.Context, s FileScope) (ScopeUsage, error)
}

// Scope kinds of a FileScope.
const (
	ScopeConversation = "conversation"
	ScopeUser         = "user"
	ScopeProject      = "project"
)

// FileScope names a workspace: Kind is ScopeConversation (ID the
// conversation's), ScopeUser (ID the user's) or ScopeProject (ID the
// project's). UserID is the user a conversation- or user-scope file
// belongs to, by which erasing them finds it; a project's files belong
// to no user.
type FileScope struct {
	Kind, ID, UserID string
}

// Validate reports ErrInvalid for a scope that cannot be stored.
func (s FileScope) Validate() error {
	switch s.Kind {
	case ScopeConversation, ScopeUser:
		if s.UserID == "" || (s.Kind == ScopeUser && s.ID != s.UserID) {
			return fmt.Errorf("%w: a %s scope needs its user", ErrInvalid, s.Kind)
		}
	case ScopeProject:
	default:
		return fmt.Errorf("%w: unknown scope kind %q", ErrInvalid, s.Kind)
	}
	if s.ID == "" {
		return fmt.Errorf("%w: a scope needs an id", ErrInvalid)
	}
	return checkText("scope id", s.ID, "user id", s.UserID)
}

// NewProject is what CreateProject needs.
type NewProject struct {
	Owner, Name string
}

// Project is a workspace that its members share.
type Project struct {
	ID, Name, Owner string
	// Members are the users who may use the project's files, the owner
	// among them, sorted.
	Members   []string
	CreatedAt time.Time
}

// WorkspaceFile is the current version of a file.
type WorkspaceFile struct {
	ID        string
	Path      string
	Version   int
	Size      int64
	SHA256    string // hex
	ObjectKey string // "" for an empty file
	UpdatedAt time.Time
}

// File version operations: how a version was made.
const (
	FileWrite   = "write"
	FileEdit    = "edit"
	FileRestore = "restore"
)

// FileVersion is one immutable version of a file.
type FileVersion struct {
	Version   int
	Size      int64
	SHA256    string
	Op        string
	ObjectKey string
	CreatedAt time.Time
}

// NewFileVersion is what PutFile needs.
type NewFileVersion struct {
	Scope     FileScope
	Path      string
	Size      int64
	SHA256    string
	Op        string // FileWrite, FileEdit or FileRestore
	ObjectKey string // "" only for an empty file
	// Expect, when positive, is the version that must be current;
	// ExpectNone asks that the file not exist. Zero accepts any.
	Expect int
	// MaxBytes and MaxFiles bound the scope; zero is no bound.
	MaxBytes, MaxFiles int64
}

// ExpectNone is NewFileVersion.Expect for a file that must not exist yet.
const ExpectNone = -1

// Validate reports ErrInvalid for a version that cannot be stored.
func (v NewFileVersion) Validate() error {
	if err := v.Scope.Validate(); err != nil {
		return err
	}
	switch {
	case v.Path == "":
		return fmt.Errorf("%w: a file needs a path", ErrInvalid)
	case v.Size < 0 || (v.Size > 0) != (v.ObjectKey != ""):
		return fmt.Errorf("%w: a file's size and object disagree", ErrInvalid)
	case len(v.SHA256) != 64:
		return fmt.Errorf("%w: a file needs its SHA-256", ErrInvalid)
	case v.Op != FileWrite && v.Op != FileEdit && v.Op != FileRestore:
		return fmt.Errorf("%w: unknown file operation %q", ErrInvalid, v.Op)
	}
	return checkText("path", v.Path, "object key", v.ObjectKey)
}

// ScopeUsage is what a scope holds.
type ScopeUsage struct {
	Bytes, Files int64
}
