-- Documents uploaded into conversations, their chunks, and the full-text
-- index over chunks: a stored tsvector of each chunk's text (English
-- stemming and stop words) under a GIN index. The vector is a column of
-- the chunk, so deleting a chunk (or cascading to it) deletes its index
-- entry.

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
    tsv         tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    PRIMARY KEY (document_id, idx)
);

CREATE INDEX chunks_tsv ON chunks USING GIN (tsv);
