-- What the agent remembers of each user across conversations: episodic
-- memories with a full-text index over their summary and topics (a
-- tsvector column under a GIN index, computed by a trigger when either is
-- written, and only then: recording a recall must not recompute it),
-- each user's profile, and the agent's performance per tool. Memories
-- outlive the conversation they came from, so they hold its id without a
-- foreign key.

CREATE TABLE memories (
    id              text             COLLATE "C" PRIMARY KEY,
    user_id         text             NOT NULL,
    conversation_id text             NOT NULL DEFAULT '',
    summary         text             NOT NULL,
    outcome         text             NOT NULL DEFAULT '',
    topics          jsonb            NOT NULL DEFAULT '[]',
    topic_text      text             NOT NULL DEFAULT '',
    importance      double precision NOT NULL CHECK (importance >= 0 AND importance <= 1),
    access_count    integer          NOT NULL DEFAULT 0,
    created_at      timestamptz      NOT NULL,
    last_accessed   timestamptz      NOT NULL,
    tsv             tsvector         NOT NULL DEFAULT ''::tsvector
);

CREATE INDEX memories_by_user ON memories (user_id, created_at, id);
CREATE INDEX memories_by_importance ON memories (user_id, importance, last_accessed);
CREATE INDEX memories_by_use ON memories (last_accessed);

CREATE TRIGGER memories_tsv BEFORE INSERT OR UPDATE OF summary, topic_text ON memories
    FOR EACH ROW EXECUTE FUNCTION tsvector_update_trigger(tsv, 'pg_catalog.english', summary, topic_text);

CREATE INDEX memories_tsv ON memories USING GIN (tsv);

CREATE TABLE profiles (
    user_id     text        PRIMARY KEY,
    expertise   text        NOT NULL DEFAULT '',
    style       text        NOT NULL DEFAULT '',
    interests   jsonb       NOT NULL DEFAULT '[]',
    patterns    jsonb       NOT NULL DEFAULT '{}',
    preferences jsonb       NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL
);

CREATE TABLE tool_stats (
    tool           text             PRIMARY KEY,
    calls          bigint           NOT NULL DEFAULT 0,
    failures       bigint           NOT NULL DEFAULT 0,
    blocked        bigint           NOT NULL DEFAULT 0,
    rejections     bigint           NOT NULL DEFAULT 0,
    confidence_sum double precision NOT NULL DEFAULT 0
);
