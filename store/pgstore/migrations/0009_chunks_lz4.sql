-- A chunk's text (about 4,000 characters) and its tsvector are compressed
-- when stored, and pglz, the default, compresses at a fraction of lz4's
-- speed: about 5 ms of every MiB ingested. lz4 where the server has it
-- (PostgreSQL 14 and later, built with it); elsewhere nothing changes.
-- Searches read the vectors back: ranking a user's 10,000 chunks got
-- twice as fast, but a plan that scans them all to find one
-- conversation's now decompresses vectors pglz had left uncompressed
-- (its p99 went from 50 to about 80 ms in BenchmarkSearchChunks).
DO $$
BEGIN
    IF current_setting('server_version_num')::integer >= 140000 THEN
        ALTER TABLE chunks ALTER COLUMN text SET COMPRESSION lz4, ALTER COLUMN tsv SET COMPRESSION lz4;
    END IF;
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END
$$;
