package workspace

import (
	"context"
	"fmt"
	"slices"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/store"
)

// MaxProjectName is the longest project name, in bytes.
const MaxProjectName = 200

func projectOf(p store.Project) Project {
	return Project{ID: p.ID, Name: p.Name, Owner: p.Owner, Members: p.Members, CreatedAt: p.CreatedAt}
}

// CreateProject makes a project owned by owner, its first member.
func (w *Workspaces) CreateProject(ctx context.Context, owner, name string) (Project, error) {
	if name == "" || len(name) > MaxProjectName {
		return Project{}, fmt.Errorf("%w: a project's name is 1 to %d bytes", ErrInvalid, MaxProjectName)
	}
	p, err := w.rec.CreateProject(ctx, store.NewProject{Owner: owner, Name: name})
	if err != nil {
		return Project{}, w.fail(err)
	}
	return projectOf(p), nil
}

// Projects returns the projects user is a member of, oldest first.
func (w *Workspaces) Projects(ctx context.Context, user string) ([]Project, error) {
	ps, err := w.rec.UserProjects(ctx, user)
	if err != nil {
		return nil, w.fail(err)
	}
	out := make([]Project, len(ps))
	for i, p := range ps {
		out[i] = projectOf(p)
	}
	return out, nil
}

// Project returns the project, to a member only.
func (w *Workspaces) Project(ctx context.Context, user, id string) (Project, error) {
	p, err := w.member(ctx, user, id)
	if err != nil {
		return Project{}, err
	}
	return projectOf(p), nil
}

// member returns the project when user is a member, else ErrNotFound.
func (w *Workspaces) member(ctx context.Context, user, id string) (store.Project, error) {
	p, err := w.rec.GetProject(ctx, id)
	if err != nil {
		return store.Project{}, w.fail(err)
	}
	if !slices.Contains(p.Members, user) {
		return store.Project{}, fmt.Errorf("%w: project %s", ErrNotFound, id)
	}
	return p, nil
}

// owned returns the project when owner owns it, else ErrNotFound.
func (w *Workspaces) owned(ctx context.Context, owner, id string) (store.Project, error) {
	p, err := w.member(ctx, owner, id)
	if err == nil && p.Owner != owner {
		err = fmt.Errorf("%w: only the owner may change project %s", ErrNotFound, id)
	}
	return p, err
}

// AddMember makes member a member of the project; only its owner may.
func (w *Workspaces) AddMember(ctx context.Context, owner, project, member string) (Project, error) {
	return w.changeMember(ctx, owner, project, member, w.rec.AddProjectMember)
}

// RemoveMember removes member from the project; only its owner may, and
// the owner stays (ErrConflict).
func (w *Workspaces) RemoveMember(ctx context.Context, owner, project, member string) (Project, error) {
	return w.changeMember(ctx, owner, project, member, w.rec.RemoveProjectMember)
}

// changeMember records change (an addition or a removal) of member in
// the project, once owner is found to own it.
func (w *Workspaces) changeMember(ctx context.Context, owner, project, member string,
	change func(ctx context.Context, projectID, userID string) (store.Project, error)) (Project, error) {
	if _, err := w.owned(ctx, owner, project); err != nil {
		return Project{}, err
	}
	p, err := change(ctx, project, member)
	if err != nil {
		return Project{}, w.fail(err)
	}
	return projectOf(p), nil
}

// DeleteProject deletes the project with its files; only its owner may.
// The objects go first, then the record: a crash in between leaves the
// project to delete again.
func (w *Workspaces) DeleteProject(ctx context.Context, owner, project string) error {
	if _, err := w.owned(ctx, owner, project); err != nil {
		return err
	}
	return w.deleteProject(ctx, project)
}

func (w *Workspaces) deleteProject(ctx context.Context, project string) error {
	prefix, err := ProjectPrefix(project)
	if err == nil {
		err = documents.DeletePrefix(ctx, w.files, prefix)
	}
	if err != nil {
		return fmt.Errorf("workspace: delete the files of project %s: %w", project, err)
	}
	return w.fail(w.rec.DeleteProject(ctx, project))
}

// EraseProjects deletes the files of every project user owns, and the
// projects, for the erasure of the user; their own files go with their
// prefix (documents.UserPrefix), their memberships with the record.
func (w *Workspaces) EraseProjects(ctx context.Context, user string) error {
	ps, err := w.rec.UserProjects(ctx, user)
	if err != nil {
		return w.fail(err)
	}
	for _, p := range ps {
		if p.Owner != user {
			continue
		}
		if err := w.deleteProject(ctx, p.ID); err != nil {
			return err
		}
	}
	return nil
}

// AttachConversation attaches the user's conversation to a project the
// user is a member of, whose files become the conversation's "project"
// scope; "" detaches it.
func (w *Workspaces) AttachConversation(ctx context.Context, user, conversation, project string) error {
	if project != "" {
		if _, err := w.member(ctx, user, project); err != nil {
			return err
		}
	}
	return w.fail(w.rec.SetConversationProject(ctx, user, conversation, project))
}

// ConversationProject returns the project the user's conversation is
// attached to, "" when none.
func (w *Workspaces) ConversationProject(ctx context.Context, user, conversation string) (string, error) {
	p, err := w.rec.ConversationProject(ctx, user, conversation)
	return p, w.fail(err)
}

// ScopeOf is the scope a call from the user's conversation means by
// kind ("" for the conversation's): the conversation, the user, or the
// project the conversation is attached to (ErrBadScope when none).
func (w *Workspaces) ScopeOf(ctx context.Context, user, conversation string, kind Kind) (Scope, error) {
	if kind == "" {
		kind = KindConversation
	}
	switch kind {
	case KindConversation:
		if conversation == "" {
			return Scope{}, fmt.Errorf("%w: there is no conversation here; use the user scope", ErrBadScope)
		}
		return Scope{Kind: kind, ID: conversation}, nil
	case KindUser:
		return Scope{Kind: kind, ID: user}, nil
	case KindProject:
		if conversation == "" {
			return Scope{}, fmt.Errorf("%w: there is no conversation here, so no project", ErrBadScope)
		}
		p, err := w.ConversationProject(ctx, user, conversation)
		if err != nil {
			return Scope{}, err
		}
		if p == "" {
			return Scope{}, fmt.Errorf("%w: this conversation is attached to no project", ErrBadScope)
		}
		return Scope{Kind: kind, ID: p}, nil
	}
	_, err := ParseKind(string(kind))
	return Scope{}, err
}
