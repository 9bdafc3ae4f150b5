-- A memory search is always one user's: WHERE user_id = ? AND tsv @@ query,
-- over at most a few hundred rows (cognition prunes each user to
-- Config.MaxMemories). With the GIN index over every user's memories, the
-- planner, whenever its statistics lagged behind the inserts, intersected
-- the index's matches for the words (a quarter of all memories at 100,000)
-- with the user's rows: 4 to 10 ms a recall instead of 0.5. Without it the
-- user's index is the only way in, and ts_rank reads the stored tsvector of
-- those rows alone. The tsvector column and its trigger stay.
DROP INDEX memories_tsv;
