--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)


--
-- Name: trellis_legacy; Type: SCHEMA; Schema: -; Owner: -
--



--
-- Name: refuse_erased_file_owner(); Type: FUNCTION; Schema: trellis_legacy; Owner: -
--

CREATE FUNCTION trellis_legacy.refuse_erased_file_owner() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.user_id IS NOT NULL AND EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id) THEN
        RAISE EXCEPTION 'the user is being erased'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'erasure_in_progress';
    END IF;
    RETURN NEW;
END
$$;


--
-- Name: refuse_erased_project_owner(); Type: FUNCTION; Schema: trellis_legacy; Owner: -
--

CREATE FUNCTION trellis_legacy.refuse_erased_project_owner() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.owner_id) THEN
        RAISE EXCEPTION 'the user is being erased'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'erasure_in_progress';
    END IF;
    RETURN NEW;
END
$$;


--
-- Name: refuse_erased_user(); Type: FUNCTION; Schema: trellis_legacy; Owner: -
--

CREATE FUNCTION trellis_legacy.refuse_erased_user() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id) THEN
        RAISE EXCEPTION 'the user is being erased'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'erasure_in_progress';
    END IF;
    RETURN NEW;
END
$$;




--
-- Name: api_keys; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.api_keys (
    id text NOT NULL,
    user_id text NOT NULL,
    name text NOT NULL,
    prefix text NOT NULL,
    hash bytea NOT NULL,
    created_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone
);


--
-- Name: approvals; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.approvals (
    id text NOT NULL COLLATE pg_catalog."C",
    conversation_id text NOT NULL COLLATE pg_catalog."C",
    run_id text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL,
    tool_call_id text NOT NULL,
    tool text NOT NULL,
    args json NOT NULL,
    revision integer NOT NULL,
    status text NOT NULL,
    decision text DEFAULT ''::text NOT NULL,
    edited_args json,
    reason text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    resolved_at timestamp with time zone,
    expires_at timestamp with time zone,
    on_expiry text DEFAULT ''::text NOT NULL,
    timed_out boolean DEFAULT false NOT NULL,
    CONSTRAINT approvals_on_expiry_check CHECK ((on_expiry = ANY (ARRAY[''::text, 'reject'::text, 'approve'::text, 'cancel'::text]))),
    CONSTRAINT approvals_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'approved'::text, 'edited'::text, 'rejected'::text, 'expired'::text])))
);


--
-- Name: chat_migrations; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.chat_migrations (
    version integer NOT NULL,
    name text NOT NULL
);


--
-- Name: chunk_summaries; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.chunk_summaries (
    document_id text NOT NULL COLLATE pg_catalog."C",
    idx integer NOT NULL,
    summary text NOT NULL
);


--
-- Name: chunks; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.chunks (
    document_id text NOT NULL COLLATE pg_catalog."C",
    idx integer NOT NULL,
    start_char integer NOT NULL,
    end_char integer NOT NULL,
    page integer DEFAULT 0 NOT NULL,
    last_page integer DEFAULT 0 NOT NULL,
    text text NOT NULL,
    tsv tsvector DEFAULT ''::tsvector NOT NULL
);
ALTER TABLE ONLY trellis_legacy.chunks ALTER COLUMN text SET COMPRESSION lz4;
ALTER TABLE ONLY trellis_legacy.chunks ALTER COLUMN tsv SET COMPRESSION lz4;


--
-- Name: clarifications; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.clarifications (
    id text NOT NULL COLLATE pg_catalog."C",
    conversation_id text NOT NULL COLLATE pg_catalog."C",
    run_id text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL,
    question text NOT NULL,
    status text NOT NULL,
    answer text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    resolved_at timestamp with time zone,
    expires_at timestamp with time zone,
    on_expiry text DEFAULT ''::text NOT NULL,
    timed_out boolean DEFAULT false NOT NULL,
    CONSTRAINT clarifications_on_expiry_check CHECK ((on_expiry = ANY (ARRAY[''::text, 'continue'::text, 'cancel'::text]))),
    CONSTRAINT clarifications_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'answered'::text, 'expired'::text])))
);


--
-- Name: conversations; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.conversations (
    id text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL,
    title text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    run_count bigint DEFAULT 0 NOT NULL,
    metadata text DEFAULT '{}'::text NOT NULL,
    title_by_user boolean DEFAULT false NOT NULL,
    project_id text COLLATE pg_catalog."C",
    learned_num bigint DEFAULT 0 NOT NULL
);


--
-- Name: documents; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.documents (
    id text NOT NULL COLLATE pg_catalog."C",
    conversation_id text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL,
    filename text NOT NULL,
    content_type text NOT NULL,
    size_bytes bigint NOT NULL,
    status text NOT NULL,
    error text DEFAULT ''::text NOT NULL,
    summary text DEFAULT ''::text NOT NULL,
    chunk_count integer DEFAULT 0 NOT NULL,
    omitted_chars integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT documents_status_check CHECK ((status = ANY (ARRAY['uploading'::text, 'chunking'::text, 'summarizing'::text, 'ready'::text, 'error'::text])))
);


--
-- Name: elicitations; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.elicitations (
    id text NOT NULL COLLATE pg_catalog."C",
    conversation_id text NOT NULL COLLATE pg_catalog."C",
    run_id text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL,
    source text NOT NULL,
    message text NOT NULL,
    schema json NOT NULL,
    status text NOT NULL,
    content json,
    created_at timestamp with time zone NOT NULL,
    resolved_at timestamp with time zone,
    expires_at timestamp with time zone,
    on_expiry text DEFAULT ''::text NOT NULL,
    timed_out boolean DEFAULT false NOT NULL,
    CONSTRAINT elicitations_on_expiry_check CHECK ((on_expiry = ANY (ARRAY[''::text, 'decline'::text, 'cancel'::text]))),
    CONSTRAINT elicitations_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'accepted'::text, 'declined'::text, 'cancelled'::text, 'expired'::text])))
);


--
-- Name: erasures; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.erasures (
    user_id text NOT NULL,
    requested_at timestamp with time zone NOT NULL
);


--
-- Name: events; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.events (
    run_id text NOT NULL COLLATE pg_catalog."C",
    seq bigint NOT NULL,
    type text NOT NULL,
    data text NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: memories; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.memories (
    id text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL,
    conversation_id text DEFAULT ''::text NOT NULL,
    summary text NOT NULL,
    outcome text DEFAULT ''::text NOT NULL,
    topics jsonb DEFAULT '[]'::jsonb NOT NULL,
    topic_text text DEFAULT ''::text NOT NULL,
    importance double precision NOT NULL,
    access_count integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_accessed timestamp with time zone NOT NULL,
    tsv tsvector DEFAULT ''::tsvector NOT NULL,
    CONSTRAINT memories_importance_check CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision)))
);


--
-- Name: messages; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.messages (
    id text NOT NULL COLLATE pg_catalog."C",
    conversation_id text NOT NULL COLLATE pg_catalog."C",
    run_id text NOT NULL COLLATE pg_catalog."C",
    role text NOT NULL,
    content text NOT NULL,
    citations json,
    meta json,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT messages_role_check CHECK ((role = ANY (ARRAY['user'::text, 'assistant'::text])))
);


--
-- Name: profiles; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.profiles (
    user_id text NOT NULL,
    expertise text DEFAULT ''::text NOT NULL,
    style text DEFAULT ''::text NOT NULL,
    interests jsonb DEFAULT '[]'::jsonb NOT NULL,
    patterns jsonb DEFAULT '{}'::jsonb NOT NULL,
    preferences jsonb DEFAULT '{}'::jsonb NOT NULL,
    updated_at timestamp with time zone NOT NULL
);


--
-- Name: project_members; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.project_members (
    project_id text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL,
    added_at timestamp with time zone NOT NULL
);


--
-- Name: projects; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.projects (
    id text NOT NULL COLLATE pg_catalog."C",
    name text NOT NULL,
    owner_id text NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: queued_runs; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.queued_runs (
    seq bigint NOT NULL,
    id text NOT NULL COLLATE pg_catalog."C",
    conversation_id text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL,
    user_message text NOT NULL,
    request_id text NOT NULL,
    input text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    model text DEFAULT ''::text NOT NULL
);


--
-- Name: queued_runs_seq_seq; Type: SEQUENCE; Schema: trellis_legacy; Owner: -
--

ALTER TABLE trellis_legacy.queued_runs ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME trellis_legacy.queued_runs_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: runs; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.runs (
    id text NOT NULL COLLATE pg_catalog."C",
    conversation_id text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL,
    num bigint NOT NULL,
    status text NOT NULL,
    interrupt_reason text DEFAULT ''::text NOT NULL,
    superseded boolean DEFAULT false NOT NULL,
    user_message text NOT NULL,
    usage json DEFAULT '{}'::json NOT NULL,
    request_id text NOT NULL,
    owner text NOT NULL,
    checkpoint_id text NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    completed_at timestamp with time zone,
    input text DEFAULT ''::text NOT NULL,
    parent_id text DEFAULT ''::text NOT NULL COLLATE pg_catalog."C",
    model text DEFAULT ''::text NOT NULL,
    compacted boolean DEFAULT false NOT NULL,
    CONSTRAINT runs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'interrupted'::text, 'completed'::text, 'cancelled'::text, 'failed'::text])))
);


--
-- Name: sessions; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.sessions (
    hash bytea NOT NULL,
    user_id text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL
);


--
-- Name: tool_calls; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.tool_calls (
    id text NOT NULL COLLATE pg_catalog."C",
    run_id text NOT NULL COLLATE pg_catalog."C",
    tool text NOT NULL,
    state text NOT NULL,
    outcome json,
    again text DEFAULT ''::text NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT tool_calls_state_check CHECK ((state = ANY (ARRAY['started'::text, 'asking'::text, 'ended'::text])))
);


--
-- Name: tool_stats; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.tool_stats (
    user_id text NOT NULL,
    tool text NOT NULL,
    calls bigint DEFAULT 0 NOT NULL,
    failures bigint DEFAULT 0 NOT NULL,
    blocked bigint DEFAULT 0 NOT NULL,
    rejections bigint DEFAULT 0 NOT NULL,
    confidence_sum double precision DEFAULT 0 NOT NULL
);


--
-- Name: uncertain_calls; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.uncertain_calls (
    id text NOT NULL COLLATE pg_catalog."C",
    conversation_id text NOT NULL COLLATE pg_catalog."C",
    run_id text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL,
    tool_call_id text NOT NULL,
    tool text NOT NULL,
    args json NOT NULL,
    status text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    resolved_at timestamp with time zone,
    expires_at timestamp with time zone,
    on_expiry text DEFAULT ''::text NOT NULL,
    timed_out boolean DEFAULT false NOT NULL,
    CONSTRAINT uncertain_calls_on_expiry_check CHECK ((on_expiry = ANY (ARRAY[''::text, 'skip'::text, 'fail'::text]))),
    CONSTRAINT uncertain_calls_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'retried'::text, 'skipped'::text, 'failed'::text, 'expired'::text])))
);


--
-- Name: usage_days; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.usage_days (
    user_id text NOT NULL COLLATE pg_catalog."C",
    day text NOT NULL COLLATE pg_catalog."C",
    model text NOT NULL COLLATE pg_catalog."C",
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    total_tokens bigint DEFAULT 0 NOT NULL,
    tool_calls bigint DEFAULT 0 NOT NULL,
    runs bigint DEFAULT 0 NOT NULL
);


--
-- Name: webhook_deliveries; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.webhook_deliveries (
    id text NOT NULL COLLATE pg_catalog."C",
    endpoint text NOT NULL COLLATE pg_catalog."C",
    run_id text NOT NULL COLLATE pg_catalog."C",
    seq bigint NOT NULL,
    event_type text NOT NULL,
    status text NOT NULL,
    queued boolean DEFAULT false NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_status integer DEFAULT 0 NOT NULL,
    last_error text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    delivered_at timestamp with time zone,
    CONSTRAINT webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text])))
);


--
-- Name: webhook_routes; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.webhook_routes (
    endpoint text NOT NULL COLLATE pg_catalog."C",
    event_type text NOT NULL COLLATE pg_catalog."C"
);


--
-- Name: workspace_files; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.workspace_files (
    id text NOT NULL COLLATE pg_catalog."C",
    scope_kind text NOT NULL,
    scope_id text NOT NULL COLLATE pg_catalog."C",
    user_id text,
    conversation_id text COLLATE pg_catalog."C",
    project_id text COLLATE pg_catalog."C",
    path text NOT NULL COLLATE pg_catalog."C",
    version integer NOT NULL,
    size bigint NOT NULL,
    sha256 text NOT NULL,
    object_key text NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT workspace_files_scope_kind_check CHECK ((scope_kind = ANY (ARRAY['conversation'::text, 'user'::text, 'project'::text])))
);


--
-- Name: workspace_usage; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.workspace_usage (
    scope_kind text NOT NULL,
    scope_id text NOT NULL COLLATE pg_catalog."C",
    user_id text,
    conversation_id text COLLATE pg_catalog."C",
    project_id text COLLATE pg_catalog."C",
    bytes bigint NOT NULL,
    files bigint NOT NULL
);


--
-- Name: workspace_versions; Type: TABLE; Schema: trellis_legacy; Owner: -
--

CREATE TABLE trellis_legacy.workspace_versions (
    file_id text NOT NULL COLLATE pg_catalog."C",
    version integer NOT NULL,
    size bigint NOT NULL,
    sha256 text NOT NULL,
    op text NOT NULL,
    object_key text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT workspace_versions_op_check CHECK ((op = ANY (ARRAY['write'::text, 'edit'::text, 'restore'::text])))
);


--
-- Data for Name: api_keys; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: approvals; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: chat_migrations; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--

INSERT INTO trellis_legacy.chat_migrations VALUES (1, '0001_chat.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (2, '0002_clarifications.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (3, '0003_documents.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (4, '0004_conversation_metadata.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (5, '0005_memories.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (6, '0006_memories_search_by_user.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (7, '0007_chunks_vector_from_client.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (8, '0008_chunk_summaries.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (9, '0009_chunks_lz4.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (10, '0010_run_input.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (11, '0011_tool_stats_by_user.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (12, '0012_tool_calls.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (13, '0013_erasures.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (14, '0014_documents_uploading.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (15, '0015_conversation_titles.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (16, '0016_approval_expiry.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (17, '0017_webhooks.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (18, '0018_queued_runs.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (19, '0019_run_parents.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (20, '0020_api_keys.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (21, '0021_conversations_idle.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (22, '0022_elicitation_expiry.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (23, '0023_usage.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (26, '0026_event_compaction.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (27, '0027_sessions.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (28, '0028_clarification_uncertain_expiry.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (29, '0029_workspaces.sql');
INSERT INTO trellis_legacy.chat_migrations VALUES (33, '0033_learned_turns.sql');


--
-- Data for Name: chunk_summaries; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: chunks; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: clarifications; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: conversations; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--

INSERT INTO trellis_legacy.conversations VALUES ('01a226b2-bb03-7186-824c-f049006da3f0', 'u1', 'hello', '2026-11-29 09:46:17.219875+00', '2026-11-29 09:46:17.279061+00', 2, '{}', false, NULL, 0);
INSERT INTO trellis_legacy.conversations VALUES ('01a226b2-bb43-7e56-8ae1-a180d4fb6814', 'u1', 'count', '2026-11-29 09:46:17.284005+00', '2026-11-29 09:46:17.305503+00', 1, '{}', false, NULL, 0);


--
-- Data for Name: documents; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: elicitations; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: erasures; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: events; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--

INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb03-7d59-9d60-20ffe449b558', 1, 'run.started', '{"seq":1,"type":"run.started","run_id":"01a226b2-bb03-7d59-9d60-20ffe449b558","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z"}', '2026-11-29 09:46:17.234767+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb03-7d59-9d60-20ffe449b558', 2, 'node.start', '{"seq":2,"type":"node.start","run_id":"01a226b2-bb03-7d59-9d60-20ffe449b558","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z","node":"supervisor"}', '2026-11-29 09:46:17.234767+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb03-7d59-9d60-20ffe449b558', 3, 'response.chunk', '{"seq":3,"type":"response.chunk","run_id":"01a226b2-bb03-7d59-9d60-20ffe449b558","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z","text":"Hel"}', '2026-11-29 09:46:17.234767+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb03-7d59-9d60-20ffe449b558', 4, 'response.chunk', '{"seq":4,"type":"response.chunk","run_id":"01a226b2-bb03-7d59-9d60-20ffe449b558","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z","text":"lo."}', '2026-11-29 09:46:17.240841+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb03-7d59-9d60-20ffe449b558', 5, 'node.end', '{"seq":5,"type":"node.end","run_id":"01a226b2-bb03-7d59-9d60-20ffe449b558","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z","node":"write"}', '2026-11-29 09:46:17.248224+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb03-7d59-9d60-20ffe449b558', 6, 'response.done', '{"seq":6,"type":"response.done","run_id":"01a226b2-bb03-7d59-9d60-20ffe449b558","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z","text":"Hello."}', '2026-11-29 09:46:17.248224+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb03-7d59-9d60-20ffe449b558', 7, 'run.completed', '{"seq":7,"type":"run.completed","run_id":"01a226b2-bb03-7d59-9d60-20ffe449b558","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z"}', '2026-11-29 09:46:17.248224+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb33-726a-bce6-d6a5eef15a86', 1, 'run.started', '{"seq":1,"type":"run.started","run_id":"01a226b2-bb33-726a-bce6-d6a5eef15a86","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z"}', '2026-11-29 09:46:17.269974+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb33-726a-bce6-d6a5eef15a86', 2, 'tool.start', '{"seq":2,"type":"tool.start","run_id":"01a226b2-bb33-726a-bce6-d6a5eef15a86","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z","tool":"rm"}', '2026-11-29 09:46:17.269974+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb33-726a-bce6-d6a5eef15a86', 3, 'approval.required', '{"seq":3,"type":"approval.required","run_id":"01a226b2-bb33-726a-bce6-d6a5eef15a86","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z","approval_id":"ap1"}', '2026-11-29 09:46:17.278976+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb33-726a-bce6-d6a5eef15a86', 4, 'run.interrupted', '{"seq":4,"type":"run.interrupted","run_id":"01a226b2-bb33-726a-bce6-d6a5eef15a86","conversation_id":"01a226b2-bb03-7186-824c-f049006da3f0","ts":"2026-11-29T09:00:00Z","reason":"approval"}', '2026-11-29 09:46:17.278976+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb44-7013-aa6f-f1935fdc2a54', 1, 'run.started', '{"seq":1,"type":"run.started","run_id":"01a226b2-bb44-7013-aa6f-f1935fdc2a54","conversation_id":"01a226b2-bb43-7e56-8ae1-a180d4fb6814","ts":"2026-11-29T09:00:00Z"}', '2026-11-29 09:46:17.294586+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb44-7013-aa6f-f1935fdc2a54', 2, 'tool.start', '{"seq":2,"type":"tool.start","run_id":"01a226b2-bb44-7013-aa6f-f1935fdc2a54","conversation_id":"01a226b2-bb43-7e56-8ae1-a180d4fb6814","ts":"2026-11-29T09:00:00Z","tool":"tally"}', '2026-11-29 09:46:17.294586+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb44-7013-aa6f-f1935fdc2a54', 3, 'tool.complete', '{"seq":3,"type":"tool.complete","run_id":"01a226b2-bb44-7013-aa6f-f1935fdc2a54","conversation_id":"01a226b2-bb43-7e56-8ae1-a180d4fb6814","ts":"2026-11-29T09:00:00Z","tool":"tally"}', '2026-11-29 09:46:17.294586+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb44-7013-aa6f-f1935fdc2a54', 4, 'response.chunk', '{"seq":4,"type":"response.chunk","run_id":"01a226b2-bb44-7013-aa6f-f1935fdc2a54","conversation_id":"01a226b2-bb43-7e56-8ae1-a180d4fb6814","ts":"2026-11-29T09:00:00Z","text":"42"}', '2026-11-29 09:46:17.298977+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb44-7013-aa6f-f1935fdc2a54', 5, 'response.done', '{"seq":5,"type":"response.done","run_id":"01a226b2-bb44-7013-aa6f-f1935fdc2a54","conversation_id":"01a226b2-bb43-7e56-8ae1-a180d4fb6814","ts":"2026-11-29T09:00:00Z","text":"42"}', '2026-11-29 09:46:17.298977+00');
INSERT INTO trellis_legacy.events VALUES ('01a226b2-bb44-7013-aa6f-f1935fdc2a54', 6, 'run.completed', '{"seq":6,"type":"run.completed","run_id":"01a226b2-bb44-7013-aa6f-f1935fdc2a54","conversation_id":"01a226b2-bb43-7e56-8ae1-a180d4fb6814","ts":"2026-11-29T09:00:00Z"}', '2026-11-29 09:46:17.305425+00');


--
-- Data for Name: memories; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: messages; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--

INSERT INTO trellis_legacy.messages VALUES ('01a226b2-bb0b-784d-b8e7-c56051dcb79e', '01a226b2-bb03-7186-824c-f049006da3f0', '01a226b2-bb03-7d59-9d60-20ffe449b558', 'user', 'hello', NULL, NULL, '2026-11-29 09:46:17.219875+00');
INSERT INTO trellis_legacy.messages VALUES ('01a226b2-bb19-79a0-842c-1260123ebbdc', '01a226b2-bb03-7186-824c-f049006da3f0', '01a226b2-bb03-7d59-9d60-20ffe449b558', 'assistant', 'Hello.', NULL, NULL, '2026-11-29 09:46:17.241631+00');
INSERT INTO trellis_legacy.messages VALUES ('01a226b2-bb34-7bd2-b193-161c211b28d1', '01a226b2-bb03-7186-824c-f049006da3f0', '01a226b2-bb33-726a-bce6-d6a5eef15a86', 'user', 'delete it', NULL, NULL, '2026-11-29 09:46:17.26716+00');
INSERT INTO trellis_legacy.messages VALUES ('01a226b2-bb44-7785-b2ea-90518775c319', '01a226b2-bb43-7e56-8ae1-a180d4fb6814', '01a226b2-bb44-7013-aa6f-f1935fdc2a54', 'user', 'count', NULL, NULL, '2026-11-29 09:46:17.284005+00');


--
-- Data for Name: profiles; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: project_members; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: projects; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: queued_runs; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: runs; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--

INSERT INTO trellis_legacy.runs VALUES ('01a226b2-bb03-7d59-9d60-20ffe449b558', '01a226b2-bb03-7186-824c-f049006da3f0', 'u1', 1, 'completed', '', false, 'hello', '{"input_tokens":0,"output_tokens":0,"thinking_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"total_tokens":0}', '', '', '', 7, '2026-11-29 09:46:17.219875+00', '2026-11-29 09:46:17.2483+00', '', '', 'default', false);
INSERT INTO trellis_legacy.runs VALUES ('01a226b2-bb33-726a-bce6-d6a5eef15a86', '01a226b2-bb03-7186-824c-f049006da3f0', 'u1', 2, 'interrupted', 'approval', false, 'delete it', '{"input_tokens":0,"output_tokens":0,"thinking_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"total_tokens":0}', '', '', '', 4, '2026-11-29 09:46:17.26716+00', '2026-11-29 09:46:17.279061+00', '', '01a226b2-bb03-7d59-9d60-20ffe449b558', 'default', false);
INSERT INTO trellis_legacy.runs VALUES ('01a226b2-bb44-7013-aa6f-f1935fdc2a54', '01a226b2-bb43-7e56-8ae1-a180d4fb6814', 'u1', 1, 'completed', '', false, 'count', '{"input_tokens":0,"output_tokens":0,"thinking_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"total_tokens":0}', '', '', '', 6, '2026-11-29 09:46:17.284005+00', '2026-11-29 09:46:17.305503+00', '', '', 'default', false);


--
-- Data for Name: sessions; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: tool_calls; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: tool_stats; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: uncertain_calls; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: usage_days; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--

INSERT INTO trellis_legacy.usage_days VALUES ('u1', '2026-11-29', 'default', 0, 0, 0, 0, 2);


--
-- Data for Name: webhook_deliveries; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: webhook_routes; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: workspace_files; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: workspace_usage; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Data for Name: workspace_versions; Type: TABLE DATA; Schema: trellis_legacy; Owner: -
--



--
-- Name: queued_runs_seq_seq; Type: SEQUENCE SET; Schema: trellis_legacy; Owner: -
--

SELECT pg_catalog.setval('trellis_legacy.queued_runs_seq_seq', 1, false);


--
-- Name: api_keys api_keys_hash_key; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.api_keys
    ADD CONSTRAINT api_keys_hash_key UNIQUE (hash);


--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);


--
-- Name: approvals approvals_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.approvals
    ADD CONSTRAINT approvals_pkey PRIMARY KEY (id);


--
-- Name: chat_migrations chat_migrations_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.chat_migrations
    ADD CONSTRAINT chat_migrations_pkey PRIMARY KEY (version);


--
-- Name: chunk_summaries chunk_summaries_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.chunk_summaries
    ADD CONSTRAINT chunk_summaries_pkey PRIMARY KEY (document_id, idx);


--
-- Name: chunks chunks_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.chunks
    ADD CONSTRAINT chunks_pkey PRIMARY KEY (document_id, idx);


--
-- Name: clarifications clarifications_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.clarifications
    ADD CONSTRAINT clarifications_pkey PRIMARY KEY (id);


--
-- Name: conversations conversations_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.conversations
    ADD CONSTRAINT conversations_pkey PRIMARY KEY (id);


--
-- Name: documents documents_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.documents
    ADD CONSTRAINT documents_pkey PRIMARY KEY (id);


--
-- Name: elicitations elicitations_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.elicitations
    ADD CONSTRAINT elicitations_pkey PRIMARY KEY (id);


--
-- Name: erasures erasures_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.erasures
    ADD CONSTRAINT erasures_pkey PRIMARY KEY (user_id);


--
-- Name: events events_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (run_id, seq);


--
-- Name: memories memories_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.memories
    ADD CONSTRAINT memories_pkey PRIMARY KEY (id);


--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);


--
-- Name: profiles profiles_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.profiles
    ADD CONSTRAINT profiles_pkey PRIMARY KEY (user_id);


--
-- Name: project_members project_members_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.project_members
    ADD CONSTRAINT project_members_pkey PRIMARY KEY (project_id, user_id);


--
-- Name: projects projects_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.projects
    ADD CONSTRAINT projects_pkey PRIMARY KEY (id);


--
-- Name: queued_runs queued_runs_id_key; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.queued_runs
    ADD CONSTRAINT queued_runs_id_key UNIQUE (id);


--
-- Name: queued_runs queued_runs_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.queued_runs
    ADD CONSTRAINT queued_runs_pkey PRIMARY KEY (seq);


--
-- Name: runs runs_conversation_id_num_key; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.runs
    ADD CONSTRAINT runs_conversation_id_num_key UNIQUE (conversation_id, num);


--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);


--
-- Name: sessions sessions_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (hash);


--
-- Name: tool_calls tool_calls_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.tool_calls
    ADD CONSTRAINT tool_calls_pkey PRIMARY KEY (id);


--
-- Name: tool_stats tool_stats_by_user_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.tool_stats
    ADD CONSTRAINT tool_stats_by_user_pkey PRIMARY KEY (user_id, tool);


--
-- Name: uncertain_calls uncertain_calls_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.uncertain_calls
    ADD CONSTRAINT uncertain_calls_pkey PRIMARY KEY (id);


--
-- Name: usage_days usage_days_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.usage_days
    ADD CONSTRAINT usage_days_pkey PRIMARY KEY (user_id, day, model);


--
-- Name: webhook_deliveries webhook_deliveries_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);


--
-- Name: webhook_deliveries webhook_deliveries_run_id_seq_endpoint_key; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_run_id_seq_endpoint_key UNIQUE (run_id, seq, endpoint);


--
-- Name: webhook_routes webhook_routes_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.webhook_routes
    ADD CONSTRAINT webhook_routes_pkey PRIMARY KEY (event_type, endpoint);


--
-- Name: workspace_files workspace_files_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.workspace_files
    ADD CONSTRAINT workspace_files_pkey PRIMARY KEY (id);


--
-- Name: workspace_files workspace_files_scope_kind_scope_id_path_key; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.workspace_files
    ADD CONSTRAINT workspace_files_scope_kind_scope_id_path_key UNIQUE (scope_kind, scope_id, path);


--
-- Name: workspace_usage workspace_usage_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.workspace_usage
    ADD CONSTRAINT workspace_usage_pkey PRIMARY KEY (scope_kind, scope_id);


--
-- Name: workspace_versions workspace_versions_pkey; Type: CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.workspace_versions
    ADD CONSTRAINT workspace_versions_pkey PRIMARY KEY (file_id, version);


--
-- Name: api_keys_created; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX api_keys_created ON trellis_legacy.api_keys USING btree (created_at, id);


--
-- Name: api_keys_user; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX api_keys_user ON trellis_legacy.api_keys USING btree (user_id, created_at, id);


--
-- Name: approvals_by_conversation; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX approvals_by_conversation ON trellis_legacy.approvals USING btree (conversation_id);


--
-- Name: approvals_by_run; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX approvals_by_run ON trellis_legacy.approvals USING btree (run_id);


--
-- Name: approvals_pending; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX approvals_pending ON trellis_legacy.approvals USING btree (user_id, created_at, id) WHERE (status = 'pending'::text);


--
-- Name: chunks_tsv; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX chunks_tsv ON trellis_legacy.chunks USING gin (tsv);


--
-- Name: clarifications_by_conversation; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX clarifications_by_conversation ON trellis_legacy.clarifications USING btree (conversation_id);


--
-- Name: clarifications_by_run; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX clarifications_by_run ON trellis_legacy.clarifications USING btree (run_id);


--
-- Name: clarifications_pending; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX clarifications_pending ON trellis_legacy.clarifications USING btree (user_id, created_at, id) WHERE (status = 'pending'::text);


--
-- Name: conversations_by_user; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX conversations_by_user ON trellis_legacy.conversations USING btree (user_id, created_at DESC, id DESC);


--
-- Name: conversations_project; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX conversations_project ON trellis_legacy.conversations USING btree (project_id);


--
-- Name: conversations_updated; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX conversations_updated ON trellis_legacy.conversations USING btree (updated_at);


--
-- Name: documents_by_conversation; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX documents_by_conversation ON trellis_legacy.documents USING btree (conversation_id, created_at, id);


--
-- Name: documents_by_user; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX documents_by_user ON trellis_legacy.documents USING btree (user_id);


--
-- Name: documents_uploading; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX documents_uploading ON trellis_legacy.documents USING btree (created_at, id) WHERE (status = 'uploading'::text);


--
-- Name: elicitations_by_conversation; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX elicitations_by_conversation ON trellis_legacy.elicitations USING btree (conversation_id);


--
-- Name: elicitations_by_run; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX elicitations_by_run ON trellis_legacy.elicitations USING btree (run_id);


--
-- Name: elicitations_pending; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX elicitations_pending ON trellis_legacy.elicitations USING btree (user_id, created_at, id) WHERE (status = 'pending'::text);


--
-- Name: memories_by_importance; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX memories_by_importance ON trellis_legacy.memories USING btree (user_id, importance, last_accessed);


--
-- Name: memories_by_use; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX memories_by_use ON trellis_legacy.memories USING btree (last_accessed);


--
-- Name: memories_by_user; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX memories_by_user ON trellis_legacy.memories USING btree (user_id, created_at, id);


--
-- Name: messages_by_conversation; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX messages_by_conversation ON trellis_legacy.messages USING btree (conversation_id);


--
-- Name: messages_by_run; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX messages_by_run ON trellis_legacy.messages USING btree (run_id, created_at, id);


--
-- Name: project_members_user; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX project_members_user ON trellis_legacy.project_members USING btree (user_id);


--
-- Name: projects_owner; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX projects_owner ON trellis_legacy.projects USING btree (owner_id);


--
-- Name: queued_runs_by_conversation; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX queued_runs_by_conversation ON trellis_legacy.queued_runs USING btree (conversation_id, seq);


--
-- Name: runs_by_parent; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX runs_by_parent ON trellis_legacy.runs USING btree (conversation_id, parent_id, num);


--
-- Name: runs_compactable; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX runs_compactable ON trellis_legacy.runs USING btree (completed_at) WHERE ((NOT compacted) AND (status = ANY (ARRAY['completed'::text, 'failed'::text, 'cancelled'::text])));


--
-- Name: runs_one_active; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE UNIQUE INDEX runs_one_active ON trellis_legacy.runs USING btree (conversation_id) WHERE ((NOT superseded) AND ((status = 'running'::text) OR ((status = 'interrupted'::text) AND (interrupt_reason <> 'clarification'::text))));


--
-- Name: sessions_expires; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX sessions_expires ON trellis_legacy.sessions USING btree (expires_at);


--
-- Name: sessions_user; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX sessions_user ON trellis_legacy.sessions USING btree (user_id);


--
-- Name: tool_calls_by_run; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX tool_calls_by_run ON trellis_legacy.tool_calls USING btree (run_id);


--
-- Name: uncertain_calls_by_conversation; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX uncertain_calls_by_conversation ON trellis_legacy.uncertain_calls USING btree (conversation_id);


--
-- Name: uncertain_calls_by_run; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX uncertain_calls_by_run ON trellis_legacy.uncertain_calls USING btree (run_id);


--
-- Name: uncertain_calls_pending; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX uncertain_calls_pending ON trellis_legacy.uncertain_calls USING btree (user_id, created_at, id) WHERE (status = 'pending'::text);


--
-- Name: usage_days_day; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX usage_days_day ON trellis_legacy.usage_days USING btree (day, user_id, model);


--
-- Name: webhook_deliveries_newest; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX webhook_deliveries_newest ON trellis_legacy.webhook_deliveries USING btree (created_at, id);


--
-- Name: webhook_deliveries_unqueued; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX webhook_deliveries_unqueued ON trellis_legacy.webhook_deliveries USING btree (created_at, id) WHERE ((status = 'pending'::text) AND (NOT queued));


--
-- Name: workspace_files_conversation; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX workspace_files_conversation ON trellis_legacy.workspace_files USING btree (conversation_id);


--
-- Name: workspace_files_project; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX workspace_files_project ON trellis_legacy.workspace_files USING btree (project_id);


--
-- Name: workspace_files_user; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX workspace_files_user ON trellis_legacy.workspace_files USING btree (user_id);


--
-- Name: workspace_usage_conversation; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX workspace_usage_conversation ON trellis_legacy.workspace_usage USING btree (conversation_id);


--
-- Name: workspace_usage_project; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX workspace_usage_project ON trellis_legacy.workspace_usage USING btree (project_id);


--
-- Name: workspace_usage_user; Type: INDEX; Schema: trellis_legacy; Owner: -
--

CREATE INDEX workspace_usage_user ON trellis_legacy.workspace_usage USING btree (user_id);


--
-- Name: chunks chunks_tsv; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER chunks_tsv BEFORE INSERT ON trellis_legacy.chunks FOR EACH ROW WHEN ((new.tsv = ''::tsvector)) EXECUTE FUNCTION tsvector_update_trigger('tsv', 'pg_catalog.english', 'text');


--
-- Name: chunks chunks_tsv_text; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER chunks_tsv_text BEFORE UPDATE OF text ON trellis_legacy.chunks FOR EACH ROW EXECUTE FUNCTION tsvector_update_trigger('tsv', 'pg_catalog.english', 'text');


--
-- Name: conversations conversations_erasure; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER conversations_erasure BEFORE INSERT ON trellis_legacy.conversations FOR EACH ROW EXECUTE FUNCTION trellis_legacy.refuse_erased_user();


--
-- Name: conversations conversations_title_erasure; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER conversations_title_erasure BEFORE UPDATE OF title ON trellis_legacy.conversations FOR EACH ROW EXECUTE FUNCTION trellis_legacy.refuse_erased_user();


--
-- Name: documents documents_erasure; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER documents_erasure BEFORE INSERT ON trellis_legacy.documents FOR EACH ROW EXECUTE FUNCTION trellis_legacy.refuse_erased_user();


--
-- Name: memories memories_erasure; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER memories_erasure BEFORE INSERT ON trellis_legacy.memories FOR EACH ROW EXECUTE FUNCTION trellis_legacy.refuse_erased_user();


--
-- Name: memories memories_tsv; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER memories_tsv BEFORE INSERT OR UPDATE OF summary, topic_text ON trellis_legacy.memories FOR EACH ROW EXECUTE FUNCTION tsvector_update_trigger('tsv', 'pg_catalog.english', 'summary', 'topic_text');


--
-- Name: profiles profiles_erasure; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER profiles_erasure BEFORE INSERT ON trellis_legacy.profiles FOR EACH ROW EXECUTE FUNCTION trellis_legacy.refuse_erased_user();


--
-- Name: projects projects_erasure; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER projects_erasure BEFORE INSERT ON trellis_legacy.projects FOR EACH ROW EXECUTE FUNCTION trellis_legacy.refuse_erased_project_owner();


--
-- Name: queued_runs queued_runs_erasure; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER queued_runs_erasure BEFORE INSERT ON trellis_legacy.queued_runs FOR EACH ROW EXECUTE FUNCTION trellis_legacy.refuse_erased_user();


--
-- Name: runs runs_erasure; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER runs_erasure BEFORE INSERT ON trellis_legacy.runs FOR EACH ROW EXECUTE FUNCTION trellis_legacy.refuse_erased_user();


--
-- Name: workspace_files workspace_files_erasure; Type: TRIGGER; Schema: trellis_legacy; Owner: -
--

CREATE TRIGGER workspace_files_erasure BEFORE INSERT ON trellis_legacy.workspace_files FOR EACH ROW EXECUTE FUNCTION trellis_legacy.refuse_erased_file_owner();


--
-- Name: approvals approvals_conversation_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.approvals
    ADD CONSTRAINT approvals_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES trellis_legacy.conversations(id) ON DELETE CASCADE;


--
-- Name: approvals approvals_run_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.approvals
    ADD CONSTRAINT approvals_run_id_fkey FOREIGN KEY (run_id) REFERENCES trellis_legacy.runs(id) ON DELETE CASCADE;


--
-- Name: chunk_summaries chunk_summaries_document_id_idx_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.chunk_summaries
    ADD CONSTRAINT chunk_summaries_document_id_idx_fkey FOREIGN KEY (document_id, idx) REFERENCES trellis_legacy.chunks(document_id, idx) ON DELETE CASCADE;


--
-- Name: chunks chunks_document_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.chunks
    ADD CONSTRAINT chunks_document_id_fkey FOREIGN KEY (document_id) REFERENCES trellis_legacy.documents(id) ON DELETE CASCADE;


--
-- Name: clarifications clarifications_conversation_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.clarifications
    ADD CONSTRAINT clarifications_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES trellis_legacy.conversations(id) ON DELETE CASCADE;


--
-- Name: clarifications clarifications_run_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.clarifications
    ADD CONSTRAINT clarifications_run_id_fkey FOREIGN KEY (run_id) REFERENCES trellis_legacy.runs(id) ON DELETE CASCADE;


--
-- Name: conversations conversations_project_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.conversations
    ADD CONSTRAINT conversations_project_id_fkey FOREIGN KEY (project_id) REFERENCES trellis_legacy.projects(id) ON DELETE SET NULL;


--
-- Name: documents documents_conversation_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.documents
    ADD CONSTRAINT documents_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES trellis_legacy.conversations(id) ON DELETE CASCADE;


--
-- Name: elicitations elicitations_conversation_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.elicitations
    ADD CONSTRAINT elicitations_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES trellis_legacy.conversations(id) ON DELETE CASCADE;


--
-- Name: elicitations elicitations_run_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.elicitations
    ADD CONSTRAINT elicitations_run_id_fkey FOREIGN KEY (run_id) REFERENCES trellis_legacy.runs(id) ON DELETE CASCADE;


--
-- Name: events events_run_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.events
    ADD CONSTRAINT events_run_id_fkey FOREIGN KEY (run_id) REFERENCES trellis_legacy.runs(id) ON DELETE CASCADE;


--
-- Name: messages messages_conversation_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.messages
    ADD CONSTRAINT messages_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES trellis_legacy.conversations(id) ON DELETE CASCADE;


--
-- Name: messages messages_run_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.messages
    ADD CONSTRAINT messages_run_id_fkey FOREIGN KEY (run_id) REFERENCES trellis_legacy.runs(id) ON DELETE CASCADE;


--
-- Name: project_members project_members_project_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.project_members
    ADD CONSTRAINT project_members_project_id_fkey FOREIGN KEY (project_id) REFERENCES trellis_legacy.projects(id) ON DELETE CASCADE;


--
-- Name: queued_runs queued_runs_conversation_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.queued_runs
    ADD CONSTRAINT queued_runs_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES trellis_legacy.conversations(id) ON DELETE CASCADE;


--
-- Name: runs runs_conversation_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.runs
    ADD CONSTRAINT runs_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES trellis_legacy.conversations(id) ON DELETE CASCADE;


--
-- Name: tool_calls tool_calls_run_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.tool_calls
    ADD CONSTRAINT tool_calls_run_id_fkey FOREIGN KEY (run_id) REFERENCES trellis_legacy.runs(id) ON DELETE CASCADE;


--
-- Name: uncertain_calls uncertain_calls_conversation_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.uncertain_calls
    ADD CONSTRAINT uncertain_calls_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES trellis_legacy.conversations(id) ON DELETE CASCADE;


--
-- Name: uncertain_calls uncertain_calls_run_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.uncertain_calls
    ADD CONSTRAINT uncertain_calls_run_id_fkey FOREIGN KEY (run_id) REFERENCES trellis_legacy.runs(id) ON DELETE CASCADE;


--
-- Name: webhook_deliveries webhook_deliveries_run_id_seq_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_run_id_seq_fkey FOREIGN KEY (run_id, seq) REFERENCES trellis_legacy.events(run_id, seq) ON DELETE CASCADE;


--
-- Name: workspace_files workspace_files_conversation_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.workspace_files
    ADD CONSTRAINT workspace_files_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES trellis_legacy.conversations(id) ON DELETE CASCADE;


--
-- Name: workspace_files workspace_files_project_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.workspace_files
    ADD CONSTRAINT workspace_files_project_id_fkey FOREIGN KEY (project_id) REFERENCES trellis_legacy.projects(id) ON DELETE CASCADE;


--
-- Name: workspace_usage workspace_usage_conversation_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.workspace_usage
    ADD CONSTRAINT workspace_usage_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES trellis_legacy.conversations(id) ON DELETE CASCADE;


--
-- Name: workspace_usage workspace_usage_project_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.workspace_usage
    ADD CONSTRAINT workspace_usage_project_id_fkey FOREIGN KEY (project_id) REFERENCES trellis_legacy.projects(id) ON DELETE CASCADE;


--
-- Name: workspace_versions workspace_versions_file_id_fkey; Type: FK CONSTRAINT; Schema: trellis_legacy; Owner: -
--

ALTER TABLE ONLY trellis_legacy.workspace_versions
    ADD CONSTRAINT workspace_versions_file_id_fkey FOREIGN KEY (file_id) REFERENCES trellis_legacy.workspace_files(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


