// Package workspace: TEMPORARY copy of the contract's types (ws-contract.md) so that api/files compiles
// before branch ws lands; deleted when ws is merged.
package workspace

import (
	"context"
	"errors"
	"time"
)

type Kind string

const (
	KindConversation Kind = "conversation"
	KindUser         Kind = "user"
	KindProject      Kind = "project"
)

type Scope struct {
	Kind Kind
	ID   string
}

func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case KindConversation, KindUser, KindProject:
		return k, nil
	}
	return "", errors.New("workspace: unknown scope kind")
}

type File struct {
	Path      string
	Size      int64
	Version   int
	SHA256    string
	UpdatedAt time.Time
}
type Version struct {
	Version   int
	Size      int64
	SHA256    string
	CreatedAt time.Time
	Op        string
}
type Project struct {
	ID, Name, Owner string
	Members         []string
	CreatedAt       time.Time
}
type Change struct {
	Scope        Scope
	Path         string
	Version      int
	Op           string
	Conversation string
}

var (
	ErrNotFound  = errors.New("workspace: not found")
	ErrBadPath   = errors.New("workspace: bad path")
	ErrQuota     = errors.New("workspace: quota")
	ErrTooLarge  = errors.New("workspace: too large")
	ErrConflict  = errors.New("workspace: conflict")
	ErrNoMatch   = errors.New("workspace: no match")
	ErrNotUnique = errors.New("workspace: not unique")
)

type Workspaces struct{}

func (w *Workspaces) List(ctx context.Context, user string, s Scope, prefix string, after string, limit int) ([]File, string, error) {
	return nil, "", nil
}
func (w *Workspaces) Stat(ctx context.Context, user string, s Scope, path string) (File, error) {
	return File{}, nil
}
func (w *Workspaces) Read(ctx context.Context, user string, s Scope, path string) (File, []byte, error) {
	return File{}, nil, nil
}
func (w *Workspaces) ReadVersion(ctx context.Context, user string, s Scope, path string, version int) (Version, []byte, error) {
	return Version{}, nil, nil
}
func (w *Workspaces) Write(ctx context.Context, user string, s Scope, path string, data []byte) (File, error) {
	return File{}, nil
}
func (w *Workspaces) Delete(ctx context.Context, user string, s Scope, path string) error { return nil }
func (w *Workspaces) Versions(ctx context.Context, user string, s Scope, path string) ([]Version, error) {
	return nil, nil
}
func (w *Workspaces) Restore(ctx context.Context, user string, s Scope, path string, version int) (File, error) {
	return File{}, nil
}
func (w *Workspaces) CreateProject(ctx context.Context, owner, name string) (Project, error) {
	return Project{}, nil
}
func (w *Workspaces) Projects(ctx context.Context, user string) ([]Project, error) { return nil, nil }
func (w *Workspaces) Project(ctx context.Context, user, id string) (Project, error) {
	return Project{}, nil
}
func (w *Workspaces) AddMember(ctx context.Context, owner, project, member string) (Project, error) {
	return Project{}, nil
}
func (w *Workspaces) RemoveMember(ctx context.Context, owner, project, member string) (Project, error) {
	return Project{}, nil
}
func (w *Workspaces) DeleteProject(ctx context.Context, owner, project string) error { return nil }
func (w *Workspaces) AttachConversation(ctx context.Context, user, conversation, project string) error {
	return nil
}
