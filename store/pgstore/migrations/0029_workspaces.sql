-- The agent's workspace (documents/workspace): projects that a few users
-- share, and files in three scopes: a conversation's, a user's, a
-- project's. A file's bytes live in the document file store, one object
-- per version; these rows name them. A conversation-scope file goes with
-- its conversation (conversation_id cascades), a project-scope file with
-- its project; user_id is the owner of a user- or conversation-scope file
-- (NULL for a project's), so erasing a user deletes theirs by it.

CREATE TABLE projects (
    id         text        COLLATE "C" PRIMARY KEY,
    name       text        NOT NULL,
    owner_id   text        NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE INDEX projects_owner ON projects (owner_id);

-- The owner is a member too.
CREATE TABLE project_members (
    project_id text        COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    text        NOT NULL,
    added_at   timestamptz NOT NULL,
    PRIMARY KEY (project_id, user_id)
);

CREATE INDEX project_members_user ON project_members (user_id);

-- The project a conversation is attached to: its "project" scope.
ALTER TABLE conversations ADD COLUMN project_id text COLLATE "C" REFERENCES projects (id) ON DELETE SET NULL;
CREATE INDEX conversations_project ON conversations (project_id);

CREATE TABLE workspace_files (
    id              text        COLLATE "C" PRIMARY KEY,
    scope_kind      text        NOT NULL CHECK (scope_kind IN ('conversation', 'user', 'project')),
    scope_id        text        COLLATE "C" NOT NULL,
    user_id         text,
    conversation_id text        COLLATE "C" REFERENCES conversations (id) ON DELETE CASCADE,
    project_id      text        COLLATE "C" REFERENCES projects (id) ON DELETE CASCADE,
    path            text        COLLATE "C" NOT NULL,
    version         integer     NOT NULL,
    size            bigint      NOT NULL,
    sha256          text        NOT NULL,
    object_key      text        NOT NULL, -- '' for an empty file: no object
    updated_at      timestamptz NOT NULL,
    UNIQUE (scope_kind, scope_id, path)
);

CREATE INDEX workspace_files_user ON workspace_files (user_id);
CREATE INDEX workspace_files_conversation ON workspace_files (conversation_id);
CREATE INDEX workspace_files_project ON workspace_files (project_id);

-- Every version of a file, the current one included; immutable.
CREATE TABLE workspace_versions (
    file_id    text        COLLATE "C" NOT NULL REFERENCES workspace_files (id) ON DELETE CASCADE,
    version    integer     NOT NULL,
    size       bigint      NOT NULL,
    sha256     text        NOT NULL,
    op         text        NOT NULL CHECK (op IN ('write', 'edit', 'restore')),
    object_key text        NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (file_id, version)
);

-- What each scope holds, kept with every write and delete so that a
-- write checks its scope's quota without reading every file's row.
-- Its owner columns are a file's, so it goes when they go.
CREATE TABLE workspace_usage (
    scope_kind      text   NOT NULL,
    scope_id        text   COLLATE "C" NOT NULL,
    user_id         text,
    conversation_id text   COLLATE "C" REFERENCES conversations (id) ON DELETE CASCADE,
    project_id      text   COLLATE "C" REFERENCES projects (id) ON DELETE CASCADE,
    bytes           bigint NOT NULL,
    files           bigint NOT NULL,
    PRIMARY KEY (scope_kind, scope_id)
);

CREATE INDEX workspace_usage_user ON workspace_usage (user_id);
CREATE INDEX workspace_usage_conversation ON workspace_usage (conversation_id);
CREATE INDEX workspace_usage_project ON workspace_usage (project_id);

-- A project-scope file has no user: the trigger lets NULL through.
CREATE FUNCTION refuse_erased_file_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.user_id IS NOT NULL AND EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id) THEN
        RAISE EXCEPTION 'the user is being erased'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'erasure_in_progress';
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION refuse_erased_project_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.owner_id) THEN
        RAISE EXCEPTION 'the user is being erased'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'erasure_in_progress';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER workspace_files_erasure BEFORE INSERT ON workspace_files
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_file_owner();
CREATE TRIGGER projects_erasure BEFORE INSERT ON projects
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_project_owner();
