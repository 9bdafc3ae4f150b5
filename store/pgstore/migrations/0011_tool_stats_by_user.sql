-- Each user's share of the tool stats, so erasing a user takes theirs out
-- of the totals (ToolStats sums the rows of a tool). Totals counted before
-- this migration belong to no user: user_id ''.

CREATE TABLE tool_stats_by_user (
    user_id        text             NOT NULL,
    tool           text             NOT NULL,
    calls          bigint           NOT NULL DEFAULT 0,
    failures       bigint           NOT NULL DEFAULT 0,
    blocked        bigint           NOT NULL DEFAULT 0,
    rejections     bigint           NOT NULL DEFAULT 0,
    confidence_sum double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, tool)
);

INSERT INTO tool_stats_by_user (user_id, tool, calls, failures, blocked, rejections, confidence_sum)
SELECT '', tool, calls, failures, blocked, rejections, confidence_sum FROM tool_stats;

DROP TABLE tool_stats;

ALTER TABLE tool_stats_by_user RENAME TO tool_stats;
