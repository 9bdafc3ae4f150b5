-- What the agent remembers of each user across conversations: episodic
-- memories with a full-text index over their summary and topics (FTS5,
-- external content, kept in step by triggers), each user's profile, and
-- the agent's performance per tool. Memories outlive the conversation
-- they came from, so they hold its id without a foreign key.

-- A rowid table: FTS5's external content is keyed by rowid.
CREATE TABLE memories (
    id              TEXT    NOT NULL UNIQUE,
    user_id         TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL DEFAULT '',
    summary         TEXT    NOT NULL,
    outcome         TEXT    NOT NULL DEFAULT '',
    topics          TEXT    NOT NULL DEFAULT '[]',
    topic_text      TEXT    NOT NULL DEFAULT '',
    importance      REAL    NOT NULL CHECK (importance >= 0 AND importance <= 1),
    access_count    INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT    NOT NULL,
    last_accessed   TEXT    NOT NULL
) STRICT;

CREATE INDEX memories_by_user ON memories (user_id, created_at, id);
CREATE INDEX memories_by_importance ON memories (user_id, importance, last_accessed);
CREATE INDEX memories_by_use ON memories (last_accessed);

-- owner is a token made of the user id ('u' and its hex), so a search
-- asks the index for one user's matches (owner : "u…" AND (…)) instead of
-- scoring every user's and keeping one's. It is never read back.
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    summary,
    topic_text,
    owner,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, summary, topic_text, owner) VALUES (new.rowid, new.summary, new.topic_text, 'u' || hex(new.user_id));
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, summary, topic_text, owner) VALUES ('delete', old.rowid, old.summary, old.topic_text, 'u' || hex(old.user_id));
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF summary, topic_text ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, summary, topic_text, owner) VALUES ('delete', old.rowid, old.summary, old.topic_text, 'u' || hex(old.user_id));
    INSERT INTO memories_fts (rowid, summary, topic_text, owner) VALUES (new.rowid, new.summary, new.topic_text, 'u' || hex(new.user_id));
END;

CREATE TABLE profiles (
    user_id     TEXT PRIMARY KEY,
    expertise   TEXT NOT NULL DEFAULT '',
    style       TEXT NOT NULL DEFAULT '',
    interests   TEXT NOT NULL DEFAULT '[]',
    patterns    TEXT NOT NULL DEFAULT '{}',
    preferences TEXT NOT NULL DEFAULT '{}',
    updated_at  TEXT NOT NULL
) STRICT;

CREATE TABLE tool_stats (
    tool           TEXT    PRIMARY KEY,
    calls          INTEGER NOT NULL DEFAULT 0,
    failures       INTEGER NOT NULL DEFAULT 0,
    blocked        INTEGER NOT NULL DEFAULT 0,
    rejections     INTEGER NOT NULL DEFAULT 0,
    confidence_sum REAL    NOT NULL DEFAULT 0
) STRICT;
