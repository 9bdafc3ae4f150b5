-- A chunk's summary has a table of its own. Summaries come after their
-- chunks (from the model, retried apart), and in the chunk's row each was
-- an UPDATE that wrote the whole row, text and all, again. Here a summary
-- is a small row of its own, gone with its chunk.

CREATE TABLE chunk_summaries (
    document_id TEXT    NOT NULL,
    idx         INTEGER NOT NULL,
    summary     TEXT    NOT NULL,
    PRIMARY KEY (document_id, idx),
    FOREIGN KEY (document_id, idx) REFERENCES chunks (document_id, idx) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

INSERT INTO chunk_summaries (document_id, idx, summary)
    SELECT document_id, idx, summary FROM chunks WHERE summary <> '';

ALTER TABLE chunks DROP COLUMN summary;
