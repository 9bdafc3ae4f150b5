-- Each user's share of the tool stats, so erasing a user takes theirs out
-- of the totals (ToolStats sums the rows of a tool). Totals counted before
-- this migration belong to no user: user_id ''.
--
-- And the full-text indexes forget what is deleted from them: FTS5's
-- secure-delete removes a deleted row's terms from the index at once,
-- where FTS5 would otherwise keep them until a merge, so an erased
-- document's or memory's words do not stay in the file.

CREATE TABLE tool_stats_by_user (
    user_id        TEXT    NOT NULL,
    tool           TEXT    NOT NULL,
    calls          INTEGER NOT NULL DEFAULT 0,
    failures       INTEGER NOT NULL DEFAULT 0,
    blocked        INTEGER NOT NULL DEFAULT 0,
    rejections     INTEGER NOT NULL DEFAULT 0,
    confidence_sum REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, tool)
) STRICT;

INSERT INTO tool_stats_by_user (user_id, tool, calls, failures, blocked, rejections, confidence_sum)
SELECT '', tool, calls, failures, blocked, rejections, confidence_sum FROM tool_stats;

DROP TABLE tool_stats;

ALTER TABLE tool_stats_by_user RENAME TO tool_stats;

INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('secure-delete', 1);

INSERT INTO memories_fts (memories_fts, rank) VALUES ('secure-delete', 1);
