-- A chunk's text (about 4,000 characters) and its tsvector are compressed
-- when stored, and pglz, the default, compresses at a fraction of lz4's
-- speed: about 5 ms of every MiB ingested. lz4 where the server has it
-- (PostgreSQL 14 and later, built with it); elsewhere nothing changes.
DO $$
BEGIN
    IF current_setting('server_version_num')::integer >= 140000 THEN
        ALTER TABLE chunks ALTER COLUMN text SET COMPRESSION lz4, ALTER COLUMN tsv SET COMPRESSION lz4;
    END IF;
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END
$$;
