-- Documents uploaded into conversations, their chunks, and the full-text
-- index over chunks: a tsvector of each chunk's text (English stemming
-- and stop words) under a GIN index. The vector is a column of the chunk,
-- so deleting a chunk (or cascading to it) deletes its index entry. A
-- trigger computes it when the text is written, and only then: a stored
-- generated column would be computed again by every update of the row,
-- such as recording the chunk's summary.

CREATE TABLE documents (
    id              text        COLLATE "C" PRIMARY KEY,
    conversation_id text        COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    user_id         text        NOT NULL,
    filename        text        NOT NULL,
    content_type    text        NOT NULL,
    size_bytes      bigint      NOT NULL,
    status          text        NOT NULL CHECK (status IN ('uploading', 'chunking', 'summarizing', 'ready', 'error')),
    error           text        NOT NULL DEFAULT '',
    summary         text        NOT NULL DEFAULT '',
    chunk_count     integer     NOT NULL DEFAULT 0,
    omitted_chars   integer     NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

CREATE INDEX documents_by_conversation ON documents (conversation_id, created_at, id);
CREATE INDEX documents_by_user ON documents (user_id);

CREATE TABLE chunks (
    document_id text     COLLATE "C" NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    idx         integer  NOT NULL,
    start_char  integer  NOT NULL,
    end_char    integer  NOT NULL,
    page        integer  NOT NULL DEFAULT 0,
    last_page   integer  NOT NULL DEFAULT 0,
    text        text     NOT NULL,
    summary     text     NOT NULL DEFAULT '',
    tsv         tsvector NOT NULL DEFAULT ''::tsvector,
    PRIMARY KEY (document_id, idx)
);

CREATE TRIGGER chunks_tsv BEFORE INSERT OR UPDATE OF text ON chunks
    FOR EACH ROW EXECUTE FUNCTION tsvector_update_trigger(tsv, 'pg_catalog.english', text);

CREATE INDEX chunks_tsv ON chunks USING GIN (tsv);
