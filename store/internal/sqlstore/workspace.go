package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// CreateProject implements store.Workspaces.
func (s *Store) CreateProject(ctx context.Context, np store.NewProject) (store.Project, error) {
	switch {
	case np.Owner == "" || np.Name == "":
		return store.Project{}, s.errorf("create project: %w: a project needs an owner and a name", store.ErrInvalid)
	case !store.ValidText(np.Owner) || !store.ValidText(np.Name):
		return store.Project{}, s.errorf("create project: %w: owner or name is not valid UTF-8", store.ErrInvalid)
	}
	now := storeutil.Now()
	p := store.Project{ID: ids.New(), Name: np.Name, Owner: np.Owner, Members: []string{np.Owner}, CreatedAt: now}
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		at := s.db.Time(now)
		if _, err := q.Exec(ctx, `INSERT INTO projects (id, name, owner_id, created_at) VALUES (?, ?, ?, ?)`, p.ID, p.Name, p.Owner, at); err != nil {
			return s.refused(err)
		}
		_, err := q.Exec(ctx, `INSERT INTO project_members (project_id, user_id, added_at) VALUES (?, ?, ?)`, p.ID, p.Owner, at)
		return err
	})
	if err != nil {
		return store.Project{}, s.errorf("create project: %w", err)
	}
	return p, nil
}

// GetProject implements store.Workspaces.
func (s *Store) GetProject(ctx context.Context, id string) (store.Project, error) {
	var p store.Project
	err := s.db.Read(ctx, func(q Querier) error {
		var err error
		p, err = s.project(ctx, q, id)
		return err
	})
	if err != nil {
		return store.Project{}, s.errorf("project %s: %w", id, err)
	}
	return p, nil
}

// project reads the project with its members.
func (s *Store) project(ctx context.Context, q Querier, id string) (store.Project, error) {
	if err := storeutil.CheckIDs(id); err != nil {
		return store.Project{}, err
	}
	var (
		p       store.Project
		created dbTime
	)
	err := q.QueryRow(ctx, `SELECT id, name, owner_id, created_at FROM projects WHERE id = ?`, id).Scan(&p.ID, &p.Name, &p.Owner, &created)
	if noRows(err) {
		return p, store.ErrNotFound
	}
	if err != nil {
		return p, err
	}
	p.CreatedAt = created.t
	p.Members, err = queryAll(ctx, q, scanString, `SELECT user_id FROM project_members WHERE project_id = ? ORDER BY user_id`, id)
	return p, err
}

// UserProjects implements store.Workspaces.
func (s *Store) UserProjects(ctx context.Context, userID string) ([]store.Project, error) {
	out := []store.Project{}
	err := s.db.Read(ctx, func(q Querier) error {
		idList, err := queryAll(ctx, q, scanString, `SELECT p.id FROM projects p JOIN project_members m ON m.project_id = p.id
WHERE m.user_id = ? ORDER BY p.created_at, p.id`, userID)
		if err != nil {
			return err
		}
		for _, id := range idList {
			p, err := s.project(ctx, q, id)
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf("projects of %s: %w", userID, err)
	}
	return out, nil
}

// AddProjectMember implements store.Workspaces.
func (s *Store) AddProjectMember(ctx context.Context, projectID, userID string) (store.Project, error) {
	return s.changeMembers(ctx, "add member to", projectID, userID, func(ctx context.Context, q Querier, p store.Project) error {
		_, err := q.Exec(ctx, `INSERT INTO project_members (project_id, user_id, added_at) VALUES (?, ?, ?)
ON CONFLICT (project_id, user_id) DO NOTHING`, projectID, userID, s.db.Time(storeutil.Now()))
		return err
	})
}

// RemoveProjectMember implements store.Workspaces.
func (s *Store) RemoveProjectMember(ctx context.Context, projectID, userID string) (store.Project, error) {
	return s.changeMembers(ctx, "remove member from", projectID, userID, func(ctx context.Context, q Querier, p store.Project) error {
		if userID == p.Owner {
			return fmt.Errorf("the owner stays a member: %w", store.ErrConflict)
		}
		_, err := q.Exec(ctx, `DELETE FROM project_members WHERE project_id = ? AND user_id = ?`, projectID, userID)
		return err
	})
}

// changeMembers runs change on the project, in a transaction, and
// returns the project as it then is.
func (s *Store) changeMembers(ctx context.Context, what, projectID, userID string, change func(context.Context, Querier, store.Project) error) (store.Project, error) {
	if userID == "" || !store.ValidText(userID) {
		return store.Project{}, s.errorf("%s project %s: %w: a user id is required", what, projectID, store.ErrInvalid)
	}
	var p store.Project
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		var err error
		if p, err = s.project(ctx, q, projectID); err != nil {
			return err
		}
		if err := change(ctx, q, p); err != nil {
			return err
		}
		p, err = s.project(ctx, q, projectID)
		return err
	})
	if err != nil {
		return store.Project{}, s.errorf("%s project %s: %w", what, projectID, err)
	}
	return p, nil
}

// DeleteProject implements store.Workspaces.
func (s *Store) DeleteProject(ctx context.Context, id string) error {
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		return changesOne(ctx, q, `DELETE FROM projects WHERE id = ?`, id)
	})
	if err != nil {
		return s.errorf("delete project %s: %w", id, err)
	}
	return nil
}

// SetConversationProject implements store.Workspaces.
func (s *Store) SetConversationProject(ctx context.Context, userID, conversationID, projectID string) error {
	if err := storeutil.CheckIDs(userID, conversationID, projectID); err != nil {
		return s.errorf("attach conversation %s: %w", conversationID, err)
	}
	var project any
	if projectID != "" {
		project = projectID
	}
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		if projectID != "" {
			var one int
			err := q.QueryRow(ctx, `SELECT 1 FROM projects WHERE id = ?`, projectID).Scan(&one)
			if noRows(err) {
				return store.ErrNotFound
			}
			if err != nil {
				return err
			}
		}
		return changesOne(ctx, q, `UPDATE conversations SET project_id = ? WHERE id = ? AND user_id = ?`, project, conversationID, userID)
	})
	if err != nil {
		return s.errorf("attach conversation %s: %w", conversationID, err)
	}
	return nil
}

// ConversationProject implements store.Workspaces.
func (s *Store) ConversationProject(ctx context.Context, userID, conversationID string) (string, error) {
	var project *string
	err := s.db.QueryRow(ctx, `SELECT project_id FROM conversations WHERE id = ? AND user_id = ?`, conversationID, userID).Scan(&project)
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return "", s.errorf("project of conversation %s: %w", conversationID, err)
	}
	if project == nil {
		return "", nil
	}
	return *project, nil
}

const fileCols = `id, path, version, size, sha256, object_key, updated_at`

func scanFile(r Row) (store.WorkspaceFile, error) {
	var (
		f  store.WorkspaceFile
		at dbTime
	)
	err := r.Scan(&f.ID, &f.Path, &f.Version, &f.Size, &f.SHA256, &f.ObjectKey, &at)
	f.UpdatedAt = at.t
	return f, err
}

const versionCols = `version, size, sha256, op, object_key, created_at`

func scanVersion(r Row) (store.FileVersion, error) {
	var (
		v  store.FileVersion
		at dbTime
	)
	err := r.Scan(&v.Version, &v.Size, &v.SHA256, &v.Op, &v.ObjectKey, &at)
	v.CreatedAt = at.t
	return v, err
}

// WorkspaceFile implements store.Workspaces.
func (s *Store) WorkspaceFile(ctx context.Context, sc store.FileScope, path string) (store.WorkspaceFile, error) {
	f, err := s.file(ctx, s.db, sc, path, "")
	if err != nil {
		return f, s.errorf("file %s: %w", path, err)
	}
	return f, nil
}

// file reads the file at path in sc; lock is "" or ForUpdate, to lock
// its row in a writing transaction.
func (s *Store) file(ctx context.Context, q Querier, sc store.FileScope, path, lock string) (store.WorkspaceFile, error) {
	if err := storeutil.CheckIDs(sc.ID, path); err != nil {
		return store.WorkspaceFile{}, err
	}
	f, err := scanFile(q.QueryRow(ctx, `SELECT `+fileCols+` FROM workspace_files WHERE scope_kind = ? AND scope_id = ? AND path = ?`+lock, sc.Kind, sc.ID, path))
	if noRows(err) {
		err = store.ErrNotFound
	}
	return f, err
}

// prefixEnd is a string that sorts after every string that begins with
// prefix and before those that do not: prefix with U+10FFFF, the
// greatest rune, after it (workspace paths never hold that rune).
func prefixEnd(prefix string) string { return prefix + string(utf8.MaxRune) }

// WorkspaceFiles implements store.Workspaces.
func (s *Store) WorkspaceFiles(ctx context.Context, sc store.FileScope, prefix, after string, limit int) ([]store.WorkspaceFile, error) {
	if limit <= 0 {
		return nil, s.errorf("files: %w: limit %d", store.ErrInvalid, limit)
	}
	if err := storeutil.CheckIDs(sc.ID, prefix, after); err != nil {
		return []store.WorkspaceFile{}, nil
	}
	from := max(prefix, after)
	op := ">="
	if after >= prefix {
		op = ">"
	}
	files, err := queryAll(ctx, s.db, scanFile, `SELECT `+fileCols+` FROM workspace_files
WHERE scope_kind = ? AND scope_id = ? AND path `+op+` ? AND path < ? ORDER BY path LIMIT ?`, sc.Kind, sc.ID, from, prefixEnd(prefix), limit)
	if err != nil {
		return nil, s.errorf("files: %w", err)
	}
	return slices.DeleteFunc(files, func(f store.WorkspaceFile) bool { return !strings.HasPrefix(f.Path, prefix) }), nil
}

// FileVersions implements store.Workspaces.
func (s *Store) FileVersions(ctx context.Context, sc store.FileScope, path string) ([]store.FileVersion, error) {
	var out []store.FileVersion
	err := s.db.Read(ctx, func(q Querier) error {
		f, err := s.file(ctx, q, sc, path, "")
		if err != nil {
			return err
		}
		out, err = queryAll(ctx, q, scanVersion, `SELECT `+versionCols+` FROM workspace_versions WHERE file_id = ? ORDER BY version`, f.ID)
		return err
	})
	if err != nil {
		return nil, s.errorf("versions of %s: %w", path, err)
	}
	return out, nil
}

// FileVersion implements store.Workspaces.
func (s *Store) FileVersion(ctx context.Context, sc store.FileScope, path string, version int) (store.FileVersion, error) {
	var v store.FileVersion
	err := s.db.Read(ctx, func(q Querier) error {
		f, err := s.file(ctx, q, sc, path, "")
		if err != nil {
			return err
		}
		v, err = scanVersion(q.QueryRow(ctx, `SELECT `+versionCols+` FROM workspace_versions WHERE file_id = ? AND version = ?`, f.ID, version))
		if noRows(err) {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return v, s.errorf("version %d of %s: %w", version, path, err)
	}
	return v, nil
}

// PutFile implements store.Workspaces. The file's row is updated first,
// which on PostgreSQL locks it, so two writers of one file take turns;
// the quota is checked after the write, in the same transaction, which
// rolls back when it is exceeded.
func (s *Store) PutFile(ctx context.Context, v store.NewFileVersion) (store.WorkspaceFile, error) {
	if err := v.Validate(); err != nil {
		return store.WorkspaceFile{}, s.errorf("put file: %w", err)
	}
	now := storeutil.Now()
	var f store.WorkspaceFile
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		at := s.db.Time(now)
		f = store.WorkspaceFile{Path: v.Path, Size: v.Size, SHA256: v.SHA256, ObjectKey: v.ObjectKey, UpdatedAt: now}
		var added int64 // files
		err := q.QueryRow(ctx, `UPDATE workspace_files SET version = version + 1, size = ?, sha256 = ?, object_key = ?, updated_at = ?
WHERE scope_kind = ? AND scope_id = ? AND path = ? RETURNING id, version`,
			v.Size, v.SHA256, v.ObjectKey, at, v.Scope.Kind, v.Scope.ID, v.Path).Scan(&f.ID, &f.Version)
		switch {
		case noRows(err):
			if v.Expect > 0 {
				return fmt.Errorf("%s does not exist: %w", v.Path, store.ErrConflict)
			}
			f.ID, f.Version, added = ids.New(), 1, 1
			if err := s.insertFile(ctx, q, v, f, at); err != nil {
				return err
			}
		case err != nil:
			return err
		case v.Expect == store.ExpectNone || (v.Expect > 0 && f.Version-1 != v.Expect):
			return fmt.Errorf("%s is at version %d: %w", v.Path, f.Version-1, store.ErrConflict)
		}
		if _, err := q.Exec(ctx, `INSERT INTO workspace_versions (file_id, version, size, sha256, op, object_key, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`, f.ID, f.Version, v.Size, v.SHA256, v.Op, v.ObjectKey, at); err != nil {
			return err
		}
		user, conversation, project := owners(v.Scope)
		var u store.ScopeUsage
		if err := q.QueryRow(ctx, `INSERT INTO workspace_usage (scope_kind, scope_id, user_id, conversation_id, project_id, bytes, files)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope_kind, scope_id)
DO UPDATE SET bytes = workspace_usage.bytes + excluded.bytes, files = workspace_usage.files + excluded.files RETURNING bytes, files`,
			v.Scope.Kind, v.Scope.ID, user, conversation, project, v.Size, added).Scan(&u.Bytes, &u.Files); err != nil {
			return err
		}
		if (v.MaxBytes > 0 && u.Bytes > v.MaxBytes) || (v.MaxFiles > 0 && u.Files > v.MaxFiles) {
			return fmt.Errorf("%s %s would hold %d bytes in %d files, over %d bytes or %d files: %w",
				v.Scope.Kind, v.Scope.ID, u.Bytes, u.Files, v.MaxBytes, v.MaxFiles, store.ErrQuota)
		}
		return nil
	})
	if err != nil {
		return store.WorkspaceFile{}, s.errorf("put file %s: %w", v.Path, err)
	}
	return f, nil
}

// owners are the owner columns of a scope's rows: the user of a user or
// conversation scope, the conversation of a conversation scope, the
// project of a project scope; NULL otherwise.
func owners(sc store.FileScope) (user, conversation, project any) {
	switch sc.Kind {
	case store.ScopeConversation:
		return sc.UserID, sc.ID, nil
	case store.ScopeUser:
		return sc.UserID, nil, nil
	}
	return nil, nil, sc.ID
}

// insertFile stores the row of a new file.
func (s *Store) insertFile(ctx context.Context, q Querier, v store.NewFileVersion, f store.WorkspaceFile, at any) error {
	user, conversation, project := owners(v.Scope)
	owner, args := `SELECT 1`, []any(nil)
	switch v.Scope.Kind {
	case store.ScopeConversation:
		owner, args = `SELECT 1 FROM conversations WHERE id = ? AND user_id = ?`, []any{v.Scope.ID, v.Scope.UserID}
	case store.ScopeProject:
		owner, args = `SELECT 1 FROM projects WHERE id = ?`, []any{v.Scope.ID}
	}
	// SQLite's foreign key errors name no constraint: the scope's
	// conversation or project is looked up first, which on SQLite holds
	// (the transaction has the write lock) and on PostgreSQL leaves a
	// race that the foreign key's error below tells.
	var one int
	if err := q.QueryRow(ctx, owner, args...).Scan(&one); noRows(err) {
		return fmt.Errorf("the %s is gone: %w", v.Scope.Kind, store.ErrNotFound)
	} else if err != nil {
		return err
	}
	_, err := q.Exec(ctx, `INSERT INTO workspace_files (id, scope_kind, scope_id, user_id, conversation_id, project_id, path, version, size, sha256, object_key, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, f.ID, v.Scope.Kind, v.Scope.ID, user, conversation, project, v.Path, f.Version, v.Size, v.SHA256, v.ObjectKey, at)
	switch {
	case err == nil:
		return nil
	case s.db.Violates(err, erasing):
		return store.ErrErasing
	case s.db.Violates(err, "workspace_files_conversation_id_fkey"), s.db.Violates(err, "workspace_files_project_id_fkey"):
		return fmt.Errorf("the %s is gone: %w", v.Scope.Kind, store.ErrNotFound)
	case s.db.Violates(err, "workspace_files_scope_kind_scope_id_path_key"):
		// A writer of the same new file committed first.
		return fmt.Errorf("%s was created meanwhile: %w", v.Path, store.ErrConflict)
	}
	return err
}

// DeleteFile implements store.Workspaces.
func (s *Store) DeleteFile(ctx context.Context, sc store.FileScope, path string) ([]string, error) {
	var keys []string
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		// The file's row is locked first, as PutFile's write locks it,
		// then the usage's. In the other order a delete and a write of
		// the file deadlocked on PostgreSQL, and a version written after
		// the sizes below were summed stayed counted in the usage.
		f, err := s.file(ctx, q, sc, path, s.db.ForUpdate())
		if err != nil {
			return err
		}
		if keys, err = queryAll(ctx, q, scanString, `SELECT DISTINCT object_key FROM workspace_versions WHERE file_id = ? AND object_key <> '' ORDER BY object_key`, f.ID); err != nil {
			return err
		}
		var size int64
		if err := q.QueryRow(ctx, `SELECT coalesce(sum(size), 0) FROM workspace_versions WHERE file_id = ?`, f.ID).Scan(&size); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `UPDATE workspace_usage SET bytes = bytes - ?, files = files - 1 WHERE scope_kind = ? AND scope_id = ?`,
			size, sc.Kind, sc.ID); err != nil {
			return err
		}
		_, err = q.Exec(ctx, `DELETE FROM workspace_files WHERE id = ?`, f.ID)
		return err
	})
	if err != nil {
		return nil, s.errorf("delete file %s: %w", path, err)
	}
	return keys, nil
}

// ScopeUsage implements store.Workspaces.
func (s *Store) ScopeUsage(ctx context.Context, sc store.FileScope) (store.ScopeUsage, error) {
	var u store.ScopeUsage
	err := s.db.QueryRow(ctx, `SELECT bytes, files FROM workspace_usage WHERE scope_kind = ? AND scope_id = ?`, sc.Kind, sc.ID).Scan(&u.Bytes, &u.Files)
	if noRows(err) {
		return store.ScopeUsage{}, nil
	}
	if err != nil {
		return u, s.errorf("usage of %s %s: %w", sc.Kind, sc.ID, err)
	}
	return u, nil
}
