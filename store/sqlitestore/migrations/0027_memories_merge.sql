-- The memories' full-text index merges its segments at three a level
-- rather than sixteen. FTS5 writes a segment for each transaction that
-- changes the index, and learning changes it a memory at a time, so at
-- the default the index held up to fifteen small segments a level, and
-- every search looks each word up in every segment: in SQLite 3.54 each
-- such walk also prepares FTS5's segment lookup again (twice a walk while
-- there are several segments), so a one-user index, which learning keeps
-- rewriting, searched several times slower than a merged one. Merging
-- that often costs a memory's write little: its segments are small.
INSERT INTO memories_fts (memories_fts, rank) VALUES ('crisismerge', 3);
