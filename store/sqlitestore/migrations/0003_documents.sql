-- Documents uploaded into conversations, their chunks, and the full-text
-- index over chunks: an FTS5 table over the chunks' text (external
-- content, kept in step by triggers, which SQLite also fires for the rows
-- a cascade deletes), tokenised by words with Porter stemming.

CREATE TABLE documents (
    id              TEXT    PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    user_id         TEXT    NOT NULL,
    filename        TEXT    NOT NULL,
    content_type    TEXT    NOT NULL,
    size_bytes      INTEGER NOT NULL,
    status          TEXT    NOT NULL CHECK (status IN ('uploading', 'chunking', 'summarizing', 'ready', 'error')),
    error           TEXT    NOT NULL DEFAULT '',
    summary         TEXT    NOT NULL DEFAULT '',
    chunk_count     INTEGER NOT NULL DEFAULT 0,
    omitted_chars   INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL
) STRICT;

CREATE INDEX documents_by_conversation ON documents (conversation_id, created_at, id);
CREATE INDEX documents_by_user ON documents (user_id);

-- A rowid table: FTS5's external content is keyed by rowid.
CREATE TABLE chunks (
    document_id TEXT    NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,
    start_char  INTEGER NOT NULL,
    end_char    INTEGER NOT NULL,
    page        INTEGER NOT NULL DEFAULT 0,
    last_page   INTEGER NOT NULL DEFAULT 0,
    text        TEXT    NOT NULL,
    summary     TEXT    NOT NULL DEFAULT '',
    UNIQUE (document_id, idx)
) STRICT;

CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    text,
    content = 'chunks',
    content_rowid = 'rowid',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, text) VALUES (new.rowid, new.text);
END;

CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;

CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO chunks_fts (rowid, text) VALUES (new.rowid, new.text);
END;
