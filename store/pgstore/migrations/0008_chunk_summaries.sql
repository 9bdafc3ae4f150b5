-- A chunk's summary has a table of its own. Summaries come after their
-- chunks (from the model, retried apart), and in the chunk's row each was
-- an UPDATE that wrote the whole row again: its text, and every lexeme of
-- its tsvector into the GIN index once more (a chunk's row is too large
-- for a heap-only update), which cost as much as storing the chunk. Here
-- a summary is a small row of its own, gone with its chunk.

CREATE TABLE chunk_summaries (
    document_id text    COLLATE "C" NOT NULL,
    idx         integer NOT NULL,
    summary     text    NOT NULL,
    PRIMARY KEY (document_id, idx),
    FOREIGN KEY (document_id, idx) REFERENCES chunks (document_id, idx) ON DELETE CASCADE
);

INSERT INTO chunk_summaries (document_id, idx, summary)
    SELECT document_id, idx, summary FROM chunks WHERE summary <> '';

ALTER TABLE chunks DROP COLUMN summary;
