-- The agent's workspace (documents/workspace): projects that a few users
-- share, and files in three scopes: a conversation's, a user's, a
-- project's. A file's bytes live in the document file store, one object
-- per version; these rows name them. A conversation-scope file goes with
-- its conversation (conversation_id cascades), a project-scope file with
-- its project; user_id is the owner of a user- or conversation-scope file
-- (NULL for a project's), so erasing a user deletes theirs by it.

CREATE TABLE projects (
    id         TEXT NOT NULL PRIMARY KEY,
    name       TEXT NOT NULL,
    owner_id   TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;

CREATE INDEX projects_owner ON projects (owner_id);

-- The owner is a member too.
CREATE TABLE project_members (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    added_at   TEXT NOT NULL,
    PRIMARY KEY (project_id, user_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX project_members_user ON project_members (user_id);

-- The project a conversation is attached to: its "project" scope.
ALTER TABLE conversations ADD COLUMN project_id TEXT REFERENCES projects (id) ON DELETE SET NULL;
CREATE INDEX conversations_project ON conversations (project_id);

CREATE TABLE workspace_files (
    id              TEXT    NOT NULL PRIMARY KEY,
    scope_kind      TEXT    NOT NULL CHECK (scope_kind IN ('conversation', 'user', 'project')),
    scope_id        TEXT    NOT NULL,
    user_id         TEXT,
    conversation_id TEXT    REFERENCES conversations (id) ON DELETE CASCADE,
    project_id      TEXT    REFERENCES projects (id) ON DELETE CASCADE,
    path            TEXT    NOT NULL,
    version         INTEGER NOT NULL,
    size            INTEGER NOT NULL,
    sha256          TEXT    NOT NULL,
    object_key      TEXT    NOT NULL, -- '' for an empty file: no object
    updated_at      TEXT    NOT NULL,
    UNIQUE (scope_kind, scope_id, path)
) STRICT;

CREATE INDEX workspace_files_user ON workspace_files (user_id);
CREATE INDEX workspace_files_conversation ON workspace_files (conversation_id);
CREATE INDEX workspace_files_project ON workspace_files (project_id);

-- Every version of a file, the current one included; immutable.
CREATE TABLE workspace_versions (
    file_id    TEXT    NOT NULL REFERENCES workspace_files (id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    size       INTEGER NOT NULL,
    sha256     TEXT    NOT NULL,
    op         TEXT    NOT NULL CHECK (op IN ('write', 'edit', 'restore')),
    object_key TEXT    NOT NULL,
    created_at TEXT    NOT NULL,
    PRIMARY KEY (file_id, version)
) STRICT, WITHOUT ROWID;

-- What each scope holds, kept with every write and delete so that a
-- write checks its scope's quota without reading every file's row.
-- Its owner columns are a file's, so it goes when they go.
CREATE TABLE workspace_usage (
    scope_kind      TEXT    NOT NULL,
    scope_id        TEXT    NOT NULL,
    user_id         TEXT,
    conversation_id TEXT    REFERENCES conversations (id) ON DELETE CASCADE,
    project_id      TEXT    REFERENCES projects (id) ON DELETE CASCADE,
    bytes           INTEGER NOT NULL,
    files           INTEGER NOT NULL,
    PRIMARY KEY (scope_kind, scope_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX workspace_usage_user ON workspace_usage (user_id);
CREATE INDEX workspace_usage_conversation ON workspace_usage (conversation_id);
CREATE INDEX workspace_usage_project ON workspace_usage (project_id);

CREATE TRIGGER workspace_files_erasure BEFORE INSERT ON workspace_files
WHEN NEW.user_id IS NOT NULL AND EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'erasure_in_progress');
END;

CREATE TRIGGER projects_erasure BEFORE INSERT ON projects
WHEN EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.owner_id)
BEGIN
    SELECT RAISE(ABORT, 'erasure_in_progress');
END;
