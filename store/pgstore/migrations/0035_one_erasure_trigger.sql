-- One trigger function refuses the rows of a user being erased (0013),
-- whatever the column that names the user: user_id, or the column a
-- trigger passes as its argument. It takes the place of the two that
-- 0029 wrote for workspace files and projects. A NULL user (a
-- project-scope file's) finds no erasure and passes.
CREATE OR REPLACE FUNCTION refuse_erased_user() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    who text;
BEGIN
    -- PL/pgSQL plans each assignment when it first runs, for each table:
    -- a table without user_id never plans the first.
    IF TG_NARGS = 0 THEN
        who := NEW.user_id;
    ELSE
        who := to_jsonb(NEW) ->> TG_ARGV[0];
    END IF;
    IF EXISTS (SELECT 1 FROM erasures WHERE user_id = who) THEN
        RAISE EXCEPTION 'the user is being erased'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'erasure_in_progress';
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER workspace_files_erasure ON workspace_files;
CREATE TRIGGER workspace_files_erasure BEFORE INSERT ON workspace_files
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_user();
DROP TRIGGER projects_erasure ON projects;
CREATE TRIGGER projects_erasure BEFORE INSERT ON projects
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_user('owner_id');

DROP FUNCTION refuse_erased_file_owner();
DROP FUNCTION refuse_erased_project_owner();
